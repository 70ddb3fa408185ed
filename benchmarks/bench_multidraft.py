"""Benchmark: time per selection step against V and K (SpecTr-GBV's Eq. 2 sum vs K-SEQ's ρ
bisection), and Monte Carlo throughput of the multi-draft kernels.

Usage::

    python benchmarks/bench_multidraft.py [--quick]

Prints a table; timings are best-of-5 wall-clock on whatever machine runs it (report the
load: the development machine is 2 cores shared by several jobs).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from spectheory._kernels import multidraft as _k
from spectheory.montecarlo import multidraft as mc
from spectheory.pairs import aligned_pair
from spectheory.rules import multidraft as R


def best_time(fn, reps):
    fn()
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    Vs = (1024, 8192, 32768) if a.quick else (1024, 4096, 16384, 65536, 262144)
    Ks = (2, 8, 32, 128)
    rng = np.random.default_rng(0)
    print("time per selection step (µs)")
    print(f"{'V':>8} {'K':>5} {'SpecTr-GBV (Eq. 2)':>20} {'K-SEQ ρ bisection':>20}")
    for V in Vs:
        p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
        for K in Ks:
            reps = max(3, 300_000 // V)
            t1 = best_time(lambda: _k.selection_step(p, q, 0.3, 0.2, K), reps)
            it = int(np.ceil(np.log2(K))) + 1
            t2 = best_time(lambda: _k.kseq_rho_step(p, q, K, it), reps)
            print(f"{V:>8} {K:>5} {t1 * 1e6:>20.2f} {t2 * 1e6:>20.2f}")
    print("\nMonte Carlo throughput (iterations/s, first iteration only, V = 3 order-1 pair)")
    pair = aligned_pair(3, 1, "weak", seed=1)
    n = 50_000 if a.quick else 500_000
    for name, rule in (("SpecTr-GBV", R.SPECTR_GBV), ("K-SEQ", R.KSEQ)):
        for g, K in ((2, 2), (3, 4)):
            mc.simulate(pair, g, K, 1000, 1, rule=rule, seed=0)
            t0 = time.perf_counter()
            mc.simulate(pair, g, K, n, 1, rule=rule, seed=1)
            dt = time.perf_counter() - t0
            print(f"  {name:<11} γ={g} K={K}: {n / dt:,.0f} it/s")


if __name__ == "__main__":
    main()
