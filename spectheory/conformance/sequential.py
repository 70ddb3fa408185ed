"""Group-sequential testing for the conformance checks: look at the data after groups of runs
and stop a check as soon as it is decided.

**Design.** Up to ``n`` runs per (instance, γ), looked at after ``n_k = ⌈f_k·n⌉`` runs, k = 1..6,
f = (1/16, 1/8, 1/4, 1/2, 4/5, 1). Look k spends the share ``w_k`` of a test's level α, with
w = (1/32, 1/32, 1/16, 1/8, 1/2, 1/4) (Σ w = 1): at look k the test rejects when p < w_k·α. Half the
level is spent at 4/5 of n: the chi-square tests with the most cells (81 joint cells of four
tokens, 80 df: 7,991 runs for w = 0.1 at power 0.9 at half the level, 7,618 at all of it) reach
their power there (8,000 runs at the default n) instead of at the last look, and the last look
still decides what is left (the schedule is fixed before any data: the bound below holds).

**Error rate.** Bonferroni over looks (alpha spending with a union bound): the chance that a
correct sampler is rejected at *some* look is ≤ Σ_k w_k·α = α, whatever the dependence between
looks (the data of look k contains that of earlier looks). Stopping to *accept* never adds a
false rejection. So the family-wise statement of the report (each verdict's α split over its
tests, Bonferroni) holds unchanged.

**Stopping.** A check stops at the first look where it fails (p < w_k·α) or passes with power:
p ≥ w_k·α and the deviation its test detects with probability 0.9 *at that look's level and
sample size* is within the check's tolerance. The report gives, for each test, the look, n,
the level w_k·α and the detectable deviation (the power statement of that test). A check
undecided at the last look is reported as at the last look (``underpowered`` there). A run of
(instance, γ) stops when all its checks are decided: a sampler whose law is far off fails after
n/16 runs, and an edge case with one possible outcome passes after n/16 (its exact check).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

LOOK_FRACTIONS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 4 / 5, 1.0)
SPENDING = (1 / 32, 1 / 32, 1 / 16, 1 / 8, 1 / 2, 1 / 4)
#: no look before this many runs
MIN_LOOK = 50


@dataclass(frozen=True)
class Design:
    """Looks (cumulative runs) and the share of α spent at each (summing to 1)."""

    n: int
    looks: tuple
    weights: tuple

    def alpha(self, k: int, alpha_test: float) -> float:
        return alpha_test * self.weights[k]

    def describe(self) -> str:
        return ("group-sequential, " + str(len(self.looks)) + " looks at " + ", ".join(map(str, self.looks))
                + " runs; look k rejects at p < w_k·α, w = (" + ", ".join(f"{w:.4g}" for w in self.weights)
                + "); Bonferroni over looks: P(any false rejection) ≤ α")

    def to_json(self) -> dict:
        return {"n_max": self.n, "looks": list(self.looks), "alpha_shares": list(self.weights),
                "method": "group-sequential, alpha spending with a Bonferroni bound over looks"}


def design(n: int, min_look: int = MIN_LOOK) -> Design:
    """The look schedule for at most ``n`` runs (looks closer than ``min_look`` runs merge with
    the next one, which then spends their shares too)."""
    from ..checks import check_int
    n = check_int(n, "n", min=1)
    min_look = check_int(min_look, "min_look", min=1)
    looks, weights = [], []
    carry = 0.0
    for f, w in zip(LOOK_FRACTIONS, SPENDING):
        nk = max(min(n, math.ceil(f * n)), min(n, min_look))
        carry += w
        if looks and nk <= looks[-1]:
            weights[-1] += w
            carry = 0.0
            continue
        looks.append(nk)
        weights.append(carry)
        carry = 0.0
    return Design(n, tuple(looks), tuple(weights))


def decided(evidence: list) -> bool:
    """A check on one (instance, γ) is decided when some test failed, or every graded test
    passed (evidence that is only ``info``, e.g. no bonus token to test on disjoint supports,
    does not keep a run going)."""
    graded = [e for e in evidence if e.outcome != "info"]
    return any(e.outcome == "fail" for e in graded) or all(e.outcome == "pass" for e in graded)


def annotate(evidence: list, design_: Design, k: int, n_runs: int, alpha_k: float) -> list:
    """Say in each piece of evidence at which look it was taken."""
    tag = f"look {k + 1}/{len(design_.looks)} after {n_runs} runs, level w·α = {alpha_k:.3g}"
    for e in evidence:
        e.note = f"{e.note} [{tag}]" if e.note else f"[{tag}]"
    return evidence
