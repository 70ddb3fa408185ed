"""Token-level speculative sampling rules (Leviathan et al. 2023, Alg. 1; Chen et al. 2023).

The correct rule: accept draft token x with probability ``min(1, p(x)/q(x))``; on the first
rejection emit a correction from ``norm(max(p − q, 0))`` and stop; after γ acceptances emit a
bonus token from p. The broken rules are the negative controls the checks must reject.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..distributions import residual as _residual_p_minus_q

ACCEPT_RATIO = 0      # accept iff u < p(x)/q(x)  (correct)
ACCEPT_SWAPPED = 1    # accept iff u < q(x)/p(x)  (a classic bug)


class TokenRule:
    """The interface of a token-level verification rule the exact engine
    (:mod:`spectheory.exact.sd`) runs: one draft token x ~ q is accepted with probability
    ``accept_probability(p, q)[x]``; on the first rejection a correction token is drawn from
    ``residual_distribution(p, q)`` and the iteration stops; after γ acceptances a bonus token is
    drawn from p if ``bonus``. Subclass it (a frozen dataclass with a ``name``, like
    :class:`SDRule`) to check a rule a paper proposes: the exact engine enumerates it on any
    Markov pair. The Numba kernel (:mod:`spectheory.montecarlo.sd`) runs only :class:`SDRule`
    itself; write your own sampler for Monte Carlo evidence of a new rule (docs/your_claims.md).
    Public and stable."""

    name: str = "rule"
    bonus: bool = True

    def accept_probability(self, p, q) -> np.ndarray:  # pragma: no cover - interface
        """P(accept | drafted token x) for every x (an array like ``q``)."""
        raise NotImplementedError

    def residual_distribution(self, p, q) -> np.ndarray:  # pragma: no cover - interface
        """The law of the correction token after a rejection (sums to 1)."""
        raise NotImplementedError


@dataclass(frozen=True)
class SDRule(TokenRule):
    """One speculative-sampling verification rule.

    accept: ``"ratio"`` (min(1, p/q), correct) or ``"swapped"`` (min(1, q/p)).
    residual: ``"p_minus_q"`` (norm(max(p−q,0)), correct) or ``"p"`` (resample from p).
    bonus: emit a bonus token from p after γ acceptances.
    """

    name: str
    accept: str = "ratio"
    residual: str = "p_minus_q"
    bonus: bool = True
    description: str = "standard speculative sampling (Leviathan et al. 2023, Alg. 1)"

    def __post_init__(self):
        if self.accept not in ("ratio", "swapped"):
            raise ValueError(f"unknown accept rule {self.accept!r}")
        if self.residual not in ("p_minus_q", "p"):
            raise ValueError(f"unknown residual rule {self.residual!r}")

    @property
    def accept_code(self) -> int:
        return ACCEPT_RATIO if self.accept == "ratio" else ACCEPT_SWAPPED

    def accept_probability(self, p, q) -> np.ndarray:
        """P(accept | drafted token x) for every x, row-wise (0 where the ratio is 0/0)."""
        p = np.asarray(p, dtype=np.float64)
        q = np.asarray(q, dtype=np.float64)
        num, den = (p, q) if self.accept == "ratio" else (q, p)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, 1.0, 0.0))
        return np.minimum(r, 1.0)

    def residual_distribution(self, p, q) -> np.ndarray:
        """Distribution of the correction token after a rejection."""
        if self.residual == "p":
            return np.asarray(p, dtype=np.float64)
        return _residual_p_minus_q(p, q)


STANDARD = SDRule("standard")
BROKEN_RESIDUAL_P = SDRule(
    "broken:residual=p", residual="p",
    description="negative control: on rejection resample from norm(p) instead of norm(max(p−q,0))")
BROKEN_SWAPPED_RATIO = SDRule(
    "broken:accept=min(1,q/p)", accept="swapped",
    description="negative control: acceptance test with the ratio inverted, min(1, q/p)")
BROKEN_NO_BONUS = SDRule(
    "broken:no-bonus", bonus=False,
    description="negative control: no bonus token after γ acceptances")
