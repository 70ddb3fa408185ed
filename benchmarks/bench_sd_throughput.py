"""Throughput of Monte Carlo speculative sampling: Numba kernel vs plain NumPy.

What it measures
    Simulated *emitted target tokens per second per core* of standard speculative
    sampling (``spectheory.montecarlo.sd``) on first-order Markov pairs, gamma = 4:

    * ``numba``: ``simulate(pair, gamma, n, seed=...)`` (uniforms drawn internally, in chunks);
    * ``numpy``: ``simulate_numpy(pair, gamma, n, seed=...)`` (draws its uniforms itself).

    Both timings include uniform generation; ``prepare(pair)`` (cumulative/residual tables)
    is done once per pair, excluded from the timings and reported separately.
    Pairs: ``perturbed_pair(V, 1, how="mix", strength=eps)`` with eps = 0.1 (strongly
    aligned) and 0.7 (weakly aligned); V = 50 uses the full 50x50 table, V = 32,000 uses
    ``n_rows=64`` shared conditional rows (a full 32000x32000 table would not fit in memory).

How
    One thread, one core: NUMBA/OMP/OPENBLAS/MKL thread counts are set to 1 before NumPy is
    imported and the process is pinned to one CPU (``--cpu``). The JIT is warmed up first
    (not timed). Per configuration a pilot run sizes ``n_iterations`` so one run takes about
    ``--target-s`` seconds, then the run is repeated (same seed, so identical token counts)
    and the median time is reported (best time is in the JSON). tokens = sum of
    ``SimResult.n_emitted``; speedup = numba tokens/s / numpy tokens/s.

Run
    .venv/bin/python benchmarks/bench_sd_throughput.py [--quick] [--json PATH] [--cpu N]
"""
from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy/numba are imported

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

from spectheory.montecarlo.sd import prepare, simulate, simulate_numpy  # noqa: E402
from spectheory.pairs import perturbed_pair  # noqa: E402

GAMMA = 4
PAIRS = (("strong (mix 0.1)", 0.1), ("weak (mix 0.7)", 0.7))
IMPLS = {"numba": simulate, "numpy": simulate_numpy}


def machine_info(cpu) -> dict:
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    info = {"cpu_model": model, "pinned_cpu": cpu, "os_cpu_count": os.cpu_count(),
            "platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__,
            "env": {k: os.environ.get(k) for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS",
                    "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE")}}
    try:
        import threadpoolctl
        info["threadpoolctl"] = threadpoolctl.threadpool_info()
    except ImportError:
        info["threadpoolctl"] = "not installed"
    return info


def timed(fn, pair, n, prep, seed):
    t0 = time.perf_counter()
    res = fn(pair, GAMMA, n, seed=seed, prepared=prep)
    return time.perf_counter() - t0, int(res.n_emitted.sum())


def measure(impl, pair, prep, target_s, repeats, n_max, seed=12345):
    """Pilot-size n so one run takes ~target_s, then time ``repeats`` runs (same seed)."""
    fn, n = IMPLS[impl], 1000
    while True:  # pilot (also warms caches for this pair's tables)
        dt, _ = timed(fn, pair, n, prep, seed)
        if dt >= 0.1 or n >= n_max:
            break
        n = min(n_max, n * 4)
    n = int(min(n_max, max(1000, n * target_s / dt)))
    runs = [timed(fn, pair, n, prep, seed) for _ in range(repeats)]
    secs = [r[0] for r in runs]
    tokens = runs[0][1]
    assert all(r[1] == tokens for r in runs), "same seed must give the same token count"
    med = statistics.median(secs)
    return {"implementation": impl, "iterations": n, "tokens": tokens, "seconds": med,
            "best_seconds": min(secs), "all_seconds": secs, "tokens_per_s": tokens / med,
            "best_tokens_per_s": tokens / min(secs)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fast smoke run (short, 1-2 repeats)")
    ap.add_argument("--json", metavar="PATH", help="also write results to this JSON file")
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: first allowed)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random pairs")
    args = ap.parse_args(argv)

    cpu = args.cpu
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0)) if cpu is None else cpu
        os.sched_setaffinity(0, {cpu})
    if args.quick:
        target = {"numba": 0.2, "numpy": 0.2}
        repeats = {"numba": 2, "numpy": 1}
        vocabs, pairs = (50, 32_000), PAIRS[:1]
    else:
        target = {"numba": 2.0, "numpy": 2.0}
        repeats = {"numba": 5, "numpy": 3}
        vocabs, pairs = (50, 32_000), PAIRS
    n_max = {"numba": 50_000_000, "numpy": 2_000_000}

    # JIT warm-up (compilation / cache load), excluded from all timings.
    t0 = time.perf_counter()
    simulate(perturbed_pair(8, 1, how="mix", strength=0.1, seed=0), GAMMA, 100, seed=0)
    warmup_s = time.perf_counter() - t0

    info = machine_info(cpu)
    rows, prep_times = [], []
    for V in vocabs:
        for label, eps in pairs:
            n_rows = None if V <= 1000 else 64
            pair = perturbed_pair(V, 1, how="mix", strength=eps, seed=args.seed, n_rows=n_rows)
            t0 = time.perf_counter()
            prep = prepare(pair)
            prep_s = time.perf_counter() - t0
            prep_times.append({"V": V, "pair": label, "n_rows": n_rows, "prepare_seconds": prep_s})
            res = {impl: measure(impl, pair, prep, target[impl], repeats[impl], n_max[impl])
                   for impl in ("numpy", "numba")}
            base = res["numpy"]["tokens_per_s"]
            for impl in ("numpy", "numba"):
                r = res[impl]
                rows.append({"V": V, "gamma": GAMMA, "pair": label, "n_rows": n_rows, **r,
                             "speedup": r["tokens_per_s"] / base})
            print(f"# done V={V} {label}: numba {res['numba']['tokens_per_s']:.3g} tok/s, "
                  f"numpy {base:.3g} tok/s", flush=True)

    head = ["V", "gamma", "pair", "implementation", "iterations", "tokens", "seconds",
            "tokens/s", "speedup"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        v = f"{r['V']:,}" + ("" if r["n_rows"] is None else f" ({r['n_rows']} rows)")
        lines.append(f"| {v} | {r['gamma']} | {r['pair']} | {r['implementation']} | "
                     f"{r['iterations']:,} | {r['tokens']:,} | {r['seconds']:.3f} | "
                     f"{r['tokens_per_s']:,.0f} | {r['speedup']:.1f}x |")
    table = "\n".join(lines)
    print()
    print(table)
    print()
    print(f"seconds = median of {repeats['numba']} (numba) / {repeats['numpy']} (numpy) runs, "
          f"uniform generation included, prepare() excluded; JIT warm-up {warmup_s:.2f} s.")
    for p in prep_times:
        if p["V"] > 1000:
            print(f"prepare() V={p['V']:,} ({p['n_rows']} rows), {p['pair']}: "
                  f"{p['prepare_seconds']:.3f} s")
    print(f"machine: {info['cpu_model']}, pinned to CPU {cpu}; numpy {info['numpy']}, "
          f"numba {info['numba']}; threadpoolctl: "
          f"{'installed' if isinstance(info['threadpoolctl'], list) else 'not installed'}")

    if args.json:
        out = {"mode": "quick" if args.quick else "full", "gamma": GAMMA, "warmup_seconds": warmup_s,
               "prepare": prep_times, "machine": info, "results": rows, "markdown": table}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
