"""Monte Carlo of GSD and ERSD tree drafting on Markov pairs (Kobus & Gündüz): the public wrappers
of :mod:`spectheory._kernels.ersd` (validation, seeding, stream layout).

Every function takes ``seed`` (int, SeedSequence or Generator) and ``n_streams`` independent
xoshiro256++ streams (:func:`spectheory.rng.stream_states`); the output depends on (seed,
n_streams) only, not on the number of threads.
"""
from __future__ import annotations

import numpy as np

from .._kernels import ersd as _k
from ..checks import check_int, check_int_array, check_log_base, check_real_array, check_state, check_type
from ..divergences import entropy
from ..markov import MarkovPair
from ..rng import stream_states
from ..trees import Tree, expected_generated, fit_zero_order, zero_order

#: Default number of independent streams.
N_STREAMS = 8


def tables(pair: MarkovPair) -> _k.Tables:
    check_type(pair, MarkovPair, "pair")
    return _k.Tables(np.ascontiguousarray(pair.target.rows), np.ascontiguousarray(pair.draft.rows),
                     np.ascontiguousarray(pair.target.row_of_state), np.ascontiguousarray(pair.draft.row_of_state),
                     int(pair.V), int(pair.n_states))


def _rule_args(rule):
    from ..rules.ersd import ERSDRule, GSDRule
    if not isinstance(rule, (GSDRule, ERSDRule)):
        raise TypeError(f"rule must be a GSDRule or an ERSDRule, got {type(rule).__name__}")
    return int(rule.code), int(rule.variant), bool(getattr(rule, "shared", True))


def _split(n, n_streams, name="n"):
    n = check_int(n, name, min=1)
    n_streams = check_int(n_streams, "n_streams", min=1)
    per = -(-n // n_streams)
    return per, n_streams


def simulate_tree(pair: MarkovPair, rule, tree: Tree, n_iterations: int, *, seed=None,
                  start_state: int = 0, restart: bool = True, n_streams: int = N_STREAMS) -> np.ndarray:
    """Tokens generated per iteration of tree drafting (``n_iterations`` values). ``restart``:
    every iteration starts from ``start_state`` (i.i.d.); else each stream continues its text."""
    T = tables(pair)
    check_type(tree, Tree, "tree", " (spectheory.trees)")
    check_state(start_state, pair.n_states)
    per, ns = _split(n_iterations, n_streams, "n_iterations")
    child, mx = tree.arrays()
    out = np.zeros((ns, per), dtype=np.int32)
    _k.run_tree(stream_states(seed, ns), int(start_state), bool(restart), T, child, mx,
                *_rule_args(rule), out)
    return out.ravel()[:int(n_iterations)]


def sample_first_tokens(pair: MarkovPair, rule, tree: Tree, n_tokens: int, n_runs: int, *, seed=None,
                        start_state: int = 0, n_streams: int = N_STREAMS) -> np.ndarray:
    """(n_runs, n_tokens): the first generated tokens of independent runs from ``start_state``;
    their law is p^{n_tokens} iff the method is lossless (claim ersd.lossless)."""
    T = tables(pair)
    check_type(tree, Tree, "tree", " (spectheory.trees)")
    check_state(start_state, pair.n_states)
    N = check_int(n_tokens, "n_tokens", min=1)
    per, ns = _split(n_runs, n_streams, "n_runs")
    child, mx = tree.arrays()
    out = np.zeros((ns, per, N), dtype=np.int64)
    _k.run_first_tokens(stream_states(seed, ns), int(start_state), T, child, mx,
                        *_rule_args(rule), out)
    return out.reshape(-1, N)[:int(n_runs)]


def index_stream(pair: MarkovPair, rule, length: int, *, m: int | None = None, seed=None,
                 start_state: int = 0, n_streams: int = N_STREAMS, burn_in: int = 200):
    """Acceptance indices along generated texts: ``(idx, states)``, each (n_streams, length).
    Every context keeps indices 1..m (default V; index V + 1 = none of them). ``burn_in``
    positions are dropped so the streams start near stationarity."""
    T = tables(pair)
    check_state(start_state, pair.n_states)
    burn_in = check_int(burn_in, "burn_in", min=0)
    m = pair.V if m is None else check_int(m, "m", min=1, max=pair.V)
    per, ns = _split(length, n_streams, "length")
    total = per + burn_in
    idx = np.zeros((ns, total), dtype=np.int32)
    sts = np.zeros((ns, total), dtype=np.int64)
    _k.run_index_stream(stream_states(seed, ns), int(start_state), T, int(m), *_rule_args(rule), idx, sts)
    return idx[:, burn_in:], sts[:, burn_in:]


def tree_outcomes_from_stream(idx: np.ndarray, tree: Tree) -> np.ndarray:
    """Generated tokens of an iteration started at every position of each index stream
    (positions whose iteration could run past the end are dropped): 1 + #accepted vertices,
    where vertex (i_1..i_d) is accepted at start t iff idx[t..t+d−1] = (i_1..i_d).
    Returns (n_streams, T − depth)."""
    check_type(tree, Tree, "tree", " (spectheory.trees)")
    idx = np.atleast_2d(check_int_array(idx, "idx (acceptance indices)", min=1))
    if idx.ndim != 2:
        raise ValueError(f"idx (acceptance indices) must be (n_streams, length), got shape {idx.shape}")
    D = tree.depth
    T = idx.shape[1] - D
    if T < 1:
        raise ValueError(f"streams of length {idx.shape[1]} are too short for a tree of depth {D}")
    gen = np.ones((idx.shape[0], T), dtype=np.int32)
    masks = {(): np.ones((idx.shape[0], T), dtype=bool)}
    for v in tree.vertices:  # parents before children
        d = len(v)
        m = masks[v[:-1]] & (idx[:, d - 1:d - 1 + T] == v[-1])
        masks[v] = m
        gen += m
    return gen


# --- estimators on index streams ---------------------------------------------------------------

def _streams(x, name: str, ints: bool = False) -> np.ndarray:
    x = np.atleast_2d(check_int_array(x, name, min=1) if ints else check_real_array(x, name))
    if x.ndim != 2 or x.size == 0:
        raise ValueError(f"{name} must be a non-empty (n_streams, length) array, got shape {x.shape}")
    return x


def batch_means(x, n_batches: int = 200) -> tuple[float, float, int]:
    """(mean, batch-means standard error, number of values) of per-position values along texts,
    ``x`` of shape (n_streams, length): positions along a text are dependent, batches of
    consecutive positions nearly not; about ``n_batches`` batches in all."""
    x = _streams(np.asarray(x, dtype=np.float64), "x (per-position values)")
    n_batches = check_int(n_batches, "n_batches", min=2)
    per = max(1, x.shape[1] // max(1, n_batches // x.shape[0]))
    nb = x.shape[1] // per
    means = x[:, :nb * per].reshape(x.shape[0], nb, per).mean(axis=2).ravel()
    return float(x.mean()), float(means.std(ddof=1) / np.sqrt(means.size)), int(x.size)


def plugin_entropy(idx, n_cells: int, base: float = 2.0) -> tuple[float, float, np.ndarray]:
    """(plug-in entropy, its delta-method standard error, the observed frequencies) of observed
    indices 1..n_cells, read as i.i.d. draws (an order-0 source's positions)."""
    idx = _streams(idx, "idx (acceptance indices)", ints=True)
    n_cells = check_int(n_cells, "n_cells", min=int(idx.max()))
    base = check_log_base(base)
    a = np.bincount(idx.ravel() - 1, minlength=n_cells) / idx.size
    H = float(entropy(a, base))
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.where(a > 0, np.log(a) / np.log(base), 0.0)
    var = float(np.sum(a * lg ** 2) - H ** 2)
    return H, float(np.sqrt(max(var, 0.0) / idx.size)), a


def block_zero_order_gaps(idx, tree: Tree, n_batches: int, n_indices: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Per block of consecutive positions of each stream (``n_batches`` per stream): the measured
    E[generated] of ``tree`` started at every position of the block over the 0th-order prediction
    from the block's fitted a (indices > ``n_indices`` lumped), minus 1; and the predictions. The
    blocks' gaps are nearly independent, and measured and predicted share the block's
    fluctuations, so their ratio is far less noisy than either."""
    idx = _streams(idx, "idx (acceptance indices)", ints=True)
    check_type(tree, Tree, "tree", " (spectheory.trees)")
    n_batches = check_int(n_batches, "n_batches", min=1)
    n_indices = check_int(n_indices, "n_indices", min=1)
    per = idx.shape[1] // n_batches
    gaps, preds = [], []
    for s in range(idx.shape[0]):
        for b in range(n_batches):
            blk = idx[s:s + 1, b * per:(b + 1) * per]
            pred = expected_generated(zero_order(fit_zero_order(np.where(blk > n_indices, n_indices + 1, blk),
                                                                n_indices)), tree)
            gaps.append(tree_outcomes_from_stream(blk, tree).mean() / pred - 1.0)
            preds.append(pred)
    return np.array(gaps), np.array(preds)
