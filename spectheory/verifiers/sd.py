"""One call of token-level speculative sampling on explicit distributions
(Leviathan et al. 2023, Alg. 1), for use on real model outputs.

Unlike :mod:`spectheory.montecarlo.sd`, nothing here assumes a Markov source: the caller
supplies the target's distributions at each drafted position plus the bonus position,
``p`` of shape (γ+1, V), the draft's ``q`` of shape (γ, V), and the drafted tokens.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..distributions import DistributionError, check_distribution
from ..rng import check_random_state, sample_index
from ..rules.sd import STANDARD, SDRule


@dataclass(frozen=True)
class Verdict:
    """Outcome of one verification: ``tau`` accepted draft tokens, then the emitted block
    (the accepted prefix plus the correction or bonus token)."""

    tau: int
    tokens: tuple


def speculative_verify(p, q, draft_tokens, *, seed=None, rule: SDRule = STANDARD) -> Verdict:
    """Verify ``draft_tokens`` (length γ) drafted from ``q`` against target ``p``.

    p: (γ+1, V) target distributions at positions 1..γ+1 (the last one for the bonus token);
    q: (γ, V) draft distributions at positions 1..γ.

    Raises :class:`DistributionError` for invalid distributions, mismatched vocabularies or
    shapes, token ids outside the vocabulary, or a drafted token to which q gives zero mass
    (it cannot have been drafted from q: the acceptance ratio p/q would be undefined).
    """
    if not isinstance(rule, SDRule):
        raise TypeError(f"rule must be an SDRule, got {type(rule).__name__}")
    p = check_distribution(np.atleast_2d(p), name="p (target)")
    q = check_distribution(np.atleast_2d(q), name="q (draft)")
    for name, a in (("p", p), ("q", q)):
        if a.ndim != 2:
            raise DistributionError(f"{name} must be a (positions, V) table, got shape {a.shape}")
    x = np.asarray(draft_tokens)
    if x.ndim != 1 or not np.issubdtype(x.dtype, np.integer):
        raise DistributionError("draft_tokens must be a 1-D array of integer token ids")
    gamma = x.shape[0]
    if p.shape[1] != q.shape[1]:
        raise DistributionError(f"mismatched vocabularies: p has V={p.shape[1]}, q has V={q.shape[1]}")
    if q.shape[0] != gamma or p.shape[0] != gamma + 1:
        raise DistributionError(
            f"for {gamma} draft tokens, q must have {gamma} rows and p {gamma + 1} rows "
            f"(the last for the bonus token); got q {q.shape[0]}, p {p.shape[0]}")
    V = p.shape[1]
    if gamma and (x.min() < 0 or x.max() >= V):
        raise DistributionError(f"draft token ids must lie in [0, {V}); got {x.min()}..{x.max()}")
    zero = np.flatnonzero(q[np.arange(gamma), x] <= 0)
    if zero.size:
        i = int(zero[0])
        raise DistributionError(
            f"draft token {int(x[i])} at position {i} has q = 0: it cannot have been drafted from q")
    rng = check_random_state(seed)
    return _verify(p, q, x, rng, rule)


def speculative_verify_unchecked(p: np.ndarray, q: np.ndarray, draft_tokens, rng: np.random.Generator,
                                 rule: SDRule = STANDARD) -> Verdict:
    """:func:`speculative_verify` without its input checks, for distributions the toolkit has
    just built itself (:mod:`spectheory.validate.specdec`, every SD iteration at V ≈ 150k).

    p: (γ+1, V), q: (γ, V) float64 rows (e.g. from ``spectheory.validate.trace.sampling_probs``),
    draft_tokens: γ ≥ 1 ids in [0, V) drafted from q (so q > 0 there), rng: a Generator.
    Nothing is validated; the renormalisation that :func:`speculative_verify` applies
    (``check_distribution``: each row divided by its sum) is applied only to the entries
    and rows the verification reads. Same numbers, same draws, so the same verdict, bit for
    bit, as ``speculative_verify(p, q, draft_tokens, seed=rng, rule=rule)``.
    """
    return _verify(p, q, np.asarray(draft_tokens, dtype=np.int64), rng, rule, p.sum(axis=-1), q.sum(axis=-1))


def _row(a, sums, i):
    """Row i of a, divided by its sum when ``sums`` is given (check_distribution's values)."""
    return a[i] if sums is None else a[i] / sums[i]


def _verify(p, q, x, rng, rule, p_sum=None, q_sum=None) -> Verdict:
    """The verification itself. p_sum, q_sum: row sums to normalise by (lazily), or None
    when p and q are already normalised."""
    gamma = x.shape[0]
    r = np.arange(gamma)
    p_x, q_x = p[r, x], q[r, x]
    if p_sum is not None:
        p_x, q_x = p_x / p_sum[:gamma], q_x / q_sum
    acc = rule.accept_probability(p_x, q_x) if gamma else np.zeros(0)
    for i in range(gamma):
        if not rng.random() < acc[i]:
            y = sample_index(rng, rule.residual_distribution(_row(p, p_sum, i), _row(q, q_sum, i)))
            return Verdict(i, tuple(int(t) for t in x[:i]) + (y,))
    if rule.bonus:
        return Verdict(gamma, tuple(int(t) for t in x) + (sample_index(rng, _row(p, p_sum, gamma)),))
    return Verdict(gamma, tuple(int(t) for t in x))
