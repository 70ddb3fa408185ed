"""Power by design for the ``logits`` tests: the statistics validate adds (spectheory/judge/stats.py is not edited;
these build on its z-tests and say how many trials a test needs).

Every graded logits test is a test of a **martingale**: trials t = 1..n in the order they happened,
an outcome Y_t and its conditional expectation μ_t given everything before it (the context, the
drafted token, the earlier trials) under the claim. Then D_t = Y_t − μ_t is a martingale-difference
sequence, and by the martingale central limit theorem (Hall & Heyde 1980, Cor. 3.1: bounded
differences, Σ Var_t / n converging) Σ D_t / sqrt(Σ Var_t) is asymptotically N(0, 1) — trials need
not be independent or identically distributed, only each one's law given the past must be known.

* **Known conditional variance** (Bernoulli trials with known success probability μ_t:
  Var_t = μ_t(1 − μ_t)): :func:`martingale_test`.
* **Estimated variance** (μ_t an unbiased estimate computed in the same iteration, Var_t not
  known): the sum of squares Σ D_t² estimates the quadratic variation (self-normalised
  martingale CLT): :func:`martingale_test_estimated`.

Sample size: a two-sided level-α z-test on a mean whose per-trial variance is v detects a
deviation δ with probability π once n ≥ ((z_{1−α/2} + z_π)/δ)² · v (:func:`n_needed`). Each test
reports n needed at the design power 0.8 (issue 19) and at the report's grading power
(``spectheory.judge.stats.POWER`` = 0.9: a test is graded ``pass`` only when its detectable deviation at 0.9
is within the tolerance), with v the mean conditional variance of its own trials, and n had.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as sst

from spectheory.judge import stats
from spectheory.judge.evidence import Evidence

#: Design power of issue 19 (the report grades at ``spectheory.judge.stats.POWER``).
DESIGN_POWER = 0.8
#: Tolerance of every acceptance-probability test on real logits (SD's drafting and verifier laws,
#: SE, K-SEQ, ERSD): the deviation in a per-position acceptance probability a test must see.
TOLERANCE = 0.02
#: Tolerance of the accepted-length tests (E[τ] of GBV and SpecTr-GBV), in tokens per iteration.
TOLERANCE_TAU = 0.1


def n_needed(var_per_trial: float, alpha: float, tolerance: float, power: float = DESIGN_POWER) -> int:
    """Trials a two-sided level-``alpha`` z-test on a mean needs to detect a deviation of
    ``tolerance`` with probability ``power`` when one trial has variance ``var_per_trial``."""
    if not (0 < alpha < 1 and 0 < power < 1 and tolerance > 0):
        raise ValueError(f"need 0 < alpha, power < 1 and tolerance > 0; got {alpha!r}, {power!r}, {tolerance!r}")
    if not (var_per_trial >= 0 and math.isfinite(var_per_trial)):
        raise ValueError(f"var_per_trial must be finite and ≥ 0, got {var_per_trial!r}")
    z = sst.norm.ppf(1 - alpha / 2) + sst.norm.ppf(power)
    return int(math.ceil((z / tolerance) ** 2 * var_per_trial))


@dataclass(frozen=True)
class PowerRow:
    """The power statement of one test (report tables and evidence notes)."""

    claim: str
    test: str
    trials: str
    n_had: int
    var_per_trial: float
    alpha: float
    tolerance: float
    n_needed_08: int
    n_needed_report: int
    detectable: float
    outcome: str

    def note(self) -> str:
        return (f"power: n needed {self.n_needed_08} (power {DESIGN_POWER}) / {self.n_needed_report} (power "
                f"{stats.POWER}, the report's grading) for tolerance {self.tolerance:g} at per-test α = "
                f"{self.alpha:.3g} with mean per-trial variance {self.var_per_trial:.4f}; n had {self.n_had} "
                f"(detectable deviation {self.detectable:.4f})")

    def to_json(self) -> dict:
        return asdict(self)


def _row(claim, test, trials, n, v, alpha, tolerance, ev: Evidence) -> PowerRow:
    return PowerRow(claim, test, trials, int(n), float(v), float(alpha), float(tolerance),
                    n_needed(v, alpha, tolerance, DESIGN_POWER), n_needed(v, alpha, tolerance, stats.POWER),
                    float(ev.detectable) if ev.detectable is not None else float("nan"), ev.outcome)


def _clean(x, name):
    x = np.asarray(x, dtype=np.float64).ravel()
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite")
    return x


def martingale_test(claim: str, instance: str, outcomes, probs, *, alpha: float, tolerance: float, what: str,
                    trials: str, note: str = "") -> tuple[Evidence, PowerRow]:
    """Bernoulli outcomes Y_t against their known conditional success probabilities μ_t:
    two-sided z-test of mean(Y) against mean(μ) with se = sqrt(Σ μ(1 − μ))/n (the martingale CLT
    with the predictable quadratic variation; exact comparison when every μ_t is 0 or 1)."""
    y, mu = _clean(outcomes, "outcomes"), _clean(probs, "probs")
    if y.shape != mu.shape or y.size == 0:
        raise ValueError(f"outcomes and probs must be non-empty and of one length, got {y.size} and {mu.size}")
    if ((y != 0) & (y != 1)).any():
        raise ValueError("outcomes must be 0/1 indicators")
    mu = np.clip(mu, 0.0, 1.0)
    n = y.size
    v = mu * (1 - mu)
    se = math.sqrt(float(v.sum())) / n
    ev = stats.z_test_mean(instance, float(mu.mean()), mean=float(y.mean()), se=se, n=n, alpha=alpha,
                           tolerance=tolerance, what=what, mode="logits",
                           note="martingale CLT: each trial's success probability given everything before it is "
                                "known, se = sqrt(Σ μ_t(1 − μ_t))/n")
    row = _row(claim, instance, trials, n, float(v.mean()), alpha, tolerance, ev)
    ev.note = "; ".join(x for x in (note, ev.note, row.note()) if x)
    return ev, row


def martingale_test_estimated(claim: str, instance: str, measured, claimed, *, alpha: float, tolerance: float,
                              what: str, trials: str, note: str = "") -> tuple[Evidence, PowerRow]:
    """Per-trial outcomes Y_t against per-trial values μ_t whose conditional expectations agree
    under the claim (μ_t unbiased for E[Y_t | past]): two-sided z-test of mean(Y − μ) = 0 with
    se = sqrt(Σ (Y − μ)²)/n (self-normalised martingale CLT; the sum of squares estimates the
    quadratic variation). ``claimed``/``measured`` in the record are mean(μ) and mean(Y)."""
    y, mu = _clean(measured, "measured"), _clean(claimed, "claimed")
    if y.shape != mu.shape or y.size < 2:
        raise ValueError(f"measured and claimed must be of one length ≥ 2, got {y.size} and {mu.size}")
    dlt = y - mu
    n = y.size
    v = float(np.mean(dlt ** 2))
    se = math.sqrt(v * n) / n
    ev = stats.z_test_mean(instance, float(mu.mean()), mean=float(mu.mean() + dlt.mean()), se=se, n=n,
                           alpha=alpha, tolerance=tolerance, what=what, mode="logits",
                           note="self-normalised martingale CLT on D_t = Y_t − μ_t (E[D_t | past] = 0 under the "
                                "claim), se = sqrt(Σ D_t²)/n")
    row = _row(claim, instance, trials, n, v, alpha, tolerance, ev)
    ev.note = "; ".join(x for x in (note, ev.note, row.note()) if x)
    return ev, row


def martingale_test_known(claim: str, instance: str, measured, claimed, variances, *, alpha: float,
                          tolerance: float, what: str, trials: str, note: str = "") -> tuple[Evidence, PowerRow]:
    """Per-trial outcomes Y_t against their conditional expectations μ_t with known conditional
    variances σ_t²: two-sided z-test of mean(Y) against mean(μ), se = sqrt(Σ σ_t²)/n."""
    y, mu, var = _clean(measured, "measured"), _clean(claimed, "claimed"), _clean(variances, "variances")
    if not (y.shape == mu.shape == var.shape) or y.size == 0:
        raise ValueError("measured, claimed and variances must be non-empty and of one length")
    var = np.clip(var, 0.0, None)
    n = y.size
    se = math.sqrt(float(var.sum())) / n
    ev = stats.z_test_mean(instance, float(mu.mean()), mean=float(y.mean()), se=se, n=n, alpha=alpha,
                           tolerance=tolerance, what=what, mode="logits",
                           note="martingale CLT with the known conditional variances, se = sqrt(Σ σ_t²)/n")
    row = _row(claim, instance, trials, n, float(var.mean()), alpha, tolerance, ev)
    ev.note = "; ".join(x for x in (note, ev.note, row.note()) if x)
    return ev, row


def control_row(e: Evidence, rejected: bool, setup: str) -> Evidence:
    """A negative control's graded evidence ``e`` as the info row reported beside the subject's
    (``… (must fail)``, ``Evidence.control`` set): ``rejected`` says whether the broken rule failed
    the test as it must; ``setup`` describes the broken rule's run ("a broken verifier through the
    same real SD loop, the same test")."""
    p = f"p = {e.p_value:.3g}" if e.p_value is not None else "exact"
    row = stats.info("logits", f"{e.instance} (must fail)", e.claimed, e.measured, n=e.n, ci=(e.ci_low, e.ci_high),
                     test=f"negative control in logits mode: {setup}; {p} → "
                          + ("fails, as it must" if rejected else "DID NOT FAIL"),
                     note=e.note)
    row.part = e.part
    row.control = "rejected" if rejected else "not rejected"
    return row

