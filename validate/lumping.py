"""The lumped (k+1)-outcome view of compact traces, shared by the family replays.

A :class:`~spectheory.validate.trace.CompactTrace` keeps, per position, a top-k slice of p (target) and
q (draft) plus the exact leftover masses ``p_rest``, ``q_rest`` and exact statistics
(β = Σ min(p,q), TV, KL, ``beta_slice``, ``p_token``, ``q_token``). Lumping the leftover
into one pseudo-token gives the pair (P̃, Q̃) on k+1 outcomes: P̃ = f#p, Q̃ = f#q, the image
of p and q under the map f that sends every leftover token to the pseudo-token. What that
gives, precisely:

* anything **linear** in (p, q) commutes with f: the weighted ensemble's lumped r̃ = λQ̃ +
  (1−λ)P̃ is exactly f#r;
* Σ min over the lumped pair is ``β_slice + min(p_rest, q_rest)`` ≥ β (TV can only shrink
  under f, data processing); the gap ``β̃ − β`` is known exactly because β is stored;
* a jointly concave 1-homogeneous term (``min``, ``pq/(p+q)``) is superadditive, so its
  lumped leftover term is an **upper** bound on the leftover's true contribution; a jointly
  convex 1-homogeneous one (``max(p−q,0)``, GBV's ``W``) is subadditive: a **lower** bound;
* a nonlinear transform of the tokens (the contrastive ensemble ``∝ p q^{−μ}``) is **not**
  the image of the true one: the lumped instance is then a different (k+1)-outcome instance.

Functions here only assemble arrays; each family replay says which of these facts it uses.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Pooled:
    """All positions of a run's traces, stacked: P, Q (N, k+1) lumped distributions (float64,
    rows renormalised against float32 rounding of the slice), stats dict of (N,) exact
    statistics, ``bounds`` the [start, stop) of each trace, ``slice_p``/``slice_q`` the raw
    (N, k) float64 slices (not renormalised)."""

    P: np.ndarray
    Q: np.ndarray
    slice_p: np.ndarray
    slice_q: np.ndarray
    stats: dict
    bounds: tuple
    names: tuple
    categories: tuple
    k: int

    @property
    def N(self) -> int:
        return self.P.shape[0]

    def per_trace(self, x):
        """Split an (N, ...) array into the traces' pieces."""
        return [x[a:b] for a, b in self.bounds]


def pooled(run) -> Pooled | None:
    """Stack every trace of ``run`` (None if it has no traces; traces must share k)."""
    from .experiment import check_run
    check_run(run)
    traces = list(run.traces)
    if not traces:
        return None
    ks = {t.k for t in traces}
    if len(ks) != 1:
        raise ValueError(f"traces of {run.path} have different slice sizes {sorted(ks)}")
    Ps, Qs = zip(*(t.lumped() for t in traces))
    bounds, a = [], 0
    for t in traces:
        bounds.append((a, a + t.T))
        a += t.T
    st = {k: np.concatenate([t.stats[k] for t in traces]) for k in traces[0].stats}
    return Pooled(np.concatenate(Ps), np.concatenate(Qs),
                  np.concatenate([t.slice_p.astype(np.float64) for t in traces]),
                  np.concatenate([t.slice_q.astype(np.float64) for t in traces]),
                  st, tuple(bounds), tuple(t.name for t in traces), tuple(t.category for t in traces), ks.pop())


def run_context(run, pool: Pooled) -> str:
    from .experiment import check_run
    check_run(run)
    if not isinstance(pool, Pooled):
        raise TypeError(f"pool must be a Pooled (from pooled(run)), got {type(pool).__name__}")
    c = run.config
    return (f"real run {run.path.name}: {len(pool.bounds)} traces, {pool.N} positions, top-{pool.k} slice + "
            f"lumped leftover; temperature={c.get('temperature')}, top_k={c.get('top_k')}, top_p={c.get('top_p')}")


def sample_lumped(Q: np.ndarray, n: int, rng) -> np.ndarray:
    """(N, n) outcome indices, x ~ Q[t] (inverse CDF per row)."""
    from spectheory.checks import check_int, check_type
    from spectheory.distributions import normalize
    if np.ndim(Q) != 2:
        raise ValueError(f"Q must be an (N, k+1) array of lumped distributions, got shape {np.shape(Q)}")
    Q = normalize(Q, name="Q (lumped distributions)")
    n = check_int(n, "n", min=1)
    check_type(rng, np.random.Generator, "rng")
    cdf = np.cumsum(Q, axis=1)
    cdf /= cdf[:, -1:]
    u = rng.random((Q.shape[0], n))
    out = np.empty(u.shape, dtype=np.int64)
    for t in range(Q.shape[0]):
        out[t] = np.minimum(np.searchsorted(cdf[t], u[t], side="right"), Q.shape[1] - 1)
    return out
