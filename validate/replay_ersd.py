"""Replay ERSD's estimators on a :class:`~validate.capture.LogitTrace` (seed 004; evidence mode
``logits`` for CLAIMS ``ersd.lemma3_1`` and ``zero_order.underestimates``).

At each position t, p_t and q_t are the softmaxed target and draft logits. The replay gives

* the exact ERSD first-token acceptance ``Σ_x 1/Σ_y max(p(y)/p(x), q(y)/q(x))`` (O(V log V) per
  position), the Poisson-matching bound ``Σ pq/(p+q)`` and ``1 − TV`` (GSD's value);
* a Monte Carlo of the exponential races at every position (``n_mc`` races each): the draft-race
  rank of the target winner, i.e. ERSD's acceptance index, whose per-position frequencies
  ``â_t`` and their mean ``a`` (the fitted 0th-order acceptance-index distribution, indices
  1..m, the rest lumped) come out;
* the optimal k-vertex tree for the fitted a (Alg. 3), its 0th-order prediction
  ``1 + Σ_v Π_j a(i_j)``, and its value along the trace ``mean_t [1 + Σ_v Π_j â_{t+j−1}(i_j)]``.

Interpretation (as :mod:`validate.replay`): the trace's token path is the context of every
drafted position, so the along-trace value keeps how acceptance varies along the text (the
dependence the 0th-order model drops) but not how drafted tokens change later contexts.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims import stats
from sims.evidence import Evidence
from spectheory import trees as T
from spectheory.checks import check_int
from spectheory.closed_forms import ersd as cf
from spectheory.divergences import harmonic_mean_term, total_variation
from spectheory.rng import check_random_state

from .capture import LogitTrace

ZERO_ORDER_MARGIN = 0.01  # as sims/claims/ersd.py: "plateau above" = ≥ 1% above the prediction


@dataclass(frozen=True, eq=False)
class ERSDReplay:
    name: str
    T: int
    temperature: float
    exact: np.ndarray         # (T,) exact ERSD first-token acceptance per position
    bound: np.ndarray         # (T,) Σ pq/(p+q)
    one_minus_tv: np.ndarray  # (T,)
    n_mc: int
    seed: object
    mc_first: np.ndarray      # (T,) Monte Carlo frequency of index 1
    index_laws: np.ndarray    # (T, m+1) Monte Carlo index frequencies (last cell: > m or never)
    a_fit: np.ndarray         # (m+1,) mean of index_laws
    k: int
    tree: T.Tree
    predicted: float          # 0th-order 1 + Σ_v Π a
    along_trace: np.ndarray   # (T − depth,) 1 + Σ_v Π_j â_{t+j−1}

    @property
    def measured(self) -> float:
        return float(self.along_trace.mean())


def race_indices(p: np.ndarray, q: np.ndarray, n: int, rng) -> np.ndarray:
    """ERSD acceptance indices of n independent races at one context (rank of X_p among the
    draft race's arrivals; V + 1 when q(X_p) = 0)."""
    V = p.shape[0]
    E = rng.exponential(size=(n, V))
    with np.errstate(divide="ignore"):
        tp = np.where(p > 0, E / np.where(p > 0, p, 1.0), np.inf)
        tq = np.where(q > 0, E / np.where(q > 0, q, 1.0), np.inf)
    x = np.argmin(tp, axis=1)
    tx = tq[np.arange(n), x]
    rank = 1 + (tq < tx[:, None]).sum(axis=1)
    return np.where(np.isfinite(tx), rank, V + 1)


def replay_ersd(trace: LogitTrace, *, k: int = 16, m: int = 16, n_mc: int = 400, temperature=None,
                seed=0) -> ERSDReplay:
    """Replay ERSD on ``trace`` (see the module docstring)."""
    if not isinstance(trace, LogitTrace):
        raise TypeError(f"expected a LogitTrace, got {type(trace).__name__}")
    k = check_int(k, "k", min=1)
    m = check_int(m, "m", min=1)
    n_mc = check_int(n_mc, "n_mc", min=2)
    temp = trace.temperature if temperature is None else float(temperature)
    rng = check_random_state(seed)
    P, Q = trace.probs(temp)
    exact = np.atleast_1d(cf.ersd_first_acceptance_sorted(P, Q))
    bound = harmonic_mean_term(P, Q)
    omtv = 1.0 - total_variation(P, Q)
    laws = np.zeros((trace.T, m + 1))
    for t in range(trace.T):
        idx = race_indices(P[t], Q[t], n_mc, rng)
        laws[t] = np.bincount(np.minimum(idx, m + 1) - 1, minlength=m + 1) / n_mc
    a = laws.mean(axis=0)
    tree = T.optimal_tree(T.zero_order(a), k, m)
    predicted = cf.zero_order_expected(a, tree)
    D = tree.depth
    if trace.T <= D:
        raise ValueError(f"trace of length {trace.T} is too short for a tree of depth {D}")
    starts = trace.T - D
    along = np.ones(starts)
    val = {(): np.ones(starts)}
    for v in tree.vertices:  # parents first
        d = len(v)
        val[v] = val[v[:-1]] * laws[d - 1:d - 1 + starts, v[-1] - 1]
        along += val[v]
    return ERSDReplay(trace.name, trace.T, temp, exact, bound, omtv, n_mc, seed, laws[:, 0].copy(), laws, a,
                      k, tree, float(predicted), along)


def evidence_ersd(rep: ERSDReplay, *, alpha: float = 1e-3, tolerance: float = 0.01) -> dict[str, list[Evidence]]:
    """``logits`` evidence for ersd.lemma3_1 and zero_order.underestimates from one replay."""
    ctx = f"T={rep.T}, temperature={rep.temperature:g}, n_mc={rep.n_mc}, seed={rep.seed!r}"
    se_null = float(np.sqrt(np.sum(rep.exact * (1 - rep.exact)) / rep.n_mc) / rep.T)
    worst_lo = float(np.min(rep.exact - rep.bound))
    worst_hi = float(np.max(rep.exact - rep.one_minus_tv))
    lemma = [
        stats.z_test_mean(rep.name, float(rep.exact.mean()), mean=float(rep.mc_first.mean()), se=se_null,
                          n=rep.T * rep.n_mc, alpha=alpha, tolerance=tolerance,
                          what="simulated first-arrival acceptance (exponential races)", mode="logits",
                          note=f"{ctx}; claimed = mean_t Σ_x 1/Σ_y max(p/p_x, q/q_x); se under the claim"),
        Evidence("logits", f"{rep.name} bound ≤ exact ≤ 1−TV", float(rep.bound.mean()), float(rep.exact.mean()),
                 test="at every position: Σ pq/(p+q) ≤ exact ≤ 1 − TV (float tolerance 1e-10)",
                 tolerance=1e-10, outcome="pass" if worst_lo >= -1e-10 and worst_hi <= 1e-10 else "fail",
                 note=f"{ctx}; claimed = mean bound, measured = mean exact; mean 1−TV = "
                      f"{rep.one_minus_tv.mean():.6f}; min(exact − bound) = {worst_lo:.3g}, "
                      f"max(exact − (1−TV)) = {worst_hi:.3g}"),
    ]
    se = float(rep.along_trace.std(ddof=1) / np.sqrt(rep.along_trace.size))
    zero = [stats.z_test_bound(
        f"{rep.name} k={rep.k}", rep.predicted * (1 + ZERO_ORDER_MARGIN), mean=rep.measured, se=se,
        n=rep.along_trace.size, side="ge", alpha=alpha, tolerance=0.02 * rep.predicted,
        what="E[generated] along the trace of the Alg.-3 tree for the fitted a", mode="logits",
        note=f"{ctx}; 0th-order prediction {rep.predicted:.4f}; se treats start positions as independent "
             "(understates it for autocorrelated acceptance)")]
    return {"ersd.lemma3_1": lemma, "zero_order.underestimates": zero}
