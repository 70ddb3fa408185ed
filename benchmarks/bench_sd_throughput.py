"""Throughput of Monte Carlo speculative sampling: public API vs a yardstick kernel vs NumPy.

What it measures
    Simulated *emitted target tokens per CPU-second* (``time.process_time``, all threads of
    this process) of standard speculative sampling (Leviathan et al. 2023, Alg. 1), γ = 4,
    on first-order Markov pairs, for three implementations of the same process in one
    process:

    * ``simulate``: the public API, ``spectheory.montecarlo.sd.simulate(pair, 4, n,
      seed=..., prepared=prep, chains=CHAINS)`` (fast method: alias tables, precomputed
      acceptance/residual tables, lazy drafting, in-kernel xoshiro256++, ``CHAINS``
      independent chains under ``prange``; per-iteration τ and token counts are stored);
    * ``yardstick``: :func:`yardstick_kernel` below, the minimal kernel for the same process
      written here for comparison (its own inlined xoshiro256++ held in registers, alias
      tables, acceptance ratios, drafting stopped at the first rejection, the same ``CHAINS``
      chains under ``prange``, only the token count is kept: no per-iteration output);
    * ``numpy``: ``simulate_numpy`` (the plain-NumPy twin of the reference kernel, one
      thread; it has no threads to give, so it is timed once and shown on every row).

    Pairs: ``perturbed_pair(V, 1, how="mix", strength=eps)``, eps = 0.1 (strong draft,
    β ≈ 0.95) and 0.7 (weak, β ≈ 0.65); V = 50 uses the full 50 × 50 table, V = 32,000 uses
    ``n_rows=64`` shared rows (a full 32,000² table does not fit in memory). Threads: 1 and
    2 (``numba.set_num_threads``); the stream layout does not depend on it, so both thread
    counts simulate exactly the same tokens. ``prepare()`` is done once per pair and
    excluded (reported separately); uniform/random generation is included everywhere.

How
    The JIT is warmed up first (not timed). Per configuration a pilot run sizes
    ``n_iterations`` to about ``--target-s`` CPU seconds, then each implementation is run
    ``repeats`` times and the median is reported; tokens/wall-s is reported beside
    tokens/CPU-s (with 2 threads it is what a second core buys). The machine may be shared:
    CPU time is robust to other processes' load only up to cache and memory-bandwidth
    contention, so state the load with the numbers.

Run
    .venv/bin/python benchmarks/bench_sd_throughput.py [--quick] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numba
import numpy as np
from numba import njit, prange, uint64

from spectheory.montecarlo.sd import prepare, simulate, simulate_numpy
from spectheory.pairs import perturbed_pair
from spectheory.rng import stream_states

GAMMA = 4
CHAINS = 16  # independent chains (fixed, so every thread count simulates the same tokens)
PAIRS = (("strong", 0.1), ("weak", 0.7))


# --- the yardstick: a minimal kernel for the same process, written independently ---------

@njit(uint64(uint64, uint64), inline="always")
def _rotl(x, k):
    return (x << k) | (x >> (uint64(64) - k))


@njit(inline="always")
def _u01(r):
    return float(r >> uint64(11)) * (1.0 / 9007199254740992.0)


@njit(parallel=True)
def yardstick_kernel(states, n_per_chain, gamma, qrow, pqrow, prow, q_prob, q_alias, acc, r_prob,
                     r_alias, p_prob, p_alias, out_tokens):
    """First-order pair (state = last token; ``qrow``/``pqrow``/``prow`` map it to its draft
    row, (target, draft) row pair and target row). Chain c runs
    ``n_per_chain`` iterations with xoshiro256++ state ``states[c]``; ``out_tokens[c]`` gets
    its number of emitted tokens."""
    V = q_prob.shape[1]
    for c in prange(states.shape[0]):
        s0, s1, s2, s3 = states[c, 0], states[c, 1], states[c, 2], states[c, 3]
        s = 0
        total = 0
        for _ in range(n_per_chain):
            for i in range(gamma + 1):
                # one xoshiro256++ step, inlined
                r = _rotl(s0 + s3, uint64(23)) + s0
                t = s1 << uint64(17)
                s2 ^= s0
                s3 ^= s1
                s1 ^= s2
                s0 ^= s3
                s2 ^= t
                s3 = _rotl(s3, uint64(45))
                x = _u01(r) * V
                j = int(x)
                if i == gamma:  # bonus from p
                    row = prow[s]
                    s = j if x - j < p_prob[row, j] else p_alias[row, j]
                    total += gamma + 1
                    break
                row = qrow[s]
                tok = j if x - j < q_prob[row, j] else q_alias[row, j]
                k = pqrow[s]
                a = acc[k, tok]
                if a < 1.0:
                    r = _rotl(s0 + s3, uint64(23)) + s0
                    t = s1 << uint64(17)
                    s2 ^= s0
                    s3 ^= s1
                    s1 ^= s2
                    s0 ^= s3
                    s2 ^= t
                    s3 = _rotl(s3, uint64(45))
                    if _u01(r) >= a:  # reject: correction from the residual
                        r = _rotl(s0 + s3, uint64(23)) + s0
                        t = s1 << uint64(17)
                        s2 ^= s0
                        s3 ^= s1
                        s1 ^= s2
                        s0 ^= s3
                        s2 ^= t
                        s3 = _rotl(s3, uint64(45))
                        x = _u01(r) * V
                        j = int(x)
                        s = j if x - j < r_prob[k, j] else r_alias[k, j]
                        total += i + 1
                        break
                s = tok
        out_tokens[c] = total


def yardstick_tables(pair, prep):
    """The yardstick's tables, taken from ``prepare`` (table construction is not timed)."""
    assert pair.order == 1
    t = prep.tables
    return (t.qrow, t.pqrow, t.prow, t.q_prob, t.q_alias, t.accept, t.r_prob, t.r_alias,
            t.p_prob, t.p_alias)


# --- what limits V = 32,000: dependent loads from tables far larger than the caches --------

@njit
def _chase(nxt, steps):
    i = 0
    for _ in range(steps):
        i = nxt[i]
    return i


@njit
def _gather(tab, idx):
    acc = 0
    for i in range(idx.shape[0]):
        acc += tab[idx[i]]
    return acc


def random_load_ns(n_bytes: int, steps: int = 4_000_000, seed: int = 0) -> tuple[float, float]:
    """Nanoseconds per random 8-byte load over a buffer of ``n_bytes``: (dependent, each load
    waiting for the previous one: a pointer chase along one random cycle; independent: a
    gather at precomputed random indices, as many loads in flight as the core allows)."""
    n = max(1024, n_bytes // 8)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    nxt = np.empty(n, dtype=np.int64)
    nxt[perm] = np.roll(perm, -1)
    idx = rng.integers(0, n, steps)
    _chase(nxt, 1000)
    _gather(nxt, idx[:1000])
    t0 = time.perf_counter()
    _chase(nxt, steps)
    dep = (time.perf_counter() - t0) / steps * 1e9
    t0 = time.perf_counter()
    _gather(nxt, idx)
    return dep, (time.perf_counter() - t0) / steps * 1e9


def table_loads_per_token(pair, prep, n=200_000, seed=7):
    """Random table loads per emitted token of the fast path (standard rule): a drafted token
    reads an alias record (probability; the alias entry too when the column is not kept,
    counted as always: an upper count) and its acceptance entry, a correction or bonus reads
    one more alias record. Of these, about two per drafted token form a dependent chain
    (record → token → acceptance entry → next state)."""
    r = simulate(pair, GAMMA, n, seed=seed, prepared=prep)
    drafted = np.minimum(r.tau + 1, GAMMA).astype(np.float64)
    return float((3 * drafted + 2).sum() / r.n_emitted.sum()), float((2 * drafted + 1).sum() / r.n_emitted.sum())


# --- timing ----------------------------------------------------------------------------------

def machine_info() -> dict:
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    return {"cpu_model": model, "os_cpu_count": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
            "threading_layer": numba.threading_layer(), "loadavg_start": os.getloadavg()}


def _clock(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    tokens = fn()
    return time.process_time() - c0, time.perf_counter() - w0, tokens


def run_simulate(pair, prep, n, seed=12345):
    return int(simulate(pair, GAMMA, n, seed=seed, prepared=prep, chains=CHAINS).n_emitted.sum())


def run_yardstick(tabs, n, seed=12345):
    out = np.zeros(CHAINS, dtype=np.int64)
    yardstick_kernel(stream_states(seed, CHAINS), n // CHAINS, GAMMA, *tabs, out)
    return int(out.sum())


def run_numpy(pair, prep, n, seed=12345):
    return int(simulate_numpy(pair, GAMMA, n, seed=seed, prepared=prep).n_emitted.sum())


def measure(fn, target_s, repeats, n_max):
    n = 8 * CHAINS * 16
    while True:
        cpu, _, _ = _clock(lambda: fn(n))
        if cpu >= 0.05 or n >= n_max:
            break
        n = min(n_max, n * 4)
    n = int(min(n_max, max(n, n * target_s / max(cpu, 1e-9))))
    n -= n % CHAINS
    runs = [_clock(lambda: fn(n)) for _ in range(repeats)]
    cpu = statistics.median(r[0] for r in runs)
    wall = statistics.median(r[1] for r in runs)
    tokens = runs[0][2]
    return {"iterations": n, "tokens": tokens, "cpu_s": cpu, "wall_s": wall,
            "tokens_per_cpu_s": tokens / cpu, "tokens_per_wall_s": tokens / wall,
            "all_cpu_s": [r[0] for r in runs]}


def main(argv=None):
    global CHAINS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run (short runs, 1 repeat)")
    ap.add_argument("--json", metavar="PATH", help="also write results to this JSON file")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random pairs")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    ap.add_argument("--vocab", default="50,32000", help="vocabulary sizes, comma-separated")
    ap.add_argument("--chains", type=int, default=CHAINS, help="independent chains (≥ the largest thread count)")
    args = ap.parse_args(argv)
    CHAINS = args.chains
    target, repeats = (0.3, 1) if args.quick else (2.0, 3)
    threads = [int(t) for t in args.threads.split(",")]
    max_threads = numba.config.NUMBA_NUM_THREADS

    t0 = time.perf_counter()  # JIT warm-up / cache load, excluded
    warm = perturbed_pair(8, 1, how="mix", strength=0.1, seed=0)
    wp = prepare(warm)
    run_simulate(warm, wp, 1000)
    run_yardstick(yardstick_tables(warm, wp), 1000)
    warmup_s = time.perf_counter() - t0
    info = machine_info()

    rows, preps, limits = [], [], []
    for V in [int(v) for v in args.vocab.split(",")]:
        for label, eps in PAIRS:
            n_rows = None if V <= 1000 else 64
            pair = perturbed_pair(V, 1, how="mix", strength=eps, seed=args.seed, n_rows=n_rows)
            c0 = time.perf_counter()
            prep = prepare(pair)
            preps.append({"V": V, "draft": label, "prepare_s": time.perf_counter() - c0})
            tabs = yardstick_tables(pair, prep)
            limit = None
            if V > 1000:
                table_bytes = sum(a.nbytes for a in prep.tables if isinstance(a, np.ndarray))
                dep, ind = random_load_ns(table_bytes)
                loads, dep_loads = table_loads_per_token(pair, prep)
                limit = {"table_bytes": table_bytes, "dependent_load_ns": dep, "independent_load_ns": ind,
                         "loads_per_token": loads, "dependent_loads_per_token": dep_loads,
                         "serial_tokens_per_s": 1e9 / (dep * dep_loads),
                         "parallel_tokens_per_s": 1e9 / (ind * loads)}
                limits.append({"V": V, "draft": label, **limit})
            # mean β(s) over states, from the shared rows (never the dense S × V table)
            t = prep.tables
            beta = float(np.minimum(pair.target.rows[t.prow], pair.draft.rows[t.qrow]).sum(axis=1).mean()
                         if V <= 1000 else np.mean([np.minimum(pair.target.rows[a], pair.draft.rows[b]).sum()
                                                    for a, b in zip(t.prow[:64], t.qrow[:64])]))
            npy = measure(lambda n: run_numpy(pair, prep, n), target / 2, 1, 400_000)
            for th in threads:
                if th > max_threads:
                    continue
                numba.set_num_threads(th)
                api = measure(lambda n: run_simulate(pair, prep, n), target, repeats, 200_000_000)
                yard = measure(lambda n: run_yardstick(tabs, n), target, repeats, 200_000_000)
                row = {"V": V, "n_rows": n_rows, "draft": label, "beta_mean": beta, "threads": th,
                       "simulate": api, "yardstick": yard, "numpy": npy,
                       "simulate_vs_yardstick": api["tokens_per_cpu_s"] / yard["tokens_per_cpu_s"],
                       "simulate_vs_numpy": api["tokens_per_cpu_s"] / npy["tokens_per_cpu_s"]}
                rows.append(row)
                print(f"# V={V} {label} threads={th}: simulate {api['tokens_per_cpu_s'] / 1e6:.1f} M/cpu-s, "
                      f"yardstick {yard['tokens_per_cpu_s'] / 1e6:.1f} M/cpu-s, "
                      f"numpy {npy['tokens_per_cpu_s'] / 1e3:.0f} k/cpu-s", flush=True)
    numba.set_num_threads(max_threads)

    head = ["V", "draft", "threads", "simulate tok/CPU-s", "yardstick tok/CPU-s", "simulate / yardstick",
            "NumPy twin tok/CPU-s", "simulate / NumPy", "simulate tok/wall-s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        v = f"{r['V']:,}" + ("" if r["n_rows"] is None else f" ({r['n_rows']} rows)")
        lines.append(f"| {v} | {r['draft']} (β̄={r['beta_mean']:.2f}) | {r['threads']} | "
                     f"{r['simulate']['tokens_per_cpu_s'] / 1e6:.1f} M | {r['yardstick']['tokens_per_cpu_s'] / 1e6:.1f} M | "
                     f"{r['simulate_vs_yardstick']:.2f} | {r['numpy']['tokens_per_cpu_s'] / 1e3:.0f} k | "
                     f"{r['simulate_vs_numpy']:.0f}× | {r['simulate']['tokens_per_wall_s'] / 1e6:.1f} M |")
    table = "\n".join(lines)
    print()
    print(table)
    print()
    print(f"γ = {GAMMA}, {CHAINS} chains; median of {repeats} runs of ~{target} CPU-s; JIT warm-up "
          f"{warmup_s:.2f} s (excluded); prepare(): " + ", ".join(
              f"V={p['V']:,} {p['draft']} {p['prepare_s']:.3f} s" for p in preps))
    for lim in limits:
        best = max(r["simulate"]["tokens_per_cpu_s"] for r in rows if r["V"] == lim["V"] and r["draft"] == lim["draft"])
        print(f"V={lim['V']:,} {lim['draft']}: fast tables {lim['table_bytes'] / 2**20:.0f} MiB; random load "
              f"{lim['dependent_load_ns']:.0f} ns dependent, {lim['independent_load_ns']:.1f} ns independent; "
              f"{lim['loads_per_token']:.1f} table loads per token ({lim['dependent_loads_per_token']:.1f} in a chain): "
              f"all loads serialised -> {lim['serial_tokens_per_s'] / 1e6:.1f} M tokens/s, all overlapped -> "
              f"{lim['parallel_tokens_per_s'] / 1e6:.1f} M tokens/s; simulate {best / 1e6:.1f} M")
    print(f"machine: {info['cpu_model']}, {info['os_cpu_count']} CPUs, threading layer "
          f"{info['threading_layer']}, load average at start {info['loadavg_start']}, "
          f"at end {os.getloadavg()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gamma": GAMMA, "chains": CHAINS, "warmup_s": warmup_s, "prepare": preps,
                       "machine": info, "loadavg_end": os.getloadavg(), "results": rows, "limits": limits,
                       "markdown": table}, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
