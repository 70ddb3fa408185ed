"""Sweep job kinds of the exponential-race family's drafting trees, GSD and ERSD (``ersd.*``).

Both run on acceptance-index streams of simulated text (:func:`spectheory.montecarlo.ersd.index_stream`,
Numba kernel): ``n_positions`` positions of the pair (:data:`spectheory.sims.jobs.PAIR_SPEC`) under ``rule``
(``gsd``, ``ersd`` or a broken control of :data:`spectheory.rules.ersd.RULES`), drawn from
``stream_seed`` (default 0) — **not** from the job's own seed, so that every (strategy, k) of one
(pair, rule, n_positions, stream_seed) sees the same stream (common random numbers: the
marginal gains E(k) − E(k−1) are differences along one stream). A worker builds each stream
once (cached). The 0th-order acceptance-index distribution a is fitted from the stream.

* ``ersd.tree``: parameters as above plus ``strategy`` (``batch``, ``sequence``, ``optimal``
  = Alg. 3 on a, ``specinfer``) and ``k`` (drafted tokens). Results: ``theory`` = 1 + Σ_v Π a(i_j)
  and ``simulation`` = mean generated tokens of iterations started at every position;
  ``se_simulation`` its standard error; ``simulation_gain`` the marginal gain E(k) − E(k−1)
  over the same start positions (against the tree of k − 1 drafted tokens; for k = 1, against
  the single generated token; a difference of two ``simulation`` values also moves with the
  positions a deeper tree drops at the end) and ``se_gain`` its standard error. Standard errors
  by batch means: iterations at nearby positions overlap, so each stream is cut into
  :data:`BATCHES` contiguous batches whose means are nearly independent.
* ``ersd.bound``: parameters as above plus ``k``. Result ``lemma42_bound``: Lemma 4.2's bound
  minimised over n (M = the largest index of the optimal tree of k vertices), ``lemma42_n``.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..sweep import job
from . import PAIR_SPEC, REQUIRED, cached_pair, choice, integer, pair_key, parse

STRATEGIES = ("batch", "sequence", "optimal", "specinfer")
#: contiguous batches per stream for the batch-means standard errors of ``ersd.tree``
BATCHES = 20


def _spec(**extra) -> dict:
    from spectheory.rules.ersd import RULES
    return {**PAIR_SPEC, "rule": (choice(*RULES), REQUIRED), "n_positions": (integer(min=1), REQUIRED),
            "stream_seed": (integer(min=0), 0), "k": (integer(min=1), REQUIRED), **extra}


@lru_cache(maxsize=8)
def _stream(pkey: tuple, rule: str, n_positions: int, stream_seed: int):
    """(pair, acceptance-index streams, fitted a) of one stream key."""
    from spectheory import trees as T
    from spectheory.montecarlo import ersd as mc
    from spectheory.rng import derive_seed
    from spectheory.rules.ersd import RULES
    pair = cached_pair(pkey)
    idx, _ = mc.index_stream(pair, RULES[rule], n_positions, m=pair.V,
                             seed=np.random.default_rng(derive_seed(stream_seed, "fig_ersd", rule)))
    return pair, idx, T.fit_zero_order(idx, pair.V)


@lru_cache(maxsize=256)
def _optimal(skey: tuple, k: int):
    from spectheory import trees as T
    pair, _, a = _stream(*skey)
    return T.optimal_tree(T.zero_order(a), k, pair.V)


def _stream_key(kind: str, p: dict) -> tuple:
    return (pair_key(kind, p), p["rule"], p["n_positions"], p["stream_seed"])


def build_tree(strategy: str, k: int, skey: tuple):
    from spectheory import trees as T
    V = _stream(*skey)[0].V
    if strategy == "batch":
        return T.batch_tree(min(k, V))
    if strategy == "sequence":
        return T.sequence_tree(k)
    if strategy == "specinfer":
        return T.specinfer_tree(k)
    return _optimal(skey, k)


def _check(kind: str, **extra):
    def check(params: dict) -> None:
        """Every parameter of the job, checked before any job runs (:func:`spectheory.sims.sweep.grid`)."""
        _stream_key(kind, parse(kind, params, _spec(**extra)))
    return check


@job("ersd.tree", check=_check("ersd.tree", strategy=(choice(*STRATEGIES), REQUIRED)))
def ersd_tree(params: dict, seed) -> dict:
    """Expected accepted tokens of one draft tree (batch, sequence, SpecInfer or optimal) of size k: zero-order theory and simulation on sampled streams, with the gain over size k − 1."""
    from spectheory.closed_forms import ersd as cf
    from spectheory.montecarlo import ersd as mc
    p = parse("ersd.tree", params, _spec(strategy=(choice(*STRATEGIES), REQUIRED)))
    skey = _stream_key("ersd.tree", p)
    _, idx, a = _stream(*skey)
    tree = build_tree(p["strategy"], p["k"], skey)
    gen = mc.tree_outcomes_from_stream(idx, tree)
    prev = (mc.tree_outcomes_from_stream(idx, build_tree(p["strategy"], p["k"] - 1, skey)) if p["k"] > 1
            else np.ones_like(gen))
    n = min(gen.shape[1], prev.shape[1])
    return {"theory": float(cf.zero_order_expected(a, tree)),
            "simulation": float(gen.mean()),
            "se_simulation": batch_means_se(gen),
            "simulation_gain": float((gen[:, :n] - prev[:, :n]).mean()),
            "se_gain": batch_means_se(gen[:, :n] - prev[:, :n])}


def batch_means_se(x: np.ndarray, batches: int = BATCHES) -> float:
    """Standard error of the mean of ``x`` (streams × positions) from the means of ``batches``
    contiguous batches per stream (a remainder shorter than a batch is left out)."""
    L = x.shape[1] // batches
    if L < 1:
        return float("nan")
    m = x[:, :L * batches].reshape(x.shape[0] * batches, L).mean(axis=1)
    return float(m.std(ddof=1) / np.sqrt(m.size))


@job("ersd.bound", check=_check("ersd.bound"))
def ersd_bound(params: dict, seed) -> dict:
    """The Lemma 4.2 bound of Kobus et al. (2025) on the optimal tree's expected accepted length for a tree size k (closed form)."""
    from spectheory.closed_forms import ersd as cf
    p = parse("ersd.bound", params, _spec())
    skey = _stream_key("ersd.bound", p)
    a = _stream(*skey)[2]
    M = max(max(v) for v in _optimal(skey, p["k"]).vertices)
    value, n = cf.lemma42_min_bound(a, p["k"], M)
    return {"lemma42_bound": float(value), "lemma42_n": int(n)}
