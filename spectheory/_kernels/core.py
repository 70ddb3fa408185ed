"""The sampling core every family's kernels build on (Numba, ``nopython``).

* **Random numbers inside the kernel**: xoshiro256++ (Blackman & Vigna 2019), one 4-word
  state per independent stream, seeded on the Python side from the run's
  :class:`numpy.random.SeedSequence` (:func:`spectheory.rng.stream_states`), so a kernel
  draws only the numbers it uses and independent chains can run under ``prange`` with
  results that do not depend on the thread count.
* **Sampling a row**: Walker/Vose alias tables (:func:`build_alias`, one uniform per
  draw, O(1)) and inverse-CDF search (:func:`cdf_search`, for the uniforms-in reference
  kernels whose NumPy twins must match bit for bit).

Everything here is pure: arrays in, numbers out; no allocation in the draw functions.
"""
from __future__ import annotations

import numpy as np
from numba import njit, uint64

_TWO_M53 = 1.0 / 9007199254740992.0  # 2**-53


@njit(uint64(uint64, uint64), cache=True, inline="always")
def _rotl(x, k):
    return (x << k) | (x >> (uint64(64) - k))


@njit(cache=True, inline="always")
def next_u64(st):
    """Advance a xoshiro256++ state (uint64[4], modified in place); return 64 random bits."""
    s0, s1, s2, s3 = st[0], st[1], st[2], st[3]
    result = _rotl(s0 + s3, uint64(23)) + s0
    t = s1 << uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, uint64(45))
    st[0], st[1], st[2], st[3] = s0, s1, s2, s3
    return result


@njit(cache=True, inline="always")
def next_double(st):
    """A uniform double in [0, 1) with 53 random bits."""
    return float(next_u64(st) >> uint64(11)) * _TWO_M53


@njit(cache=True, inline="always")
def cdf_search(cdf, t):
    """First index i with ``cdf[i] > t``; past-the-end (rounding) falls back to the last token
    with positive mass. Inverse-CDF sampling: ``cdf_search(cdf, u * cdf[-1])``."""
    lo = 0
    hi = cdf.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if cdf[mid] > t:
            hi = mid
        else:
            lo = mid + 1
    if lo == cdf.shape[0]:
        lo -= 1
        while lo > 0 and cdf[lo] == cdf[lo - 1]:
            lo -= 1
    return lo


@njit(cache=True)
def draw_weights(w, V, u):
    """Inverse-CDF draw from unnormalised non-negative weights ``w[0:V]`` (sum > 0) with the
    uniform ``u``: the first token whose running mass exceeds ``u · Σw`` (rounding past the end
    falls back to the last token with positive weight). The one weighted sampler every family's
    kernels share (residuals, K-SEQ's and GBV's corrections, ERSD's races, SpecBranch's branches)."""
    tot = 0.0
    for x in range(V):
        tot += w[x]
    t = u * tot
    acc = 0.0
    last = -1
    for x in range(V):
        if w[x] > 0.0:
            last = x
            acc += w[x]
            if acc > t:
                return x
    return last


@njit(cache=True, inline="always")
def alias_draw(prob, alias, row, u):
    """Draw from row ``row`` of an alias table with one uniform ``u`` in [0, 1): column
    ``j = ⌊uV⌋`` is kept with probability ``prob[row, j]`` (using the fractional part of
    ``uV``), else replaced by ``alias[row, j]``. Tokens of zero mass have ``prob = 0`` and an
    alias of positive mass, so they are never drawn."""
    V = prob.shape[1]
    x = u * V
    j = int(x)
    if j >= V:  # u rounded up to 1
        j = V - 1
    if x - j < prob[row, j]:
        return j
    return alias[row, j]


@njit(cache=True)
def _build_alias_rows(rows, prob, alias, small, large):
    R, V = rows.shape
    for r in range(R):
        total = 0.0
        for j in range(V):
            total += rows[r, j]
        ns = 0
        nl = 0
        for j in range(V):
            prob[r, j] = rows[r, j] * V / total
            alias[r, j] = j
            if prob[r, j] < 1.0:
                small[ns] = j
                ns += 1
            else:
                large[nl] = j
                nl += 1
        while ns > 0 and nl > 0:
            ns -= 1
            s = small[ns]
            g = large[nl - 1]
            alias[r, s] = g
            prob[r, g] = (prob[r, g] + prob[r, s]) - 1.0
            if prob[r, g] < 1.0:
                nl -= 1
                small[ns] = g
                ns += 1
        # leftovers (rounding): keep with probability 1, unless they carry no mass at all
        for k in range(nl):
            prob[r, large[k]] = 1.0
        for k in range(ns):
            j = small[k]
            prob[r, j] = 1.0 if rows[r, j] > 0 else 0.0
            if rows[r, j] == 0.0:
                # a zero-mass column must alias to a token with mass
                for t in range(V):
                    if rows[r, t] > 0:
                        alias[r, j] = t
                        break


def build_alias(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose alias tables for each row of a non-negative (R, V) table (rows need not be
    normalised; each must have positive mass). Returns ``(prob, alias)``, float64 and int64."""
    rows = np.array(rows, dtype=np.float64, order="C")  # a writable copy: one compiled signature
    if rows.ndim != 2 or rows.shape[1] == 0:
        raise ValueError(f"alias tables need a non-empty (R, V) table, got shape {rows.shape}")
    if not np.all(np.isfinite(rows)) or (rows < 0).any() or (rows.sum(axis=1) <= 0).any():
        raise ValueError("alias tables need finite, non-negative rows with positive mass")
    R, V = rows.shape
    prob = np.empty((R, V))
    alias = np.empty((R, V), dtype=np.int64)
    _build_alias_rows(rows, prob, alias, np.empty(V, dtype=np.int64), np.empty(V, dtype=np.int64))
    return prob, alias


def alias_probabilities(prob: np.ndarray, alias: np.ndarray) -> np.ndarray:
    """The exact law an alias table samples (for tests): P(x) = (prob[x] + Σ_{j: alias[j]=x}
    (1 − prob[j])) / V, row-wise."""
    R, V = prob.shape
    out = prob.copy()
    for r in range(R):
        np.add.at(out[r], alias[r], 1.0 - prob[r])
    return out / V
