"""Numba kernels for token-level speculative sampling (Leviathan et al. 2023, Alg. 1).

Two paths over the same algorithm:

* **Reference (uniforms in)**: :func:`sd_run` / :func:`sd_first_tokens` read one
  :class:`SDRefTables` bundle (tables, cumulative tables, per-state row maps) and a uniform
  layout per iteration (row of length 2γ + 1), shared with the NumPy twin
  :func:`spectheory.montecarlo.sd.iteration_numpy` so both give identical output:
  ``u[0:γ]`` draft draws, ``u[γ:2γ]`` acceptance tests, ``u[2γ]`` correction or bonus draw.
  Sampling from a row is inverse-CDF on a precomputed cumulative table.
* **Fast** (what :func:`spectheory.montecarlo.sd.simulate` runs by default):
  :func:`sd_streams` / :func:`sd_first_tokens_streams` read one :class:`SDTables` bundle
  (alias tables per distinct row, acceptance probabilities and residual alias tables per
  distinct (target row, draft row) pair), draft lazily and draw their random numbers in the
  kernel (xoshiro256++, :mod:`spectheory._kernels.core`), independent streams under
  ``prange``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .core import alias_draw, cdf_search, next_double

_search = cdf_search  # the reference kernels' inverse-CDF search (one implementation, in core)


class SDRefTables(NamedTuple):
    """Everything the reference kernels read, prepared once per (pair, rule) and validated by
    :func:`spectheory.montecarlo.sd.prepare` (one object instead of loose arrays, like the fast
    path's :class:`SDTables`).

    ``p_tab``/``q_tab``: the target's and the draft's distinct rows (R_p × V, R_q × V);
    ``p_cdf``/``q_cdf``: their cumulative sums; ``r_cdf``: the cumulative residual row of each
    distinct (target row, draft row) pair; ``prow``/``qrow``/``rrow`` (length S): each state's
    row in those tables; ``accept_code``: the rule's acceptance test (0: u < p/q; 1: u < q/p,
    the swapped-ratio variant); ``bonus``: whether an iteration that accepts every draft emits a
    bonus token from p.
    """

    V: int
    S: int
    accept_code: int
    bonus: bool
    p_tab: np.ndarray
    q_tab: np.ndarray
    p_cdf: np.ndarray
    q_cdf: np.ndarray
    r_cdf: np.ndarray
    prow: np.ndarray
    qrow: np.ndarray
    rrow: np.ndarray


@njit(cache=True)
def sd_iteration(t, state, u, gamma, states_buf, draft_buf, out_block):
    """One iteration from ``state`` on the tables ``t`` (:class:`SDRefTables`). Writes the
    emitted tokens to ``out_block`` and returns ``(n_emitted, tau, new_state)``.
    ``states_buf`` (γ+1) and ``draft_buf`` (γ) are scratch."""
    V, S = t.V, t.S
    s = state
    for i in range(gamma):
        states_buf[i] = s
        row = t.q_cdf[t.qrow[s]]
        x = _search(row, u[i] * row[V - 1])
        draft_buf[i] = x
        s = (s * V + x) % S
    states_buf[gamma] = s
    for i in range(gamma):
        s = states_buf[i]
        x = draft_buf[i]
        pv = t.p_tab[t.prow[s], x]
        qv = t.q_tab[t.qrow[s], x]
        if t.accept_code == 0:
            ok = u[gamma + i] < pv / qv
        else:
            ok = True if pv == 0.0 else u[gamma + i] < qv / pv
        if not ok:
            row = t.r_cdf[t.rrow[s]]
            y = _search(row, u[2 * gamma] * row[V - 1])
            out_block[i] = y
            return i + 1, i, (s * V + y) % S
        out_block[i] = x
    s = states_buf[gamma]
    if t.bonus:
        row = t.p_cdf[t.prow[s]]
        y = _search(row, u[2 * gamma] * row[V - 1])
        out_block[gamma] = y
        return gamma + 1, gamma, (s * V + y) % S
    return gamma, gamma, s


@njit(cache=True)
def sd_run(t, uniforms, start_state, restart, gamma, out_tau, out_len, out_tokens, attempts, accepts):
    """Run ``uniforms.shape[0]`` iterations on the tables ``t`` (a continuing stream, or each
    from ``start_state`` when ``restart``). Fills ``out_tau``/``out_len``; ``out_tokens``
    (n, γ+1) and the per-state ``attempts``/``accepts`` counters only when they are non-empty.
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
        n, tau, s_new = sd_iteration(t, s, uniforms[it], gamma, states_buf, draft_buf, block)
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
def sd_first_tokens(t, uniforms, n_tokens, start_state, gamma, out):
    """For each run r (independent, from ``start_state``) emit tokens over as many
    iterations as needed on the tables ``t`` and keep the first ``n_tokens`` in ``out[r]``.
    ``uniforms`` has shape (runs, n_tokens, 2γ+1): an iteration emits ≥ 1 token when γ ≥ 1, so
    n_tokens rows suffice. If an iteration emits nothing (γ = 0 without a bonus token) or the
    uniforms run out, the rest of that run is set to −1 (never left uninitialised); returns the
    number of runs cut short (0 for any valid call)."""
    states_buf = np.empty(gamma + 1, dtype=np.int64)
    draft_buf = np.empty(gamma, dtype=np.int64)
    block = np.empty(gamma + 1, dtype=np.int64)
    short = 0
    for r in range(uniforms.shape[0]):
        s = start_state
        got = 0
        it = 0
        while got < n_tokens:
            if it == uniforms.shape[1]:
                break
            n, tau, s = sd_iteration(t, s, uniforms[r, it], gamma, states_buf, draft_buf, block)
            it += 1
            for j in range(n):
                if got < n_tokens:
                    out[r, got] = block[j]
                    got += 1
            if n == 0:
                break
        if got < n_tokens:
            short += 1
            for j in range(got, n_tokens):
                out[r, j] = -1
    return short


# --- fast path: alias tables, precomputed acceptance, lazy drafting, in-kernel RNG -----------

class SDTables(NamedTuple):
    """Everything the fast kernels read, prepared once per (pair, rule) by
    :func:`spectheory.montecarlo.sd.prepare` (one object instead of loose arrays).

    Alias tables are built once per distinct row: ``q_*`` per draft row, ``p_*`` per target
    row (bonus draws), ``r_*`` and ``accept`` per distinct (target row, draft row) pair
    (``pqrow[s]``): ``accept[k, x]`` is the rule's acceptance probability of draft token x
    (``min(1, p/q)`` for the correct rule) and ``r_*`` samples its correction token.
    """

    V: int
    S: int
    order: int
    bonus: bool
    q_prob: np.ndarray
    q_alias: np.ndarray
    p_prob: np.ndarray
    p_alias: np.ndarray
    r_prob: np.ndarray
    r_alias: np.ndarray
    accept: np.ndarray
    qrow: np.ndarray
    prow: np.ndarray
    pqrow: np.ndarray


@njit(cache=True, inline="always")
def _next(t, s, x):
    """State after emitting x in s; order 0 and 1 without an integer division."""
    if t.order == 1:
        return x
    if t.order == 0:
        return 0
    return (s * t.V + x) % t.S


@njit(cache=True, inline="always")
def fast_iteration(t, st, s, gamma, out, count, attempts, accepts):
    """One iteration of Leviathan et al. 2023, Alg. 1, from state ``s`` with stream ``st``.

    Lazy drafting: draft token i is verified as soon as it is drafted and drafting stops at
    the first rejection. With standard speculative sampling this has the law of Alg. 1 as
    printed (draft γ tokens, then verify left to right): the acceptance test of position i
    reads only (state, x_i) and its own uniform, and the draft tokens after the first
    rejection are discarded unseen, so never drawing them changes no emitted token's law.
    Draws only the numbers it uses: the acceptance uniform is skipped when the acceptance
    probability is 1, the correction/bonus uniform is drawn only when needed.
    Writes emitted tokens to ``out`` (length ≥ γ+1); returns ``(n_emitted, tau, new_state)``.
    """
    for i in range(gamma):
        x = alias_draw(t.q_prob, t.q_alias, t.qrow[s], next_double(st))
        k = t.pqrow[s]
        a = t.accept[k, x]
        if a < 1.0 and next_double(st) >= a:
            y = alias_draw(t.r_prob, t.r_alias, k, next_double(st))
            out[i] = y
            if count:
                attempts[s] += 1
            return i + 1, i, _next(t, s, y)
        if count:
            attempts[s] += 1
            accepts[s] += 1
        out[i] = x
        s = _next(t, s, x)
    if t.bonus:
        y = alias_draw(t.p_prob, t.p_alias, t.prow[s], next_double(st))
        out[gamma] = y
        return gamma + 1, gamma, _next(t, s, y)
    return gamma, gamma, s


@njit(cache=True, parallel=True)
def sd_streams(t, states, bounds, start_state, restart, gamma, out_tau, out_len, out_tokens,
               attempts, accepts, final_states, n_first):
    """Independent streams under ``prange``, each with its own xoshiro256++ state
    ``states[c]`` (advanced in place), so the output depends on the seed and the stream
    layout, never on the thread count. Two modes in one kernel (one parallel compilation):

    * ``n_first == 0``: stream c runs iterations ``bounds[c]:bounds[c+1]`` from
      ``start_state`` (each from ``start_state`` when ``restart``), writing τ and the emitted
      count per iteration, the tokens to ``out_tokens`` (n, γ+1, −1 padded) when it has rows,
      per-state counters to ``attempts[c]``/``accepts[c]`` (shape (streams, S) when counting,
      (streams, 0) when not) and its final state to ``final_states[c]``;
    * ``n_first > 0``: stream c fills runs ``bounds[c]:bounds[c+1]`` of ``out_tokens``
      (runs × n_first): each run from ``start_state``, iterate until ``n_first`` tokens are
      out and keep the first ``n_first``."""
    record = out_tokens.shape[0] > 0
    count = attempts.shape[1] > 0 and n_first == 0
    first = n_first > 0
    for c in prange(states.shape[0]):
        st = states[c]
        block = np.empty(gamma + 1, dtype=np.int64)
        att = attempts[c]
        acc = accepts[c]
        s = start_state
        for it in range(bounds[c], bounds[c + 1]):  # an iteration, or a run in first-token mode
            if restart or first:
                s = start_state
            got = 0
            while True:  # one call site of fast_iteration: it is inlined (and compiled) once
                n, tau, s = fast_iteration(t, st, s, gamma, block, count, att, acc)
                if not first:
                    out_tau[it] = tau
                    out_len[it] = n
                    if record:
                        for j in range(n):
                            out_tokens[it, j] = block[j]
                    break
                m = min(n, n_first - got)
                for j in range(m):
                    out_tokens[it, got + j] = block[j]
                got += m
                if got == n_first:
                    break
        final_states[c] = s


def sd_first_tokens_streams(t, states, bounds, n_tokens, start_state, gamma, out):
    """Stream c fills runs ``bounds[c]:bounds[c+1]`` of ``out`` (:func:`sd_streams` with
    ``n_first = n_tokens``)."""
    m = states.shape[0]
    empty = np.zeros(0, dtype=np.int32)
    counters = np.zeros((m, 0), dtype=np.int64)
    sd_streams(t, states, bounds, start_state, False, gamma, empty, empty, out, counters, counters,
               np.zeros(m, dtype=np.int64), n_tokens)
