"""Throughput of each family's real decoding loop (spectheory.validate.loops): one prompt at a time against
the batched loop, same prompts, same process, one run.

    .venv/bin/python benchmarks/bench_family_loops.py --n 2 --tokens 32 --batch 4 --json benchmarks/results_family_loops.json
    .venv/bin/python benchmarks/bench_family_loops.py --pair tiny          # the code path only, seconds

Work: the first ``--n`` HumanEval and ``--n`` MT-Bench prompts (chat template), ``--tokens`` tokens
each, temperature 1, seed 0, each loop with its defaults (spectheory.validate.loops.LOOPS). For each loop and
each batch size (1: one prompt at a time, the loop as the default run used it before batching
paid; ``--batch``: that many prompts decoded at once) the same prompts and seeds are run, and
reported: the trials of the loop's graded logits test (what its power statement counts: ERSD
positions, K-SEQ verified depths, SE verified proposals, GBV / SpecTr-GBV iterations) per second
of wall time, emitted tokens per second, wall time, the machine's load average before and after,
and the speed-up of the batched loop. Both configurations run in one process, alternating loop by
loop, so that a change in the machine's load touches both.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _pair(which, n):
    if which == "tiny":
        sys.path.insert(0, str(ROOT / "tests"))
        from test_validate_models import tiny_model  # noqa: E402
        t, d = tiny_model(), tiny_model(seed=1, noise=0.06)
        ids = [[1, 4, 10 + i, 11, 12, 2, 1, 5] for i in range(2 * n)]
        return t, d, ids, [2], ["code" if i % 2 else "chat" for i in range(2 * n)], "tiny random-weight Qwen2 pair"
    from spectheory.validate.models import install_default_pair, load_pair, stop_ids
    from spectheory.validate.prompts import load_prompts, render
    tdir, ddir = install_default_pair(log=lambda *a: None)
    tm, dm, tok = load_pair(str(tdir), str(ddir), dtype="bfloat16")
    ps = load_prompts("human-eval", n) + load_prompts("mt-bench", n)
    return tm, dm, [render(p, tok) for p in ps], stop_ids(tok), [p.category for p in ps], \
        "Qwen2.5-Coder 1.5B / 0.5B Instruct, bfloat16"


def trials(name, runs) -> int:
    """Trials of the loop's first graded logits test (its power statement's n)."""
    from spectheory.validate.replay_loops import loop_tests
    return int(loop_tests(name, runs, alpha=1e-3)[1][0].n_had)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loops", default="ersd,gbv,kseq,se,spectr_gbv")
    ap.add_argument("--n", type=int, default=2, help="prompts per set (HumanEval, MT-Bench)")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pair", choices=("default", "tiny"), default="default")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import torch

    from spectheory.validate.loops import run_loop
    torch.set_num_threads(args.threads)
    tm, dm, ids, stops, cats, pair = _pair(args.pair, args.n)
    rows = []
    for name in [s.strip() for s in args.loops.split(",") if s.strip()]:
        for batch in (1, args.batch):
            load0 = os.getloadavg()
            t0 = time.perf_counter()
            runs = run_loop(name, tm, dm, ids, args.tokens, temperature=1.0, seeds=list(range(len(ids))),
                            stop_ids=stops, categories=cats, names=[f"p{i}" for i in range(len(ids))], batch=batch)
            wall = time.perf_counter() - t0
            n = trials(name, runs)
            emitted = int(sum(r.tokens.size for r in runs))
            rows.append(dict(loop=name, batch=batch, prompts=len(ids), tokens=args.tokens, wall_s=wall, trials=n,
                             trials_per_s=n / wall, emitted=emitted, tokens_per_s=emitted / wall,
                             loadavg_before=load0, loadavg_after=os.getloadavg()))
            print(json.dumps(rows[-1]), flush=True)
    for r in rows:
        base = next(b for b in rows if b["loop"] == r["loop"] and b["batch"] == 1)
        r["speedup"] = r["trials_per_s"] / base["trials_per_s"]
    lines = ["| loop | batch | prompts | trials | wall s | trials/s | tokens/s | × one prompt at a time | load avg |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['loop']} | {r['batch']} | {r['prompts']} | {r['trials']} | {r['wall_s']:.1f} | "
              f"{r['trials_per_s']:.2f} | {r['tokens_per_s']:.2f} | {r['speedup']:.2f} | "
              f"{r['loadavg_before'][0]:.1f}→{r['loadavg_after'][0]:.1f} |" for r in rows]
    table = "\n".join(lines)
    print(table)
    if args.json:
        args.json.write_text(json.dumps(dict(pair=pair, threads=args.threads, rows=rows, table=table,
                                             peak_rss_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20),
                                        indent=1))


if __name__ == "__main__":
    main()
