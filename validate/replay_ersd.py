"""Replay ERSD's estimators on a :class:`~spectheory.validate.capture.LogitTrace` (Kobus & Gündüz; evidence mode
``logits`` for claims ``ersd.lemma3_1`` and ``zero_order.underestimates``).

At each position t, p_t and q_t are the softmaxed target and draft logits. The replay gives

* the exact ERSD first-token acceptance ``Σ_x 1/Σ_y max(p(y)/p(x), q(y)/q(x))`` (O(V log V) per
  position), the Poisson-matching bound ``Σ pq/(p+q)`` and ``1 − TV`` (GSD's value);
* a Monte Carlo of the exponential races at every position (``n_mc`` races each): the draft-race
  rank of the target winner, i.e. ERSD's acceptance index, whose per-position frequencies
  ``â_t`` and their mean ``a`` (the fitted 0th-order acceptance-index distribution, indices
  1..m, the rest lumped) come out;
* the optimal k-vertex tree for the fitted a (Alg. 3), its 0th-order prediction
  ``1 + Σ_v Π_j a(i_j)``, and its value along the trace ``mean_t [1 + Σ_v Π_j â_{t+j−1}(i_j)]``.

Interpretation (as :mod:`spectheory.validate.replay`): the trace's token path is the context of every
drafted position, so the along-trace value keeps how acceptance varies along the text (the
dependence the 0th-order model drops) but not how drafted tokens change later contexts.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spectheory.judge import stats
from spectheory.judge.evidence import Evidence
from spectheory import trees as T
from spectheory.checks import check_int, check_level, check_real, check_type
from spectheory.distributions import DistributionError, check_pair
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
    p, q = check_pair(p, q, names=("p (target)", "q (draft)"))
    if p.ndim != 1:
        raise DistributionError(f"p and q must be 1-D distributions over the vocabulary, got shape {p.shape}")
    n = check_int(n, "n", min=1)
    check_type(rng, np.random.Generator, "rng")
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
    check_type(rep, ERSDReplay, "rep", " (from replay_ersd)")
    check_level(alpha)
    check_real(tolerance, "tolerance", lo=0.0, lo_open=True)
    ctx = f"T={rep.T}, temperature={rep.temperature:g}, n_mc={rep.n_mc}, seed={rep.seed!r}"
    se_null = stats.bernoulli_mean_se(rep.exact, rep.n_mc)
    worst_lo = float(np.min(rep.exact - rep.bound))
    worst_hi = float(np.max(rep.exact - rep.one_minus_tv))
    lemma = [
        stats.z_test_mean(rep.name, float(rep.exact.mean()), mean=float(rep.mc_first.mean()), se=se_null,
                          n=rep.T * rep.n_mc, alpha=alpha, tolerance=tolerance,
                          what="simulated first-arrival acceptance (exponential races)", mode="logits",
                          note=f"{ctx}; claimed = mean_t Σ_x 1/Σ_y max(p/p_x, q/q_x); se under the claim"),
        Evidence("logits", f"{rep.name} bound ≤ exact", float(rep.bound.mean()), float(rep.exact.mean()),
                 test="at every position: Σ pq/(p+q) ≤ exact (float tolerance 1e-10)",
                 tolerance=1e-10, outcome="pass" if worst_lo >= -1e-10 else "fail", part="lower",
                 note=f"{ctx}; claimed = mean bound, measured = mean exact; min(exact − bound) = {worst_lo:.3g}"),
        Evidence("logits", f"{rep.name} exact ≤ 1−TV", float(rep.one_minus_tv.mean()), float(rep.exact.mean()),
                 test="at every position: exact ≤ 1 − TV (float tolerance 1e-10)",
                 tolerance=1e-10, outcome="pass" if worst_hi <= 1e-10 else "fail", part="upper",
                 note=f"{ctx}; claimed = mean 1 − TV, measured = mean exact; max(exact − (1−TV)) = {worst_hi:.3g}"),
    ]
    lemma[0].part = "formula"
    se = float(rep.along_trace.std(ddof=1) / np.sqrt(rep.along_trace.size))
    zero = [stats.z_test_bound(
        f"{rep.name} k={rep.k}", rep.predicted * (1 + ZERO_ORDER_MARGIN), mean=rep.measured, se=se,
        n=rep.along_trace.size, side="ge", alpha=alpha, tolerance=0.02 * rep.predicted,
        what="E[generated] along the trace of the Alg.-3 tree for the fitted a", mode="logits",
        note=f"{ctx}; 0th-order prediction {rep.predicted:.4f}; se treats start positions as independent "
             "(understates it for autocorrelated acceptance)")]
    zero[0].part = "higher-order"
    return {"ersd.lemma3_1": lemma, "zero_order.underestimates": zero}


# --- compact traces of a run directory (spectheory verify --logits RUN_DIR) ----------------------

def _check_slices(sp, sq, *per_position):
    """(N, k) slices and (N,) per-position statistics: finite probabilities of matching shapes."""
    from spectheory.checks import check_real_array
    sp = check_real_array(sp, "sp (target slice)", lo=0.0, hi=1.0 + 1e-5)
    sq = check_real_array(sq, "sq (draft slice)", lo=0.0, hi=1.0 + 1e-5)
    if sp.ndim != 2 or sp.shape != sq.shape:
        raise ValueError(f"sp and sq must be (N, k) slices of one shape, got {sp.shape} and {sq.shape}")
    out = [check_real_array(x, f"per-position statistic {i}", lo=-1e-5, hi=1.0 + 1e-5) for i, x in enumerate(per_position)]
    for i, x in enumerate(out):
        if x.shape != (sp.shape[0],):
            raise ValueError(f"per-position statistic {i} must have shape ({sp.shape[0]},), got {x.shape}")
    return (sp, sq, *out)


def ersd_brackets(sp, sq, p_rest, q_rest, beta, beta_slice) -> dict:
    """Rigorous per-position brackets of ERSD's exact first-token acceptance E and of the
    Poisson-matching bound H from a top-k slice and exact leftovers (sp, sq: (N, k) slices).

    E = Σ_x p_x q_x / Σ_y max(p_y q_x, q_y p_x). For a slice token x, the leftover's part of the
    denominator lies in [max(p_rest q_x, q_rest p_x), p_rest q_x + q_rest p_x] (max of sums ≤ sum
    of maxes); a leftover token's term is ≤ min(p_x, q_x) (the denominator is ≥ max(q_x, p_x)),
    so the leftover adds to E between 0 and Σ_rest min(p,q) = β − β_slice (exact, stored).
    H = Σ pq/(p+q): h(p,q) = pq/(p+q) is concave and 1-homogeneous, hence superadditive, so the
    leftover adds between 0 and h(p_rest, q_rest).
    """
    sp, sq, p_rest, q_rest, beta, beta_slice = _check_slices(sp, sq, p_rest, q_rest, beta, beta_slice)
    N, k = sp.shape
    e_lo, e_hi, h_sl = np.zeros(N), np.zeros(N), np.zeros(N)
    for t in range(N):
        p, q = sp[t], sq[t]
        keep = (p > 0) & (q > 0)
        pk, qk = p[keep], q[keep]
        den = np.maximum(p[None, :] * qk[:, None], q[None, :] * pk[:, None]).sum(axis=1)
        num = pk * qk
        e_lo[t] = np.sum(num / (den + p_rest[t] * qk + q_rest[t] * pk))
        e_hi[t] = np.sum(num / (den + np.maximum(p_rest[t] * qk, q_rest[t] * pk)))
        s = p + q
        h_sl[t] = np.sum(np.where(s > 0, p * q / np.where(s > 0, s, 1.0), 0.0))
    rest = beta - beta_slice
    s_rest = p_rest + q_rest
    h_rest = np.where(s_rest > 0, p_rest * q_rest / np.where(s_rest > 0, s_rest, 1.0), 0.0)
    return {"exact_lo": e_lo, "exact_hi": e_hi + np.maximum(rest, 0.0), "bound_lo": h_sl, "bound_hi": h_sl + h_rest}


def logits_evidence(run, alpha: float = 1e-3, *, k: int = 16, m: int = 16, n_mc: int = 400, seed=0,
                    tolerance: float = 0.01) -> dict[str, list[Evidence]]:
    """``logits`` evidence for ersd.lemma3_1 and zero_order.underestimates from the compact
    traces of a ``spectheory validate`` run.

    * ersd.lemma3_1, exact (graded), parts ``lower`` and ``upper``: per position the rigorous
      brackets of :func:`ersd_brackets` against β = 1 − TV (stored exactly). H ≤ E (``lower``) is
      *certified* at a position when bound_hi ≤ exact_lo and *refuted* when bound_lo > exact_hi;
      E ≤ β (``upper``) is certified when exact_hi ≤ β and refuted when exact_lo > β (float
      tolerance 1e-6 for the float32 slice); other positions are undecided (their leftover is too
      heavy) and are counted, not graded. Each outcome: fail if any position refutes it, else pass
      on the decided positions (info if none is).
    * ersd.lemma3_1, Monte Carlo (graded), part ``formula``: shared-exponential races on the
      lumped (k+1)-outcome instance (``n_mc`` per position; the leftover races as one token of
      mass p_rest/q_rest): the frequency of acceptance index 1 against the exact formula on that
      same instance.
    * zero_order.underestimates (info, part ``higher-order``): the acceptance-index law fitted
      from those races (indices 1..m, the rest lumped), the Alg.-3 tree for it, its 0th-order
      prediction against the
      along-trace value. Info only: the lumped pseudo-token arrives earlier in the draft race
      than any single leftover token would, so ranks behind it are shifted, and the trace's path
      is the context of every drafted position (not ERSD's own drafts).
    """
    from .lumping import pooled, run_context
    check_level(alpha)
    check_real(tolerance, "tolerance", lo=0.0, lo_open=True)
    pool = pooled(run)
    if pool is None:
        return {}
    k = check_int(k, "k", min=1)
    m = check_int(m, "m", min=1)
    n_mc = check_int(n_mc, "n_mc", min=2)
    ctx = run_context(run, pool)
    st = pool.stats
    br = ersd_brackets(pool.slice_p, pool.slice_q, st["p_rest"], st["q_rest"], st["beta"], st["beta_slice"])
    beta, tol = st["beta"], 1e-6
    width = br["exact_hi"] - br["exact_lo"]
    lower_cert, upper_cert = br["bound_hi"] <= br["exact_lo"] + tol, br["exact_hi"] <= beta + tol
    lower_ref, upper_ref = br["bound_lo"] > br["exact_hi"] + tol, br["exact_lo"] > beta + tol
    brackets = (f"E ∈ [{br['exact_lo'].mean():.6f}, {br['exact_hi'].mean():.6f}] (max width {width.max():.2g}), "
                f"H ∈ [{br['bound_lo'].mean():.6f}, {br['bound_hi'].mean():.6f}], mean β = 1−TV = {beta.mean():.6f} "
                f"(exact); the chain H ≤ E ≤ 1 − TV certified at {int((lower_cert & upper_cert).sum())}/{pool.N}")
    lemma = []
    for part, cert, ref, what, claimed, measured in (
            ("lower", lower_cert, lower_ref, "Poisson-matching bound H ≤ ERSD exact E; certified iff H_hi ≤ E_lo",
             br["bound_hi"].mean(), br["exact_lo"].mean()),
            ("upper", upper_cert, upper_ref, "ERSD exact E ≤ 1 − TV = β; certified iff E_hi ≤ β",
             beta.mean(), br["exact_hi"].mean())):
        dec = cert | ref
        lemma.append(Evidence(
            "logits", f"{'bound ≤ exact' if part == 'lower' else 'exact ≤ 1−TV'} on the {int(dec.sum())}/{pool.N} "
                      "positions the brackets decide",
            float(claimed), float(measured), n=pool.N, tolerance=tol, part=part,
            outcome="fail" if ref.any() else ("pass" if cert.any() else "info"),
            test=f"per position: {what}, from rigorous slice+leftover brackets",
            note=f"{ctx}; certified {int(cert.sum())}/{pool.N}, refuted {int(ref.sum())}; {brackets}"))
    rng = check_random_state(seed)
    P, Q = pool.P, pool.Q
    exact_l = np.atleast_1d(cf.ersd_first_acceptance_sorted(P, Q))
    laws = np.zeros((pool.N, m + 1))
    for t in range(pool.N):
        idx = race_indices(P[t], Q[t], n_mc, rng)
        laws[t] = np.bincount(np.minimum(idx, m + 1) - 1, minlength=m + 1) / n_mc
    se_null = stats.bernoulli_mean_se(exact_l, n_mc)
    lemma.append(stats.z_test_mean(
        "lumped instance", float(exact_l.mean()), mean=float(laws[:, 0].mean()), se=se_null, n=pool.N * n_mc,
        alpha=alpha, tolerance=tolerance, what="first-arrival acceptance of shared exponential races",
        mode="logits", note=f"{ctx}; n_mc={n_mc} per position, seed={seed!r}; claimed = mean_t Σ_x 1/Σ_y "
                            "max(P̃/P̃_x, Q̃/Q̃_x) on the lumped pair; se under the claim; the lumped exact value "
                            f"{exact_l.mean():.6f} vs the true bracket [{br['exact_lo'].mean():.6f}, "
                            f"{br['exact_hi'].mean():.6f}]"))
    lemma[-1].part = "formula"
    a = laws.mean(axis=0)
    tree = T.optimal_tree(T.zero_order(a), k, m)
    predicted = float(cf.zero_order_expected(a, tree))
    D = tree.depth
    along = []
    for lw in pool.per_trace(laws):
        starts = lw.shape[0] - D
        if starts < 1:
            continue
        val = {(): np.ones(starts)}
        tot = np.ones(starts)
        for v in tree.vertices:  # parents first
            d = len(v)
            val[v] = val[v[:-1]] * lw[d - 1:d - 1 + starts, v[-1] - 1]
            tot += val[v]
        along.append(tot)
    along = np.concatenate(along) if along else np.array([np.nan])
    se = float(along.std(ddof=1) / np.sqrt(along.size)) if along.size > 1 else float("nan")
    zero = [stats.info(
        "logits", f"k={k} tree, fitted a", predicted, float(along.mean()), n=along.size,
        ci=(float(along.mean() - 1.96 * se), float(along.mean() + 1.96 * se)),
        test="0th-order prediction 1 + Σ_v Π a(i_j) of the Alg.-3 tree for the fitted a vs its value along "
             "the traces mean_t [1 + Σ_v Π_j â_(t+j−1)(i_j)] (95% CI, start positions as independent)",
        note=f"{ctx}; fitted a(1..4) = {', '.join(f'{v:.4f}' for v in a[:4])}, a(>{m}) = {a[-1]:.4f}; tree depth {D}; "
             "info: lumped ranks and the trace path as context (see spectheory.validate.replay_ersd.logits_evidence)")]
    zero[0].part = "higher-order"
    return {"ersd.lemma3_1": lemma, "zero_order.underestimates": zero}
