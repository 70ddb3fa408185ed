"""Numba kernels for token-level speculative sampling (Leviathan et al. 2023, Alg. 1).

Uniform layout per iteration (row of length 2γ + 1), shared with the NumPy reference
:func:`spectheory.montecarlo.sd.iteration_numpy` so both give identical output:
``u[0:γ]`` draft draws, ``u[γ:2γ]`` acceptance tests, ``u[2γ]`` correction or bonus draw.
Sampling from a row is inverse-CDF on a precomputed cumulative table.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _search(cdf, t):
    """First index i with cdf[i] > t; past-the-end (rounding) falls back to the last token
    with positive mass."""
    lo = 0
    hi = cdf.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if cdf[mid] > t:
            hi = mid
        else:
            lo = mid + 1
    if lo == cdf.shape[0]:
        lo -= 1
        while lo > 0 and cdf[lo] == cdf[lo - 1]:
            lo -= 1
    return lo


@njit(cache=True)
def sd_iteration(state, u, gamma, V, S, p_tab, q_tab, p_cdf, q_cdf, r_cdf,
                 prow, qrow, rrow, accept_code, bonus, states_buf, draft_buf, out_block):
    """One iteration from ``state``. Writes the emitted tokens to ``out_block`` and returns
    ``(n_emitted, tau, new_state)``. ``states_buf`` (γ+1) and ``draft_buf`` (γ) are scratch."""
    s = state
    for i in range(gamma):
        states_buf[i] = s
        row = q_cdf[qrow[s]]
        x = _search(row, u[i] * row[V - 1])
        draft_buf[i] = x
        s = (s * V + x) % S
    states_buf[gamma] = s
    for i in range(gamma):
        s = states_buf[i]
        x = draft_buf[i]
        pv = p_tab[prow[s], x]
        qv = q_tab[qrow[s], x]
        if accept_code == 0:
            ok = u[gamma + i] < pv / qv
        else:
            ok = True if pv == 0.0 else u[gamma + i] < qv / pv
        if not ok:
            row = r_cdf[rrow[s]]
            y = _search(row, u[2 * gamma] * row[V - 1])
            out_block[i] = y
            return i + 1, i, (s * V + y) % S
        out_block[i] = x
    s = states_buf[gamma]
    if bonus:
        row = p_cdf[prow[s]]
        y = _search(row, u[2 * gamma] * row[V - 1])
        out_block[gamma] = y
        return gamma + 1, gamma, (s * V + y) % S
    return gamma, gamma, s


@njit(cache=True)
def sd_run(uniforms, start_state, restart, gamma, V, S, p_tab, q_tab, p_cdf, q_cdf, r_cdf,
           prow, qrow, rrow, accept_code, bonus, out_tau, out_len, out_tokens, attempts, accepts):
    """Run ``uniforms.shape[0]`` iterations (a continuing stream, or each from
    ``start_state`` when ``restart``). Fills ``out_tau``/``out_len``; ``out_tokens`` (n, γ+1)
    and the per-state ``attempts``/``accepts`` counters only when they are non-empty.
    Returns the final state."""
    states_buf = np.empty(gamma + 1, dtype=np.int64)
    draft_buf = np.empty(gamma, dtype=np.int64)
    block = np.empty(gamma + 1, dtype=np.int64)
    record = out_tokens.shape[0] > 0
    count = attempts.shape[0] > 0
    s = start_state
    for it in range(uniforms.shape[0]):
        if restart:
            s = start_state
        n, tau, s_new = sd_iteration(s, uniforms[it], gamma, V, S, p_tab, q_tab, p_cdf, q_cdf,
                                     r_cdf, prow, qrow, rrow, accept_code, bonus,
                                     states_buf, draft_buf, block)
        out_tau[it] = tau
        out_len[it] = n
        if record:
            for j in range(n):
                out_tokens[it, j] = block[j]
        if count:
            for j in range(min(tau + 1, gamma)):
                attempts[states_buf[j]] += 1
                if j < tau:
                    accepts[states_buf[j]] += 1
        s = s_new
    return s


@njit(cache=True)
def sd_first_tokens(uniforms, n_tokens, start_state, gamma, V, S, p_tab, q_tab, p_cdf, q_cdf,
                    r_cdf, prow, qrow, rrow, accept_code, bonus, out):
    """For each run r (independent, from ``start_state``) emit tokens over as many
    iterations as needed and keep the first ``n_tokens`` in ``out[r]``. ``uniforms`` has
    shape (runs, n_tokens, 2γ+1): an iteration emits ≥ 1 token, so n_tokens rows suffice."""
    states_buf = np.empty(gamma + 1, dtype=np.int64)
    draft_buf = np.empty(gamma, dtype=np.int64)
    block = np.empty(gamma + 1, dtype=np.int64)
    for r in range(uniforms.shape[0]):
        s = start_state
        got = 0
        it = 0
        while got < n_tokens:
            n, tau, s = sd_iteration(s, uniforms[r, it], gamma, V, S, p_tab, q_tab, p_cdf, q_cdf,
                                     r_cdf, prow, qrow, rrow, accept_code, bonus,
                                     states_buf, draft_buf, block)
            it += 1
            for j in range(n):
                if got < n_tokens:
                    out[r, got] = block[j]
                    got += 1
            if n == 0:
                break
    return out
