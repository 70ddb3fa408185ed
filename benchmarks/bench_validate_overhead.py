"""The toolkit's own per-position overhead in ``validate`` (everything but the model forwards).

What it measures
    ``spectheory validate`` runs a real pair on CPU; with Qwen2.5-Coder 1.5B / 0.5B
    (V = 151,936) a one-token target forward costs about 0.5 s and a draft forward 0.2 s on
    a 2-core machine. Everything the toolkit does *around* those forwards scales with V:
    sampling distributions (softmax in float64), drawing tokens, the exact statistics and
    top-k slice of each position, and the verifier. This script measures that overhead with
    a tiny random-weight Qwen2-style pair whose vocabulary is the real one (V = 151,936) and
    whose hidden sizes are tiny, so the forwards are cheap and the overhead shows.

    Part 1, ``capture_trace``: ms per generated position, by function.
    Part 2, ``speculative_decode`` at γ = 1, 2, 4: ms per SD iteration, by function.
    Part 3, direct calls on random logits at V (no model): ms per call.

    Function times are cProfile cumulative times divided by positions (iterations);
    "model forward" is ``CachedLM.feed`` (the forward plus its logits copy, timed separately
    by the toolkit and excluded from the overhead); "other" is the rest of the wall time
    (loop bookkeeping, list appends, the trace/run assembly). Each configuration is run
    ``--repeats`` times; the table shows the median and the [min, max] of the per-position
    overhead. The machine may be shared: state its load with the numbers.

Run
    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_validate_overhead.py [--tokens 24]
        [--repeats 3] [--gammas 1,2,4] [--top-k K] [--top-p P] [--temperature T] [--vocab V]
        [--lm-head-scale S]
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import numpy as np

V_QWEN = 151_936

# (label, predicate on a pstats key (file, line, name)); a function is counted in the first
# bucket it matches (cumulative times, less those of other buckets' functions it calls).
BUCKETS = [
    ("model forward (CachedLM.feed, excluded)", lambda f, n: f.endswith(os.path.join("validate", "hf.py"))
     and n == "feed"),
    ("sampling_probs (softmax, filters)", lambda f, n: n == "sampling_probs"),
    ("draw a token (Generator.choice / inverse CDF)",
     lambda f, n: (n == "choice" and f.endswith("bench_validate_overhead.py")) or n == "sample_index"),
    ("sufficient_statistics (stats + top-k slice)", lambda f, n: n in ("sufficient_statistics",
                                                                       "_sufficient_statistics")),
    ("speculative_verify (its draws excluded)", lambda f, n: n in ("speculative_verify", "_verify",
                                                                     "speculative_verify_unchecked")),
    ("accept_probability (recorded a_j)", lambda f, n: n == "accept_probability"),
    ("CompactTrace.concat_rows (once per trace)", lambda f, n: n == "concat_rows"),
]


class _ProfiledGenerator(np.random.Generator):
    """``np.random.Generator`` whose ``choice`` is a Python method, so that cProfile sees it
    (the Cython method is invisible to it). Same bit generator, same stream."""

    def choice(self, *a, **kw):
        return super().choice(*a, **kw)


def _profiled_default_rng(seed=None):
    return _ProfiledGenerator(np.random.PCG64(seed))


def tiny_pair(V: int, scale: float = 1.0):
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                                   initializer_range=0.2, tie_word_embeddings=False)
    t = transformers.Qwen2ForCausalLM(cfg).eval()
    d = transformers.Qwen2ForCausalLM(cfg).eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in d.parameters():
            p.add_(0.06 * torch.randn(p.shape, generator=g))
        t.lm_head.weight.mul_(scale)  # scale > 1: peaked distributions, like a trained LM's
        d.lm_head.weight.mul_(scale)
    return t, d


def profiled(fn):
    """(result, wall seconds, {bucket: seconds}) of ``fn()`` under cProfile."""
    prof = cProfile.Profile()
    real = np.random.default_rng
    np.random.default_rng = _profiled_default_rng  # validate's generators become _ProfiledGenerator
    try:
        t0 = time.perf_counter()
        prof.enable()
        res = fn()
        prof.disable()
        wall = time.perf_counter() - t0
    finally:
        np.random.default_rng = real
    st = pstats.Stats(prof).stats

    def bucket(key):
        f, _line, n = key
        for b, pred in BUCKETS:
            if pred(f, n):
                return b
        return None
    # exclusive attribution: a bucket's cumulative time less the time of other buckets'
    # functions it calls directly (e.g. the draws inside speculative_verify count as draws)
    out = {b: 0.0 for b, _ in BUCKETS}
    for key, (_cc, _nc, _tt, ct, callers) in st.items():
        b = bucket(key)
        if b is None:
            continue
        if not callers:
            out[b] += ct
        for ckey, cstat in callers.items():
            cb = bucket(ckey)
            if cb == b:
                continue  # a call inside its own bucket (recursion, a public wrapper's core)
            out[b] += cstat[3]
            if cb is not None:
                out[cb] -= cstat[3]
    return res, wall, out


def table(title, rows, unit):
    """rows: list of (bucket dict per repeat, divisor per repeat, wall per repeat)."""
    print(f"\n{title}  ({unit}; median [min, max] over {len(rows)} runs)")
    per = [{b: v / n for b, v in d.items()} for d, n, _ in rows]
    walls = [w / n for _, n, w in rows]
    fwd = BUCKETS[0][0]
    lines = []
    for b, _ in BUCKETS:
        vals = [p[b] for p in per]
        if max(vals) == 0:
            continue
        lines.append((b, vals))
    other = [w - sum(p.values()) for w, p in zip(walls, per)]
    lines.append(("other (loop, bookkeeping, assembly)", other))
    over = [w - p[fwd] for w, p in zip(walls, per)]
    lines.append(("TOTAL overhead (wall − model forward)", over))
    for b, vals in lines:
        print(f"  {b:<46} {1e3 * np.median(vals):9.2f}  [{1e3 * min(vals):7.2f}, {1e3 * max(vals):7.2f}]")
    return {b: float(np.median(v)) for b, v in lines}


def bench_capture(pair, args):
    from spectheory.validate.capture import capture_trace
    rows = []
    for r in range(args.repeats):
        tr, wall, d = profiled(lambda: capture_trace(
            *pair, [1, 2, 3, 4, 5], args.tokens, args.temperature, top_k=args.top_k, top_p=args.top_p,
            seed=r, vocab_size=args.vocab))
        rows.append((d, tr.T, wall))
    return table(f"capture_trace, V = {args.vocab}, {args.tokens} positions", rows, "ms per position")


def bench_sd(pair, args, gamma):
    from spectheory.validate.specdec import speculative_decode
    rows = []
    for r in range(args.repeats):
        run, wall, d = profiled(lambda: speculative_decode(
            *pair, [1, 2, 3, 4, 5], gamma, args.tokens, args.temperature, top_k=args.top_k, top_p=args.top_p,
            seed=r, vocab_size=args.vocab, ar_probe=True))
        rows.append((d, run.n_iterations, wall))
    return table(f"speculative_decode γ = {gamma}, V = {args.vocab}, {args.tokens} tokens", rows,
                 "ms per SD iteration")


def bench_direct(args):
    from spectheory.verifiers.sd import speculative_verify
    from spectheory.validate.trace import sampling_probs, sufficient_statistics
    V = args.vocab
    rng = np.random.default_rng(0)
    zt = (3 * rng.standard_normal(V)).astype(np.float32)
    zd = zt + (0.5 * rng.standard_normal(V)).astype(np.float32)
    kw = dict(top_k=args.top_k, top_p=args.top_p)
    p = sampling_probs(zt.astype(np.float64), args.temperature, **kw)
    q = sampling_probs(zd.astype(np.float64), args.temperature, **kw)

    def t(f, n=15):
        f()
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        return 1e3 * np.median(ts), 1e3 * min(ts)

    print(f"\ndirect calls on random logits, V = {V} (ms per call; median, min of 15)")
    res = {}
    cases = [("sampling_probs, 1 row", lambda: sampling_probs(zt.astype(np.float64), args.temperature, **kw)),
             ("sampling_probs, 5 rows", lambda: sampling_probs(
                 np.tile(zt.astype(np.float64), (5, 1)), args.temperature, **kw)),
             ("rng.choice(V, p=p)", lambda: rng.choice(V, p=p)),
             ("sufficient_statistics, 1 row", lambda: sufficient_statistics(p[None], q[None], np.array([3]), 256))]
    try:  # after the speed-up (absent before it)
        from spectheory.rng import sample_index
        from spectheory.verifiers.sd import speculative_verify_unchecked
        cases.insert(3, ("sample_index(rng, p) (same draw)", lambda: sample_index(rng, p)))
    except ImportError:
        speculative_verify_unchecked = None
    for g in (1, 2, 4):
        P, Q = np.tile(p, (g + 1, 1)), np.tile(q, (g, 1))
        x = np.full(g, int(np.argmax(q)))
        cases.append((f"speculative_verify γ={g}", lambda P=P, Q=Q, x=x: speculative_verify(P, Q, x, seed=rng)))
        if speculative_verify_unchecked is not None:
            cases.append((f"speculative_verify_unchecked γ={g}",
                          lambda P=P, Q=Q, x=x: speculative_verify_unchecked(P, Q, x, rng)))
    for nm, f in cases:
        med, lo = t(f)
        res[nm] = med
        print(f"  {nm:<46} {med:9.2f}  (min {lo:.2f})")
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", type=int, default=V_QWEN)
    ap.add_argument("--tokens", type=int, default=24, help="positions (capture) / tokens (SD) per run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gammas", default="1,2,4")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--top-k", type=int, default=None)
    ap.add_argument("--top-p", type=float, default=None)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the tiny forwards)")
    ap.add_argument("--lm-head-scale", type=float, default=1.0,
                    help="scale the pair's output layers: 1 gives near-flat rows (random weights), "
                         "6 peaked ones (top p 0.1-0.35, top-p 0.95 nuclei of hundreds of tokens)")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: capture,sd,direct")
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(args.threads)
    skip = set(filter(None, args.skip.split(",")))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; temperature {args.temperature:g}, "
          f"top_k {args.top_k}, top_p {args.top_p}, lm-head scale {args.lm_head_scale:g}")
    pair = tiny_pair(args.vocab, args.lm_head_scale)
    if "capture" not in skip:
        bench_capture(pair, args)
    if "sd" not in skip:
        for g in (int(s) for s in args.gammas.split(",")):
            bench_sd(pair, args, g)
    if "direct" not in skip:
        bench_direct(args)


if __name__ == "__main__":
    main()
