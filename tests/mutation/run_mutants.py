"""Mutation testing: seed plausible bugs one at a time and check that the suite catches each.

Every ``tests/mutants/<name>.py`` defines ``MUTANTS``, a list of dicts::

    dict(path="spectheory/...py",   # file to mutate (relative to the repository root)
         old="exact source text",   # must occur exactly once in that file
         new="mutated text",
         why="the plausible bug this stands for",
         tests="tests/test_x.py",   # optional: restrict the fast tier to these pytest args
         claims="sd.*")             # optional: claims glob for `spectheory verify --quick`

and optionally module-level ``CLAIMS`` (default ``"<name>.*"``; ``None`` for code that no
registered claim exercises, e.g. the conformance API) and ``TESTS`` defaults.

For each mutant, a fresh copy of the repository (made from a warmed-up baseline copy, so
Numba caches are reused) gets the one edit, then:

1. the fast tier: ``pytest -m "not slow" -x -q [tests]``; caught if it exits 1 (a failing
   test) or 2 (the mutant breaks collection);
2. if that passed: ``spectheory verify --quick --claims <claims>``; caught if it crashes or
   if any claim's verdict or any control's verdict differs from the unmutated run's (a paper's
   claim may legitimately fail, so "every claim holds" is not the baseline).

A mutant caught by neither **survived**. A mutant whose ``old`` text is not found exactly once
is **stale** (the code moved on: update the mutant). The script prints a Markdown table and
exits 1 if any mutant survived or was stale, or the unmutated baseline does not pass.

    .venv/bin/python tests/mutation/run_mutants.py                 # every tests/mutants/*.py
    .venv/bin/python tests/mutation/run_mutants.py --files sd --only kernel
    .venv/bin/python tests/mutation/run_mutants.py --full          # ignore per-mutant tests=

Not part of the test suite (pytest does not collect it); run it before merging a family.
It runs one process at a time (the machines are small): expect 10–40 s per mutant.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MUTANT_DIR = ROOT / "tests" / "mutants"
#: Numba's cache files, and where the compiled kernels live (see apply_and_test)
NUMBA_CACHE = shutil.ignore_patterns("*.nbi", "*.nbc")
KERNEL_DIRS = ("spectheory/_kernels/",)
IGNORE = shutil.ignore_patterns(".venv", "venv", ".git", "reports", ".pytest_cache", "*.egg-info", "build",
                                "dist", "out", ".ipynb_checkpoints")


@dataclass
class Mutant:
    id: str
    path: str
    old: str
    new: str
    why: str
    tests: list[str]
    claims: str
    result: str = "pending"
    caught_by: str = ""
    seconds: float = 0.0
    detail: str = field(default="", repr=False)


def load_mutants(files: list[str] | None) -> list[Mutant]:
    out = []
    for f in sorted(MUTANT_DIR.glob("*.py")):
        if f.name.startswith("_") or (files and f.stem not in files):
            continue
        spec = importlib.util.spec_from_file_location(f"mutants_{f.stem}", f)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        claims = getattr(mod, "CLAIMS", f"{f.stem}.*")
        tests = getattr(mod, "TESTS", None)
        for i, m in enumerate(mod.MUTANTS):
            missing = {"path", "old", "new", "why"} - m.keys()
            if missing:
                raise SystemExit(f"{f.name} mutant {i}: missing keys {sorted(missing)}")
            if m["old"] == m["new"]:
                raise SystemExit(f"{f.name} mutant {i}: old and new are identical")
            t = m.get("tests", tests)
            t = shlex.split(t) if isinstance(t, str) else list(t or [])
            for arg in t:
                target = arg.split("::")[0]
                if not arg.startswith("-") and not (ROOT / target).exists():
                    raise SystemExit(f"{f.name} mutant {i}: tests entry {arg!r} does not exist")
            out.append(Mutant(m.get("name", f"{f.stem}#{i:02d}"), m["path"], m["old"], m["new"], m["why"],
                              t, m.get("claims", claims)))
    return out


def run(cmd: list[str], cwd: Path, timeout: float) -> tuple[int | None, str]:
    env = {**os.environ, "PYTHONPATH": str(cwd), "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "",
           "COLUMNS": "200"}
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        return None, f"timeout after {timeout:.0f} s\n{err.stdout or ''}"
    return p.returncode, (p.stdout + p.stderr)


def pytest_cmd(tests: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-m", "not slow", "-x", "-q", "-p", "no:cacheprovider",
            "--no-header", *tests]


def verify_cmd(claims: str, scratch: Path) -> list[str]:
    return [sys.executable, "-m", "spectheory.cli.main", "verify", "--quick", "--no-progress",
            "--claims", claims, "--json", str(scratch / "verify.json"), "--markdown", str(scratch / "verify.md")]


def verdicts(path: Path) -> dict | None:
    """The report's verdict signature: each claim's verdict, its parts' verdicts (since report/3 the
    headline is the principal reading's: a mutant that only moves another reading's part must still
    be seen) and its controls' verdicts. A paper's claim may be false (verdict ``fails`` is then the
    correct, unmutated outcome), so a mutant is caught by ``verify`` when the signature differs from
    the unmutated one, not when a claim fails."""
    try:
        rep = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return {c["id"]: (c["verdict"], tuple((p["id"], p["verdict"]) for p in c.get("parts") or []),
                      tuple((k["name"], k["verdict"]) for k in c["controls"]))
            for c in rep["claims"]}


#: verdict signature of the unmutated copy, per claims glob (filled by :func:`baseline`)
BASELINE_VERDICTS: dict[str, dict] = {}


def tail(text: str, n: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def baseline(base: Path, mutants: list[Mutant], timeout: float, full: bool) -> None:
    """The unmutated copy must import from itself, pass the fast tier and hold every claim
    glob the mutants use (also warms the Numba and bytecode caches that each copy reuses)."""
    rc, out = run([sys.executable, "-c", "import spectheory, spectheory.sims as sims; print(spectheory.__file__, sims.__file__)"],
                  base, 120)
    if rc != 0 or str(base) not in out:
        raise SystemExit(f"the copy does not import its own packages:\n{out}")
    tests = sorted({t for m in mutants for t in m.tests}) if not full else []
    if full or any(not m.tests for m in mutants):
        tests = []
    t0 = time.perf_counter()
    rc, out = run(pytest_cmd(tests), base, timeout)
    if rc != 0:
        raise SystemExit(f"baseline: the unmutated fast tier does not pass (exit {rc}):\n{tail(out, 40)}")
    for claims in sorted({m.claims for m in mutants if m.claims}):
        rc, out = run(verify_cmd(claims, base), base, timeout)
        sig = verdicts(base / "verify.json") if rc == 0 else None
        if sig is None:
            raise SystemExit(f"baseline: `verify --quick --claims {claims}` exits {rc} unmutated "
                             f"(a bad claims glob?):\n{tail(out, 40)}")
        BASELINE_VERDICTS[claims] = sig
    print(f"baseline passes ({time.perf_counter() - t0:.0f} s): fast tier"
          f"{' (' + ' '.join(tests) + ')' if tests else ''} and verify --quick on "
          f"{', '.join(sorted({m.claims for m in mutants if m.claims}))}", flush=True)


def apply_and_test(m: Mutant, base: Path, scratch: Path, timeout: float, full: bool, stages=("pytest", "verify")) -> None:
    t0 = time.perf_counter()
    src_file = base / m.path
    if not src_file.exists():
        m.result, m.detail = "stale", f"{m.path} does not exist"
        return
    text = src_file.read_text()
    count = text.count(m.old)
    if count != 1:
        m.result, m.detail = "stale", f"`old` occurs {count} times in {m.path} (must be exactly once)"
        return
    work = scratch / "repo"
    if work.exists():
        shutil.rmtree(work)
    # a kernel's Numba cache is keyed to its own file only: a caller in another module keeps the
    # unmutated code of a kernel it calls, so a bug planted in a kernel module gets no warm caches
    shutil.copytree(base, work, symlinks=True,
                    ignore=NUMBA_CACHE if m.path.startswith(KERNEL_DIRS) else None)
    (work / m.path).write_text(text.replace(m.old, m.new))
    rc, out = run(pytest_cmd([] if full else m.tests), work, timeout) if "pytest" in stages else (0, "")
    if rc is None:
        m.result, m.caught_by, m.detail = "caught", "pytest (timeout)", out
    elif rc in (1, 2):
        failed = [ln for ln in out.splitlines() if ln.startswith(("FAILED", "ERROR"))]
        m.result, m.caught_by, m.detail = "caught", "pytest", (failed[0] if failed else tail(out, 3))
    elif rc != 0:
        m.result, m.detail = "error", f"pytest exited {rc}:\n{tail(out)}"
    elif "verify" not in stages or not m.claims:
        m.result, m.detail = "SURVIVED", "the fast tier passes (verify not run)"
    else:
        (scratch / "verify.json").unlink(missing_ok=True)
        rc, out = run(verify_cmd(m.claims, scratch), work, timeout)
        if rc is None:
            m.result, m.caught_by, m.detail = "caught", "verify (timeout)", out
        elif rc != 0:
            m.result, m.caught_by, m.detail = "caught", "verify --quick (crash)", tail(out, 3)
        else:
            sig = verdicts(scratch / "verify.json")
            base_sig = BASELINE_VERDICTS.get(m.claims)
            if base_sig is None:
                base_sig = BASELINE_VERDICTS[m.claims] = verdicts_of_copy(m.claims, base, scratch, timeout)
            if sig != base_sig:
                m.result, m.caught_by = "caught", "verify --quick"
                m.detail = _verify_detail(sig, base_sig)
            else:
                m.result, m.detail = "SURVIVED", f"{' and '.join(stages)} pass, verdicts unchanged"
    m.seconds = time.perf_counter() - t0


def verdicts_of_copy(claims: str, base: Path, scratch: Path, timeout: float) -> dict:
    """Verdict signature of the unmutated copy (when the baseline run was skipped)."""
    run(verify_cmd(claims, scratch), base, timeout)
    sig = verdicts(scratch / "verify.json")
    if sig is None:
        raise SystemExit(f"unmutated `verify --quick --claims {claims}` wrote no report")
    return sig


def _verify_detail(sig: dict | None, base_sig: dict) -> str:
    if sig is None:
        return "no report written"
    changed = [f"{cid}: {base_sig.get(cid)} → {v}" for cid, v in sig.items() if base_sig.get(cid) != v]
    return "; ".join(changed)


def table(mutants: list[Mutant]) -> str:
    rows = ["| mutant | file | bug | result | caught by | s |", "|---|---|---|---|---|---|"]
    for m in mutants:
        rows.append(f"| {m.id} | `{m.path}` | {m.why} | {m.result} | {m.caught_by or '–'} | {m.seconds:.0f} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", nargs="*", help="mutant files to load, by stem (default: all)")
    ap.add_argument("--only", help="run only mutants whose id, path or bug contains one of these "
                                   "comma-separated texts")
    ap.add_argument("--full", action="store_true", help="run the whole fast tier for every mutant")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per stage (default 900)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated baseline run")
    ap.add_argument("--stage", choices=("both", "pytest", "verify"), default="both",
                    help="which checks may catch a mutant (default both: the fast tier, then verify --quick)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("-v", "--verbose", action="store_true", help="print why each mutant was caught")
    args = ap.parse_args(argv)

    mutants = load_mutants(args.files)
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        mutants = [m for m in mutants if any(w in f"{m.id} {m.path} {m.why}" for w in wanted)]
    if not mutants:
        print("no mutants selected", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="spectheory-mutants-"))
    try:
        base = scratch / "base"
        shutil.copytree(ROOT, base, ignore=IGNORE, symlinks=True)
        if not args.no_baseline:
            baseline(base, mutants, args.timeout, args.full)
        for i, m in enumerate(mutants, 1):
            print(f"[{i}/{len(mutants)}] {m.id}: {m.why} ...", end=" ", flush=True)
            apply_and_test(m, base, scratch, args.timeout, args.full,
                           ("pytest", "verify") if args.stage == "both" else (args.stage,))
            print(f"{m.result}{' by ' + m.caught_by if m.caught_by else ''} ({m.seconds:.0f} s)", flush=True)
            if args.verbose or m.result != "caught":
                print("    " + m.detail.replace("\n", "\n    "), flush=True)
    finally:
        if args.keep:
            print(f"scratch kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print()
    print(table(mutants))
    bad = [m for m in mutants if m.result != "caught"]
    print(f"\n{len(mutants) - len(bad)}/{len(mutants)} mutants caught"
          + (f"; NOT caught: {', '.join(f'{m.id} ({m.result})' for m in bad)}" if bad else ""))
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in m.__dict__.items()} for m in mutants], indent=2))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
