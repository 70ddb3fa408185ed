"""The statistical method, written down once (see docs/statistical_method.md).

Every check in the registry turns its comparisons into :class:`~spectheory.judge.evidence.Evidence`
through these functions, so every verdict is reached the same way:

* **exact** comparisons: the claimed and the exactly computed value agree within a float
  tolerance (default 1e-10 absolute, relative for large values) → pass, else fail.
* **Monte Carlo** comparisons: a stated test at the per-test level ``alpha`` (the report's
  family-wise level divided by the number of Monte Carlo tests in the registry:
  Bonferroni, so the chance that any correct claim is called ``fails`` in a full report is
  ≤ the family level). p < alpha → fail. Otherwise the test's power decides: the deviation
  it detects with probability ``power`` (0.9) at that alpha must be ≤ the claim's
  ``tolerance`` (the smallest deviation that matters), else the evidence is
  ``underpowered`` and the verdict can be at best ``inconclusive``.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import optimize, stats

from .evidence import Evidence

POWER = 0.9
EXACT_TOL = 1e-10
MIN_EXPECTED = 5.0  # Cochran's rule for chi-square cells


def _z(x):
    return stats.norm.ppf(x)


def exact_equal(instance: str, claimed, measured, *, tol: float = EXACT_TOL, what: str = "value",
                note: str = "") -> Evidence:
    """Exact comparison ``|claimed − measured| ≤ tol·max(1, |claimed|)`` (float64 enumeration)."""
    c, m = float(claimed), float(measured)
    ok = abs(c - m) <= tol * max(1.0, abs(c))
    return Evidence("exact", instance, c, m, n=None, test=f"exact {what}, |Δ| ≤ {tol:g}",
                    tolerance=tol, outcome="pass" if ok else "fail", note=note)


def exact_distance(instance: str, distance: float, *, tol: float = 1e-12, what: str = "TV",
                   note: str = "") -> Evidence:
    """Exact distributional claim: the claimed distance is 0, the computed one must be ≤ tol."""
    d = float(distance)
    return Evidence("exact", instance, 0.0, d, test=f"exact {what} ≤ {tol:g}", tolerance=tol,
                    outcome="pass" if d <= tol else "fail", note=note)


def info(mode: str, instance: str, claimed, measured, *, test: str = "", note: str = "",
         n=None, ci=(None, None)) -> Evidence:
    """Reported comparison that does not enter the verdict (out of the claim's scope)."""
    return Evidence(mode, instance, claimed, measured, ci[0], ci[1], n=n, test=test,
                    outcome="info", note=note)


def _grade(p_value: float, alpha: float, detectable: float, tolerance: float) -> str:
    if p_value < alpha:
        return "fail"
    return "pass" if detectable <= tolerance else "underpowered"


def merge_cells(counts: np.ndarray, probs: np.ndarray, n: int, min_expected: float = MIN_EXPECTED):
    """Pool the cells with the smallest expected counts into one until every cell expects
    ≥ ``min_expected`` (as scipy's sampler tests bin outcomes to a minimum mass).
    Returns the pooled (counts, probs)."""
    order = np.argsort(probs, kind="stable")
    c_sorted, p_sorted = counts[order], probs[order]
    expected = p_sorted * n
    if expected[0] >= min_expected:
        return counts, probs
    cum = np.cumsum(expected)
    j = len(expected) - 1
    for i in range(len(expected)):
        if cum[i] >= min_expected and (i + 1 == len(expected) or expected[i + 1] >= min_expected):
            j = i
            break
    return (np.concatenate([[c_sorted[:j + 1].sum()], c_sorted[j + 1:]]),
            np.concatenate([[p_sorted[:j + 1].sum()], p_sorted[j + 1:]]))


def chi2_detectable_w(df: int, n: int, alpha: float, power: float = POWER) -> float:
    """Cohen's effect size w = sqrt(Σ (p₁−p₀)²/p₀) that a chi-square test with ``df`` degrees
    of freedom and ``n`` samples rejects with probability ``power`` at level ``alpha``
    (non-central chi-square, noncentrality n·w²)."""
    return float(np.sqrt(chi2_noncentrality(df, alpha, power) / n))


@lru_cache(maxsize=4096)
def chi2_noncentrality(df: int, alpha: float, power: float = POWER) -> float:
    """Noncentrality λ at which a level-``alpha`` chi-square test on ``df`` degrees of freedom
    rejects with probability ``power``."""
    crit = stats.chi2.ppf(1 - alpha, df)
    return float(optimize.brentq(lambda l: stats.ncx2.sf(crit, df, l) - power, 1e-9, 1e9))


def chisquare_gof(instance: str, counts, probs, *, alpha: float, tolerance_w: float,
                  note: str = "") -> Evidence:
    """Chi-square goodness of fit of observed ``counts`` to ``probs`` (cells pooled to ≥ 5
    expected). A count in a cell of probability 0 is an immediate fail (p = 0); a law with a
    single possible outcome is then an exact check (all draws in its cell: pass).
    ``claimed``/``measured`` are the claimed (0) and the empirical TV distance."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    n = int(counts.sum())
    tv = 0.5 * np.abs(counts / n - probs).sum()
    impossible = counts[probs <= 0].sum()
    support = probs > 0
    c, p = merge_cells(counts[support], probs[support], n)
    df = len(c) - 1
    w_det = chi2_detectable_w(df, n, alpha) if df > 0 else np.inf
    if impossible > 0:
        return Evidence("mc", instance, 0.0, tv, p_value=0.0, n=n,
                        test=f"chi-square GOF: {int(impossible)} draws in zero-probability cells",
                        alpha=alpha, power=POWER, detectable=w_det, tolerance=tolerance_w,
                        outcome="fail", note=note)
    if support.sum() == 1:
        # a law with one possible outcome is an exact check: every draw landed in its one cell
        # (a draw outside it failed above). detectable: the mass outside the support that n
        # draws reveal with probability POWER, 1 − (1 − POWER)^(1/n).
        return Evidence("mc", instance, 0.0, tv, p_value=1.0, n=n,
                        test="single-outcome law: exact check, every draw must land in the one cell; "
                             "detectable = mass outside it seen with probability 0.9",
                        alpha=alpha, power=POWER, detectable=1.0 - (1.0 - POWER) ** (1.0 / n),
                        tolerance=tolerance_w, outcome="pass", note=note)
    if df == 0:
        return Evidence("mc", instance, 0.0, tv, p_value=1.0, n=n, test="chi-square GOF: one cell",
                        alpha=alpha, outcome="underpowered",
                        note="; ".join(x for x in (note, "cells pooled into one: too few draws to test") if x))
    res = stats.chisquare(c, p * n)
    return Evidence("mc", instance, 0.0, tv, p_value=float(res.pvalue), n=n,
                    test=f"chi-square GOF, {df + 1} cells (pooled to ≥{MIN_EXPECTED:g} expected), "
                         f"stat {res.statistic:.1f} on {df} df; measured = empirical TV; "
                         "detectable = Cohen's w",
                    alpha=alpha, power=POWER, detectable=w_det, tolerance=tolerance_w,
                    outcome=_grade(res.pvalue, alpha, w_det, tolerance_w), note=note)


def bernoulli_mean_se(probs, n_each: int) -> float:
    """Null standard error of a pooled frequency: position t contributes ``n_each`` Bernoulli
    draws with probability ``probs[t]``, so se = sqrt(Σ_t p_t(1 − p_t)/n_each)/T. Probabilities are
    clipped to [0, 1] first (a Σ min(p, q) computed in floats can exceed 1 by a few ulps when p = q,
    which would make the variance negative and the se NaN); all-certain positions give se = 0, and
    :func:`z_test_mean` then compares exactly."""
    p = np.clip(np.asarray(probs, dtype=np.float64).ravel(), 0.0, 1.0)
    if p.size == 0 or int(n_each) < 1:
        raise ValueError(f"bernoulli_mean_se needs ≥ 1 probability and n_each ≥ 1, got {p.size}, {n_each!r}")
    return float(np.sqrt(np.sum(p * (1.0 - p)) / int(n_each)) / p.size)


def z_test_mean(instance: str, claimed: float, samples=None, *, mean=None, se=None, n=None,
                alpha: float, tolerance: float, what: str = "mean", note: str = "",
                mode: str = "mc") -> Evidence:
    """Two-sided z-test of a mean against ``claimed`` (CLT; samples i.i.d.). CI at 1 − alpha;
    detectable deviation ``(z_{1−α/2} + z_power)·se``."""
    if samples is not None:
        x = np.asarray(samples, dtype=np.float64)
        if x.size < 2 or not np.all(np.isfinite(x)):
            raise ValueError(f"z_test_mean needs ≥ 2 finite samples, got {x.size} (finite: {np.isfinite(x).all()})")
        n = x.size
        mean = float(x.mean())
        se = float(x.std(ddof=1) / np.sqrt(n))
    elif mean is None or se is None or not np.isfinite(mean) or not (np.isfinite(se) and se >= 0):
        raise ValueError(f"z_test_mean needs samples, or a finite mean and a finite se ≥ 0; got mean={mean!r}, "
                         f"se={se!r}")
    zc = _z(1 - alpha / 2)
    det = (zc + _z(POWER)) * se
    if se == 0:
        p = 1.0 if mean == claimed else 0.0
    else:
        p = float(2 * stats.norm.sf(abs(mean - claimed) / se))
    return Evidence(mode, instance, float(claimed), float(mean), mean - zc * se, mean + zc * se,
                    p_value=p, n=n, test=f"two-sided z-test on the {what} (CLT), CI at 1−α",
                    alpha=alpha, power=POWER, detectable=det, tolerance=tolerance,
                    outcome=_grade(p, alpha, det, tolerance), note=note)


def per_state_binomial(instance: str, attempts, accepts, beta, *, alpha: float, tolerance: float,
                       note: str = "") -> Evidence:
    """Acceptance counts per state against per-state probabilities β(s).

    Statistic Σ_s (k_s − n_s β_s)² / (n_s β_s (1 − β_s)) ~ χ²(#states) under the claim
    (each attempt in state s is a fresh Bernoulli(β_s) given the past). A state with β ∈ {0,1}
    must show k = 0 or k = n exactly. ``detectable``: the smallest shift δ of every β_s that
    the test catches with probability ``power``.
    """
    n_s = np.asarray(attempts, dtype=np.float64)
    k_s = np.asarray(accepts, dtype=np.float64)
    b = np.asarray(beta, dtype=np.float64)
    if not (n_s.ndim == 1 and n_s.shape == k_s.shape == b.shape):
        raise ValueError(f"attempts, accepts and beta must be 1-D of one length; got shapes {n_s.shape}, "
                         f"{k_s.shape}, {b.shape}")
    if (k_s < 0).any() or (k_s > n_s).any() or not np.all(np.isfinite(b)) or (b < 0).any() or (b > 1).any():
        raise ValueError("per-state counts must satisfy 0 ≤ accepts ≤ attempts and β(s) must lie in [0, 1]")
    if n_s.sum() <= 0:
        raise ValueError("per_state_binomial needs at least one attempt")
    seen = n_s > 0
    n_tot = int(n_s.sum())
    claimed = float((n_s * b).sum() / n_tot)
    measured = float(k_s.sum() / n_tot)
    se = np.sqrt(claimed * (1 - claimed) / n_tot)
    zc = _z(1 - alpha / 2)
    degenerate = seen & ((b <= 0) | (b >= 1))
    broken = degenerate & (((b <= 0) & (k_s > 0)) | ((b >= 1) & (k_s < n_s)))
    inner = seen & ~degenerate
    df = int(inner.sum())
    base = dict(ci_low=measured - zc * se, ci_high=measured + zc * se, n=n_tot, alpha=alpha,
                power=POWER, tolerance=tolerance, note=note)
    if broken.any():
        return Evidence("mc", instance, claimed, measured, p_value=0.0,
                        test=f"per-state binomial: {int(broken.sum())} states with β∈{{0,1}} violated",
                        outcome="fail", **base)
    if df == 0:
        return Evidence("mc", instance, claimed, measured, p_value=1.0, test="per-state binomial",
                        outcome="pass" if degenerate.any() else "underpowered", detectable=0.0, **base)
    var = n_s[inner] * b[inner] * (1 - b[inner])
    stat = float((((k_s[inner] - n_s[inner] * b[inner]) ** 2) / var).sum())
    p = float(stats.chi2.sf(stat, df))
    det = float(np.sqrt(chi2_noncentrality(df, alpha) / (n_s[inner] / (b[inner] * (1 - b[inner]))).sum()))
    return Evidence("mc", instance, claimed, measured, p_value=p,
                    test=f"per-state binomial chi-square over {df} states, stat {stat:.1f}; "
                         "claimed/measured = attempt-weighted mean β / acceptance frequency; "
                         "detectable = uniform shift of every β(s)",
                    outcome=_grade(p, alpha, det, tolerance), detectable=det, **base)


def z_test_bound(instance: str, bound: float, samples=None, *, mean=None, se=None, n=None,
                 side: str = "ge", alpha: float, tolerance: float, what: str = "mean", note: str = "",
                 mode: str = "mc") -> Evidence:
    """One-sided z-test of an inequality claim (docs/statistical_method.md, "Inequality and bound
    claims"): ``side="ge"`` claims mean ≥ bound, ``"le"`` claims mean ≤ bound. Fails when the
    one-sided (1 − α) confidence bound lies on the wrong side of ``bound`` (p < α at the
    boundary); passes when, in addition, a violation of ``tolerance`` would be caught with
    probability ``POWER`` (detectable ``(z_{1−α} + z_power)·se``), else underpowered.
    ``claimed`` = the bound, CI = the one-sided confidence limit (the other end open)."""
    if side not in ("ge", "le"):
        raise ValueError("side must be 'ge' or 'le'")
    if samples is not None:
        x = np.asarray(samples, dtype=np.float64)
        n = x.size
        mean = float(x.mean())
        se = float(x.std(ddof=1) / np.sqrt(n))
    zc = _z(1 - alpha)
    det = (zc + _z(POWER)) * se
    sign = 1.0 if side == "ge" else -1.0
    if se == 0:
        p = 1.0 if sign * (mean - bound) >= 0 else 0.0
    else:
        p = float(stats.norm.cdf(sign * (mean - bound) / se))
    lo, hi = (mean - zc * se, None) if side == "ge" else (None, mean + zc * se)
    rel = "≥" if side == "ge" else "≤"
    return Evidence(mode, instance, float(bound), float(mean), lo, hi, p_value=p, n=n,
                    test=f"one-sided z-test of {what} {rel} bound (CLT); p at the boundary; "
                         "CI = one-sided (1−α) confidence limit",
                    alpha=alpha, power=POWER, detectable=det, tolerance=tolerance,
                    outcome=_grade(p, alpha, det, tolerance), note=note, slack=sign * (float(mean) - float(bound)))


def exact_bound(instance: str, bound, measured, *, side: str = "ge", tol: float = EXACT_TOL,
                what: str = "value", note: str = "") -> Evidence:
    """Exact inequality: ``measured ≥ bound − tol`` (side "ge") or ``measured ≤ bound + tol``
    ("le"), tol relative for large values (float64 enumeration)."""
    b, m = float(bound), float(measured)
    slack = tol * max(1.0, abs(b)) if np.isfinite(b) else 0.0
    ok = (m >= b - slack) if side == "ge" else (m <= b + slack)
    rel = "≥" if side == "ge" else "≤"
    return Evidence("exact", instance, b, m, test=f"exact {what} {rel} bound (tol {tol:g})",
                    tolerance=tol, outcome="pass" if ok else "fail", note=note,
                    slack=(m - b) if side == "ge" else (b - m))


def scaling_exponent(instance: str, sizes, times, *, claimed: float, tolerance: float, what: str = "time",
                     note: str = "", mode: str = "mc") -> Evidence:
    """Least-squares slope of log(time) against log(size), graded against a claimed exponent
    within ``tolerance`` (a timing claim: no p-value; measured = fitted exponent, CI = ±2 s.e.
    of the slope). Added for SpecTr-GBV's cost claim (Lin et al. 2026)."""
    x = np.log(np.asarray(sizes, dtype=np.float64))
    y = np.log(np.asarray(times, dtype=np.float64))
    A = np.vstack([x, np.ones_like(x)]).T
    coef, res, *_ = np.linalg.lstsq(A, y, rcond=None)
    slope = float(coef[0])
    dof = max(1, len(x) - 2)
    resid = y - A @ coef
    se = float(np.sqrt((resid @ resid) / dof / ((x - x.mean()) @ (x - x.mean()))))
    ok = abs(slope - claimed) <= tolerance
    return Evidence(mode, instance, float(claimed), slope, slope - 2 * se, slope + 2 * se, n=len(x),
                    test=f"fitted log-log exponent of {what} vs size, |slope − claimed| ≤ {tolerance:g} "
                         "(timing measurement, not a sample test)",
                    tolerance=tolerance, outcome="pass" if ok else "fail", note=note)
