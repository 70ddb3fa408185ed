"""Numba kernels for multi-draft verification (Lin et al. 2026: SpecTr-GBV / GBV; Sun et al. 2023: K-SEQ).

SpecTr-GBV needs joint block probabilities of every sub-block it may meet and, across
iterations, Alg. 2's modified target: each iteration rebuilds the complete V-ary block tree
of depth γ (node (d, c) at ``off[d] + c``), its joints, ``h`` (Eq. 2/3), and the modified
conditionals handed to the next iteration. Cost O(V^{γ+1}) per iteration: small V only.
K-SEQ samples candidate tokens lazily, position by position, with ρ precomputed per (state
row, drafts alive). Randomness: xoshiro256++ streams from the sampling core, one per
stream of runs; runs are split into contiguous blocks per stream, so results do not depend
on the thread count.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .core import alias_draw, draw_weights, next_double


class GBVTables(NamedTuple):
    V: int
    S: int
    gamma: int
    K: int
    expo: int          # exponent of (1 − m) (K for the correct rule)
    h_scale: float     # factor on every h (1 for the correct rule; a broken constant otherwise)
    residual_p: bool   # broken: correction from p
    modify: bool       # Alg. 2
    ignore_H: bool     # variant: line 5 without the H test
    h_mode: int        # 0: Eq. 2/3; 1: Sec. 3.3 as printed; 2: h ≡ 1 (broken)
    p_rows: np.ndarray
    p_ros: np.ndarray
    q_rows: np.ndarray
    q_ros: np.ndarray
    q_prob: np.ndarray
    q_alias: np.ndarray
    off: np.ndarray    # (γ+2,) node offsets per depth


@njit(cache=True, inline="always")
def _w(P, Q, e):
    if P <= 0.0:
        return 0.0
    r = 1.0 - Q / P
    if r <= 0.0:
        return 0.0
    return P * r ** float(e)  # libm pow: O(1) whatever K (an integer power would cost O(log K))


@njit(cache=True, inline="always")
def _ratio(num, den):
    if num < 0.0:
        num = 0.0
    if den <= 1e-300:
        return 1.0 if num > 1e-15 else 0.0
    r = num / den
    return 0.0 if r < 0.0 else (1.0 if r > 1.0 else r)


@njit(cache=True)
def gbv_stream(st, n_runs, n_tokens, start_state, T, out_tokens, out_tau, out_tcode):
    """``n_runs`` independent runs of Alg. 3 from ``start_state``; the first ``n_tokens``
    emitted tokens of each go to ``out_tokens``, the first iteration's τ and accepted block
    code to ``out_tau``/``out_tcode``."""
    V, S, g, K, e = T.V, T.S, T.gamma, T.K, T.expo
    off = T.off
    nn = off[g + 1]
    condP = np.empty((nn, V))
    ovr = np.empty((nn, V))
    ovr_new = np.empty((nn, V))
    Pj = np.empty(nn)
    Qj = np.empty(nn)
    hh = np.empty(nn)
    stn = np.empty(nn, dtype=np.int64)
    wbuf = np.empty(V)
    Hn = np.empty(K * g + 1, dtype=np.int64)
    em = np.empty(g + 1, dtype=np.int64)
    dcode = np.empty(g + 1, dtype=np.int64)
    for r in range(n_runs):
        state = start_state
        n_ov = 0
        got = 0
        first = True
        while got < n_tokens:
            # block tree: states, target conditionals, joints
            stn[0] = state
            Pj[0] = 1.0
            Qj[0] = 1.0
            for d in range(g + 1):
                width = 1
                for _ in range(d):
                    width *= V
                for c in range(width):
                    node = off[d] + c
                    s = stn[node]
                    prow = T.p_ros[s]
                    for x in range(V):
                        condP[node, x] = ovr[node, x] if d < n_ov else T.p_rows[prow, x]
                    if d < g:
                        qrow = T.q_ros[s]
                        for x in range(V):
                            ch = off[d + 1] + c * V + x
                            stn[ch] = (s * V + x) % S
                            Pj[ch] = Pj[node] * condP[node, x]
                            Qj[ch] = Qj[node] * T.q_rows[qrow, x]
            # h (Eq. 2 for i < γ, Eq. 3 for i = γ)
            for d in range(1, g + 1):
                width = 1
                for _ in range(d):
                    width *= V
                for c in range(width):
                    node = off[d] + c
                    hp = 1.0 - (1.0 - Qj[node]) ** K
                    if T.h_mode == 2:
                        hh[node] = 1.0
                    elif T.h_mode == 1:
                        if d == g:
                            nu = Pj[node] / Qj[node] if Qj[node] > 0.0 else 0.0
                            hh[node] = 1.0 if nu > 1.0 else nu
                        else:
                            num = 0.0
                            den = 0.0
                            for x in range(V):
                                ch = off[d + 1] + c * V + x
                                dd = Pj[ch] - Qj[ch]
                                if dd > 0.0:
                                    num += dd
                                else:
                                    den -= dd
                            hh[node] = _ratio(num, den)
                    elif d == g:
                        hh[node] = _ratio(Pj[node] - _w(Pj[node], Qj[node], e), hp)
                    else:
                        sw = 0.0
                        for x in range(V):
                            ch = off[d + 1] + c * V + x
                            sw += _w(Pj[ch], Qj[ch], e)
                        hh[node] = _ratio(sw - _w(Pj[node], Qj[node], e), hp - Pj[node] + sw)
                    hh[node] *= T.h_scale
            # Alg. 1
            tau = 0
            tcode = 0
            nH = 0
            for k in range(K):
                if tau == g:
                    break
                # draft k: sample its block from q
                c = 0
                dcode[0] = 0
                for d in range(g):
                    s = stn[off[d] + c]
                    x = alias_draw(T.q_prob, T.q_alias, T.q_ros[s], next_double(st))
                    c = c * V + x
                    dcode[d + 1] = c
                for i in range(tau + 1, g + 1):
                    node = off[i] + dcode[i]
                    inH = False
                    if not T.ignore_H:
                        for j in range(nH):
                            if Hn[j] == node:
                                inH = True
                                break
                    eta = next_double(st)
                    if (not inH) and eta < hh[node]:
                        tau = i
                        tcode = dcode[i]
                    else:
                        if not inH:
                            Hn[nH] = node
                            nH += 1
                if tau == g:
                    break
            # correction / bonus
            tnode = off[tau] + tcode
            if tau == g or T.residual_p:
                for x in range(V):
                    wbuf[x] = condP[tnode, x]
            else:
                tot = 0.0
                for x in range(V):
                    ch = off[tau + 1] + tcode * V + x
                    wbuf[x] = _w(Pj[ch], Qj[ch], e)
                    tot += wbuf[x]
                if tot <= 0.0:
                    for x in range(V):
                        wbuf[x] = condP[tnode, x]
            y = draw_weights(wbuf, V, next_double(st))
            if first:
                out_tau[r] = tau
                out_tcode[r] = tcode
                first = False
            cc = tcode
            for d in range(tau - 1, -1, -1):
                em[d] = cc % V
                cc //= V
            em[tau] = y
            for j in range(tau + 1):
                if got < n_tokens:
                    out_tokens[r, got] = em[j]
                    got += 1
                state = (state * V + em[j]) % S
            # Alg. 2: modified conditionals for the next γ − τ − 1 depths
            n_new = g - tau - 1 if T.modify else 0
            if n_new < 0:
                n_new = 0
            head = tcode * V + y
            for j in range(n_new):
                width = 1
                for _ in range(j):
                    width *= V
                depth = tau + 1 + j
                for c2 in range(width):
                    code = head * width + c2
                    tot = 0.0
                    for x in range(V):
                        ch = off[depth + 1] + code * V + x
                        wbuf[x] = _w(Pj[ch], Qj[ch], e)
                        tot += wbuf[x]
                    for x in range(V):
                        ovr_new[off[j] + c2, x] = wbuf[x] / tot if tot > 0.0 else condP[off[depth] + code, x]
            for a in range(off[n_new] if n_new > 0 else 0):
                for x in range(V):
                    ovr[a, x] = ovr_new[a, x]
            n_ov = n_new


@njit(cache=True, parallel=True)
def gbv_runs(states, runs_per_stream, n_tokens, start_state, T, out_tokens, out_tau, out_tcode):
    n_streams = states.shape[0]
    for i in prange(n_streams):
        lo = i * runs_per_stream
        gbv_stream(states[i], runs_per_stream, n_tokens, start_state, T,
                   out_tokens[lo:lo + runs_per_stream], out_tau[lo:lo + runs_per_stream],
                   out_tcode[lo:lo + runs_per_stream])


class KSeqTables(NamedTuple):
    V: int
    S: int
    gamma: int
    K: int
    p_rows: np.ndarray
    p_ros: np.ndarray
    q_rows: np.ndarray
    q_ros: np.ndarray
    q_prob: np.ndarray
    q_alias: np.ndarray
    rho: np.ndarray     # (S, K+1): ρ for n drafts alive in state s
    res_w: np.ndarray   # (S, K+1, V): residual weights


@njit(cache=True)
def kseq_stream(st, n_runs, n_tokens, start_state, T, out_tokens, out_tau):
    V, S, g, K = T.V, T.S, T.gamma, T.K
    cand = np.empty(K, dtype=np.int64)
    wbuf = np.empty(V)
    em = np.empty(g + 1, dtype=np.int64)
    for r in range(n_runs):
        state = start_state
        got = 0
        first = True
        while got < n_tokens:
            s = state
            n = K
            tau = 0
            y = -1
            for i in range(g):
                qrow = T.q_ros[s]
                prow = T.p_ros[s]
                for j in range(n):
                    cand[j] = alias_draw(T.q_prob, T.q_alias, qrow, next_double(st))
                rho = T.rho[s, n]
                acc = -1
                for j in range(n):
                    x = cand[j]
                    a = T.p_rows[prow, x] / (rho * T.q_rows[qrow, x])
                    if next_double(st) < a:
                        acc = x
                        break
                if acc < 0:
                    for x in range(V):
                        wbuf[x] = T.res_w[s, n, x]
                    y = draw_weights(wbuf, V, next_double(st))
                    break
                c = 0
                for j in range(n):
                    if cand[j] == acc:
                        c += 1
                n = c
                em[tau] = acc
                tau += 1
                s = (s * V + acc) % S
            if y < 0:
                prow = T.p_ros[s]
                for x in range(V):
                    wbuf[x] = T.p_rows[prow, x]
                y = draw_weights(wbuf, V, next_double(st))
            em[tau] = y
            if first:
                out_tau[r] = tau
                first = False
            for j in range(tau + 1):
                if got < n_tokens:
                    out_tokens[r, got] = em[j]
                    got += 1
                state = (state * V + em[j]) % S


@njit(cache=True, parallel=True)
def kseq_runs(states, runs_per_stream, n_tokens, start_state, T, out_tokens, out_tau):
    for i in prange(states.shape[0]):
        lo = i * runs_per_stream
        kseq_stream(states[i], runs_per_stream, n_tokens, start_state, T,
                    out_tokens[lo:lo + runs_per_stream], out_tau[lo:lo + runs_per_stream])


@njit(cache=True)
def selection_step(p_row, q_rows_children, Pprefix, Qprefix, K):
    """One SpecTr-GBV selection step at a sub-block x^i (Eq. 2): O(V) work — the sum
    Σ_x W(x^i, x) over the next-token rows. Returns h. (Used by the cost benchmark.)"""
    V = p_row.shape[0]
    sw = 0.0
    for x in range(V):
        sw += _w(Pprefix * p_row[x], Qprefix * q_rows_children[x], K)
    hp = 1.0 - (1.0 - Qprefix) ** float(K)
    return _ratio(sw - _w(Pprefix, Qprefix, K), hp - Pprefix + sw)


@njit(cache=True)
def kseq_rho_step(p, q, K, iters):
    """One K-SEQ selection step: ρ by bisection on [1, K] (``iters`` halvings, each O(V))."""
    lo = 1.0
    hi = float(K)
    V = p.shape[0]
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        b = 0.0
        for x in range(V):
            v = p[x] / mid
            b += q[x] if q[x] < v else v
        f = 1.0 - (1.0 - b) ** K - mid * b
        if f > 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
