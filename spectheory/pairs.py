"""Constructors for target/draft :class:`~spectheory.markov.MarkovPair` regimes.

The papers talk about drafts that are weakly or strongly aligned with the target, drafts
that are distilled/quantised/truncated versions of the target, and n-gram drafts. Each
constructor below builds one such regime and records its parameters so a report can name
the instance and reproduce it.
"""
from __future__ import annotations

import numpy as np

from .checks import check_int, check_probability, check_real
from .distributions import DistributionError, normalize
from .markov import MAX_STATES, MarkovPair, MarkovSource
from .rng import check_random_state


#: Largest dense count table (states × V) an n-gram estimate builds.
MAX_NGRAM_CELLS = 1 << 26


def dirichlet_source(V: int, order: int, concentration: float = 1.0, seed=None,
                     n_rows: int | None = None) -> MarkovSource:
    """Random order-``order`` source whose conditionals are i.i.d. Dirichlet(concentration).

    ``n_rows`` < V**order shares that many random rows among the states (state s uses row
    ``s mod n_rows``), for large vocabularies."""
    V = check_int(V, "V (vocabulary size)", min=1)
    order = check_int(order, "order", min=0)
    concentration = check_real(concentration, "concentration", lo=0.0, lo_open=True)
    if V > 1 and order * np.log2(V) > np.log2(MAX_STATES):
        raise ValueError(f"an order-{order} source over V={V} has more than {MAX_STATES} states")
    rng = check_random_state(seed)
    S = V ** order
    R = S if n_rows is None else min(check_int(n_rows, "n_rows", min=1), S)
    rows = rng.dirichlet(np.full(V, float(concentration)), size=R) if V > 1 else np.ones((R, 1))
    # Dirichlet draws with tiny concentration can underflow to exact zeros; keep rows valid.
    rows = normalize(np.maximum(rows, 0.0))
    ros = None if R == S else np.arange(S, dtype=np.int64) % R
    return MarkovSource(rows, order, ros)


def _check_source(source) -> MarkovSource:
    if not isinstance(source, MarkovSource):
        raise TypeError(f"source must be a MarkovSource, got {type(source).__name__}")
    return source


def _derived(source: MarkovSource, rows: np.ndarray) -> MarkovSource:
    return MarkovSource(rows, source.order, source.row_of_state)


def temperature(source: MarkovSource, T: float) -> MarkovSource:
    """q ∝ p^(1/T) row-wise (T > 1 flattens, T < 1 sharpens; zeros stay zero)."""
    _check_source(source)
    T = check_real(T, "temperature T", lo=0.0, lo_open=True)
    with np.errstate(divide="ignore"):
        logp = np.log(source.rows)
    z = logp / T
    z -= z.max(axis=1, keepdims=True)
    return _derived(source, normalize(np.exp(z)))


def mix_with_noise(source: MarkovSource, eps: float, seed=None, concentration: float = 1.0) -> MarkovSource:
    """q = (1 − ε) p + ε u with u an independent Dirichlet(concentration) row per row of p."""
    _check_source(source)
    eps = check_probability(eps, "eps (noise weight)")
    concentration = check_real(concentration, "concentration", lo=0.0, lo_open=True)
    rng = check_random_state(seed)
    R, V = source.rows.shape
    noise = rng.dirichlet(np.full(V, float(concentration)), size=R) if V > 1 else np.ones((R, 1))
    return _derived(source, normalize((1 - eps) * source.rows + eps * noise))


def top_k(source: MarkovSource, k: int) -> MarkovSource:
    """Keep the k most likely tokens of each row and renormalise (creates draft tokens with
    q = 0 where p > 0). Ties are broken by token index."""
    _check_source(source)
    k = check_int(k, "k", min=1)
    rows = source.rows
    order = np.argsort(-rows, axis=1, kind="stable")[:, :k]
    mask = np.zeros_like(rows, dtype=bool)
    np.put_along_axis(mask, order, True, axis=1)
    kept = np.where(mask, rows, 0.0)
    # a row whose top-k mass is 0 cannot happen: the top-1 token has positive mass
    return _derived(source, normalize(kept))


def quantize_logits(source: MarkovSource, step: float) -> MarkovSource:
    """Quantisation-like rounding: log-probabilities rounded to a grid of ``step`` nats,
    then renormalised (−inf stays −inf)."""
    _check_source(source)
    step = check_real(step, "step (grid, nats)", lo=0.0, lo_open=True)
    with np.errstate(divide="ignore"):
        logp = np.log(source.rows)
    z = np.where(np.isfinite(logp), np.round(logp / step) * step, -np.inf)
    z -= z.max(axis=1, keepdims=True)
    return _derived(source, normalize(np.exp(z)))


def random_pair(V: int, order: int = 1, concentration: float = 1.0, seed=None, name=None) -> MarkovPair:
    """Target and draft drawn independently from the same Dirichlet prior (no alignment)."""
    rng = check_random_state(seed)
    p = dirichlet_source(V, order, concentration, rng)
    q = dirichlet_source(V, order, concentration, rng)
    return MarkovPair(p, q, name or f"random-V{V}-o{order}",
                      {"regime": "independent", "concentration": concentration})


def perturbed_pair(V: int, order: int = 1, *, concentration: float = 1.0, how: str = "mix",
                   strength: float = 0.3, seed=None, name=None, n_rows: int | None = None) -> MarkovPair:
    """Random target, draft = target perturbed.

    ``how``: ``"mix"`` (noise of strength ε), ``"temperature"`` (T = strength),
    ``"top_k"`` (k = strength), ``"quantize"`` (grid step = strength nats).
    """
    rng = check_random_state(seed)
    p = dirichlet_source(V, order, concentration, rng, n_rows=n_rows)
    if how not in ("mix", "temperature", "top_k", "quantize"):
        raise ValueError(f"unknown perturbation {how!r}; use mix, temperature, top_k or quantize")
    strength = check_real(strength, "strength")
    if how == "mix":
        q = mix_with_noise(p, strength, rng, concentration)
    elif how == "temperature":
        q = temperature(p, strength)
    elif how == "top_k":
        q = top_k(p, strength)
    elif how == "quantize":
        q = quantize_logits(p, strength)
    else:
        raise ValueError(f"unknown perturbation {how!r}; use mix, temperature, top_k or quantize")
    return MarkovPair(p, q, name or f"{how}{strength:g}-V{V}-o{order}",
                      {"regime": how, "strength": strength, "concentration": concentration})


def aligned_pair(V: int, order: int = 1, alignment: str = "strong", seed=None,
                 n_rows: int | None = None) -> MarkovPair:
    """Weakly (ε = 0.7 noise mixing) or strongly (ε = 0.1) aligned target/draft pair."""
    eps = {"strong": 0.1, "weak": 0.7}.get(alignment)
    if eps is None:
        raise ValueError(f"alignment must be 'strong' or 'weak', got {alignment!r}")
    return perturbed_pair(V, order, how="mix", strength=eps, seed=seed, n_rows=n_rows,
                          name=f"{alignment}-V{V}-o{order}")


def bimodal_pair(V: int, order: int = 1, *, hard_fraction: float = 0.5, hard_strength: float = 0.9,
                 easy_strength: float = 0.05, concentration: float = 0.3, seed=None, name=None) -> MarkovPair:
    """Easy and hard contexts (the acceptance of real draft/target pairs is bimodal, which is
    what SpecBranch's H-RAD exploits): a random target; in a ``hard_fraction`` of the states
    the draft row is the target's mixed with independent Dirichlet noise of weight
    ``hard_strength``, in the others with weight ``easy_strength``."""
    V = check_int(V, "V (vocabulary size)", min=1)
    order = check_int(order, "order", min=0)
    hard_fraction = check_probability(hard_fraction, "hard_fraction")
    hard_strength = check_probability(hard_strength, "hard_strength")
    easy_strength = check_probability(easy_strength, "easy_strength")
    rng = check_random_state(seed)
    p = dirichlet_source(V, order, concentration, rng)
    S = p.n_states
    noise = rng.dirichlet(np.full(V, float(concentration)), size=S) if V > 1 else np.ones((S, 1))
    hard = np.zeros(S, dtype=bool)
    hard[rng.permutation(S)[: int(round(hard_fraction * S))]] = True
    s = np.where(hard, hard_strength, easy_strength)[:, None]
    q = MarkovSource(normalize((1.0 - s) * p.table + s * np.maximum(noise, 0.0)), order)
    return MarkovPair(p, q, name or f"bimodal{hard_fraction:g}x{hard_strength:g}-V{V}-o{order}",
                      {"regime": "bimodal", "hard_fraction": hard_fraction, "hard_strength": hard_strength,
                       "easy_strength": easy_strength, "concentration": concentration})


def ngram_source(tokens, V: int, order: int, smoothing: float = 0.5) -> MarkovSource:
    """Order-``order`` n-gram estimate of a token stream with additive smoothing.

    The first ``order`` tokens only serve as context. ``smoothing`` = 0 gives the maximum
    likelihood estimate; an unseen context then falls back to the uniform distribution.
    """
    V = check_int(V, "V (vocabulary size)", min=1)
    order = check_int(order, "order", min=0)
    smoothing = check_real(smoothing, "smoothing", lo=0.0)
    raw = np.asarray(tokens)
    if raw.size and not np.issubdtype(raw.dtype, np.integer):
        raise DistributionError(f"tokens must be integer token ids, got dtype {raw.dtype}")
    toks = raw.astype(np.int64)
    if toks.ndim != 1 or toks.size <= order:
        raise ValueError(f"need a 1-D token stream longer than the order ({order})")
    if toks.min() < 0 or toks.max() >= V:
        raise DistributionError(f"token ids must lie in [0, {V}); found {toks.min()}..{toks.max()}")
    if order * np.log2(max(V, 2)) + np.log2(max(V, 2)) > np.log2(MAX_NGRAM_CELLS):
        raise ValueError(f"an order-{order} n-gram table over V={V} has V**(order+1) > {MAX_NGRAM_CELLS} "
                         "cells; lower the order or the vocabulary")
    S = V ** order
    counts = np.zeros((S, V))
    s = 0
    for i, x in enumerate(toks):
        if i >= order:
            counts[s, x] += 1
        s = (s * V + int(x)) % S
    counts += smoothing
    tot = counts.sum(axis=1, keepdims=True)
    rows = np.where(tot > 0, counts / np.where(tot > 0, tot, 1), 1.0 / V)
    return MarkovSource(rows, order)


def ngram_pair(target: MarkovSource, n_tokens: int, draft_order: int | None = None,
               smoothing: float = 0.5, seed=None) -> MarkovPair:
    """Draft = n-gram estimate from ``n_tokens`` tokens sampled from the target."""
    from .markov import lift_order
    _check_source(target)
    n_tokens = check_int(n_tokens, "n_tokens", min=1)
    if draft_order is not None:
        draft_order = check_int(draft_order, "draft_order", min=0)
        if draft_order > target.order:
            raise ValueError(f"draft_order ({draft_order}) must not exceed the target's order ({target.order})")
    stream = target.sample(n_tokens, seed)
    d_order = target.order if draft_order is None else draft_order
    q = ngram_source(stream, target.V, d_order, smoothing)
    if d_order < target.order:
        q = lift_order(q, target.order)
    return MarkovPair(target, q, f"ngram{d_order}-from{n_tokens}",
                      {"regime": "ngram", "n_tokens": n_tokens, "smoothing": smoothing})


def pair_from_tables(p, q, order: int = 0, name: str = "custom") -> MarkovPair:
    """A pair from explicit tables: 1-D p, q for order 0, or (V**order, V) tables."""
    from .distributions import check_pair
    order = check_int(order, "order", min=0)
    p, q = check_pair(np.atleast_2d(np.asarray(p, dtype=np.float64)),
                      np.atleast_2d(np.asarray(q, dtype=np.float64)), names=("p (target)", "q (draft)"))
    return MarkovPair(MarkovSource(p, order), MarkovSource(q, order), name)
