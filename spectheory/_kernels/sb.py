"""Numba kernels of SpecBranch's pipeline model (Shen et al., ICLR 2026): AR, SpS, PSD (Theorem 1's
model), PEARL-style and SpecBranch rounds with every branch rule, in simulated time.

One round is :func:`round_step`: it reads one row of uniforms (the layout below, shared
with the NumPy reference :func:`spectheory.montecarlo.sb.round_reference`, which must give
identical output), advances the pipeline state ``st = [x_a, x_w, cap, d, ready]`` (actual
source state, drafting state of the pending block, its length cap, the draft-length
signal, PSD's ready flag) and writes the round's emitted tokens and rewards. Every draw is
inverse-CDF on a precomputed cumulative row (:func:`spectheory._kernels.core.cdf_search`).

Uniform row of a round (``U = 4γ + 2·KM + 3``, KM the most branches any state forks):

* ``u[3j], u[3j+1], u[3j+2]`` — block position j: draft token, acceptance test, correction;
* ``u[3γ + t]`` — the drafted tail of a block after a rejection (rollback count, and the
  drafting context a broken keep-overlap method carries);
* ``u[4γ + i]`` — branch token i (the single head when not branching);
* ``u[4γ + KM + i]`` — the test of branch i;
* ``u[4γ + 2KM]`` — the correction after every branch failed / the target's draw (match);
* ``u[4γ + 2KM + 1]`` — the draft-length signal after a survivor;
* ``u[4γ + 2KM + 2]`` — SpS's bonus token.

:func:`sb_streams` runs independent streams one after the other (xoshiro256++ from the
sampling core fills each round's row), so results depend on the seed and the stream
layout only. It is compiled without ``parallel=True``: the rounds of one (pair, method)
are cheap, and a parallel compilation costs more time than two shared cores give back.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .core import cdf_search, draw_weights, next_double

KIND_AR, KIND_SPS, KIND_PSD, KIND_PIPE = 0, 1, 2, 3
TOK_TOPK, TOK_WOR, TOK_IID = 0, 1, 2
VER_MATCH, VER_RRS, VER_BEST_P, VER_KSEQ, VER_FIRST = 0, 1, 2, 3, 4
#: reward slots (spectheory.exact.sb.REWARDS)
R_TIME, R_BUSY, R_DBUSY, R_EMIT, R_ACC, R_RB, R_UNUSED, R_DRAFTED, R_DRAFTED_ALL, R_CALLS, R_ROUNDS, R_RBS = range(12)
N_REWARDS = 12


class SBTables(NamedTuple):
    """Everything a round reads, prepared once per (pair, method, pipeline) by
    :func:`spectheory.montecarlo.sb.prepare`."""

    V: int
    S: int
    gamma: int
    kind: int
    branching: bool
    keep_overlap: bool
    overlap: bool        # False: broken, the draft waits for the target (round time t_T + γ)
    tok: int
    ver: int
    res_argmax: bool
    KM: int
    P: np.ndarray        # (S, V) target rows
    Q: np.ndarray        # (S, V) draft rows
    pcdf: np.ndarray     # (S, V) cumulative target rows
    qcdf: np.ndarray     # (S, V) cumulative draft rows
    acc: np.ndarray      # (S, V) min(1, p/q)
    res: np.ndarray      # (S, V) residual norm(max(p − q, 0))
    rcdf: np.ndarray     # (S, V) its cumulative rows
    nxt: np.ndarray      # (S, V) next state
    trunc: np.ndarray    # (S,) draft confidence < ε
    kk: np.ndarray       # (S,) branches forked at a branch point drafted there
    order: np.ndarray    # (S, V) tokens by decreasing q (ties to the lower id)
    pol: np.ndarray      # (S, 3) cumulative draft-length signal probabilities
    rho: np.ndarray      # (S,) K-SEQ's ρ for K = kk[s]
    kcdf: np.ndarray     # (S, V) cumulative K-SEQ residual rows
    cost: np.ndarray     # (γ + 1,) target call time by positions scored − 1


def n_uniforms(gamma: int, KM: int) -> int:
    return 4 * gamma + 2 * KM + 3


@njit(cache=True, inline="always")
def _round_time(T, busy):
    g = float(T.gamma)
    if T.overlap:
        return busy if busy > g else g
    return busy + g


@njit(cache=True, inline="always")
def _draw(cdf, row, u):
    V = cdf.shape[1]
    return cdf_search(cdf[row], u * cdf[row, V - 1])


@njit(cache=True)
def _draw_masked(q, removed, left, u):
    """Draw from q restricted to tokens not removed (remaining mass ``left``)."""
    t = u * left
    acc = 0.0
    last = -1
    for x in range(q.shape[0]):
        if removed[x] or q[x] <= 0.0:
            continue
        acc += q[x]
        last = x
        if acc > t:
            return x
    return last


@njit(cache=True)
def _branch(T, x, u, base, B, removed, pc):
    """Branch stage in state x (actual = drafting context). Returns (token, survived)."""
    g, KM = T.gamma, T.KM
    V = T.V
    k = T.kk[x]
    q = T.Q[x]
    p = T.P[x]
    # --- branch tokens ---
    if T.tok == TOK_TOPK:
        for i in range(k):
            B[i] = T.order[x, i]
    elif T.tok == TOK_WOR:
        for y in range(V):
            removed[y] = False
        left = 1.0
        for i in range(k):
            y = _draw_masked(q, removed, left, u[base + i])
            B[i] = y
            removed[y] = True
            left -= q[y]
    else:
        for i in range(k):
            B[i] = _draw(T.qcdf, x, u[base + i])
    tests = base + KM
    last = base + 2 * KM
    # --- verification ---
    if T.ver == VER_FIRST:
        return B[0], True
    if T.ver == VER_MATCH:
        y = _draw(T.pcdf, x, u[last])
        for i in range(k):
            if B[i] == y:
                return y, True
        return y, False
    if T.ver == VER_BEST_P:
        b = 0
        for i in range(1, k):
            if p[B[i]] > p[B[b]]:
                b = i
        y = B[b]
        if u[tests] < T.acc[x, y]:
            return y, True
        if T.res_argmax:
            best = 0
            for z in range(1, V):
                if T.res[x, z] > T.res[x, best]:
                    best = z
            return best, False
        return _draw(T.rcdf, x, u[last]), False
    if T.ver == VER_KSEQ:
        rho = T.rho[x]
        for i in range(k):
            y = B[i]
            a = p[y] / (rho * q[y])
            if u[tests + i] < a:
                return y, True
        return _draw(T.kcdf, x, u[last]), False
    # VER_RRS: recursive rejection, without replacement unless the branches are i.i.d.
    iid = T.tok == TOK_IID
    for y in range(V):
        pc[y] = p[y]
        removed[y] = False
    left = 1.0
    for i in range(k):
        y = B[i]
        qy = q[y] if iid else q[y] / left
        if qy > 0.0:
            a = pc[y] / qy
        else:
            a = 1.0 if pc[y] > 0.0 else 0.0
        if u[tests + i] < a:
            return y, True
        # p_{i+1} = norm(max(p_i − q_i, 0)), q_i = q (i.i.d.) or q without the tried tokens
        tot = 0.0
        for z in range(V):
            qz = q[z] if iid else (0.0 if removed[z] else q[z] / left)
            dz = pc[z] - qz
            if dz > 0.0:
                tot += dz
        if tot > 0.0:
            for z in range(V):
                qz = q[z] if iid else (0.0 if removed[z] else q[z] / left)
                dz = pc[z] - qz
                pc[z] = dz / tot if dz > 0.0 else 0.0
        if not iid:
            removed[y] = True
            left -= q[y]
    if T.res_argmax:
        best = 0
        for z in range(1, V):
            if pc[z] > pc[best]:
                best = z
        return best, False
    return draw_weights(pc, pc.shape[0], u[last]), False


@njit(cache=True)
def round_step(T, u, st, out, rew, B, removed, pc):
    """One round from pipeline state ``st`` (modified in place) with uniforms ``u``; writes
    the emitted tokens to ``out`` and the round's rewards to ``rew``; returns how many
    tokens it emitted."""
    for i in range(N_REWARDS):
        rew[i] = 0.0
    g = T.gamma
    KM = T.KM
    xa = st[0]
    xw = st[1]
    if T.kind == KIND_AR:
        y = _draw(T.pcdf, xa, u[0])
        out[0] = y
        st[0] = T.nxt[xa, y]
        st[1] = st[0]
        rew[R_TIME] = T.cost[0]
        rew[R_BUSY] = T.cost[0]
        rew[R_EMIT] = 1.0
        rew[R_CALLS] = 1.0
        rew[R_ROUNDS] = 1.0
        return 1
    if T.kind == KIND_SPS:
        rew[R_TIME] = g + T.cost[g]
        rew[R_BUSY] = T.cost[g]
        rew[R_DBUSY] = g
        rew[R_DRAFTED] = g
        rew[R_DRAFTED_ALL] = g
        rew[R_CALLS] = 1.0
        rew[R_ROUNDS] = 1.0
        n = 0
        for j in range(g):
            c = _draw(T.qcdf, xa, u[3 * j])
            if u[3 * j + 1] < T.acc[xa, c]:
                out[n] = c
                n += 1
                xa = T.nxt[xa, c]
            else:
                y = _draw(T.rcdf, xa, u[3 * j + 2])
                out[n] = y
                n += 1
                st[0] = T.nxt[xa, y]
                st[1] = st[0]
                rew[R_EMIT] = n
                rew[R_ACC] = j
                rew[R_RB] = g - j
                rew[R_RBS] = g - j
                return n
        y = _draw(T.pcdf, xa, u[4 * g + 2 * KM + 2])
        out[n] = y
        n += 1
        st[0] = T.nxt[xa, y]
        st[1] = st[0]
        rew[R_EMIT] = n
        rew[R_ACC] = g
        return n
    if T.kind == KIND_PSD:
        if st[4] == 0:  # serial draft of the block, target idle
            rew[R_TIME] = g
            rew[R_DBUSY] = g
            rew[R_DRAFTED] = g
            rew[R_DRAFTED_ALL] = g
            rew[R_ROUNDS] = 1.0
            st[1] = xa
            st[4] = 1
            return 0
        rew[R_TIME] = _round_time(T, T.cost[g])
        rew[R_BUSY] = T.cost[g]
        rew[R_DBUSY] = g
        rew[R_DRAFTED] = g
        rew[R_DRAFTED_ALL] = g
        rew[R_CALLS] = 1.0
        rew[R_ROUNDS] = 1.0
        n = 0
        for j in range(g):
            c = _draw(T.qcdf, xw, u[3 * j])
            if u[3 * j + 1] < T.acc[xa, c]:
                out[n] = c
                n += 1
                xa = T.nxt[xa, c]
                xw = T.nxt[xw, c]
            else:
                y = _draw(T.rcdf, xa, u[3 * j + 2])
                out[n] = y
                n += 1
                a2 = T.nxt[xa, y]
                rew[R_EMIT] = n
                rew[R_ACC] = j
                rew[R_RB] = (g - j) + (0 if T.keep_overlap else g)
                rew[R_RBS] = g - j
                st[0] = a2
                if T.keep_overlap:
                    w = T.nxt[xw, c]
                    for t in range(g - j - 1):
                        w = T.nxt[w, _draw(T.qcdf, w, u[3 * g + t])]
                    st[1] = w
                    st[4] = 1
                else:
                    st[1] = a2
                    st[4] = 0
                return n
        st[0] = xa
        st[1] = xw
        rew[R_EMIT] = n
        rew[R_ACC] = g
        return n
    # --- PEARL / SpecBranch ---
    cap = st[2]
    d = st[3]
    n = 0
    j = 0
    while True:
        if d == 0 or j >= cap:
            break
        if d == 1 and T.trunc[xw]:
            break
        c = _draw(T.qcdf, xw, u[3 * j])
        if u[3 * j + 1] < T.acc[xa, c]:
            out[n] = c
            n += 1
            xa = T.nxt[xa, c]
            xw = T.nxt[xw, c]
            j += 1
            continue
        # rejection at block position j: correction, then the drafted tail (for the counts)
        y = _draw(T.rcdf, xa, u[3 * j + 2])
        out[n] = y
        n += 1
        w = T.nxt[xw, c]
        jj = j + 1
        t = 0
        while jj < cap and not (d == 1 and T.trunc[w]):
            w = T.nxt[w, _draw(T.qcdf, w, u[3 * g + t])]
            jj += 1
            t += 1
        m = jj
        rew[R_TIME] = _round_time(T, T.cost[m])
        rew[R_BUSY] = T.cost[m]
        rew[R_DBUSY] = g
        rew[R_EMIT] = n
        rew[R_ACC] = j
        rew[R_RB] = (m - j) + (0 if T.keep_overlap else g)
        rew[R_RBS] = m - j
        rew[R_UNUSED] = cap - m
        rew[R_DRAFTED] = g
        rew[R_DRAFTED_ALL] = g * T.kk[w]
        rew[R_CALLS] = 1.0
        rew[R_ROUNDS] = 1.0
        a2 = T.nxt[xa, y]
        st[0] = a2
        if T.keep_overlap:
            st[1] = w
            st[2] = g
            st[3] = 2
        else:
            st[1] = a2
            st[2] = 0
            st[3] = 0
        return n
    m = j
    rew[R_TIME] = _round_time(T, T.cost[m])
    rew[R_BUSY] = T.cost[m]
    rew[R_DBUSY] = g
    rew[R_UNUSED] = cap - m
    rew[R_DRAFTED] = g
    rew[R_DRAFTED_ALL] = g * T.kk[xw]
    rew[R_CALLS] = 1.0
    rew[R_ROUNDS] = 1.0
    base = 4 * g
    if T.branching:
        y, ok = _branch(T, xa, u, base, B, removed, pc)
        h = y
    else:
        h = _draw(T.qcdf, xw, u[base])
        ok = u[base + KM] < T.acc[xa, h]
        y = h if ok else _draw(T.rcdf, xa, u[base + 2 * KM])
    out[n] = y
    n += 1
    rew[R_EMIT] = n
    a2 = T.nxt[xa, y]
    st[0] = a2
    if ok:
        rew[R_ACC] = j + 1
        w2 = T.nxt[xw, y]
        if g == 1:
            st[1] = a2
            st[2] = 0
            st[3] = 0
            return n
        v = u[base + 2 * KM + 1]
        dd = 0
        while dd < 2 and v >= T.pol[a2, dd]:
            dd += 1
        st[2] = g - 1
        st[3] = dd
        st[1] = a2 if dd == 0 else w2
        return n
    rew[R_ACC] = j
    rew[R_RB] = 1 if T.keep_overlap else g
    rew[R_RBS] = 1
    if T.keep_overlap and g > 1:
        st[1] = T.nxt[xw, h]
        st[2] = g - 1
        st[3] = 2
    else:
        st[1] = a2
        st[2] = 0
        st[3] = 0
    return n


@njit(cache=True)
def run_uniforms(T, uniforms, st, out_tokens, out_len, out_rew):
    """Rounds driven by explicit uniforms (one row per round): the reference path, compared
    bit for bit with the NumPy twin. ``out_tokens`` (rounds, γ + 2), −1 padded."""
    B = np.empty(T.KM + T.V, dtype=np.int64)
    removed = np.zeros(T.V, dtype=np.bool_)
    pc = np.empty(T.V)
    buf = np.empty(T.gamma + 2, dtype=np.int64)
    rew = np.empty(N_REWARDS)
    for r in range(uniforms.shape[0]):
        n = round_step(T, uniforms[r], st, buf, rew, B, removed, pc)
        out_len[r] = n
        for i in range(out_tokens.shape[1]):
            out_tokens[r, i] = buf[i] if i < n else -1
        for i in range(N_REWARDS):
            out_rew[r, i] = rew[i]


@njit(cache=True)
def sb_streams(T, states, n_rounds, burn_in, st0, sums, hist_emit, hist_acc, n_first, first_out, bounds):
    """Independent streams; stream c uses xoshiro state ``states[c]``.

    ``n_first == 0``: stream c runs ``burn_in + n_rounds`` rounds of one continuing chain from
    ``st0`` and adds the last ``n_rounds`` rounds' rewards to ``sums[c]`` and their emitted /
    accepted counts (rounds with a target call) to ``hist_emit[c]`` / ``hist_acc[c]``.
    ``n_first > 0``: stream c fills runs ``bounds[c]:bounds[c+1]`` of ``first_out`` with the
    first ``n_first`` tokens of independent runs from ``st0``."""
    U = 4 * T.gamma + 2 * T.KM + 3
    for c in range(states.shape[0]):
        rng = states[c]
        u = np.empty(U)
        st = np.empty(5, dtype=np.int64)
        B = np.empty(T.KM + T.V, dtype=np.int64)
        removed = np.zeros(T.V, dtype=np.bool_)
        pc = np.empty(T.V)
        buf = np.empty(T.gamma + 2, dtype=np.int64)
        rew = np.empty(N_REWARDS)
        if n_first > 0:
            for r in range(bounds[c], bounds[c + 1]):
                for i in range(5):
                    st[i] = st0[i]
                got = 0
                while got < n_first:
                    for i in range(U):
                        u[i] = next_double(rng)
                    n = round_step(T, u, st, buf, rew, B, removed, pc)
                    for i in range(n):
                        if got < n_first:
                            first_out[r, got] = buf[i]
                            got += 1
            continue
        for i in range(5):
            st[i] = st0[i]
        for r in range(burn_in + n_rounds):
            for i in range(U):
                u[i] = next_double(rng)
            n = round_step(T, u, st, buf, rew, B, removed, pc)
            if r < burn_in:
                continue
            for i in range(N_REWARDS):
                sums[c, i] += rew[i]
            if rew[R_CALLS] > 0:
                hist_emit[c, n] += 1
                hist_acc[c, int(rew[R_ACC])] += 1
