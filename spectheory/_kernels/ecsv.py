"""Numba kernels of ECSV branch voting (drafting, reliability weights, fusion, verification).

Source: "Error-Correcting Speculative Decoding via Branch Voting" (ECSV), anonymous
manuscript under revision, 2026. ``p`` target (verifier), ``q`` draft; the method's
semantics are those of :mod:`spectheory.rules.ecsv` (this is an independent implementation of
what :mod:`spectheory.exact.ecsv` computes by enumeration).

Everything a step reads is bundled in one :class:`ECSVTables` (the pair's rows, the
drafter's sampling law with its alias tables, entropies and logs, the target's argmax and
second-largest log, the method's switches, and — for the exact-proposal reading — the
fused token's proposal rows). Uniforms come from the xoshiro256++ streams of the sampling
core (:mod:`spectheory._kernels.core`); every draw of a row is an alias draw (one uniform)
or an inverse-CDF draw over computed weights (one uniform). The stream drivers are serial
(no ``prange``): the kernel is cheap per step and a parallel driver doubled the cold compile
time on the 2-core machine; streams are still independent, so results do not depend on how
they are scheduled.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .core import alias_draw, draw_weights, next_double

# codes shared with spectheory.montecarlo.ecsv
KIND_SD1, KIND_MULTI, KIND_ORACLE, KIND_FUSION = 0, 1, 2, 3
V_MATCH, V_RS, V_RS_EXACT, V_GREEDY = 0, 1, 2, 3
SEL_DISAGREE, SEL_ENTROPY, SEL_LEAST = 0, 1, 2
TIES_VERIFIER, TIES_QBAR, TIES_NONE = 0, 1, 2
TIE_TOL = 1e-9


class ECSVTables(NamedTuple):
    V: int
    S: int
    B: int               # branches drafted (1 for SD-1)
    d: int               # fused / verified depth
    R: int               # spot checks per step (R_used)
    kind: int
    verify: int
    uniform: bool        # weights all 1
    branchwise: bool
    a_ent: float
    a_agr: float
    a_sc: float
    a_spot: float
    gamma: float
    lam: float
    top_m: int
    select: int
    ties: int
    residual_p: bool     # broken: correction from p
    emit_draft: bool     # broken: a mismatch emits the fused token
    p_rows: np.ndarray
    p_ros: np.ndarray
    p_prob: np.ndarray
    p_alias: np.ndarray
    p_log: np.ndarray
    p_top: np.ndarray
    p_second_log: np.ndarray
    q_rows: np.ndarray
    q_ros: np.ndarray
    q_prob: np.ndarray
    q_alias: np.ndarray
    q_log: np.ndarray
    q_ent: np.ndarray
    pi_off: np.ndarray   # (d + 1,) node offsets of the fused-prefix tree (rs_exact)
    pi: np.ndarray       # (S, nodes, V) proposal rows π_j(· | fused prefix) per start state (rs_exact)


class Work(NamedTuple):
    tok: np.ndarray      # (B, d)
    bst: np.ndarray      # (B, d + 1) branch states before each token
    r: np.ndarray        # (B, d) reliability
    w: np.ndarray        # (B, d) weights
    fused: np.ndarray    # (d,)
    fused0: np.ndarray   # (d,)
    spot: np.ndarray     # (d,) bool
    spot_row: np.ndarray  # (d,) target row at a spot-checked position
    score: np.ndarray    # (V,)
    qbar: np.ndarray     # (d, V)
    cand: np.ndarray     # (V,) bool
    tied: np.ndarray     # (V,) bool
    key: np.ndarray      # (d,) spot selection: disagreement
    key2: np.ndarray     # (d,) spot selection: mean entropy
    alive: np.ndarray    # (B,) bool
    wbuf: np.ndarray     # (V,)
    emit: np.ndarray     # (d + 1,) emitted tokens of the step


@njit(cache=True)
def _make_work(B, d, V):
    return Work(np.empty((B, d), np.int64), np.empty((B, d + 1), np.int64), np.empty((B, d)), np.empty((B, d)),
                np.empty(d, np.int64), np.empty(d, np.int64), np.empty(d, np.bool_), np.empty(d, np.int64),
                np.empty(V), np.empty((d, V)), np.empty(V, np.bool_), np.empty(V, np.bool_), np.empty(d), np.empty(d),
                np.empty(B, np.bool_), np.empty(V), np.empty(d + 1, np.int64))


@njit(cache=True, inline="always")
def _tol(x):
    return TIE_TOL * (abs(x) if abs(x) > 1.0 else 1.0)


@njit(cache=True)
def _draft(st, T, W, s0):
    V, S = T.V, T.S
    for b in range(T.B):
        s = s0
        for j in range(T.d):
            W.bst[b, j] = s
            x = alias_draw(T.q_prob, T.q_alias, T.q_ros[s], next_double(st))
            W.tok[b, j] = x
            s = (s * V + x) % S
        W.bst[b, T.d] = s


@njit(cache=True)
def _weights(T, W):
    B, d = T.B, T.d
    if T.uniform:
        for b in range(B):
            for j in range(d):
                W.w[b, j] = 1.0
        return
    if T.branchwise:
        zmax = -np.inf
        for b in range(B):
            m = 0.0
            for j in range(d):
                m += W.r[b, j]
            z = T.gamma * (m / d)
            W.w[b, 0] = z
            if z > zmax:
                zmax = z
        for b in range(B):
            e = np.exp(W.w[b, 0] - zmax)
            for j in range(d):
                W.w[b, j] = e
        return
    for j in range(d):
        zmax = -np.inf
        for b in range(B):
            z = T.gamma * W.r[b, j]
            if z > zmax:
                zmax = z
        for b in range(B):
            W.w[b, j] = np.exp(T.gamma * W.r[b, j] - zmax)


@njit(cache=True)
def _fuse_pass(T, W, out, use_spot):
    """Fuse every position with the current weights ``W.w`` into ``out``."""
    V, B = T.V, T.B
    for j in range(T.d):
        for t in range(V):
            W.score[t] = 0.0
            W.cand[t] = False
            W.tied[t] = False  # scratch: tokens already taken as top-M
        for b in range(B):
            x = W.tok[b, j]
            W.score[x] += W.w[b, j]
            W.cand[x] = True
        if T.lam > 0.0:
            for b in range(B):
                row = T.q_ros[W.bst[b, j]]
                wl = T.lam * W.w[b, j]
                for t in range(V):
                    W.score[t] += wl * T.q_rows[row, t]
        # the top-M tokens of q̄_j join the candidates (ties: smaller id)
        for _m in range(T.top_m):
            best = -1
            bv = -np.inf
            for t in range(V):
                if not W.tied[t] and W.qbar[j, t] > bv:
                    bv = W.qbar[j, t]
                    best = t
            if best < 0:
                break
            W.tied[best] = True
            W.cand[best] = True
        # argmax of the score, ties by the spot row (if checked), then q̄, then smaller id
        smax = -np.inf
        for t in range(V):
            if W.cand[t] and W.score[t] > smax:
                smax = W.score[t]
        for t in range(V):
            W.tied[t] = W.cand[t] and W.score[t] >= smax - _tol(smax)
        if use_spot and T.ties == TIES_VERIFIER and W.spot[j]:
            prow = W.spot_row[j]
            km = -np.inf
            for t in range(V):
                if W.tied[t] and T.p_rows[prow, t] > km:
                    km = T.p_rows[prow, t]
            for t in range(V):
                W.tied[t] = W.tied[t] and T.p_rows[prow, t] >= km - _tol(km)
        if T.ties != TIES_NONE:
            km = -np.inf
            for t in range(V):
                if W.tied[t] and W.qbar[j, t] > km:
                    km = W.qbar[j, t]
            for t in range(V):
                W.tied[t] = W.tied[t] and W.qbar[j, t] >= km - _tol(km)
        for t in range(V):
            if W.tied[t]:
                out[j] = t
                break


@njit(cache=True)
def _fuse(T, W, s0):
    V, S, B, d = T.V, T.S, T.B, T.d
    for j in range(d):
        for t in range(V):
            W.qbar[j, t] = 0.0
        for b in range(B):
            row = T.q_ros[W.bst[b, j]]
            for t in range(V):
                W.qbar[j, t] += T.q_rows[row, t]
        for t in range(V):
            W.qbar[j, t] /= B
    if not T.uniform:
        for b in range(B):
            for j in range(d):
                row = T.q_ros[W.bst[b, j]]
                x = W.tok[b, j]
                same = 0
                for b2 in range(B):
                    if b2 != b and W.tok[b2, j] == x:
                        same += 1
                agr = same / (B - 1) if B > 1 else 0.0
                W.r[b, j] = T.a_ent * (-T.q_ent[row]) + T.a_agr * agr + T.a_sc * T.q_log[row, x]
    _weights(T, W)
    _fuse_pass(T, W, W.fused0, False)
    if T.R == 0:
        for j in range(d):
            W.fused[j] = W.fused0[j]
        return
    # spot positions: disagreement D_j = 1 − max_t count_j(t)/B and mean entropy H_j (summed in
    # branch order, as the exact engine does, so equal keys compare equal)
    for j in range(d):
        W.spot[j] = False
        cmax = 0
        for b in range(B):
            c = 0
            for b2 in range(B):
                if W.tok[b2, j] == W.tok[b, j]:
                    c += 1
            if c > cmax:
                cmax = c
        W.key[j] = 1.0 - cmax / B
        H = 0.0
        for b in range(B):
            H += T.q_ent[T.q_ros[W.bst[b, j]]]
        W.key2[j] = H / B
    for _i in range(T.R):
        best = -1
        b1 = 0.0
        b2 = 0.0
        for j in range(d):
            if W.spot[j]:
                continue
            if T.select == SEL_DISAGREE:
                k1, k2 = W.key[j], W.key2[j]
            elif T.select == SEL_ENTROPY:
                k1, k2 = W.key2[j], W.key[j]
            else:
                k1, k2 = -W.key[j], -W.key2[j]
            if best < 0 or k1 > b1 or (k1 == b1 and k2 > b2):
                best = j
                b1 = k1
                b2 = k2
        W.spot[best] = True
    # the verifier's rows along the first-pass fused prefix; spot features
    s = s0
    for j in range(d):
        if W.spot[j]:
            prow = T.p_ros[s]
            W.spot_row[j] = prow
            if not T.uniform:
                for b in range(B):
                    W.r[b, j] += T.a_spot * (T.p_log[prow, W.tok[b, j]] - T.p_second_log[prow])
        s = (s * V + W.fused0[j]) % S
    _weights(T, W)
    _fuse_pass(T, W, W.fused, True)


@njit(cache=True)
def _oracle(T, W):
    B, d = T.B, T.d
    best = -1
    bs = 0.0
    for b in range(B):
        sc = 0.0
        if T.verify == V_GREEDY:
            for j in range(d):
                if W.tok[b, j] != T.p_top[T.p_ros[W.bst[b, j]]]:
                    break
                sc += 1.0
        else:
            pr = 1.0
            for j in range(d):
                pr *= T.p_rows[T.p_ros[W.bst[b, j]], W.tok[b, j]]
                sc += pr
        if best < 0 or sc > bs + _tol(bs):
            best = b
            bs = sc
    for j in range(d):
        W.fused[j] = W.tok[best, j]


@njit(cache=True)
def _trie_nodes(T, W):
    """Distinct prefixes of depth 0..d among the branches (the token tree's nodes)."""
    B, d = T.B, T.d
    n = 1
    for j in range(d):
        for b in range(B):
            new = True
            for b2 in range(b):
                same = True
                for i in range(j + 1):
                    if W.tok[b2, i] != W.tok[b, i]:
                        same = False
                        break
                if same:
                    new = False
                    break
            if new:
                n += 1
    return n


@njit(cache=True)
def _sample_p(st, T, prow):
    if T.verify == V_GREEDY:
        return T.p_top[prow]
    return alias_draw(T.p_prob, T.p_alias, prow, next_double(st))


@njit(cache=True)
def step(st, T, W, s0):
    """One decoding step from state ``s0``. Emitted tokens go to ``W.emit``; returns
    ``(τ, n_emitted, cost_parallel, cost_sequential, Σ −log p of the emitted tokens)``."""
    V, S, d = T.V, T.S, T.d
    _draft(st, T, W, s0)
    ce = 0.0
    if T.kind == KIND_MULTI:
        nodes = _trie_nodes(T, W)
        for b in range(T.B):
            W.alive[b] = True
        s = s0
        tau = 0
        for j in range(d):
            prow = T.p_ros[s]
            y = _sample_p(st, T, prow)
            any_alive = False
            for b in range(T.B):
                if W.alive[b]:
                    if W.tok[b, j] == y:
                        any_alive = True
                    else:
                        W.alive[b] = False
            W.emit[j] = y
            ce -= T.p_log[prow, y]
            s = (s * V + y) % S
            if not any_alive:
                return tau, tau + 1, float(nodes), float(tau + 1), ce
            tau += 1
        prow = T.p_ros[s]
        y = _sample_p(st, T, prow)
        W.emit[d] = y
        ce -= T.p_log[prow, y]
        return tau, tau + 1, float(nodes), float(tau + 1), ce
    if T.kind == KIND_FUSION:
        _fuse(T, W, s0)
        cost_par = float(T.R + d + 1)
    elif T.kind == KIND_ORACLE:
        _oracle(T, W)
        cost_par = float(_trie_nodes(T, W))
    else:
        for j in range(d):
            W.fused[j] = W.tok[0, j]
        cost_par = float(d + 1)
    s = s0
    tau = 0
    node = 0
    for j in range(d):
        prow = T.p_ros[s]
        x = W.fused[j]
        if T.verify == V_MATCH or T.verify == V_GREEDY:
            y = _sample_p(st, T, prow)
            ok = y == x
        else:
            if T.verify == V_RS:
                qx = 0.0
                for b in range(T.B):
                    qx += T.q_rows[T.q_ros[W.bst[b, j]], x]
                qx /= T.B
            else:
                qx = T.pi[s0, T.pi_off[j] + node, x]
            px = T.p_rows[prow, x]
            a = (1.0 if px > 0.0 else 0.0) if qx <= 0.0 else (1.0 if px >= qx else px / qx)
            ok = next_double(st) < a
            if not ok:
                tot = 0.0
                for t in range(V):
                    if T.residual_p:
                        v = T.p_rows[prow, t]
                    else:
                        if T.verify == V_RS:
                            qt = 0.0
                            for b in range(T.B):
                                qt += T.q_rows[T.q_ros[W.bst[b, j]], t]
                            qt /= T.B
                        else:
                            qt = T.pi[s0, T.pi_off[j] + node, t]
                        v = T.p_rows[prow, t] - qt
                        if v < 0.0:
                            v = 0.0
                    W.wbuf[t] = v
                    tot += v
                if tot <= 0.0:
                    for t in range(V):
                        W.wbuf[t] = T.p_rows[prow, t]
                y = draw_weights(W.wbuf, V, next_double(st))
        if ok:
            W.emit[j] = x
            ce -= T.p_log[prow, x]
            s = (s * V + x) % S
            node = node * V + x
            tau += 1
            continue
        if T.emit_draft:
            y = x
        W.emit[j] = y
        ce -= T.p_log[prow, y]
        cost_seq = float(T.R + tau + 1) if T.kind != KIND_ORACLE else cost_par
        return tau, tau + 1, cost_par, cost_seq, ce
    prow = T.p_ros[s]
    y = _sample_p(st, T, prow)
    W.emit[d] = y
    ce -= T.p_log[prow, y]
    cost_seq = float(T.R + d + 1) if T.kind != KIND_ORACLE else cost_par
    return d, d + 1, cost_par, cost_seq, ce


@njit(cache=True)
def stream(st, T, s0, n_steps, out_tau, out_cost_par, out_cost_seq, out_ce):
    """``n_steps`` consecutive steps from state ``s0`` (the chain continues across steps)."""
    W = _make_work(T.B, T.d, T.V)
    s = s0
    for i in range(n_steps):
        tau, n, cp, cs, ce = step(st, T, W, s)
        out_tau[i] = tau
        out_cost_par[i] = cp
        out_cost_seq[i] = cs
        out_ce[i] = ce
        for j in range(n):
            s = (s * T.V + W.emit[j]) % T.S


@njit(cache=True)
def streams(states, T, s0, per, out_tau, out_cost_par, out_cost_seq, out_ce):
    for i in range(states.shape[0]):
        lo = i * per
        stream(states[i], T, s0, per, out_tau[lo:lo + per], out_cost_par[lo:lo + per],
               out_cost_seq[lo:lo + per], out_ce[lo:lo + per])


@njit(cache=True)
def first_tokens(st, T, s0, n_runs, n_tokens, out_tokens, out_draft, out_tau):
    """``n_runs`` independent runs from ``s0``, each continued until ``n_tokens`` tokens are
    emitted; the first step's fused draft (or SD-1's branch) and τ are recorded too."""
    W = _make_work(T.B, T.d, T.V)
    for r in range(n_runs):
        s = s0
        got = 0
        first = True
        while got < n_tokens:
            tau, n, cp, cs, ce = step(st, T, W, s)
            if first:
                out_tau[r] = tau
                for j in range(T.d):
                    out_draft[r, j] = W.fused[j] if T.kind != KIND_MULTI else W.tok[0, j]
                first = False
            for j in range(n):
                if got < n_tokens:
                    out_tokens[r, got] = W.emit[j]
                    got += 1
                s = (s * T.V + W.emit[j]) % T.S


@njit(cache=True)
def first_tokens_runs(states, T, s0, per, n_tokens, out_tokens, out_draft, out_tau):
    for i in range(states.shape[0]):
        lo = i * per
        first_tokens(states[i], T, s0, per, n_tokens, out_tokens[lo:lo + per], out_draft[lo:lo + per],
                     out_tau[lo:lo + per])
