"""Throughput of real speculative decoding and capture: today's one-prompt path against the
batched path (spectheory.validate.batch), by weights (float32, bfloat16, int8 dynamic), on the real pair.

One configuration per process (so an outside timer can time whole processes):

    .venv/bin/python benchmarks/bench_validate_batch.py --path single --dtype float32          # today's path
    .venv/bin/python benchmarks/bench_validate_batch.py --path batched --dtype bfloat16 --batch 32
    .venv/bin/python benchmarks/bench_validate_batch.py --suite --json benchmarks/results_validate_batch.json

Work: the first ``--n`` HumanEval and ``--n`` MT-Bench prompts (chat template), ``--tokens`` tokens
each, temperature 1, seed 0; SD at ``--gamma``; ``--capture`` measures capture instead. Reported:
verified draft positions per second of decoding wall time (the trials the logits tests use),
emitted tokens per second, both with and without the prompt prefill, the seconds by phase
(draft forward, target forward, sampling distributions, verifier and records, cache surgery, AR
probe, prefill), the machine's load average before and after (the machine may be shared), and
peak memory. ``--suite`` runs every configuration of the table in turn, each in its own process,
and writes the JSON and a Markdown table. ``--pair tiny`` runs the random-weight test pair
(seconds, for the code path only).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = [  # (path, dtype, batch)
    ("single", "float32", 1),
    ("batched", "float32", 1),
    ("batched", "float32", 16),
    ("batched", "bfloat16", 1),
    ("batched", "bfloat16", 16),
    ("batched", "bfloat16", 32),
    ("batched", "int8", 16),
]


def _load():
    return os.getloadavg()


def _tiny_pair(dtype):
    sys.path.insert(0, str(ROOT / "tests"))
    import torch
    from test_validate_models import tiny_model  # noqa: E402
    t, d = tiny_model(), tiny_model(seed=1, noise=0.06)
    if dtype == "bfloat16":
        t, d = t.to(torch.bfloat16), d.to(torch.bfloat16)
    elif dtype == "int8":
        q = lambda m: torch.ao.quantization.quantize_dynamic(m, {torch.nn.Linear}, dtype=torch.qint8)  # noqa: E731
        t, d = q(t), q(d)
    prompts = [[1, 4, 10 + i, 11, 12, 2, 1, 5] for i in range(16)]
    return t, d, prompts, [2], ["code" if i % 2 else "chat" for i in range(16)]


def one(args) -> dict:
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    load0 = _load()
    t0 = time.perf_counter()
    if args.pair == "tiny":
        tm, dm, ids, stops, cats = _tiny_pair(args.dtype)
        ids, cats = ids[:2 * args.n], cats[:2 * args.n]
    else:
        from spectheory.validate.models import install_default_pair, load_pair, stop_ids
        from spectheory.validate.prompts import load_prompts, render
        tdir, ddir = install_default_pair(log=lambda *a: None)
        tm, dm, tok = load_pair(str(tdir), str(ddir), dtype=args.dtype)
        ps = load_prompts("human-eval", args.n) + load_prompts("mt-bench", args.n)
        ids = [render(p, tok) for p in ps]
        cats = [p.category for p in ps]
        stops = stop_ids(tok)
    load_s = time.perf_counter() - t0
    prof: dict = {}
    t1 = time.perf_counter()
    if args.capture:
        from spectheory.validate.capture import capture_batch, capture_trace
        if args.path == "single":
            res = [capture_trace(tm, dm, p, args.tokens, 1.0, seed=i, stop_ids=stops) for i, p in enumerate(ids)]
        else:
            res = capture_batch(tm, dm, ids, args.tokens, 1.0, seeds=range(len(ids)), stop_ids=stops,
                                batch=args.batch)
        wall = time.perf_counter() - t1
        positions = int(sum(r.T for r in res))
        prefill = float(sum(r.meta["prefill_target_s"] + r.meta["prefill_draft_s"] for r in res))
        emitted = positions
    else:
        from spectheory.validate.specdec import speculative_decode, speculative_decode_batch
        if args.path == "single":
            res = [speculative_decode(tm, dm, p, args.gamma, args.tokens, 1.0, seed=i, stop_ids=stops,
                                      probe_every=4, profile=prof) for i, p in enumerate(ids)]
        else:
            res = speculative_decode_batch(tm, dm, ids, args.gamma, args.tokens, 1.0, seeds=range(len(ids)),
                                           stop_ids=stops, batch=args.batch, probe_every=4, profile=prof)
        wall = time.perf_counter() - t1
        positions = int(sum(r.verified()[0].size for r in res))
        emitted = int(sum(r.emitted.sum() for r in res))
        prefill = prof.get("prefill", 0.0)
    load1 = _load()
    out = dict(path=args.path, dtype=args.dtype, batch=args.batch if args.path == "batched" else 1,
               pair=args.pair, prompts=len(ids), tokens=args.tokens, gamma=None if args.capture else args.gamma,
               what="capture" if args.capture else "sd", threads=torch.get_num_threads(), model_load_s=load_s,
               wall_s=wall, prefill_s=prefill, positions=positions, emitted=emitted,
               positions_per_s=positions / wall, positions_per_s_no_prefill=positions / max(wall - prefill, 1e-9),
               tokens_per_s=emitted / wall, phases_s={k: round(v, 3) for k, v in sorted(prof.items())},
               other_s=wall - sum(prof.values()) if prof else None, loadavg_before=load0, loadavg_after=load1,
               peak_rss_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20,
               cpu=_cpu_name())
    if not args.capture:
        out["accept_rate"] = float(np.mean(np.concatenate([r.verified()[0] for r in res])))
    return out


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def table(rows) -> str:
    base = {r["what"]: r for r in rows if r["path"] == "single"}
    lines = ["| what | path | weights | batch | positions | wall s | positions/s | × today's | tokens/s | "
             "draft fwd s | target fwd s | sampling s | verify s | cache s | probe s | prefill s | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ph = r.get("phases_s") or {}
        b = base.get(r["what"])
        x = r["positions_per_s"] / b["positions_per_s"] if b else float("nan")
        lines.append(
            f"| {r['what']} | {r['path']} | {r['dtype']} | {r['batch']} | {r['positions']} | {r['wall_s']:.1f} | "
            f"{r['positions_per_s']:.2f} | {x:.1f} | {r['tokens_per_s']:.2f} | {ph.get('draft forward', 0):.1f} | "
            f"{ph.get('target forward', 0):.1f} | {ph.get('sampling', 0):.1f} | {ph.get('verify and records', 0):.1f} | "
            f"{ph.get('cache', 0):.1f} | {ph.get('AR probe', 0):.1f} | {r['prefill_s']:.1f} | "
            f"{r['loadavg_before'][0]:.1f}→{r['loadavg_after'][0]:.1f} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", choices=("single", "batched"), default="batched")
    ap.add_argument("--dtype", choices=("float32", "bfloat16", "int8"), default="bfloat16")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--n", type=int, default=8, help="prompts per set (HumanEval, MT-Bench)")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--capture", action="store_true", help="measure capture instead of SD")
    ap.add_argument("--pair", choices=("default", "tiny"), default="default")
    ap.add_argument("--suite", action="store_true", help="run every configuration, each in its own process")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if not args.suite:
        r = one(args)
        print(json.dumps(r))
        if args.json:
            args.json.write_text(json.dumps(r, indent=1))
        return
    rows = []
    for what in ("sd", "capture"):
        for path, dtype, b in SUITE:
            cmd = [sys.executable, __file__, "--path", path, "--dtype", dtype, "--batch", str(b), "--n", str(args.n),
                   "--tokens", str(args.tokens), "--gamma", str(args.gamma), "--threads", str(args.threads),
                   "--pair", args.pair] + (["--capture"] if what == "capture" else [])
            res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
            if res.returncode or not lines:
                print(res.stderr[-2000:], file=sys.stderr)
                raise SystemExit(f"configuration {path} {dtype} {b} {what} failed")
            rows.append(json.loads(lines[-1]))
            print(table(rows).splitlines()[-1], flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "table": table(rows)}, indent=1))


if __name__ == "__main__":
    main()
