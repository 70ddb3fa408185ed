"""Verification rules of Speculative Ensemble (Fu et al., ICML 2025), correct and broken.

The correct rule (Sec. 3.2, Eq. 6): a token x proposed by member k (distribution q_k) is
accepted with probability ``min(1, r(x)/q_k(x))``, r the ensemble distribution at that
position; on rejection the token is resampled from ``norm(max(r − q_k, 0))``. The
speculative-based ensemble appends **no** bonus token (App. A.2: "we do not account for the
bonus token"); the alternate proposal framework (Alg. 1) and the n-model framework
(Alg. 2) instead turn the verifier's bonus token into the next proposal, verified in turn.

Broken variants (negative controls):

* ``residual="member"``: resample from ``norm(max(p_other − q_k, 0))``, the residual taken
  against the wrong member (the other model instead of the ensemble);
* ``verify="member"``: plain speculative decoding against the other member (accept with
  ``min(1, p_other/q_k)``, residual against it too), i.e. the ensemble forgotten;
* ``residual="drop"``: a rejected token is discarded and nothing is resampled (the
  correction token lost), so a cycle can emit no token at all;
* ``bonus="unchecked"``: after all proposals are accepted, the verifier's bonus token is
  appended to the output without being checked against r (the paper warns against it,
  Sec. 1 and Sec. 3.3), and a new default cycle starts.

"The other member" for a proposal of member k: for two models the member that did not
propose; for n > 2 models the last member (the first, if k is the last).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_int

VERIFY_ENSEMBLE, VERIFY_MEMBER = 0, 1
RESIDUAL_ENSEMBLE, RESIDUAL_MEMBER = 0, 1
BONUS_NONE, BONUS_UNCHECKED = 0, 1


def other_member(k: int, n: int) -> int:
    """The member a broken rule uses in place of the ensemble for a proposal of member k."""
    n = check_int(n, "n (members)", min=2)
    k = check_int(k, "k (proposer)", min=0, max=n - 1)
    if n == 2:
        return 1 - k
    return n - 1 if k != n - 1 else 0


def _ratio(num, den):
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, 1.0, 0.0))
    return np.minimum(r, 1.0)


def _residual(target, q, fallback):
    d = np.maximum(np.asarray(target) - np.asarray(q), 0.0)
    s = d.sum(axis=-1, keepdims=True)
    return np.where(s > 0, d / np.where(s > 0, s, 1.0), fallback)


@dataclass(frozen=True)
class SERule:
    """One SE verification rule (see the module docstring)."""

    name: str
    verify: str = "ensemble"
    residual: str = "ensemble"
    bonus: str = "none"
    description: str = "speculative-based ensemble verification (Fu et al., Sec. 3.2, Eq. 6)"

    def __post_init__(self):
        if self.verify not in ("ensemble", "member"):
            raise ValueError(f"unknown verify rule {self.verify!r}")
        if self.residual not in ("ensemble", "member", "drop"):
            raise ValueError(f"unknown residual rule {self.residual!r}")
        if self.bonus not in ("none", "unchecked"):
            raise ValueError(f"unknown bonus rule {self.bonus!r}")

    @property
    def codes(self) -> tuple[int, int, int]:
        return (VERIFY_ENSEMBLE if self.verify == "ensemble" else VERIFY_MEMBER,
                RESIDUAL_ENSEMBLE if self.residual == "ensemble" else RESIDUAL_MEMBER,
                BONUS_NONE if self.bonus == "none" else BONUS_UNCHECKED)

    def accept_probability(self, r, q_k, p_other) -> np.ndarray:
        """P(accept | proposed x) for every x: ``min(1, r/q_k)`` (or ``min(1, p_other/q_k)``)."""
        return _ratio(r if self.verify == "ensemble" else p_other, q_k)

    def residual_distribution(self, r, q_k, p_other) -> np.ndarray:
        """Law of the resampled token after a rejection (falls back to r on zero mass)."""
        target = r if (self.verify == "ensemble" and self.residual != "member") else p_other
        return _residual(target, q_k, r)


STANDARD = SERule("standard")
BROKEN_RESIDUAL_MEMBER = SERule(
    "broken:residual=norm(max(p−q,0))", residual="member",
    description="negative control: residual against the wrong member, norm(max(p_other − q,0)) "
                "instead of norm(max(r − q,0))")
BROKEN_VERIFY_MEMBER = SERule(
    "broken:verify-against-member", verify="member", residual="member",
    description="negative control: plain SD against the other member (min(1, p/q), residual "
                "norm(max(p−q,0))), the ensemble forgotten")
BROKEN_DROP_CORRECTION = SERule(
    "broken:no-correction", residual="drop",
    description="negative control: a rejected proposal is dropped without resampling from the "
                "residual (the correction token lost)")
BROKEN_BONUS_UNCHECKED = SERule(
    "broken:bonus-unchecked", bonus="unchecked",
    description="negative control: the verifier's bonus token appended without checking it "
                "against r (the paper's Sec. 1 warns against it)")
