"""Divergences between next-token distributions, exact in float64.

All functions reduce over the last axis and treat 0·log 0 = 0. Inputs are not validated
here (they are hot helpers); validate once with :func:`spectheory.distributions.check_pair`.
"""
from __future__ import annotations

import numpy as np


def overlap(p, q) -> np.ndarray:
    """``Σ_x min(p(x), q(x))``: the standard acceptance probability β (claim ``sd.acceptance``)."""
    return np.minimum(p, q).sum(axis=-1)


def total_variation(p, q) -> np.ndarray:
    """``TV(p,q) = ½ Σ_x |p(x) − q(x)|`` (with the ½; Fu et al. 2025 omits it)."""
    return 0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum(axis=-1)


def kl_divergence(p, q, base: float = np.e) -> np.ndarray:
    """``D_KL(p‖q) = Σ_x p log(p/q)``; ``inf`` where p puts mass on a token with q = 0."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    return terms.sum(axis=-1) / np.log(base)


def harmonic_mean_term(p, q) -> np.ndarray:
    """``Σ_x p(x) q(x) / (p(x) + q(x))`` (claim ``ersd.lemma3_1``), 0 where p = q = 0."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    s = p + q
    return np.where(s > 0, p * q / np.where(s > 0, s, 1.0), 0.0).sum(axis=-1)


def entropy(p, base: float = np.e) -> np.ndarray:
    """Shannon entropy ``−Σ p log p`` in the given base (nats by default)."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return terms.sum(axis=-1) / np.log(base)
