"""SpecBranch (Shen et al., ICLR 2026) on captured real logits: ``logits`` evidence for sb.trunc_geom,
sb.rollback, sb.speedup and sb.hrad from a ``spectheory validate`` run (discovered by
:mod:`validate.evidence`).

* **sb.trunc_geom** (info, part ``markov``): the accepted count τ of the run's real SD
  iterations against the truncated geometric at α̂ (the captured text's mean β) and against
  the mean of its exact conditional laws given the drafts (P(τ ≥ k) = Π_{j≤k} a_j).
* **sb.rollback, sb.speedup** (info): the pipeline model of docs/sb.md replayed along each
  captured text. A trace gives, at every position t of the target's own text, β_t = Σ min(p_t,
  q_t) (exact), the draft's confidence (top-1 of q_t, from the slice) and the slice of p_t and
  q_t, from which a branch point's survival with k top-k branches matched against the
  target's draw is p_t(TopK(q_t)). A round draws acceptances Bernoulli(β) position by position
  along the text (the "trace-exact" reading of validate.replay: the text does not move when a
  correction replaces a token); time: the measured one-token target and draft calls of the
  capture, c = t_T/t_q, and the run's measured target-call profile t_T(n). Methods: SpS,
  PEARL, and SpecBranch with the pure confidence threshold (ε = 0.3, k_max = 4): H-RAD needs
  the target's hidden states, which the capture does not store.
* **sb.hrad** (info): what a capture needs for H-RAD on real logits (docs/sb.md, "Real logits").
"""
from __future__ import annotations

import numpy as np

from spectheory.checks import check_level
from spectheory.closed_forms import sb as cf
from spectheory.judge import stats

#: replay settings
GAMMAS = (2, 4, 6)
K_MAX, EPS = 4, 0.3
REPLICATES = 64
#: what H-RAD would need captured (per position, float16)
HRAD_FIELDS = ("hidden_last_k: (T, K, d) float16 — the target's hidden states of its last K layers at the "
               "position before t (K = 4 in the paper)",
               "next_embedding: (T, d) float16 — the input embedding of the token at position t")


def _measured_costs(run):
    """(c = median one-token target call / median draft call, profile t_T(n)/t_q for n = 1..7 or None)."""
    tt = np.concatenate([t.target_call_s for t in run.traces if t.target_call_s is not None]) if run.traces else []
    td = np.concatenate([t.draft_call_s for t in run.traces if t.draft_call_s is not None]) if run.traces else []
    tt, td = np.asarray(tt, dtype=float), np.asarray(td, dtype=float)
    tt, td = tt[np.isfinite(tt)], td[np.isfinite(td)]
    if tt.size == 0 or td.size == 0 or np.median(td) <= 0:
        return None, None
    tq = float(np.median(td))
    c = float(np.median(tt)) / tq
    prof = {}
    for runs in run.sd.values():
        for r in runs:
            for k, s in zip(np.asarray(r.target_call_k), np.asarray(r.target_call_s)):
                if np.isfinite(s):
                    prof.setdefault(int(k), []).append(float(s))
    profile = None
    if prof:
        ns = np.arange(1, max(GAMMAS) + 2)
        known = sorted(prof)
        med = np.array([np.median(prof[k]) for k in known]) / tq
        profile = np.interp(ns, known, med)
        profile = np.maximum(profile, c)  # never cheaper than a one-token call
        profile[0] = c
    return c, profile


def _trace_arrays(t):
    """(β_t, draft confidence, survival of k top-k branches for k = 1..K_MAX) along one trace."""
    beta = np.asarray(t.stats["beta"], dtype=float)
    sq = np.asarray(t.slice_q, dtype=float)
    sp = np.asarray(t.slice_p, dtype=float)
    conf = sq.max(axis=1)
    order = np.argsort(-sq, axis=1, kind="stable")
    surv = np.cumsum(np.take_along_axis(sp, order[:, :K_MAX], axis=1), axis=1)
    return beta, conf, surv


def _replay(method: str, beta, conf, surv, gamma: int, cost, rng) -> np.ndarray:
    """One replay of ``method`` along a text: sums (time, emitted, accepted, rolled back)."""
    T = beta.size
    t, m = 0, 0
    time = emitted = acc = rb = 0.0
    while t < T:
        if method == "sps":
            j = 0
            while j < gamma and t + j < T and rng.random() < beta[t + j]:
                j += 1
            time += gamma + cost[gamma]
            n = min(j + 1, T - t)
            emitted += n
            acc += j
            rb += gamma - j
            t += n
            continue
        # PEARL / SpecBranch round: block of m submitted tokens, then the branch point
        time += max(cost[m], gamma)
        j = 0
        while j < m and t + j < T and rng.random() < beta[t + j]:
            j += 1
        if j < m:  # rejection inside the block
            emitted += j + 1
            acc += j
            rb += (m - j) + gamma
            t += j + 1
            m = 0
            continue
        b = t + m
        if b >= T:
            emitted += T - t
            acc += T - t
            break
        if method == "specbranch":
            k = max(1, int(np.floor(K_MAX * (1.0 - conf[b]) + 1e-12)))
            ok = rng.random() < surv[b, k - 1]
        else:
            ok = rng.random() < beta[b]
        emitted += m + 1
        acc += m + (1 if ok else 0)
        if not ok:
            rb += gamma
            m = 0
        elif method == "specbranch":
            m = 0
            while m < gamma - 1 and b + 1 + m < T and conf[b + 1 + m] >= EPS:
                m += 1
        else:
            m = gamma - 1
        t = b + 1
    return np.array([time, emitted, acc, rb])


def _rates(sums: np.ndarray, c_ar: float):
    """Per-replicate (speedup over AR, rollback rate): ratio estimates and their standard errors."""
    sp = c_ar * sums[:, 1] / sums[:, 0]
    rbr = sums[:, 3] / (sums[:, 2] + sums[:, 3])
    return (float(sp.mean()), float(sp.std(ddof=1) / np.sqrt(sp.size)),
            float(rbr.mean()), float(rbr.std(ddof=1) / np.sqrt(rbr.size)))


def logits_evidence(run, alpha: float = 1e-3) -> dict:
    check_level(alpha)
    out = {"sb.trunc_geom": [], "sb.rollback": [], "sb.speedup": [], "sb.hrad": []}
    traces = list(run.traces)
    alpha_hat = float(np.concatenate([t.stats["beta"] for t in traces]).mean()) if traces else None
    # sb.trunc_geom: real SD iterations
    for g, runs in sorted(run.sd.items()):
        tau = np.concatenate([r.tau for r in runs]).astype(int)
        hist = np.bincount(tau, minlength=g + 1)[: g + 1] / max(1, tau.size)
        cond = np.zeros(g + 1)
        for r in runs:
            a = np.nan_to_num(np.asarray(r.accept_prob, dtype=float)[:, :g], nan=0.0)
            surv = np.cumprod(np.hstack([np.ones((a.shape[0], 1)), a]), axis=1)   # P(τ ≥ k)
            cond += (surv[:, :g + 1] - np.hstack([surv[:, 1:g + 1], np.zeros((a.shape[0], 1))])).sum(axis=0)
        cond /= max(1, tau.size)
        if alpha_hat is not None:
            e = stats.info("logits", f"real SD γ={g} ({tau.size} iterations)", 0.0,
                           float(0.5 * np.abs(hist - cf.trunc_geom_pmf(alpha_hat, g)).sum()),
                           test="TV(observed law of τ, truncated geometric at α̂ = mean β of the captured text)",
                           note=f"α̂ = {alpha_hat:.4f}; TV to the mean conditional law given the drafts: "
                                f"{0.5 * np.abs(hist - cond).sum():.4f}", n=int(tau.size))
            e.part = "markov"
            out["sb.trunc_geom"].append(e)
    # sb.rollback, sb.speedup: trace replay of the pipeline model
    c, profile = _measured_costs(run)
    if not traces or c is None:
        return {k: v for k, v in out.items() if v}
    arrays = [_trace_arrays(t) for t in traces]
    rng = np.random.default_rng(20261125)
    for label_cost, cost_of in (("flat c", lambda g: np.full(g + 1, c)),
                                ("measured t_T(n)", (lambda g: profile[: g + 1]) if profile is not None else None)):
        if cost_of is None:
            continue
        for g in GAMMAS:
            cost = cost_of(g)
            res = {}
            for meth in ("sps", "pearl", "specbranch"):
                sums = np.zeros((REPLICATES, 4))
                for r in range(REPLICATES):
                    for beta, conf, surv in arrays:
                        sums[r] += _replay(meth, beta, conf, surv, g, cost, rng)
                res[meth] = _rates(sums, cost[0])
            where = f"trace replay γ={g}, {label_cost}, c={c:.2f}, α̂={alpha_hat:.3f}, {len(traces)} texts"
            note = ("SpecBranch with the pure confidence threshold (ε = 0.3, k_max = 4; H-RAD needs hidden states); "
                    + ", ".join(f"{m}: speedup {v[0]:.3f} ± {v[1]:.3f}, rollback {v[2]:.3f} ± {v[3]:.3f}"
                                for m, v in res.items()))
            for part, lo, hi in (("weak.sb-below-sps", "specbranch", "sps"), ("weak.sps-below-pearl", "sps", "pearl")):
                e = stats.info("logits", where, res[lo][2], res[hi][2],
                               test=f"rollback rate: {lo} (claimed column) vs {hi} (measured column)", note=note,
                               n=REPLICATES)
                e.part = part
                out["sb.rollback"].append(e)
            for part, hi, lo in (("sb-ge-pearl", "specbranch", "pearl"), ("pearl-ge-sps", "pearl", "sps")):
                e = stats.info("logits", where, res[lo][0], res[hi][0],
                               test=f"speedup over AR: {lo} (claimed column) vs {hi} (measured column)", note=note,
                               n=REPLICATES)
                e.part = part
                out["sb.speedup"].append(e)
    e = stats.info("logits", "H-RAD on real logits", 0.0, 0.0,
                   test="not replayed: the capture stores no hidden states",
                   note="needs opt-in capture fields " + "; ".join(HRAD_FIELDS))
    e.part = "effect"
    out["sb.hrad"].append(e)
    return {k: v for k, v in out.items() if v}
