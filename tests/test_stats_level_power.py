"""Level and power of the tests the judge and ``spectheory.validate.power`` use, on data whose answer is known
independently (issue 27 item 4), and each test's statistic on biased data by hand.

Replication tests: R seeded replicate tests at α = 0.05 (each test states R); under the null
the rejection rate must lie within the 99.9% binomial band of α (±3.29·sqrt(α(1 − α)/R): ±0.016
at R = 2,000, ±0.023 at R = 1,000), and at a designed alternative (the test's own reported
detectable deviation, or n from ``n_needed``) within the band of the stated power (widened where
the test says why).
Negative controls: a test with the wrong standard error is rejected by the hand-computed values.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from spectheory.judge import stats
from spectheory.validate.power import martingale_test, martingale_test_estimated, martingale_test_known, n_needed

R, ALPHA = 2000, 0.05
NULL_BAND = 0.016
Z90 = sps.norm.ppf(0.9)


def _rate(outcomes):
    return float(np.mean([o == "fail" for o in outcomes]))


# --- spectheory.validate.power: the martingale tests -------------------------------------------------------------

#: a biased example: 30 trials whose outcomes sit above their claimed means (mean D = 0.2)
BIASED_Y = np.array([1.0] * 21 + [0.0] * 9)
BIASED_MU = np.full(30, 0.5)


def test_martingale_estimated_standard_error_is_the_root_mean_square_by_hand():
    """se = sqrt(Σ D_t²)/n with D = Y − μ (self-normalised martingale CLT; not the centred variance,
    which differs exactly when mean D ≠ 0). Here D = ±0.5, Σ D² = 7.5, se = sqrt(7.5)/30 = 0.0913,
    z = 0.2/0.0913 = 2.19, p = 0.0285: at α = 0.001 the bias is not significant (pass or
    underpowered, never fail); the centred variance (0.21 per trial, se 0.0837, z = 2.39) would
    give p = 0.017."""
    ev, row = martingale_test_estimated("c", "biased", BIASED_Y, BIASED_MU, alpha=1e-3, tolerance=0.5, what="x",
                                        trials="t")
    se = math.sqrt(7.5) / 30
    assert row.var_per_trial == pytest.approx(0.25, abs=1e-15)
    assert ev.p_value == pytest.approx(2 * sps.norm.sf(0.2 / se), rel=1e-9)
    assert ev.p_value == pytest.approx(0.02846, abs=1e-4)
    zc = sps.norm.ppf(1 - 1e-3 / 2)
    assert (ev.ci_low, ev.ci_high) == pytest.approx((0.7 - zc * se, 0.7 + zc * se), rel=1e-12)
    assert ev.detectable == pytest.approx((zc + Z90) * se, rel=1e-12)
    # at α = 0.05 the same data fail (p = 0.028 < 0.05)
    ev5, _ = martingale_test_estimated("c", "biased", BIASED_Y, BIASED_MU, alpha=0.05, tolerance=0.5, what="x",
                                       trials="t")
    assert ev5.outcome == "fail"
    # a larger bias: D = 1 − 0.1 = 0.9 on 25 trials, −0.1 on 5: mean D = 0.733, Σ D² = 20.3
    y2, mu2 = np.array([1.0] * 25 + [0.0] * 5), np.full(30, 0.1)
    ev2, _ = martingale_test_estimated("c", "b2", y2, mu2, alpha=1e-3, tolerance=0.5, what="x", trials="t")
    assert ev2.p_value == pytest.approx(2 * sps.norm.sf((22 / 30) / (math.sqrt(20.3) / 30)), rel=1e-9)


def test_martingale_known_bernoulli_and_known_variances_by_hand():
    """martingale_test: se = sqrt(Σ μ(1 − μ))/n; martingale_test_known: se = sqrt(Σ σ²)/n."""
    y = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1], dtype=float)
    mu = np.array([0.9, 0.1, 0.5, 0.5, 0.2, 0.8, 0.7, 0.6, 0.3, 0.5])
    ev, row = martingale_test("c", "i", y, mu, alpha=0.05, tolerance=1.0, what="x", trials="t")
    v = (mu * (1 - mu)).sum()       # 0.09 + 0.09 + 0.25 + 0.25 + 0.16 + 0.16 + 0.21 + 0.24 + 0.21 + 0.25 = 1.91
    assert v == pytest.approx(1.91)
    se = math.sqrt(1.91) / 10
    assert ev.p_value == pytest.approx(2 * sps.norm.sf(abs(0.7 - 0.51) / se), rel=1e-9)
    assert row.var_per_trial == pytest.approx(0.191)
    var = np.full(10, 0.04)
    evk, _ = martingale_test_known("c", "k", y, mu, var, alpha=0.05, tolerance=1.0, what="x", trials="t")
    assert evk.p_value == pytest.approx(2 * sps.norm.sf(0.19 / (math.sqrt(0.4) / 10)), rel=1e-9)


def _martingale_data(rng, reps, n, shift=0.0):
    """``reps`` runs of n Bernoulli trials that are not independent: μ_t = 0.25 + 0.5·Y_{t−1} (known
    given the past); Y_t ~ Bernoulli(μ_t + shift). Arrays (reps, n)."""
    y = np.empty((reps, n))
    mu = np.empty((reps, n))
    prev = np.zeros(reps)
    u = rng.random((reps, n))
    for t in range(n):
        mu[:, t] = 0.25 + 0.5 * prev
        y[:, t] = u[:, t] < mu[:, t] + shift
        prev = y[:, t]
    return y, mu


@pytest.mark.parametrize("which", ["known-bernoulli", "estimated", "known-variances"])
def test_martingale_tests_level_and_power(which):
    """n = 400 dependent Bernoulli trials (μ_t = 0.25 + 0.5·Y_{t−1}); R = 1,000 replicates at
    α = 0.05. Null: rejection rate within ±0.023 of α (99.9% binomial band). Alternative: every
    trial's success probability raised by δ = the test's mean detectable deviation on null data
    ((z_{.975} + z_{.9})·se): rejection rate within ±0.045 of 0.9 (band ±0.031, widened for the
    variance change under the shift)."""
    rng = np.random.default_rng(27)
    reps, n = 1000, 400

    def run(y, mu):
        kw = dict(alpha=ALPHA, tolerance=1.0, what="x", trials="t")
        if which == "known-bernoulli":
            return martingale_test("c", "i", y, mu, **kw)[0]
        if which == "estimated":
            return martingale_test_estimated("c", "i", y, mu, **kw)[0]
        return martingale_test_known("c", "i", y, mu, mu * (1 - mu), **kw)[0]

    null = [run(y, mu) for y, mu in zip(*_martingale_data(rng, reps, n))]
    assert abs(_rate(e.outcome for e in null) - ALPHA) < 0.023
    delta = float(np.mean([e.detectable for e in null]))
    alt = [run(y, mu) for y, mu in zip(*_martingale_data(rng, reps, n, delta))]
    assert abs(_rate(e.outcome for e in alt) - 0.9) < 0.045, (delta, _rate(e.outcome for e in alt))


def test_n_needed_has_its_design_power():
    """n = n_needed(v, α, δ, power 0.8) Bernoulli(μ) trials, v = μ(1 − μ), true mean μ + δ: the
    two-sided z-test (se from the claimed μ) rejects in 0.8 ± 0.03 of R = 2,000 replicates; with
    n/2 trials clearly less (< 0.65)."""
    rng = np.random.default_rng(3)
    mu, delta = 0.3, 0.02
    n = n_needed(mu * (1 - mu), ALPHA, delta, power=0.8)
    zc = sps.norm.ppf(1 - ALPHA / 2)
    assert n == math.ceil(((zc + sps.norm.ppf(0.8)) / delta) ** 2 * 0.21)  # 4,120 by hand

    def rate(m):
        k = rng.binomial(m, mu + delta, size=R)
        z = np.abs(k / m - mu) / math.sqrt(mu * (1 - mu) / m)
        return float((z > zc).mean())

    assert abs(rate(n) - 0.8) < 0.03
    assert rate(n // 2) < 0.65


# --- the judge's tests ----------------------------------------------------------------------------------

@pytest.mark.parametrize("side", ["ge", "le"])
def test_z_test_bound_level_at_the_boundary_and_power_at_the_detectable_violation(side):
    """One-sided z-test of mean ≥ bound ("ge") / ≤ bound ("le"): data at the boundary are rejected
    in α ± 0.023 of R = 1,000 replicates (n = 100 normal samples, sd 1; 99.9% band); data past the
    boundary by the reported detectable deviation (z_{1−α} + z_{.9})·se in 0.9 ± 0.031; data inside
    the bound by that much almost never (< 0.005)."""
    rng = np.random.default_rng(8)
    n, bound, reps = 100, 0.0, 1000
    sign = 1.0 if side == "ge" else -1.0
    det = stats.z_test_bound("t", bound, mean=0.0, se=0.1, n=n, side=side, alpha=ALPHA, tolerance=1.0).detectable
    assert det == pytest.approx((sps.norm.ppf(1 - ALPHA) + Z90) * 0.1, rel=1e-12)

    def rate(mean):
        x = rng.normal(mean, 1.0, size=(reps, n))
        return _rate(stats.z_test_bound("t", bound, s, side=side, alpha=ALPHA, tolerance=1.0).outcome for s in x)

    assert abs(rate(bound) - ALPHA) < 0.023
    assert abs(rate(bound - sign * det) - 0.9) < 0.031
    assert rate(bound + sign * det) < 0.005


def test_bernoulli_mean_se_by_hand_and_by_simulation():
    """se of a pooled frequency: positions t with n_each Bernoulli(p_t) draws each,
    se = sqrt(Σ p_t(1 − p_t)/n_each)/T. By hand: p = (.5, .2), n_each = 10: sqrt(.41/10)/2.
    By simulation: the sd of the pooled frequency over R = 2,000 replicates is within 5% of it
    (the sd's relative standard error is 1/sqrt(2R) = 1.6%)."""
    assert stats.bernoulli_mean_se([0.5, 0.2], 10) == pytest.approx(math.sqrt(0.41 / 10) / 2, rel=1e-12)
    assert stats.bernoulli_mean_se([1.0, 0.0, 1.0 + 1e-16], 3) == 0.0
    rng = np.random.default_rng(6)
    p = np.array([0.1, 0.5, 0.7, 0.95])
    freq = rng.binomial(50, p, size=(R, p.size)).sum(axis=1) / (50 * p.size)
    assert freq.std(ddof=1) == pytest.approx(stats.bernoulli_mean_se(p, 50), rel=0.05)


def test_chisquare_gof_has_the_power_it_reports():
    """chisquare_gof itself (not scipy's test): data from p₁ at Cohen's w = the reported
    detectable w (n = 2,000, 4 cells, α = 0.05) fail in 0.9 ± 0.025 of R = 2,000 replicates;
    data from p₀ in α ± 0.016."""
    rng = np.random.default_rng(9)
    n, p0 = 2000, np.full(4, 0.25)
    w = stats.chisquare_gof("t", rng.multinomial(n, p0), p0, alpha=ALPHA, tolerance_w=1.0).detectable
    p1 = p0 + np.array([1, -1, 1, -1]) * 0.25 * w
    alt = _rate(stats.chisquare_gof("t", rng.multinomial(n, p1), p0, alpha=ALPHA, tolerance_w=1.0).outcome
                for _ in range(R))
    null = _rate(stats.chisquare_gof("t", rng.multinomial(n, p0), p0, alpha=ALPHA, tolerance_w=1.0).outcome
                 for _ in range(R))
    assert abs(alt - 0.9) < 0.025 and abs(null - ALPHA) < NULL_BAND, (alt, null)


def test_z_test_mean_from_mean_and_se_level_and_power():
    """z_test_mean given (mean, se), as the pooled and martingale tests call it: means drawn from
    N(claimed, se²) fail in α ± 0.016 of R = 2,000; from N(claimed + detectable, se²) in 0.9 ± 0.025."""
    rng = np.random.default_rng(10)
    se = 0.01
    det = stats.z_test_mean("t", 0.5, mean=0.5, se=se, n=1, alpha=ALPHA, tolerance=1.0).detectable
    assert det == pytest.approx((sps.norm.ppf(1 - ALPHA / 2) + Z90) * se, rel=1e-12)
    null = _rate(stats.z_test_mean("t", 0.5, mean=m, se=se, n=1, alpha=ALPHA, tolerance=1.0).outcome
                 for m in rng.normal(0.5, se, R))
    alt = _rate(stats.z_test_mean("t", 0.5, mean=m, se=se, n=1, alpha=ALPHA, tolerance=1.0).outcome
                for m in rng.normal(0.5 - det, se, R))
    assert abs(null - ALPHA) < NULL_BAND and abs(alt - 0.9) < 0.025, (null, alt)


def test_single_outcome_law_is_an_exact_check_with_its_stated_power():
    """A law with one possible outcome: every draw in its cell passes; the detectable mass δ outside it
    is the one n draws reveal with probability 0.9: 1 − (1 − δ)^n = 0.9 (n = 50: δ = 1 − 0.1^(1/50)
    = 0.0450); one draw outside fails."""
    p = np.array([0.0, 1.0, 0.0])
    ev = stats.chisquare_gof("t", np.array([0, 50, 0]), p, alpha=ALPHA, tolerance_w=0.05)
    assert ev.outcome == "pass" and ev.n == 50
    assert 1.0 - (1.0 - ev.detectable) ** 50 == pytest.approx(0.9, abs=1e-12)
    assert ev.detectable == pytest.approx(0.0450, abs=1e-4)
    assert stats.chisquare_gof("t", np.array([1, 49, 0]), p, alpha=ALPHA, tolerance_w=0.05).outcome == "fail"


def test_per_state_binomial_states_with_certain_outcomes():
    """A state with β = 1 must accept every attempt and one with β = 0 none: one rejection (or one
    acceptance) there is a fail whatever the other states show; exact agreement passes."""
    kw = dict(alpha=ALPHA, tolerance=0.05)
    assert stats.per_state_binomial("t", [10, 400], [9, 200], [1.0, 0.5], **kw).outcome == "fail"
    assert stats.per_state_binomial("t", [10, 400], [1, 200], [0.0, 0.5], **kw).outcome == "fail"
    assert stats.per_state_binomial("t", [10, 10], [10, 0], [1.0, 0.0], **kw).outcome == "pass"
