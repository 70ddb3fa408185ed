"""Validated next-token distributions and logits.

Every public entry point of spectheory that takes a distribution runs it through
:func:`check_distribution` (or :func:`check_pair`), so bad input fails early with a
message that names the problem, instead of silently producing a wrong acceptance rate.
Notation follows docs/claims.md: ``p`` target, ``q`` draft.
"""
from __future__ import annotations

import numpy as np

from .checks import as_float_array

#: Largest |sum - 1| accepted for a row before it is called non-normalised.
SUM_ATOL = 1e-6


class DistributionError(ValueError):
    """A probability vector or table is not a valid distribution."""


def _where(mask: np.ndarray) -> str:
    idx = np.argwhere(mask)[0]
    return str(tuple(int(i) for i in idx)) if idx.size > 1 else str(int(idx[0]))


def check_distribution(p, *, name: str = "p", atol: float = SUM_ATOL) -> np.ndarray:
    """Return ``p`` as float64 with each row (last axis) renormalised to sum to 1.

    Raises :class:`DistributionError` for an empty or 0-d array, NaN or infinite
    entries, negative entries, or a row whose sum differs from 1 by more than ``atol``.
    """
    arr = as_float_array(p, name, DistributionError)
    if arr.ndim == 0:
        raise DistributionError(f"{name} must be an array over the vocabulary, got a scalar")
    if arr.shape[-1] == 0:
        raise DistributionError(f"{name} has an empty vocabulary (last axis has length 0)")
    if np.isnan(arr).any():
        raise DistributionError(f"{name} contains NaN at index {_where(np.isnan(arr))}")
    if np.isinf(arr).any():
        raise DistributionError(f"{name} contains an infinite entry at index {_where(np.isinf(arr))}")
    if (arr < 0).any():
        bad = _where(arr < 0)
        raise DistributionError(
            f"{name} has a negative probability {arr[tuple(np.argwhere(arr < 0)[0])]:.3g} at index {bad}")
    sums = arr.sum(axis=-1)
    off = np.abs(sums - 1.0) > atol
    if np.any(off):
        row = np.argwhere(np.atleast_1d(off))[0]
        s = np.atleast_1d(sums)[tuple(row)]
        where = "" if arr.ndim == 1 else f" (row {tuple(int(i) for i in row)})"
        raise DistributionError(
            f"{name} does not sum to 1{where}: sum = {s:.12g} (tolerance {atol:g}); "
            "pass normalised probabilities, or logits through softmax()")
    return arr / arr.sum(axis=-1, keepdims=True)


def check_pair(p, q, *, names=("p", "q"), atol: float = SUM_ATOL) -> tuple[np.ndarray, np.ndarray]:
    """Validate a target/draft pair over the same vocabulary (same shape)."""
    p = check_distribution(p, name=names[0], atol=atol)
    q = check_distribution(q, name=names[1], atol=atol)
    if p.shape[-1] != q.shape[-1]:
        raise DistributionError(
            f"mismatched vocabularies: {names[0]} has V={p.shape[-1]}, {names[1]} has V={q.shape[-1]}")
    if p.shape != q.shape:
        raise DistributionError(f"mismatched shapes: {names[0]} {p.shape} vs {names[1]} {q.shape}")
    return p, q


def softmax(logits, temperature: float = 1.0, *, name: str = "logits") -> np.ndarray:
    """Numerically stable softmax over the last axis.

    ``-inf`` logits are allowed (masked tokens get probability 0); NaN, ``+inf`` and a
    row that is entirely ``-inf`` are rejected.
    """
    if not (temperature > 0 and np.isfinite(temperature)):
        raise DistributionError(f"temperature must be a positive finite number, got {temperature!r}")
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim == 0 or z.shape[-1] == 0:
        raise DistributionError(f"{name} must be a non-empty array over the vocabulary")
    if np.isnan(z).any():
        raise DistributionError(f"{name} contains NaN at index {_where(np.isnan(z))}")
    if np.isposinf(z).any():
        raise DistributionError(f"{name} contains +inf at index {_where(np.isposinf(z))}")
    m = z.max(axis=-1, keepdims=True)
    if np.isneginf(m).any():
        raise DistributionError(f"{name} has a row where every logit is -inf (no token has mass)")
    e = np.exp((z - m) / temperature)
    return e / e.sum(axis=-1, keepdims=True)


def normalize(weights, *, name: str = "weights") -> np.ndarray:
    """Normalise non-negative weights to a distribution; a zero-mass row is an error."""
    w = np.asarray(weights, dtype=np.float64)
    if np.isnan(w).any() or (w < 0).any() or np.isinf(w).any():
        raise DistributionError(f"{name} must be finite and non-negative")
    s = w.sum(axis=-1, keepdims=True)
    if (s <= 0).any():
        raise DistributionError(f"{name} has a row with zero total mass; it cannot be normalised")
    return w / s


def residual(p, q) -> np.ndarray:
    """``norm(max(p − q, 0))`` (Leviathan et al. 2023, Alg. 1), row-wise.

    Where p == q the positive part has zero mass; that row is never sampled by a correct
    verifier (rejection has probability 0), and we return ``p`` there so the result is
    always a distribution.
    """
    d = np.maximum(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64), 0.0)
    s = d.sum(axis=-1, keepdims=True)
    return np.where(s > 0, d / np.where(s > 0, s, 1.0), p)
