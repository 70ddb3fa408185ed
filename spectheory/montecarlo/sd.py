"""Monte Carlo of token-level speculative sampling on a Markov pair.

Style of QuantEcon's ``MarkovChain.simulate``: the public functions validate every argument
(:mod:`spectheory.checks`), derive per-stream random states from ``seed`` and hand
preallocated arrays to the Numba kernels in :mod:`spectheory._kernels.sd`.

Two methods, same law:

* ``method="fast"`` (default): alias tables built once per distinct row, acceptance
  probabilities and residual alias tables once per distinct (target row, draft row) pair,
  lazy drafting (stop at the first rejection, see :func:`spectheory._kernels.sd.fast_iteration`),
  xoshiro256++ inside the kernel seeded from the run's ``SeedSequence``
  (:func:`spectheory.rng.stream_states`), independent streams under ``prange``. The stream
  layout depends only on ``n_iterations`` (and ``chains``), so results are identical for any
  thread count.
* ``method="reference"``: uniforms drawn by NumPy in chunks, inverse-CDF kernel
  (:func:`spectheory._kernels.sd.sd_run`). :func:`iteration_numpy` is the same algorithm in
  plain NumPy fed the same uniforms; the kernel must match it bit for bit, and it is the
  baseline of the throughput benchmark.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels import sd as _k
from .._kernels.core import build_alias
from ..checks import check_int, check_state
from ..markov import MarkovPair
from ..rng import check_random_state, stream_states
from ..rules.sd import STANDARD, SDRule

#: Iterations per chunk of uniforms (reference method; bounds memory: chunk × (2γ+1) float64).
CHUNK = 1 << 16
#: Fast method: i.i.d. iterations (``restart=True``) per random stream, and independent runs
#: per stream in :func:`sample_first_tokens`. Fixed, so the layout never depends on threads.
STREAM_BLOCK = 1 << 15
RUN_BLOCK = 1 << 12
#: Streams per kernel call when counting per state (bounds counter memory: 64 × S × 16 bytes).
COUNT_GROUP = 64
METHODS = ("fast", "reference")


@dataclass(frozen=True, eq=False)
class Prepared:
    """What the kernels read, one bundle per method: ``reference``, the
    :class:`~spectheory._kernels.sd.SDRefTables` of tables, cumulative tables and per-state row
    indices (reference method), and ``tables``, the :class:`~spectheory._kernels.sd.SDTables`
    of alias and acceptance tables (fast method)."""

    V: int
    S: int
    reference: _k.SDRefTables
    tables: _k.SDTables | None = None


def prepare(pair: MarkovPair, rule: SDRule = STANDARD) -> Prepared:
    """Precompute the tables of both methods. Residual rows (and the fast method's
    acceptance rows) are built once per distinct (p row, q row) pair; alias tables once per
    distinct row. A residual of zero mass (p = q in that state, so rejection has
    probability 0) falls back to p."""
    _check_pair_rule(pair, rule)
    tp, tq = pair.target, pair.draft
    prow, qrow = tp.row_of_state, tq.row_of_state
    pairs, rrow = np.unique(np.stack([prow, qrow], axis=1), axis=0, return_inverse=True)
    rrow = np.ascontiguousarray(rrow.ravel(), dtype=np.int64)
    P = tp.rows[pairs[:, 0]]
    Q = tq.rows[pairs[:, 1]]
    R = rule.residual_distribution(P, Q)
    fast = _k.SDTables(
        int(pair.V), int(pair.n_states), int(pair.order), bool(rule.bonus),
        *build_alias(tq.rows), *build_alias(tp.rows), *build_alias(R),
        np.ascontiguousarray(rule.accept_probability(P, Q)),
        np.ascontiguousarray(qrow), np.ascontiguousarray(prow), rrow)
    reference = _k.SDRefTables(
        int(pair.V), int(pair.n_states), int(rule.accept_code), bool(rule.bonus), tp.rows, tq.rows,
        np.cumsum(tp.rows, axis=1), np.cumsum(tq.rows, axis=1), np.cumsum(R, axis=1), prow, qrow, rrow)
    return Prepared(int(pair.V), int(pair.n_states), _check_reference(reference), fast)


def _check_reference(t: _k.SDRefTables) -> _k.SDRefTables:
    """The reference bundle is consistent (shapes, row maps in range) before a kernel reads it
    without bounds checks."""
    V, S = t.V, t.S
    for name in ("p_tab", "q_tab", "p_cdf", "q_cdf", "r_cdf"):
        a = getattr(t, name)
        if a.ndim != 2 or a.shape[1] != V or a.dtype != np.float64:
            raise ValueError(f"{name} must be a float64 (rows, {V}) table, got {a.dtype} {a.shape}")
    for name, table in (("prow", "p_tab"), ("qrow", "q_tab"), ("rrow", "r_cdf")):
        m = getattr(t, name)
        n_rows = getattr(t, table).shape[0]
        if m.shape != (S,) or m.dtype.kind != "i" or (S and not (0 <= m.min() and m.max() < n_rows)):
            raise ValueError(f"{name} must map each of the {S} states to a row of {table} ({n_rows} rows)")
    if t.p_cdf.shape != t.p_tab.shape or t.q_cdf.shape != t.q_tab.shape:
        raise ValueError("the cumulative tables must have the shapes of the tables")
    if t.accept_code not in (0, 1):
        raise ValueError(f"accept_code must be 0 or 1, got {t.accept_code}")
    return t


def _check_pair_rule(pair, rule):
    if not isinstance(pair, MarkovPair):
        raise TypeError(f"expected a MarkovPair, got {type(pair).__name__}")
    if type(rule) is not SDRule:
        raise TypeError(f"rule must be an SDRule (spectheory.rules.sd), got {type(rule).__name__}: the Numba "
                        "kernel runs the built-in rules only (a TokenRule subclass runs in the exact engine, "
                        "spectheory.exact.sd; sample a new rule with your own sampler)")


def _check_flag(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_run_args(pair, gamma, start_state, rule=STANDARD):
    _check_pair_rule(pair, rule)
    gamma = check_int(gamma, "gamma (draft length)", min=1)
    return gamma, check_state(start_state, pair.n_states)


def _check_prepared(prepared, pair, rule, need_fast=False):
    if prepared is None:
        return prepare(pair, rule)
    if not isinstance(prepared, Prepared):
        raise TypeError(f"prepared must come from prepare(pair, rule), got {type(prepared).__name__}")
    if prepared.V != pair.V or prepared.S != pair.n_states:
        raise ValueError(f"prepared tables are for V={prepared.V}, {prepared.S} states; the pair has "
                         f"V={pair.V}, {pair.n_states} states")
    if need_fast and prepared.tables is None:
        raise ValueError("prepared has no fast tables (SDTables); build it with prepare(pair, rule)")
    return prepared


def _check_method(method):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def _block_bounds(n: int, block: int) -> np.ndarray:
    """Stream boundaries: consecutive blocks of ``block`` items (at least one stream)."""
    return np.unique(np.r_[np.arange(0, n, block, dtype=np.int64), n, 0]) if n else np.zeros(2, np.int64)


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
             count_states: bool = False, prepared: Prepared | None = None, chains: int = 1,
             method: str = "fast") -> SimResult:
    """Simulate ``n_iterations`` speculative-sampling iterations (Numba kernel).

    restart: start every iteration from ``start_state`` (i.i.d. iterations) instead of
    continuing the stream; the fast method then runs blocks of :data:`STREAM_BLOCK`
    iterations as independent streams in parallel. chains (continuing stream only): split
    the iterations into this many independent chains, each from ``start_state``, run in
    parallel (chain c holds iterations ``c·n//chains`` to ``(c+1)·n//chains``; ``final_state``
    is the last chain's); the default 1 is one continuing stream. count_states: count
    verification attempts and acceptances per state (for per-state acceptance tests).
    method: ``"fast"`` or ``"reference"`` (module docstring); the same seed gives different
    draws under the two methods, the same law.
    """
    gamma, start_state = _check_run_args(pair, gamma, start_state, rule)
    n = check_int(n_iterations, "n_iterations", min=0)
    restart = _check_flag(restart, "restart")
    record_tokens = _check_flag(record_tokens, "record_tokens")
    count_states = _check_flag(count_states, "count_states")
    chains = check_int(chains, "chains", min=1)
    if restart and chains != 1:
        raise ValueError("chains applies to a continuing stream; with restart=True every iteration "
                         "is already independent (leave chains=1)")
    if chains > max(1, n):
        raise ValueError(f"chains must be ≤ n_iterations ({n}), got {chains}")
    _check_method(method)
    prep = _check_prepared(prepared, pair, rule, need_fast=method == "fast")
    tau = np.empty(n, dtype=np.int32)
    n_em = np.empty(n, dtype=np.int32)
    toks = np.full((n if record_tokens else 0, gamma + 1), -1, dtype=np.int64)
    S = pair.n_states
    if method == "reference":
        rng = check_random_state(seed)
        if chains != 1:
            raise ValueError("chains > 1 needs method='fast'")
        att = np.zeros(S if count_states else 0, dtype=np.int64)
        acc = np.zeros_like(att)
        s = start_state
        for lo in range(0, n, CHUNK):
            hi = min(n, lo + CHUNK)
            u = rng.random((hi - lo, 2 * gamma + 1))
            s = _k.sd_run(prep.reference, u, s if not restart else start_state, restart, gamma,
                          tau[lo:hi], n_em[lo:hi], toks[lo:hi] if record_tokens else toks, att, acc)
        return SimResult(tau, n_em, toks if record_tokens else None,
                         att if count_states else None, acc if count_states else None, int(s))

    if restart:
        bounds = _block_bounds(n, STREAM_BLOCK)
    else:
        bounds = np.array([n * c // chains for c in range(chains + 1)], dtype=np.int64)
    states = stream_states(seed, bounds.shape[0] - 1)
    m = states.shape[0]
    att_total = np.zeros(S if count_states else 0, dtype=np.int64)
    acc_total = np.zeros_like(att_total)
    final = np.full(m, start_state, dtype=np.int64)
    group = COUNT_GROUP if count_states else m
    for g0 in range(0, m, group):
        g1 = min(m, g0 + group)
        att = np.zeros((g1 - g0, S if count_states else 0), dtype=np.int64)
        acc = np.zeros_like(att)
        _k.sd_streams(prep.tables, states[g0:g1], bounds[g0:g1 + 1], start_state, restart, gamma,
                      tau, n_em, toks, att, acc, final[g0:g1], 0)
        if count_states:
            att_total += att.sum(axis=0)
            acc_total += acc.sum(axis=0)
    return SimResult(tau, n_em, toks if record_tokens else None,
                     att_total if count_states else None, acc_total if count_states else None,
                     int(final[-1]))


def sample_first_tokens(pair: MarkovPair, gamma: int, n_tokens: int, n_runs: int, *,
                        rule: SDRule = STANDARD, seed=None, start_state: int = 0,
                        method: str = "fast", prepared: Prepared | None = None) -> np.ndarray:
    """``n_runs`` independent runs from ``start_state``; returns the first ``n_tokens`` emitted
    tokens of each, shape (n_runs, n_tokens). Their law is p^{n_tokens} iff the rule is
    lossless (claim sd.lossless). The fast method runs blocks of :data:`RUN_BLOCK` runs as
    independent streams in parallel."""
    gamma, start_state = _check_run_args(pair, gamma, start_state, rule)
    n_tokens = check_int(n_tokens, "n_tokens", min=1)
    n_runs = check_int(n_runs, "n_runs", min=0)
    _check_method(method)
    prep = _check_prepared(prepared, pair, rule, need_fast=method == "fast")
    out = np.full((n_runs, n_tokens), -1, dtype=np.int64)
    if method == "fast":
        bounds = _block_bounds(n_runs, RUN_BLOCK)
        _k.sd_first_tokens_streams(prep.tables, stream_states(seed, bounds.shape[0] - 1), bounds,
                                   n_tokens, start_state, gamma, out)
        return out
    rng = check_random_state(seed)
    step = max(1, CHUNK // n_tokens)
    for lo in range(0, n_runs, step):
        hi = min(n_runs, lo + step)
        u = rng.random((hi - lo, n_tokens, 2 * gamma + 1))
        short = _k.sd_first_tokens(prep.reference, u, n_tokens, start_state, gamma, out[lo:hi])
        if short:
            raise RuntimeError(f"{short} runs emitted fewer than {n_tokens} tokens")
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
    t = prep.reference
    V, S = t.V, t.S
    states = [state]
    drafts = []
    s = state
    for i in range(gamma):
        row = t.q_cdf[t.qrow[s]]
        x = _search_numpy(row, u[i] * row[V - 1])
        drafts.append(x)
        s = (s * V + x) % S
        states.append(s)
    block = []
    for i in range(gamma):
        s, x = states[i], drafts[i]
        pv = t.p_tab[t.prow[s], x]
        qv = t.q_tab[t.qrow[s], x]
        if t.accept_code == 0:
            ok = u[gamma + i] < pv / qv
        else:
            ok = True if pv == 0.0 else u[gamma + i] < qv / pv
        if not ok:
            row = t.r_cdf[t.rrow[s]]
            y = _search_numpy(row, u[2 * gamma] * row[V - 1])
            return block + [y], i, (s * V + y) % S
        block.append(x)
    s = states[gamma]
    if t.bonus:
        row = t.p_cdf[t.prow[s]]
        y = _search_numpy(row, u[2 * gamma] * row[V - 1])
        return block + [y], gamma, (s * V + y) % S
    return block, gamma, s


def simulate_numpy(pair: MarkovPair, gamma: int, n_iterations: int, *, rule: SDRule = STANDARD,
                   seed=None, start_state: int = 0, restart: bool = False,
                   uniforms: np.ndarray | None = None, prepared: Prepared | None = None) -> SimResult:
    """Plain-NumPy twin of :func:`simulate` (records tokens). Pass ``uniforms`` of shape
    (n_iterations, 2γ+1) to replay exactly the draws the kernel consumed."""
    gamma, start_state = _check_run_args(pair, gamma, start_state, rule)
    n = check_int(n_iterations, "n_iterations", min=0)
    restart = _check_flag(restart, "restart")
    prep = _check_prepared(prepared, pair, rule)
    if uniforms is None:
        uniforms = check_random_state(seed).random((n, 2 * gamma + 1))
    else:
        uniforms = _check_uniforms(uniforms, gamma)
        if uniforms.shape[0] != n:
            raise ValueError(f"uniforms has {uniforms.shape[0]} rows for n_iterations={n}")
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
    gamma, start_state = _check_run_args(pair, gamma, start_state, rule)
    restart = _check_flag(restart, "restart")
    u = _check_uniforms(uniforms, gamma)
    prep = prepare(pair, rule)
    n = u.shape[0]
    tau = np.empty(n, dtype=np.int32)
    n_em = np.empty(n, dtype=np.int32)
    toks = np.full((n, gamma + 1), -1, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    s = _k.sd_run(prep.reference, u, start_state, restart, gamma, tau, n_em, toks, empty, empty)
    return SimResult(tau, n_em, toks, None, None, int(s))


def _check_uniforms(uniforms, gamma):
    u = np.ascontiguousarray(uniforms, dtype=np.float64)
    if u.ndim != 2 or u.shape[1] != 2 * gamma + 1:
        raise ValueError(f"uniforms must have shape (n, {2 * gamma + 1}) for gamma={gamma}, got {u.shape}")
    if u.size and not (np.all(u >= 0.0) and np.all(u < 1.0)):
        raise ValueError("uniforms must lie in [0, 1)")
    return u
