"""Replay of the multi-draft family's block quantities on a :class:`~spectheory.validate.capture.LogitTrace`.

For each start t and the trace's own token path ``x^γ = tokens[t:t+γ]`` (the path is the
context of every position, as in :mod:`spectheory.validate.replay`):

* joints ``p(x^i)``, ``q(x^i)``, ``A(x^i) = p(x^i)[1 − (1 − m(x^i))^K]`` (Lemma A.1) and
  GBV's / SpecTr-GBV's sub-block acceptance ``h(x^i)`` (Eq. 2/3), for K = 1 (GBV) and K;
* per position, the γ = 1 quantities for K drafts: the true optimum
  ``min_H p(H) + 1 − q(H)^K`` (:func:`spectheory.closed_forms.optimum.gamma1_optimum_fast`,
  O(V log V)), Lemma 5.1's bound ``Σ_x A(x)`` and K-SEQ's acceptance ``ρβ(ρ)``.

The path contribution ``Σ_i A(x^i)`` is not E[τ] (that sums over all blocks, which a trace
does not have); it is reported as the trace's sample of the block quantities only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spectheory.checks import check_int, check_level, check_type
from spectheory.closed_forms import multidraft as cf
from spectheory.closed_forms.optimum import gamma1_optimum_fast
from spectheory.verifiers.multidraft import block_h

from spectheory.judge import stats
from spectheory.judge.evidence import Evidence

from .capture import LogitTrace


@dataclass(frozen=True, eq=False)
class MultiDraftReplay:
    """h_gbv, h_sgbv, A_gbv, A_sgbv: (T−γ+1, γ) block quantities along the path;
    opt1, bound1, kseq1: (T,) γ = 1 optimum, Lemma 5.1 bound and K-SEQ acceptance for K drafts."""

    name: str
    gamma: int
    K: int
    h_gbv: np.ndarray
    h_sgbv: np.ndarray
    A_gbv: np.ndarray
    A_sgbv: np.ndarray
    opt1: np.ndarray
    bound1: np.ndarray
    kseq1: np.ndarray

    def summary(self) -> dict:
        return {"name": self.name, "gamma": self.gamma, "K": self.K,
                "mean_h_gbv": self.h_gbv.mean(axis=0).tolist(), "mean_h_spectr_gbv": self.h_sgbv.mean(axis=0).tolist(),
                "mean_path_A_gbv": float(self.A_gbv.sum(axis=1).mean()),
                "mean_path_A_spectr_gbv": float(self.A_sgbv.sum(axis=1).mean()),
                "gamma1_optimum": float(self.opt1.mean()), "gamma1_bound": float(self.bound1.mean()),
                "gamma1_kseq": float(self.kseq1.mean()),
                "gamma1_gap_optimum_minus_bound": float((self.opt1 - self.bound1).mean())}


def replay_multidraft(trace: LogitTrace, gamma: int, K: int, *, temperature: float | None = None) -> MultiDraftReplay:
    check_type(trace, LogitTrace, "trace")
    gamma = check_int(gamma, "gamma", min=1)
    K = check_int(K, "K", min=1)
    p, q = trace.probs(temperature)
    T = p.shape[0]
    if gamma >= T:
        raise ValueError(f"γ = {gamma} needs a trace longer than γ + 1 positions (T = {T})")
    toks = trace.tokens
    n = T - gamma
    hg, hs, ag, as_ = (np.empty((n, gamma)) for _ in range(4))
    for t in range(n):
        pp = p[t:t + gamma + 1][None]
        qq = q[t:t + gamma][None]
        x = toks[t:t + gamma][None]
        for K_, h_out, a_out in ((1, hg, ag), (K, hs, as_)):
            h, P, Q = block_h(pp, qq, x, K_)
            h_out[t] = h[0]
            a_out[t] = cf.A(P[0, 1:], Q[0, 1:], K_)
    opt1 = np.array([gamma1_optimum_fast(p[t], q[t], K) for t in range(T)])
    bound1 = np.array([cf.A(p[t], q[t], K).sum() for t in range(T)])
    kseq1 = np.array([cf.kseq_acceptance(p[t], q[t], K) for t in range(T)])
    return MultiDraftReplay(trace.name, gamma, K, hg, hs, ag, as_, opt1, bound1, kseq1)


# --- compact traces of a run directory (spectheory verify --logits RUN_DIR) ----------------------

DEFAULT_KS = (2, 4)


def gamma1_brackets(P, Q, sp, sq, st, K: int) -> dict:
    """Rigorous per-position brackets (γ = 1, K drafts) of the optimum min_H p(H)+1−q(H)^K and of
    Lemma 5.1's bound Σ_x A(x), from the lumped pair (P, Q), the raw slices (sp, sq) and the
    exact statistics ``st`` (see :func:`logits_evidence` for the argument)."""
    K = check_int(K, "K", min=1)
    from .replay_ersd import _check_slices
    missing = [k for k in ("beta", "beta_slice", "p_rest", "q_rest") if k not in st]
    if missing:
        raise ValueError(f"st must hold the exact statistics {missing} (a CompactTrace's stats)")
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    sp, sq, *_ = _check_slices(sp, sq, st["beta"], st["beta_slice"], st["p_rest"], st["q_rest"])
    if P.shape != Q.shape or P.shape != (sp.shape[0], sp.shape[1] + 1):
        raise ValueError(f"P and Q must be the lumped (N, k+1) = {(sp.shape[0], sp.shape[1] + 1)} pair, "
                         f"got {P.shape} and {Q.shape}")
    opt_hi = np.array([gamma1_optimum_fast(P[t], Q[t], K) for t in range(P.shape[0])])
    rest_min = np.maximum(st["beta"] - st["beta_slice"], 0.0)
    a_sl = cf.A(sp, sq, K).sum(axis=1)
    return {"optimum_lo": np.maximum(opt_hi - K * st["q_rest"], 0.0), "optimum_hi": opt_hi,
            "bound_lo": a_sl + rest_min,
            "bound_hi": a_sl + np.minimum(cf.A(st["p_rest"], st["q_rest"], K), K * rest_min)}


def logits_evidence(run, alpha: float = 1e-3, *, Ks=DEFAULT_KS) -> dict[str, list[Evidence]]:
    """``logits`` evidence for gbv.optimal, spectr_gbv.upper_bound and spectr_gbv.attains from the
    compact traces of a ``spectheory validate`` run (p target, q draft, K i.i.d. drafts).

    What the compact trace gives (see :mod:`spectheory.validate.lumping`):

    * **γ = 1, K = 1:** the optimum ``min_H p(H) + 1 − q(H)`` is 1 − TV = β, stored exactly.
      On the lumped pair the optimum closed form (:func:`gamma1_optimum_fast`) must equal
      Σ min(P̃, Q̃): graded exactly (gbv.optimal: GBV's value is the optimum for one draft).
    * **γ = 1, K drafts, optimum:** the lumped minimum runs over fewer sets H (unions of lumped
      outcomes), so it is an *upper* bound; for any H, p(H) + 1 − q(H)^K ≥ p(H∩slice) + 1 −
      q(H∩slice)^K − K q_rest (x^K is K-Lipschitz on [0, 1]), so lumped − K q_rest is a lower
      bound. Bracket reported (info).
    * **γ = 1, Lemma 5.1's bound Σ_x A(x):** A = p − W is jointly concave and 1-homogeneous
      (W is a perspective of a convex function), hence superadditive, and A ≥ min(p, q), so the
      leftover adds between β − β_slice (exact) and min(A(p_rest, q_rest), K(β − β_slice)).
      Bracket reported (info) beside the optimum's: their gap is the room Lemma 5.1 leaves.
    * **block quantities along the text:** the trace is sampled from p, so for a start t and
      x^i = tokens[t:t+i] (given the prefix, x^i ~ p), E[1 − (1 − m(x^i))^K | prefix] =
      Σ_(x^i) p(x^i)[1 − (1 − m(x^i))^K] = Σ_(x^i) A(x^i) with m = min(1, q/p): the path average
      of Σ_(i≤γ) [1 − (1 − m(x^i))^K] is an unbiased estimate of Lemma 5.1's bound (= SpecTr-GBV's
      E[τ], Thm 5.3; = GBV's E[τ] at K = 1) in the captured contexts, and it is a function of the
      stored p_token, q_token only (exact, no lumping). Reported (info) against the measured
      real-SD tokens per iteration − 1 at the same γ (on-policy contexts differ).

    Not replayed: GBV's/SpecTr-GBV's sub-block acceptances h (Eq. 2/3) need Σ_y W over the next
    distribution, of which the lumped pair gives only a lower bound (W is subadditive).
    """
    from .lumping import pooled, run_context
    check_level(alpha)
    pool = pooled(run)
    if pool is None:
        return {}
    ctx = run_context(run, pool)
    st = pool.stats
    P, Q, sp, sq = pool.P, pool.Q, pool.slice_p, pool.slice_q
    beta = st["beta"]
    out: dict[str, list] = {"gbv.optimal": [], "spectr_gbv.upper_bound": [], "spectr_gbv.attains": []}
    opt1 = np.array([gamma1_optimum_fast(P[t], Q[t], 1) for t in range(pool.N)])
    bl = np.minimum(P, Q).sum(axis=1)
    worst = float(np.abs(opt1 - bl).max())
    out["gbv.optimal"].append(Evidence(
        "logits", "γ=1 K=1 optimum on the lumped pair, every position", float(bl.mean()), float(opt1.mean()),
        n=pool.N, tolerance=1e-12, outcome="pass" if worst <= 1e-12 else "fail", part="optimal",
        test="exact per position: min_H p(H) + 1 − q(H) (optimum over all couplings) = Σ min(P̃, Q̃) (GBV at γ=1)",
        note=f"{ctx}; max |Δ| = {worst:.2g}; on the true pair both equal β (stored): mean β = {beta.mean():.6f}, "
             f"lumped Σmin exceeds it by {float((bl - beta).mean()):.2g} on average"))
    for K in (check_int(k, "K", min=2) for k in Ks):
        br = gamma1_brackets(P, Q, sp, sq, st, K)
        opt_lo, opt_hi, b_lo, b_hi = br["optimum_lo"], br["optimum_hi"], br["bound_lo"], br["bound_hi"]
        kseq = float(np.mean([cf.kseq_acceptance(P[t], Q[t], K) for t in range(pool.N)]))
        out["spectr_gbv.upper_bound"].append(stats.info(
            "logits", f"γ=1 K={K} optimum vs Lemma 5.1 bound", float(b_hi.mean()), float(opt_lo.mean()), n=pool.N,
            test="claimed = upper end of Σ_x A(x) (Lemma 5.1 bound), measured = lower end of the true optimum "
                 "min_H p(H)+1−q(H)^K (both rigorous brackets from slice + exact leftovers)",
            note=f"{ctx}; bound ∈ [{b_lo.mean():.6f}, {b_hi.mean():.6f}], optimum ∈ [{opt_lo.mean():.6f}, "
                 f"{opt_hi.mean():.6f}]; certified optimum > bound at {int((opt_lo > b_hi + 1e-9).sum())}/{pool.N} "
                 f"positions; K-SEQ on the lumped pair {kseq:.6f}"))
    gammas = sorted(int(g) for g in (run.config.get("gammas") or [4]))
    for g in gammas:
        meas = None
        if g in run.sd:
            tpi = np.concatenate([r.tokens_per_iteration for r in run.sd[g]])
            se_m = float(tpi.std(ddof=1) / np.sqrt(tpi.size)) if tpi.size > 1 else float("nan")
            meas = (float(tpi.mean()) - 1.0, se_m)
        for K in (1, *Ks):
            vals = []
            for pt, qt in zip(pool.per_trace(st["p_token"]), pool.per_trace(st["q_token"])):
                n = pt.size - g + 1
                if n < 1:
                    continue
                Pj = np.cumprod(np.lib.stride_tricks.sliding_window_view(pt, g), axis=1)
                Qj = np.cumprod(np.lib.stride_tricks.sliding_window_view(qt, g), axis=1)
                vals.append(cf.A(Pj, Qj, K).__truediv__(np.where(Pj > 0, Pj, 1.0)).sum(axis=1))
            if not vals:
                continue
            v = np.concatenate(vals)
            se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")
            cid = "gbv.optimal" if K == 1 else "spectr_gbv.attains"
            who = "GBV E[τ]" if K == 1 else f"SpecTr-GBV E[τ] = Lemma 5.1 bound, K={K}"
            out[cid].append(stats.info(
                "logits", f"γ={g} {who} along the text vs real SD", float(v.mean()),
                float("nan") if meas is None else meas[0], n=v.size,
                test=f"claimed = path estimate mean_t Σ_(i≤γ) [1 − (1 − min(1, q(x^i)/p(x^i)))^K] (unbiased for "
                     "Σ_(x^i) A(x^i) in the captured contexts; exact from stored p_token, q_token); measured = real "
                     f"token-level SD's accepted drafts per iteration τ at γ={g} (one draft, on-policy contexts)",
                note=f"{ctx}; path estimate se {se:.3g} (start positions as independent)"
                     + ("" if meas is None else f"; measured SD τ se {meas[1]:.3g}")))
    for e in out["spectr_gbv.upper_bound"]:  # the claims' parts (sims/claims/multidraft.py)
        e.part = "cic-gamma1"  # the γ = 1 optimum over all couplings against the bound
    for e in out["gbv.optimal"]:
        e.part = "optimal" if e.outcome != "info" else "ge-sd"  # GBV's E[τ] beside real SD's τ
    return {k: v for k, v in out.items() if v}
