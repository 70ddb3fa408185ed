"""Numba kernels for GSD and ERSD tree drafting on Markov sources (Kobus & Gündüz, Alg. 2, 4, 5).

Randomness comes from the core's in-kernel xoshiro256++ streams (one uint64[4] state per
stream, :mod:`spectheory._kernels.core`); independent streams run under ``prange`` and each
stream's output depends only on its own state, never on the thread count.

One context step (:func:`context_step`) draws the exponentials of an exponential race,
``E_y = −log(1 − U_y)``, one per token:

* ERSD: the target winner ``X_p = argmin E_y/p(y)`` is emitted; its acceptance index is its
  arrival rank in the draft race ``E_y/q(y)`` (independent races: a second set of exponentials).
* GSD: the first m arrivals of the draft race are the m alternatives drawn from q without
  replacement (the paper's App. A), verified by recursive rejection (Alg. 4) with one uniform each;
  if all are rejected the emitted token is an inverse-CDF draw from the last residual.

Index V + 1 means 'no kept alternative accepted'.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .core import next_double


class Tables(NamedTuple):
    p_tab: np.ndarray   # (R, V) target rows
    q_tab: np.ndarray   # (R', V) draft rows
    prow: np.ndarray    # (S,) row of each state
    qrow: np.ndarray
    V: int
    S: int


@njit(cache=True, inline="always")
def _expo(st):
    return -np.log(1.0 - next_double(st))


@njit(cache=True)
def _draw_weights(st, w, V):
    """Inverse-CDF draw from non-negative weights w[0:V] (unnormalised)."""
    tot = 0.0
    for y in range(V):
        tot += w[y]
    t = next_double(st) * tot
    acc = 0.0
    last = 0
    for y in range(V):
        if w[y] > 0:
            acc += w[y]
            last = y
            if t < acc:
                return y
    return last


@njit(cache=True)
def _scratch(V):
    """A stream's work arrays for :func:`context_step`: race times E, E2, residual r, draft law
    q_i, drafted alternatives."""
    return np.empty(V), np.empty(V), np.empty(V), np.empty(V), np.empty(V, dtype=np.int64)


@njit(cache=True)
def context_step(st, s, child_row, m, method, variant, shared, tabs, E, E2, r, qi, drafts):
    """One context in state s at a vertex keeping indices ``child_row[i−1] ≥ 0``; m = largest
    kept index (GSD drafts m alternatives). Returns (acceptance index, emitted token)."""
    V = tabs.V
    p = tabs.p_tab[tabs.prow[s]]
    q = tabs.q_tab[tabs.qrow[s]]
    width = child_row.shape[0]
    if method == 1:  # ERSD
        for y in range(V):
            E[y] = _expo(st)
        if shared:
            for y in range(V):
                E2[y] = E[y]
        else:
            for y in range(V):
                E2[y] = _expo(st)
        best = -1
        bt = np.inf
        for y in range(V):
            if p[y] > 0:
                t = E[y] / p[y]
                if t < bt:
                    bt = t
                    best = y
        x = best
        if q[x] <= 0:
            idx = V + 1
        else:
            tq = E2[x] / q[x]
            idx = 1
            for y in range(V):
                if y != x and q[y] > 0 and E2[y] / q[y] < tq:
                    idx += 1
        if idx <= width and child_row[idx - 1] >= 0:
            return idx, x
        if variant == 1:  # broken: resample from p on rejection
            return V + 1, _draw_weights(st, p, V)
        return (idx if idx <= V else V + 1), x
    # GSD: first m arrivals of the draft race = m draws without replacement from q
    nq = 0
    for y in range(V):
        if q[y] > 0:
            nq += 1
    mm = m if m < nq else nq
    for y in range(V):
        E[y] = _expo(st) / q[y] if q[y] > 0 else np.inf
    for i in range(mm):
        bi = -1
        bv = np.inf
        for y in range(V):
            if E[y] < bv:
                bv = E[y]
                bi = y
        drafts[i] = bi
        E[bi] = np.inf
    if variant == 2 and mm > 0:  # broken: first alternative emitted unverified
        return 1, drafts[0]
    for y in range(V):
        r[y] = p[y]
        qi[y] = q[y]
    for i in range(mm):
        x = drafts[i]
        if variant == 0:
            tot = 0.0
            for y in range(V):
                tot += qi[y]
            for y in range(V):
                qi[y] /= tot
        u = next_double(st)
        if u * qi[x] < r[x]:
            return i + 1, x
        tot = 0.0
        for y in range(V):
            d = r[y] - qi[y]
            r[y] = d if d > 0 else 0.0
            tot += r[y]
        if tot > 0:
            for y in range(V):
                r[y] /= tot
        else:
            for y in range(V):
                r[y] = p[y]
        if variant == 0:
            qi[x] = 0.0
    return V + 1, _draw_weights(st, r, V)


@njit(cache=True, inline="always")
def _next_vertex(child, v, idx):
    """The tree walk: the vertex reached from v by acceptance index idx, −1 where idx is not kept
    below v (the iteration ends)."""
    if idx <= child.shape[1] and child[v, idx - 1] >= 0:
        return child[v, idx - 1]
    return -1


@njit(cache=True, parallel=True)
def run_tree(states, start_state, restart, tabs, child, max_index, method, variant, shared, out_gen):
    """``out_gen[k, j]``: tokens generated by iteration j of stream k (restarted from
    ``start_state`` each time when ``restart``, else continuing the text)."""
    V, S = tabs.V, tabs.S
    for k in prange(states.shape[0]):
        st = states[k].copy()
        E, E2, r, qi, drafts = _scratch(V)
        s = start_state
        for j in range(out_gen.shape[1]):
            if restart:
                s = start_state
            v = 0
            n = 0
            while True:
                idx, x = context_step(st, s, child[v], max_index[v], method, variant, shared, tabs,
                                      E, E2, r, qi, drafts)
                n += 1
                s = (s * V + x) % S
                v = _next_vertex(child, v, idx)
                if v < 0:
                    break
            out_gen[k, j] = n
        states[k] = st


@njit(cache=True, parallel=True)
def run_first_tokens(states, start_state, tabs, child, max_index, method, variant, shared, out):
    """``out[k, j, :]``: the first N generated tokens of run j of stream k, each run from
    ``start_state`` over as many iterations as it takes."""
    V, S = tabs.V, tabs.S
    N = out.shape[2]
    for k in prange(states.shape[0]):
        st = states[k].copy()
        E, E2, r, qi, drafts = _scratch(V)
        for j in range(out.shape[1]):
            s = start_state
            got = 0
            while got < N:
                v = 0
                while True:
                    idx, x = context_step(st, s, child[v], max_index[v], method, variant, shared, tabs,
                                          E, E2, r, qi, drafts)
                    if got < N:
                        out[k, j, got] = x
                        got += 1
                    s = (s * V + x) % S
                    v = _next_vertex(child, v, idx)
                    if v < 0:
                        break
        states[k] = st


@njit(cache=True, parallel=True)
def run_index_stream(states, start_state, tabs, m, method, variant, shared, out_idx, out_state):
    """Generate text with the method at every position, every context keeping indices 1..m:
    ``out_idx[k, j]`` the acceptance index at position j of stream k (V + 1: none of 1..m),
    ``out_state[k, j]`` the context state there. The indices along the text determine every
    tree's outcome (vertex (i_1..i_d) accepted iff d consecutive indices are i_1..i_d)."""
    V, S = tabs.V, tabs.S
    width = m if m > 0 else 1
    row = np.full(width, -1, dtype=np.int64)
    for i in range(m):
        row[i] = 1
    for k in prange(states.shape[0]):
        st = states[k].copy()
        E, E2, r, qi, drafts = _scratch(V)
        s = start_state
        for j in range(out_idx.shape[1]):
            idx, x = context_step(st, s, row, m, method, variant, shared, tabs, E, E2, r, qi, drafts)
            out_idx[k, j] = idx if idx <= m else V + 1
            out_state[k, j] = s
            s = (s * V + x) % S
        states[k] = st


@njit(cache=True)
def grs_list_law(p, q, tail, n_max, out):
    """Greedy rejection sampling's survival function (Harsha et al. 2010) into ``out``: the mass
    accepted by step i is p_i(x) = min(p(x), q(x)·s_i), s_0 = 0, s_i = s_{i−1} + R_{i−1}, where
    R_i = 1 − Σ_x p_i(x) = P(K > i); ``out[i] = R_i`` from R_0 = 1 until R < ``tail``. Returns the
    number of values written (−1 if ``n_max`` did not reach the tail). It also stops where R no
    longer decreases: adding R to s is then lost to rounding (R below s's last digit)."""
    V = p.shape[0]
    s = 0.0
    last = 2.0
    for i in range(n_max):
        acc = 0.0
        for x in range(V):
            m = q[x] * s
            acc += p[x] if p[x] < m else m
        R = 1.0 - acc
        out[i] = R
        if R < tail or R >= last:
            return i + 1
        last = R
        s += R
    return -1
