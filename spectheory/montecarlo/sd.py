"""Monte Carlo of token-level speculative sampling on a Markov pair.

Style of QuantEcon's ``MarkovChain.simulate``: the public function validates arguments and
turns ``seed`` into a Generator, draws uniforms in chunks, and hands preallocated arrays to
the Numba kernel in :mod:`spectheory._kernels.sd`. :func:`iteration_numpy` is the same
algorithm in plain NumPy, fed the same uniforms; it is the reference the kernel must match
bit for bit, and the baseline of the throughput benchmark.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels import sd as _k
from ..markov import MarkovPair
from ..rng import check_random_state
from ..rules.sd import STANDARD, SDRule

#: Iterations per chunk of uniforms (bounds memory: chunk × (2γ+1) float64).
CHUNK = 1 << 16


@dataclass(frozen=True, eq=False)
class Prepared:
    """Arrays the kernels read: tables, cumulative tables and per-state row indices."""

    V: int
    S: int
    p_tab: np.ndarray
    q_tab: np.ndarray
    p_cdf: np.ndarray
    q_cdf: np.ndarray
    r_cdf: np.ndarray
    prow: np.ndarray
    qrow: np.ndarray
    rrow: np.ndarray
    accept_code: int
    bonus: bool

    def kernel_args(self):
        return (self.V, self.S, self.p_tab, self.q_tab, self.p_cdf, self.q_cdf, self.r_cdf,
                self.prow, self.qrow, self.rrow, self.accept_code, self.bonus)


def prepare(pair: MarkovPair, rule: SDRule = STANDARD) -> Prepared:
    """Precompute cumulative tables; residual rows are built once per distinct (p row, q row)
    pair. A residual of zero mass (p = q in that state, so rejection has probability 0)
    falls back to p."""
    if not isinstance(pair, MarkovPair):
        raise TypeError(f"expected a MarkovPair, got {type(pair).__name__}")
    tp, tq = pair.target, pair.draft
    prow, qrow = tp.row_of_state, tq.row_of_state
    pairs, rrow = np.unique(np.stack([prow, qrow], axis=1), axis=0, return_inverse=True)
    P = tp.rows[pairs[:, 0]]
    Q = tq.rows[pairs[:, 1]]
    R = rule.residual_distribution(P, Q)
    return Prepared(
        pair.V, pair.n_states, tp.rows, tq.rows,
        np.cumsum(tp.rows, axis=1), np.cumsum(tq.rows, axis=1), np.cumsum(R, axis=1),
        prow, qrow, np.ascontiguousarray(rrow.ravel(), dtype=np.int64),
        rule.accept_code, bool(rule.bonus))


def _check_run_args(pair, gamma, start_state):
    if int(gamma) != gamma or gamma < 1:
        raise ValueError(f"gamma (draft length) must be an integer ≥ 1, got {gamma!r}")
    if not 0 <= start_state < pair.n_states:
        raise ValueError(f"start_state must lie in [0, {pair.n_states}), got {start_state}")


@dataclass
class SimResult:
    """Per-iteration outcomes of a simulation."""

    tau: np.ndarray        # accepted draft tokens per iteration
    n_emitted: np.ndarray  # emitted tokens per iteration (τ + 1 with a correction/bonus)
    tokens: np.ndarray | None  # (n, γ+1) emitted tokens, −1 padded, if recorded
    attempts: np.ndarray | None  # per-state verification attempts, if counted
    accepts: np.ndarray | None   # per-state acceptances, if counted
    final_state: int

    @property
    def n_iterations(self) -> int:
        return self.tau.shape[0]


def simulate(pair: MarkovPair, gamma: int, n_iterations: int, *, rule: SDRule = STANDARD,
             seed=None, start_state: int = 0, restart: bool = False, record_tokens: bool = False,
             count_states: bool = False, prepared: Prepared | None = None) -> SimResult:
    """Simulate ``n_iterations`` speculative-sampling iterations (Numba kernel).

    restart: start every iteration from ``start_state`` (i.i.d. iterations) instead of
    continuing the stream. count_states: count verification attempts and acceptances per
    state (for per-state acceptance tests).
    """
    _check_run_args(pair, gamma, start_state)
    rng = check_random_state(seed)
    prep = prepared or prepare(pair, rule)
    n = int(n_iterations)
    tau = np.empty(n, dtype=np.int32)
    n_em = np.empty(n, dtype=np.int32)
    toks = np.full((n if record_tokens else 0, gamma + 1), -1, dtype=np.int64)
    att = np.zeros(pair.n_states if count_states else 0, dtype=np.int64)
    acc = np.zeros_like(att)
    s = start_state
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        u = rng.random((hi - lo, 2 * gamma + 1))
        s = _k.sd_run(u, s if not restart else start_state, restart, gamma, *prep.kernel_args(),
                      tau[lo:hi], n_em[lo:hi], toks[lo:hi] if record_tokens else toks, att, acc)
    return SimResult(tau, n_em, toks if record_tokens else None,
                     att if count_states else None, acc if count_states else None, int(s))


def sample_first_tokens(pair: MarkovPair, gamma: int, n_tokens: int, n_runs: int, *,
                        rule: SDRule = STANDARD, seed=None, start_state: int = 0) -> np.ndarray:
    """``n_runs`` independent runs from ``start_state``; returns the first ``n_tokens`` emitted
    tokens of each, shape (n_runs, n_tokens). Their law is p^{n_tokens} iff the rule is
    lossless (CLAIMS sd.lossless)."""
    _check_run_args(pair, gamma, start_state)
    if n_tokens < 1:
        raise ValueError("n_tokens must be ≥ 1")
    rng = check_random_state(seed)
    prep = prepare(pair, rule)
    out = np.empty((int(n_runs), n_tokens), dtype=np.int64)
    step = max(1, CHUNK // n_tokens)
    for lo in range(0, out.shape[0], step):
        hi = min(out.shape[0], lo + step)
        u = rng.random((hi - lo, n_tokens, 2 * gamma + 1))
        _k.sd_first_tokens(u, n_tokens, start_state, gamma, *prep.kernel_args(), out[lo:hi])
    return out


# --- plain NumPy reference ------------------------------------------------------------------

def _search_numpy(cdf: np.ndarray, t: float) -> int:
    i = int(np.searchsorted(cdf, t, side="right"))
    if i == cdf.shape[0]:
        i -= 1
        while i > 0 and cdf[i] == cdf[i - 1]:
            i -= 1
    return i


def iteration_numpy(prep: Prepared, state: int, u: np.ndarray, gamma: int):
    """One iteration, plain NumPy, same uniforms layout as the kernel.
    Returns ``(block tokens list, tau, new_state)``."""
    V, S = prep.V, prep.S
    states = [state]
    drafts = []
    s = state
    for i in range(gamma):
        row = prep.q_cdf[prep.qrow[s]]
        x = _search_numpy(row, u[i] * row[V - 1])
        drafts.append(x)
        s = (s * V + x) % S
        states.append(s)
    block = []
    for i in range(gamma):
        s, x = states[i], drafts[i]
        pv = prep.p_tab[prep.prow[s], x]
        qv = prep.q_tab[prep.qrow[s], x]
        if prep.accept_code == 0:
            ok = u[gamma + i] < pv / qv
        else:
            ok = True if pv == 0.0 else u[gamma + i] < qv / pv
        if not ok:
            row = prep.r_cdf[prep.rrow[s]]
            y = _search_numpy(row, u[2 * gamma] * row[V - 1])
            return block + [y], i, (s * V + y) % S
        block.append(x)
    s = states[gamma]
    if prep.bonus:
        row = prep.p_cdf[prep.prow[s]]
        y = _search_numpy(row, u[2 * gamma] * row[V - 1])
        return block + [y], gamma, (s * V + y) % S
    return block, gamma, s


def simulate_numpy(pair: MarkovPair, gamma: int, n_iterations: int, *, rule: SDRule = STANDARD,
                   seed=None, start_state: int = 0, restart: bool = False,
                   uniforms: np.ndarray | None = None, prepared: Prepared | None = None) -> SimResult:
    """Plain-NumPy twin of :func:`simulate` (records tokens). Pass ``uniforms`` of shape
    (n_iterations, 2γ+1) to replay exactly the draws the kernel consumed."""
    _check_run_args(pair, gamma, start_state)
    prep = prepared or prepare(pair, rule)
    n = int(n_iterations)
    if uniforms is None:
        uniforms = check_random_state(seed).random((n, 2 * gamma + 1))
    tau = np.empty(n, dtype=np.int32)
    n_em = np.empty(n, dtype=np.int32)
    toks = np.full((n, gamma + 1), -1, dtype=np.int64)
    s = start_state
    for it in range(n):
        if restart:
            s = start_state
        block, t, s = iteration_numpy(prep, s, uniforms[it], gamma)
        tau[it], n_em[it] = t, len(block)
        toks[it, :len(block)] = block
    return SimResult(tau, n_em, toks, None, None, int(s))


def simulate_with_uniforms(pair: MarkovPair, gamma: int, uniforms: np.ndarray, *, rule: SDRule = STANDARD,
                           start_state: int = 0, restart: bool = False) -> SimResult:
    """Kernel run on caller-supplied uniforms (for the kernel-vs-reference identity test)."""
    _check_run_args(pair, gamma, start_state)
    u = np.ascontiguousarray(uniforms, dtype=np.float64)
    if u.ndim != 2 or u.shape[1] != 2 * gamma + 1:
        raise ValueError(f"uniforms must have shape (n, {2 * gamma + 1})")
    prep = prepare(pair, rule)
    n = u.shape[0]
    tau = np.empty(n, dtype=np.int32)
    n_em = np.empty(n, dtype=np.int32)
    toks = np.full((n, gamma + 1), -1, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    s = _k.sd_run(u, start_state, restart, gamma, *prep.kernel_args(), tau, n_em, toks, empty, empty)
    return SimResult(tau, n_em, toks, None, None, int(s))
