"""Closed forms for SpecBranch's analysis (Shen et al., ICLR 2026), in the pipeline model of docs/sb.md.

Units: a draft call takes ``t = 1``; a target call takes ``c = T_p/T_q`` (the paper's c, the
inverse of the SD family's draft/target ratio). α is a constant per-position acceptance
probability (an i.i.d. source: ``α = Σ min(p, q)``). Latencies are per emitted token.

``trunc_geom_pmf``       sb.trunc_geom   P(X = k) = (1 − α)α^k [k < γ] + α^γ [k = γ]
``sps_latency``          standard SD: (γ + c) / Σ_{j≤γ} α^j   (bonus token included)
``ideal_parallel_latency`` sb.ideal_parallel  max(γ, c)/γ (parallel SD, nothing rejected)
``ideal_gain`` / ``best_ideal_gain``  its gain over SD at α = 1, maximised at γ = c
``psd_latency``          sb.thm1 (derived; notebooks/sb_derivations.py):
                         T(γ, α, c) = max(γ, c)/S_γ(α) + γ(1 − α),  S_γ(α) = Σ_{j<γ} α^j
                         = (1 − α)[max(γ, c) + γ(1 − α^γ)] / (1 − α^γ)
``psd_minimiser``        its minimiser over real γ ≥ 1 (root of (1 − α^γ)² = c α^γ ln(1/α))
                         and over integer γ
``pearl_latency``        PEARL-style pipeline (pre-verify, k = 1, keep-all):
                         max(γ, c)(1 + α − α^γ) / S_γ(α)

Every public function validates its arguments (``spectheory.checks``).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from ..checks import check_int, check_real, check_real_array


def _alpha(alpha):
    return check_real_array(alpha, "alpha (acceptance rate)", lo=0.0, hi=1.0)


def _c(c):
    return check_real_array(c, "c (target/draft call-time ratio T_p/T_q)", lo=0.0)


def _out(v):
    v = np.asarray(v, dtype=np.float64)
    return v[()] if v.ndim == 0 else v


def geom_sum(alpha, n):
    """``S_n(α) = Σ_{j=0}^{n−1} α^j = (1 − α^n)/(1 − α)`` (n at α = 1), for real n ≥ 0, with full
    relative precision near α = 1 (``−expm1(n log α)/(1 − α)``)."""
    a = _alpha(alpha)
    n = check_real_array(n, "n (number of terms)", lo=0.0)
    d = 1.0 - a
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where(d > 0, -np.expm1(n * np.log(np.where(a > 0, a, 1.0))) / np.where(d > 0, d, 1.0), n)
        # α = 0: S_n = 1 for n ≥ 1 (0^0 = 1), 0 for n = 0
        val = np.where(a == 0, np.minimum(n, 1.0), val)
    return _out(val)


def trunc_geom_pmf(alpha, gamma: int) -> np.ndarray:
    """``P(X = k)``, k = 0..γ, of the accepted count per round at constant acceptance α:
    ``(1 − α)α^k`` for k < γ and ``α^γ`` for k = γ (sb.trunc_geom; Leviathan et al. 2023)."""
    a = float(check_real(alpha, "alpha (acceptance rate)", lo=0.0, hi=1.0))
    g = check_int(gamma, "gamma (draft length)", min=1)
    k = np.arange(g + 1)
    pmf = (1.0 - a) * a ** k
    pmf[g] = a ** g
    return pmf


def trunc_geom_mean(alpha, gamma: int):
    """``E[X] = α(1 − α^γ)/(1 − α) = S_{γ+1}(α) − 1``."""
    check_int(gamma, "gamma (draft length)", min=1)
    return _out(geom_sum(alpha, gamma + 1) - 1.0)


def ar_latency(c):
    """Autoregressive decoding: one target call per token, ``c``."""
    return _out(_c(c))


def sps_latency(alpha, gamma: int, c):
    """Standard SD: a round drafts γ tokens (γ), verifies them (c) and emits
    ``Σ_{j=0}^{γ} α^j`` tokens on average: ``(γ + c)/S_{γ+1}(α)``."""
    g = check_int(gamma, "gamma (draft length)", min=1)
    return _out((g + _c(c)) / geom_sum(alpha, g + 1))


def ideal_parallel_latency(gamma, c):
    """Parallel SD with nothing rejected: drafting the next γ tokens overlaps verifying the
    current γ, a round lasts ``max(γ, c)`` and emits γ tokens: ``max(γ, c)/γ`` (sb.ideal_parallel)."""
    g = check_real_array(gamma, "gamma (draft length)", lo=1.0)
    return _out(np.maximum(g, _c(c)) / g)


def ideal_gain(gamma, c, *, bonus: bool = True):
    """Gain of ideal parallel SD over SD at α = 1: SD's per-token latency ``(γ + c)/(γ + 1)``
    (γ accepted tokens and the bonus token; ``(γ + c)/γ`` with ``bonus=False``) divided by
    ``max(γ, c)/γ``."""
    g = check_real_array(gamma, "gamma (draft length)", lo=1.0)
    cc = _c(c)
    sd = (g + cc) / (g + 1.0) if bonus else (g + cc) / g
    return _out(sd / (np.maximum(g, cc) / g))


def best_ideal_gain(c, *, bonus: bool = True):
    """``max_γ ideal_gain`` over real γ ≥ 1: at γ = c (for c ≥ 1) it is ``2c/(c + 1)`` with
    the bonus token (→ 2 as c → ∞, never reached) and exactly 2 without it."""
    cc = _c(c)
    g = np.maximum(cc, 1.0)
    return ideal_gain(g, cc, bonus=bonus)


def psd_latency(alpha, gamma, c):
    """Theorem 1 as derived here (PSD model, docs/sb.md): expected time per emitted token

    ``T(γ, α, c) = max(γ, c)/S_γ(α) + γ(1 − α) = (1 − α)[max(γ, c) + γ(1 − α^γ)]/(1 − α^γ)``.

    A verification round lasts max(γ, c) and emits S_γ(α) tokens on average; with
    probability ``1 − α^γ`` it ends in a rejection that invalidates the overlapped draft and
    costs a serial redraft of γ. γ may be real (≥ 1) for the analysis; α = 1 gives
    max(γ, c)/γ (no rollback), α = 0 gives max(γ, c) + γ."""
    a = _alpha(alpha)
    g = check_real_array(gamma, "gamma (draft length)", lo=1.0)
    cc = _c(c)
    return _out(np.maximum(g, cc) / geom_sum(a, g) + g * (1.0 - a))


def psd_latency_derivative(alpha, gamma, c):
    """``∂T/∂γ`` of :func:`psd_latency` (one-sided from the right at γ = c):
    for γ < c, ``(1 − α)[1 − c α^γ ln(1/α)/(1 − α^γ)²]``; for γ ≥ c,
    ``d/dγ [γ/S_γ] + (1 − α)``."""
    a = float(check_real(alpha, "alpha (acceptance rate)", lo=0.0, hi=1.0))
    g = float(check_real(gamma, "gamma (draft length)", lo=1.0))
    cc = float(check_real(c, "c (target/draft call-time ratio T_p/T_q)", lo=0.0))
    if a == 1.0:  # T = max(γ, c)/γ
        return -cc / g ** 2 if g < cc else 0.0
    if a == 0.0:
        return 1.0 if g < cc else 2.0
    la = np.log(1.0 / a)
    ag = a ** g
    if g < cc:
        return (1.0 - a) * (1.0 - cc * ag * la / (1.0 - ag) ** 2)
    # d/dγ [γ(1 − α)/(1 − α^γ)] = (1 − α)[(1 − α^γ) − γ α^γ ln(1/α)]/(1 − α^γ)²
    return (1.0 - a) * ((1.0 - ag) - g * ag * la) / (1.0 - ag) ** 2 + (1.0 - a)


def psd_minimiser(alpha, c, *, integer: bool = False, gamma_max: int | None = None) -> float:
    """The γ ≥ 1 minimising :func:`psd_latency`.

    Real γ (default): on γ ≥ c the latency increases, on [1, c] it is convex, so the
    minimiser is the root of ``(1 − α^γ)² = c α^γ ln(1/α)`` in [1, c] when there is one,
    else an end point (γ* = c when α = 1). Integer γ: the argmin over γ = 1..``gamma_max``
    (default ⌈c⌉ + 1), smallest on ties. Needs c ≥ 1 (with c < 1 the target is faster than
    the draft and γ* = 1 > c trivially)."""
    a = float(check_real(alpha, "alpha (acceptance rate)", lo=0.0, hi=1.0))
    cc = float(check_real(c, "c (target/draft call-time ratio T_p/T_q)", lo=1.0))
    if integer:
        gmax = int(np.ceil(cc)) + 1 if gamma_max is None else check_int(gamma_max, "gamma_max", min=1)
        gs = np.arange(1, gmax + 1, dtype=np.float64)
        vals = psd_latency(a, gs, cc)
        return float(gs[int(np.argmin(np.round(vals, 14)))])
    if a == 1.0:
        return cc
    if a == 0.0:
        return 1.0
    la = np.log(1.0 / a)

    def g(x):
        ax = a ** x
        return (1.0 - ax) ** 2 - cc * ax * la

    if g(1.0) >= 0.0:
        return 1.0
    if g(cc) <= 0.0:
        return cc
    return float(brentq(g, 1.0, cc, xtol=1e-13, rtol=4 * np.finfo(float).eps, maxiter=500))


def pearl_latency(alpha, gamma, c):
    """PEARL-style pipeline on an i.i.d. source (k = 1, keep-all): a round lasts max(γ, c);
    its block is empty after a rejection and γ − 1 tokens long after an accepted first token,
    giving ``max(γ, c)(1 + α − α^γ)/S_γ(α)`` (derivation in notebooks/sb_derivations.py)."""
    a = _alpha(alpha)
    g = check_real_array(gamma, "gamma (draft length)", lo=1.0)
    cc = _c(c)
    return _out(np.maximum(g, cc) * (1.0 + a - a ** g) / geom_sum(a, g))


def speedup(latency, c):
    """Speedup over autoregressive decoding: ``c / latency``."""
    lat = check_real_array(latency, "latency", lo=0.0)
    if (lat <= 0).any():
        raise ValueError("latency must be > 0")
    return _out(_c(c) / lat)
