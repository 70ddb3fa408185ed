"""The judged bug classes of issue 35 at several seeds: each fixture of ``tests/conformance_fixtures/``
written for one class, run through ``spectheory conformance`` with its default settings (only the
options its layout needs) at every seed given, each run a child process.

    .venv/bin/python benchmarks/conformance_judged_seeds.py --seeds 0,1,2,3,4 --json out.json
    .venv/bin/python benchmarks/conformance_judged_seeds.py --only clamp_batched --seeds 0

Prints one line per run (verdicts, severity, exit status, CPU seconds) and, per fixture, whether
every seed gave the expected verdict and severity. ``tests/test_conformance_certainty.py`` runs
this table in the slow tier.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_conformance_cpu import TORCH, run_one  # noqa: E402

FIX = "tests/conformance_fixtures/"
TREE = ["--kind", "multidraft", "--tree", "2,2", "--rule", "specinfer", "--framework", "torch"]
#: (name, target, options, lossless verdict, severity, exit status) — the right answer at every seed
JUDGED = [
    # a clamp of the residual from below (1e-5): tokens with p = 0 emitted, proof on the sparse V = 4096 instance
    ("clamp_batched", FIX + "clamp_batched.py:verify", TORCH, "fails", "law", 1),
    # u = 0.0 exactly makes the Gumbel noise infinite and a guard raise: the u = 0 probes, and the runs when they see it
    ("u0_gumbel", FIX + "u0_gumbel.py:verify", TORCH, "fails", "boundary", 3),
    # a NaN residual (zero mass after rounding) falls back to token 0 through argmax
    ("nan_fallback", FIX + "nan_fallback.py:verify", TORCH, "fails", "boundary", 3),
    ("tree_nan_fallback", FIX + "tree_nan_fallback.py:verify", ["--kind", "multidraft", "--tree", "1,2"],
     "fails", "boundary", 3),
    # an exponential race with the residual clamped to the smallest float: uniform over V on a zero-mass residual
    ("exponential_race", FIX + "exponential_race.py:verify", ["--framework", "torch"], "fails", "boundary", 3),
    ("exponential_race_jit", FIX + "exponential_race_jit.py:verify", ["--framework", "torch"], "fails", "boundary", 3),
    # compiled code out of reach (TorchScript kept on a module): correct, so not certified, never failed
    ("compiled_module", FIX + "compiled_module.py:verify", ["--framework", "torch"], "inconclusive", None, 0),
    ("compiled_module_bound", FIX + "compiled_module.py:bound", ["--framework", "torch"], "inconclusive", None, 0),
    # acceptance uniforms drawn once and reused (tree), and a ragged sampler reusing its decision uniform
    ("cached_uniform_tree", FIX + "cached_uniform_tree.py:verify", TREE, "fails", "law", 1),
    ("ragged_reused_uniform", FIX + "ragged_bugs.py:reused_uniform", ["--kind", "ragged", "--framework", "torch"],
     "fails", "law", 1),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--only", default="", help="comma-separated fixture names")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    seeds = [int(s) for s in args.seeds.split(",")]
    rows, ok = [], True
    for name, target, opts, lossless, severity, status in JUDGED:
        if only and name not in only:
            continue
        got = []
        for seed in seeds:
            row = {"name": name, "seed": seed, **run_one(target, [*opts, "--seed", str(seed)], report_only=False)}
            row["right"] = (row.get("lossless") == lossless and row.get("severity") == severity
                            and row["exit"] == status)
            rows.append(row)
            got.append(row["right"])
            print(json.dumps(row), flush=True)
        ok &= all(got)
        print(f"{name}: {'right' if all(got) else 'WRONG'} at {sum(got)} of {len(got)} seeds "
              f"(expected {lossless} [{severity}], exit {status})", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
