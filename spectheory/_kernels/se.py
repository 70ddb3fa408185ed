"""Numba kernels for Speculative Ensemble (Fu et al., ICML 2025) on Markov sources.

One loop implements Alg. 2 (App. B.2) step by step; with two members it is Alg. 1 (App.
B.1) when a rejection hands the turn back to the default proposer (``after_reject = 1``,
the prose of B.2; the exact engines show Alg. 2 read so and Alg. 1 have the same law), and
it is the speculative-based ensemble of Sec. 3.2 when the bonus token left after a fully
accepted proposal is discarded (``kind = 0``). Every call of a member is counted.

Kinds: 0 = Sec. 3.2, 1 = Alg. 1, 2 = Alg. 2. Draws: in-kernel xoshiro256++
(:mod:`spectheory._kernels.core`), alias tables for every member row and residual row.
Tables (a :class:`Tables` NamedTuple): ``tab`` (n, S, V) member rows, ``acc`` (n, S, V)
acceptance probability of a token proposed by member k (rule-specific), alias tables of
the member rows and of the residual rows, row index ``k·S + s``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .core import alias_draw, next_double


class Tables(NamedTuple):
    tab: np.ndarray        # (n, S, V)
    acc: np.ndarray        # (n, S, V)
    m_prob: np.ndarray     # (n·S, V)
    m_alias: np.ndarray
    r_prob: np.ndarray     # (n·S, V) residual rows
    r_alias: np.ndarray
    gam: np.ndarray        # (n,) int64
    V: int
    S: int
    kind: int
    first: int
    after_reject: int      # 0: Alg. 2 pseudocode, 1: default proposer restarts (Alg. 1 / B.2 prose)
    bonus_unchecked: int
    drop: int              # 1: a rejection emits nothing (broken rule)


@njit(cache=True)
def _run(rng, T, start_state, n_tokens, out, counters, sc_tok, sc_org, lens):
    """Run one stream from ``start_state`` until ≥ ``n_tokens`` tokens are emitted.

    out: the first ``out.shape[0]`` emitted tokens (may be empty). counters (int64 row):
    [0] tokens emitted, [1] steps, [2] Score calls, [3 : 3+n] calls per member,
    [3+n : 3+2n] verification attempts per proposing member, [3+2n : 3+3n] acceptances.
    """
    n = T.tab.shape[0]
    V, S = T.V, T.S
    s = start_state
    nsc = 0
    for j in range(n):
        lens[j] = 0
    emitted = 0
    rec = out.shape[0]
    max_steps = 1000 * n_tokens + 1000
    while emitted < n_tokens and counters[1] < max_steps:
        counters[1] += 1
        if nsc == 0:
            k = T.first
            st = s
            for _ in range(T.gam[k]):
                x = alias_draw(T.m_prob, T.m_alias, k * S + st, next_double(rng))
                sc_tok[nsc] = x
                sc_org[nsc] = k
                nsc += 1
                st = (st * V + x) % S
            counters[3 + k] += T.gam[k]
            lens[k] = T.gam[k]
            continue
        # the member with the shortest cache scores S_c and draws a bonus token
        i = 0
        for j in range(1, n):
            if lens[j] < lens[i]:
                i = j
        counters[3 + i] += 1
        counters[2] += 1
        st = s
        for j in range(nsc):
            st = (st * V + sc_tok[j]) % S
        t = alias_draw(T.m_prob, T.m_alias, i * S + st, next_double(rng))
        sc_tok[nsc] = t
        sc_org[nsc] = i
        nsc += 1
        lens[i] = nsc
        rejected = False
        while True:
            full = True
            for j in range(n):
                if lens[j] == 0:
                    full = False
            if not full:
                break
            x = sc_tok[0]
            k = sc_org[0]
            counters[3 + n + k] += 1
            if next_double(rng) < T.acc[k, s, x]:
                counters[3 + 2 * n + k] += 1
                if emitted < rec:
                    out[emitted] = x
                emitted += 1
                s = (s * V + x) % S
                for j in range(1, nsc):
                    sc_tok[j - 1] = sc_tok[j]
                    sc_org[j - 1] = sc_org[j]
                nsc -= 1
                for j in range(n):
                    lens[j] -= 1
            else:
                if T.drop == 0:
                    y = alias_draw(T.r_prob, T.r_alias, k * S + s, next_double(rng))
                    if emitted < rec:
                        out[emitted] = y
                    emitted += 1
                    s = (s * V + y) % S
                nsc = 0
                for j in range(n):
                    lens[j] = 0
                rejected = True
                break
        if T.kind != 2 and not rejected:
            # two-model algorithms after a fully accepted proposal: S_c = [bonus]
            if T.bonus_unchecked == 1 or T.kind == 0:
                if T.bonus_unchecked == 1:
                    y = sc_tok[0]
                    if emitted < rec:
                        out[emitted] = y
                    emitted += 1
                    s = (s * V + y) % S
                nsc = 0
                for j in range(n):
                    lens[j] = 0
                continue
        if rejected and T.after_reject == 1:
            continue
        m = T.gam[i] - 1
        st = s
        for j in range(nsc):
            st = (st * V + sc_tok[j]) % S
        for _ in range(m):
            x = alias_draw(T.m_prob, T.m_alias, i * S + st, next_double(rng))
            sc_tok[nsc] = x
            sc_org[nsc] = i
            nsc += 1
            st = (st * V + x) % S
        counters[3 + i] += m
        lens[i] += m
    counters[0] += emitted
    return s


@njit(cache=True)
def se_first_tokens(states, T, start_state, out):
    """Independent runs from ``start_state``: first ``out.shape[1]`` emitted tokens of run r
    into ``out[r]``. Runs are split into contiguous blocks, one per xoshiro stream
    ``states[j]`` (block j = runs ⌈jR/K⌉ … ⌈(j+1)R/K⌉ − 1), run one after another."""
    R = out.shape[0]
    K = states.shape[0]
    n = T.tab.shape[0]
    buf = int(T.gam.sum()) + n + 2
    for r in range(R):
        j = (r * K) // R
        if r == 0 or (r * K) // R != ((r - 1) * K) // R:
            rng = states[j].copy()
        counters = np.zeros(3 + 3 * n, dtype=np.int64)
        _run(rng, T, start_state, out.shape[1], out[r], counters,
             np.empty(buf, dtype=np.int64), np.empty(buf, dtype=np.int64), np.empty(n, dtype=np.int64))
    return out


@njit(cache=True)
def se_streams(states, T, start_state, n_tokens, counters):
    """Stream r emits ≥ ``n_tokens`` tokens from ``start_state``; ``counters[r]`` as in
    :func:`_run`."""
    R = counters.shape[0]
    n = T.tab.shape[0]
    buf = int(T.gam.sum()) + n + 2
    empty = np.empty(0, dtype=np.int64)
    for r in range(R):
        rng = states[r].copy()
        _run(rng, T, start_state, n_tokens, empty, counters[r],
             np.empty(buf, dtype=np.int64), np.empty(buf, dtype=np.int64), np.empty(n, dtype=np.int64))
    return counters
