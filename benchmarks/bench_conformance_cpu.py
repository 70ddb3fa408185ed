"""CPU seconds of default ``spectheory conformance`` runs on the repository's block-verifier fixtures.

Each target runs as its own child process (``python -m spectheory.cli.main conformance TARGET
... --report-only``), one at a time; the CPU time of the child (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)``, Python's start and imports included) is the number to
compare: the machine is shared, so wall time depends on its load and CPU time much less. The
report's own split (``run.sampler_s``: inside the sampler's calls; ``run.checker_s``: the rest)
is in wall seconds and is given beside it, with the load average and the verdicts.

    .venv/bin/python benchmarks/bench_conformance_cpu.py --json /tmp/cpu.json            # every target
    .venv/bin/python benchmarks/bench_conformance_cpu.py --only torch_sd --repeat 2
    .venv/bin/python benchmarks/bench_conformance_cpu.py --before /path/to/old/checkout   # back to back

``--before DIR``: each target runs twice in a row, first from DIR (the code of another checkout,
run in its own tree with the same interpreter and packages), then with this one, so both see the
same load.

Summary lines: median and max CPU seconds of the NumPy and of the torch block verifiers.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = "tests/conformance_fixtures/"
TORCH = ["--adapter", "logits", "--dtype", "float32", "--batched", "--framework", "torch"]
#: (name, framework, target, options) — the default run of each block verifier
TARGETS = [
    ("pure_python_sd", "numpy", FIX + "pure_python_sd.py:verify", []),
    ("numpy_batched_logits", "numpy", FIX + "numpy_batched_logits.py:verify",
     ["--adapter", "logits", "--dtype", "float32", "--batched"]),
    ("python_random_sd", "numpy", FIX + "python_random_sd.py:verify", []),
    ("docs_example", "numpy", "docs/examples/test_my_sampler.py:verify", []),
    ("torch_sd", "torch", FIX + "torch_sd.py:verify", TORCH),
    ("exponential_race", "torch", FIX + "exponential_race.py:verify", ["--framework", "torch"]),
    ("transformers", "torch", "spectheory.conformance.examples:transformers_sampler", TORCH),
]


def run_one(target: str, options: list[str], report_only: bool = True, pythonpath: str = "") -> dict:
    """One child run of ``spectheory conformance TARGET OPTIONS``: its CPU and wall seconds, exit
    status, the report's split and verdicts (``report_only=False``: the exit status is the
    failure kind's, 1 law, 3 boundary, 4 crash)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, "-m", "spectheory.cli.main", "conformance", target, *options, "--no-progress",
               *(["--report-only"] if report_only else []), "--json", str(out), "--markdown", str(Path(tmp) / "r.md")]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        load0, t0 = os.getloadavg()[0], time.perf_counter()
        env = dict(os.environ, PYTHONPATH=pythonpath) if pythonpath else None
        # python -m puts the working directory first on sys.path: the old checkout runs from its own tree
        proc = subprocess.run(cmd, cwd=pythonpath or ROOT, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        row = {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "load": [round(load0, 2), round(os.getloadavg()[0], 2)],
               "exit": proc.returncode}
        if out.exists():
            rep = json.loads(out.read_text())
            run = rep["run"]
            row.update(sampler_s=run.get("sampler_s"), checker_s=run.get("checker_s"),
                       calls=sum(b.get("calls", 0) for b in run.get("blocks", [])),
                       runs=sum(b.get("runs", 0) for b in run.get("blocks", [])),
                       lossless=rep["verdicts"]["lossless"]["verdict"],
                       severity=rep["verdicts"]["lossless"].get("severity"),
                       standard=rep["verdicts"]["standard"]["verdict"],
                       top_line=proc.stdout.lstrip().splitlines()[0][:300] if proc.stdout.strip() else "")
        else:
            row["stderr"] = proc.stderr[-2000:]
        return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated target names")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", default="")
    ap.add_argument("--before", default="", help="an old checkout: run it back to back with this one")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    rows = []
    for name, fw, target, opts in TARGETS:
        if only and name not in only:
            continue
        for k in range(args.repeat):
            for code in (["before", "after"] if args.before else ["this"]):
                row = {"name": name, "framework": fw, "repeat": k, "code": code,
                       **run_one(target, opts, pythonpath=args.before if code == "before" else "")}
                rows.append(row)
                print(json.dumps(row), flush=True)
    for code in dict.fromkeys(r["code"] for r in rows):
        for fw in ("numpy", "torch"):
            cpu = [r["cpu_s"] for r in rows if r["framework"] == fw and r["code"] == code]
            if cpu:
                print(f"{code} {fw}: {len(cpu)} runs, CPU s median {statistics.median(cpu):.1f}, max {max(cpu):.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
