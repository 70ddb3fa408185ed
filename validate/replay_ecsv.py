"""ECSV's falsification harness and drafting-model vote on real logits (claims ``ecsv.falsification``,
``ecsv.majority``), from the compact traces of a ``spectheory validate`` run.

Source: "Error-Correcting Speculative Decoding via Branch Voting" (ECSV), anonymous manuscript
under revision, 2026. ``p`` target (the verifier), ``q`` draft (the drafter), ``B`` branches of
depth ``k``.

What a compact trace allows (``spectheory.trace/2``, see :mod:`spectheory.validate.lumping`): at every
captured position t the verifier's row p_t and the drafter's row q_t **after the captured
prefix**, as a top-256 slice plus the exact leftover masses (lumped into one pseudo-token), and
exact statistics (β_t = Σ min(p_t, q_t), entropies, p and q of the captured token). Not the
rows after any other prefix. Hence:

* **Depth 1 is exact up to the leftover bucket.** B drafts from q_t, fused, compared with the
  verifier's sample y ~ p_t: P(fused = y) = E[p_t(t*)]. A fused leftover pseudo-token is counted
  as a mismatch (a lower bound; the upper bound adds its lumped mass) — in the shipped runs the
  captured token is always inside the slice.
* **Depth k is teacher-forced.** Branch token j is drawn from q_{t+j} — the row after the
  *captured* prefix, not after the branch's own — and the fused draft is scored against
  p_{t+j}: E[τ] ≈ E[Σ_j Π_{i≤j} p_{t+i}(t*_i)]. This is the same approximation the SD replay
  makes for SD-1 (E[τ] = Σ_j Π_{i<j} β_{t+i}, exact β, :mod:`spectheory.validate.replay`); the two are
  compared in the same contexts. Under teacher forcing every branch sees the same rows, so the
  entropy signal cannot separate branches (ECSV-lite's weights reduce to agreement).
* **Cross-entropy to p** under matching verification is the verifier's own text: equal for SD-1
  and every ECSV variant (both lossless), so the perplexity half of rule 1 ("improve both") ties
  by construction and is not graded (a verdict that cannot go the other way is no evidence); what
  the traces measure, and :func:`rule1_evidence` grades, is the **acceptance-length half**, per
  configuration and prompt set (the plan's datasets), at the accepted-length tolerance
  :data:`~spectheory.validate.power.TOLERANCE_TAU` (:func:`length_decisions`).
* **The lossy reading** (accept with min(1, p/q̄)) at depth 1: its output law o_t against p_t on
  the lumped pair; TV can only shrink under lumping (data processing), so the reported value is
  a **lower bound** on the true TV.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from spectheory.checks import check_int, check_level, check_real
from spectheory.judge import stats
from spectheory.judge.stats import POWER
from spectheory.judge.evidence import Evidence
from spectheory.montecarlo.ecsv import rule1_decision
from .power import TOLERANCE_TAU, control_row

DEFAULT_BS = (2, 4, 8)
DEFAULT_KS = (2, 4, 8)
N_MC = 48
#: windows fused at once (memory only: the replay's numbers do not depend on it)
WINDOW_BLOCK = 2048
LOG_FLOOR = float(np.log(1e-300))


@dataclass(frozen=True)
class Variant:
    """A fusion method as replayed on traces: ``gamma`` on agreement (+ spot feature), ``R`` spot checks."""

    name: str
    gamma: float = 0.0
    R: int = 0
    a_spot: float = 1.0


#: the replayed variants: the unweighted vote (= ECSV-lite as tuned, γ = 0), ECSV-lite at γ = 1,
#: ECSV-spot(R = 1, 2) at the tuned γ = 4, α_spot = 4
VARIANTS = (Variant("Vote-unif"), Variant("ECSV-lite(γ=1)", gamma=1.0), Variant("ECSV-spot(R=1)", 4.0, 1, 4.0),
            Variant("ECSV-spot(R=2)", 4.0, 2, 4.0))


def _captured_index(trace) -> np.ndarray:
    """Index of each captured token in the lumped space (slice position, or k = leftover)."""
    hit = trace.slice_ids == trace.tokens[:, None]
    return np.where(hit.any(axis=1), hit.argmax(axis=1), trace.k)


def _draw(Q: np.ndarray, n: int, rng) -> np.ndarray:
    """(rows, n) lumped outcome indices drawn from each row of Q."""
    cdf = np.cumsum(Q, axis=1)
    cdf /= cdf[:, -1:]
    u = rng.random((Q.shape[0], n))
    out = np.empty(u.shape, dtype=np.int64)
    for r in range(Q.shape[0]):
        out[r] = np.minimum(np.searchsorted(cdf[r], u[r], side="right"), Q.shape[1] - 1)
    return out


def fuse_shared_rows(tok: np.ndarray, Q: np.ndarray, P: np.ndarray, v: Variant) -> np.ndarray:
    """Fused drafts (W, n, d) from branch tokens ``tok`` (W, n, B, d): n draws of B branches per
    window, every branch of window w sharing, per position, the drafter row Q[w] (d, K) and the
    verifier row P[w] (d, K) (teacher forcing). Weights exp(γ·agreement) (the entropy signal is
    the same for every branch here); spot checks at the R most disagreeing positions add
    γ·α_spot·(log P(t̂) − log P(second)); ties by the larger q, then the smaller index."""
    W, n, B, d = tok.shape
    eq = tok[:, :, :, None, :] == tok[:, :, None, :, :]               # (W, n, B, B, d)
    count = eq.sum(axis=3)                                           # (W, n, B, d)
    agr = (count - 1) / (B - 1) if B > 1 else np.zeros(count.shape)
    r = v.gamma * agr
    wi = np.arange(W)[:, None, None, None]
    ji = np.arange(d)[None, None, None, :]
    if v.R:
        D = 1.0 - count.max(axis=2) / B                              # (W, n, d)
        order = np.argsort(-D, axis=2, kind="stable")[:, :, :min(v.R, d)]
        spot = np.zeros((W, n, d), dtype=bool)
        np.put_along_axis(spot, order, True, axis=2)
        with np.errstate(divide="ignore"):
            lp = np.maximum(np.log(P[wi, ji, tok]), LOG_FLOOR)        # (W, n, B, d)
            ls = np.maximum(np.log(np.sort(P, axis=2)[:, :, -2]), LOG_FLOOR)   # (W, d)
        r = r + v.gamma * v.a_spot * (lp - ls[:, None, None, :]) * spot[:, :, None, :]
    w = np.exp(r - r.max(axis=2, keepdims=True))                      # (W, n, B, d)
    score = (eq * w[:, :, None, :, :]).sum(axis=3)                    # (W, n, B, d): weight on branch b's token
    qtok = Q[wi, ji, tok]
    best = np.zeros((W, n, d), dtype=np.int64)
    sb = score[:, :, 0]
    qb = qtok[:, :, 0]
    tb = tok[:, :, 0]
    for b in range(1, B):
        s_, q_, t_ = score[:, :, b], qtok[:, :, b], tok[:, :, b]
        tol = 1e-9 * np.maximum(1.0, np.abs(sb))
        better = (s_ > sb + tol) | ((np.abs(s_ - sb) <= tol) & ((q_ > qb) | ((q_ == qb) & (t_ < tb))))
        best = np.where(better, b, best)
        sb, qb, tb = np.where(better, s_, sb), np.where(better, q_, qb), np.where(better, t_, tb)
    return tb


def matched(P: np.ndarray, fused: np.ndarray, leftover: int) -> np.ndarray:
    """The verifier's probability of each fused token (``P`` rows aligned with ``fused``); a fused
    leftover pseudo-token (index ``leftover``) counts as a miss: 0, a lower bound."""
    pf = np.take_along_axis(P, fused[..., None], axis=-1)[..., 0]
    return np.where(fused == leftover, 0.0, pf)


def sd1_accepted(beta: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """SD-1's E[τ] per window along the text: Σ_{j=1}^{k} Π_{i<j} β_{t+i} (β exact, no bonus)."""
    return np.cumprod(beta[pos], axis=1).sum(axis=1)


def sd1_k1_accepted(beta: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """A broken SD-1 for rule 1's negative control: replayed at draft length 1 whatever the
    window's k (the draft length ignored): β_t."""
    return sd1_accepted(beta, pos[:, :1])


@dataclass(frozen=True)
class ECSVReplay:
    """Per (variant, B, k): the mean accepted length along the text (teacher-forced) for ECSV
    (matching verification) and SD-1 (β replay), with batch standard errors; per B the depth-1
    vote match probability against one draft's; the lossy reading's depth-1 TV lower bound."""

    rows: list
    drafting: list
    lossy: list
    n_windows: dict
    context: str
    sets: tuple = ()
    positions: int = 0


def replay(run, *, Bs=DEFAULT_BS, ks=DEFAULT_KS, variants=VARIANTS, n_mc: int = N_MC, seed: int = 0) -> ECSVReplay | None:
    """Run the replay on every trace of ``run`` (None when it has none)."""
    from .lumping import pooled, run_context
    pool = pooled(run)
    if pool is None:
        return None
    n_mc = check_int(n_mc, "n_mc", min=2)
    rng = np.random.default_rng(seed)
    P, Q = pool.P, pool.Q
    st = pool.stats
    idx = np.concatenate([_captured_index(t) for t in run.traces])
    beta = st["beta"]
    rows, drafting, lossy, nwin = [], [], [], {}
    sets = sorted(set(pool.categories))
    for k in ks:
        k = check_int(k, "k", min=1)
        starts = np.concatenate([np.arange(a, b - k + 1) for a, b in pool.bounds if b - a >= k])
        if starts.size == 0:
            continue
        nwin[k] = int(starts.size)
        pos = starts[:, None] + np.arange(k)                          # (W, k)
        # SD-1: E[τ] = Σ_j Π_{i<j+1} β (rejection sampling against its own q), exact β
        sd1 = sd1_accepted(beta, pos)
        sd1_k1 = sd1_k1_accepted(beta, pos)                            # the control's broken baseline
        Qw, Pw = Q[pos], P[pos]                                       # (W, k, K)
        for B in Bs:
            B = check_int(B, "B", min=1)
            # branch tokens: (W, n_mc, B, k), token j ~ Q[t + j]
            tok = np.empty((starts.size, n_mc, B, k), dtype=np.int64)
            for j in range(k):
                tok[:, :, :, j] = _draw(Q[pos[:, j]], n_mc * B, rng).reshape(starts.size, n_mc, B)
            for v in variants:
                # fused in blocks of windows: the same numbers, with the (W, n, B, B, k) temporaries
                # bounded (a run of several hundred texts would otherwise hold gigabytes at once)
                e_tau = np.empty(starts.size)
                for a in range(0, starts.size, WINDOW_BLOCK):
                    b = slice(a, a + WINDOW_BLOCK)
                    fused = fuse_shared_rows(tok[b], Qw[b], Pw[b], v)    # (w, n, k)
                    pf = matched(np.broadcast_to(Pw[b][:, None], fused.shape + (Pw.shape[-1],)), fused,
                                 Q.shape[1] - 1)
                    e_tau[b] = np.cumprod(pf, axis=2).sum(axis=2).mean(axis=1)
                diff = e_tau - sd1
                se = _batch_se(diff, pool.bounds, starts)
                rows.append({"variant": v.name, "B": B, "k": k, "ecsv": float(e_tau.mean()), "sd1": float(sd1.mean()),
                             "diff": float(diff.mean()), "se": se, "windows": int(starts.size),
                             "sets": _per_set(diff, e_tau - sd1_k1, pool, starts, sets)})
    # depth 1: the drafting-model vote, exact up to the leftover bucket
    single = (P * Q)[:, :-1].sum(axis=1)
    single_hi = single + P[:, -1] * np.minimum(Q[:, -1], _min_slice_mass(pool))
    for B in (3, 5):
        tok = _draw(Q, n_mc * B, rng).reshape(pool.N, n_mc, B, 1)
        fused = fuse_shared_rows(tok, Q[:, None], P[:, None], VARIANTS[0])[:, :, 0]     # (N, n)
        pv = matched(np.broadcast_to(P[:, None], fused.shape + (P.shape[-1],)), fused, Q.shape[1] - 1).mean(axis=1)
        d = pv - single_hi
        se = _batch_se(d, pool.bounds, np.arange(pool.N))
        # the negative control: a "fusion" that keeps the first branch and ignores the vote (one draft)
        p1 = matched(np.broadcast_to(P[:, None], tok.shape[:2] + (P.shape[-1],)), tok[:, :, 0, 0],
                     Q.shape[1] - 1).mean(axis=1)
        d1 = p1 - single_hi
        drafting.append({"B": B, "vote": float(pv.mean()), "single": float(single.mean()),
                         "single_hi": float(single_hi.mean()), "diff": float(d.mean()), "se": se, "n": int(pool.N),
                         "first": float(p1.mean()), "first_diff": float(d1.mean()),
                         "first_se": _batch_se(d1, pool.bounds, np.arange(pool.N))})
        # the lossy reading at depth 1: o = F min(1, p/q) + R · norm(max(p − q, 0)), F the fused law
        F = np.zeros_like(P)
        np.add.at(F, (np.repeat(np.arange(pool.N), n_mc), fused.ravel()), 1.0 / n_mc)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(Q > 0, np.minimum(1.0, P / np.where(Q > 0, Q, 1.0)), 1.0)
        res = np.maximum(P - Q, 0.0)
        rs = res.sum(axis=1, keepdims=True)
        res = np.where(rs > 0, res / np.where(rs > 0, rs, 1.0), P)
        o = F * a + (1.0 - (F * a).sum(axis=1, keepdims=True)) * res
        tv = 0.5 * np.abs(o - P).sum(axis=1)
        ce_o = -(o * np.log(np.where(P > 0, P, 1.0))).sum(axis=1)
        lossy.append({"B": B, "tv_lower": float(tv.mean()), "ce_lossy": float(ce_o.mean()),
                      "entropy_p": float(st["entropy_p"].mean()), "n_mc": n_mc})
    return ECSVReplay(rows, drafting, lossy, nwin, run_context(run, pool), tuple(sets), int(pool.N))


def _per_set(diff: np.ndarray, diff_k1: np.ndarray, pool, starts: np.ndarray, sets) -> dict:
    """Per prompt set (the plan's datasets): mean ECSV − SD-1 accepted length over the windows
    starting in that set's traces, its batch standard error and window count; and the same for the
    negative control whose SD-1 is replayed at draft length 1."""
    out = {}
    for cat in sets:
        bounds = [b for b, c in zip(pool.bounds, pool.categories) if c == cat]
        sel = np.zeros(starts.size, dtype=bool)
        for a, b in bounds:
            sel |= (starts >= a) & (starts < b)
        if not sel.any():
            continue
        out[cat] = {"diff": float(diff[sel].mean()), "se": _batch_se(diff[sel], bounds, starts[sel]),
                    "windows": int(sel.sum()), "diff_k1": float(diff_k1[sel].mean()),
                    "se_k1": _batch_se(diff_k1[sel], bounds, starts[sel])}
    return out


#: the plan's rule 1 needs an improvement "on ≥2 datasets"; on real traces a dataset is a prompt set
MIN_DATASETS = 2


def length_decisions(cells: dict, alpha: float, tolerance: float, power: float = POWER,
                     min_datasets: int = MIN_DATASETS) -> dict:
    """Rule 1 of the falsification plan on its acceptance-length half, per configuration.

    ``cells``: ``{config: {dataset: (d, se)}}``, d the mean of ECSV's accepted length minus SD-1's
    and se its standard error. Each (configuration, dataset) is one one-sided z-test at level
    ``alpha`` / (number of cells) (Bonferroni): ``above`` (ECSV longer, z > z_c), ``below`` (shorter,
    z < −z_c), ``no gain`` (neither, though the test would see a gain of ``tolerance`` with
    probability ``power``: (z_c + z_power)·se ≤ tolerance) or ``open``. A configuration *survives*
    with ≥ ``min_datasets`` datasets above, is *rejected* when fewer than ``min_datasets`` can still
    be above (above or open), else *undetermined* (:func:`spectheory.montecarlo.ecsv.rule1_decision`, the
    simulation's rule).
    Outcome: ``pass`` when some configuration survives, ``fail`` when every one is rejected,
    ``underpowered`` otherwise, with ``factor``: the sample, in multiples of the one had, at which
    every open cell's test reaches the power (1 when none is open)."""
    alpha = check_level(alpha)
    m = sum(1 for c in cells.values() for (_, se) in c.values() if np.isfinite(se) and se > 0)
    zc = float(_st.norm.isf(alpha / max(1, m)))
    zp = float(_st.norm.ppf(power))
    status, configs, factor = {}, {}, 1.0
    for cfg, per in cells.items():
        st_ = {}
        for ds, (d, se) in per.items():
            if not (np.isfinite(se) and se > 0):
                st_[ds] = "open"            # too few windows for a standard error
                factor = np.inf
                continue
            z = d / se
            st_[ds] = ("above" if z > zc else "below" if z < -zc else
                       "no gain" if (zc + zp) * se <= tolerance else "open")
            if st_[ds] == "open":
                factor = max(factor, ((zc + zp) * se / tolerance) ** 2)
        n_above = sum(v == "above" for v in st_.values())
        n_possible = sum(v in ("above", "open") for v in st_.values())
        configs[cfg] = rule1_decision(n_above, n_possible, min_datasets)
        status[cfg] = st_
    vals = list(configs.values())
    if len({ds for per in cells.values() for ds in per}) < min_datasets:
        outcome = "underpowered"        # the rule needs min_datasets datasets: it cannot be decided
    elif "survives" in vals:
        outcome = "pass"
    elif vals and all(v == "rejected" for v in vals):
        outcome = "fail"
    else:
        outcome = "underpowered"
    return {"outcome": outcome, "configs": configs, "cells": status, "z_crit": zc, "z_power": zp,
            "factor": factor, "n_tests": m}


def _min_slice_mass(pool) -> np.ndarray:
    """Per position the smallest p + q in the slice: every leftover token has p + q at most this."""
    return (pool.slice_p + pool.slice_q).min(axis=1)


def _batch_se(x: np.ndarray, bounds, starts: np.ndarray, size: int = 8) -> float:
    """Standard error of the mean of ``x`` (one value per start) from batches of ``size``
    consecutive starts within each trace (neighbouring windows overlap)."""
    means = []
    for a, b in bounds:
        sel = x[(starts >= a) & (starts < b)]
        for i in range(0, sel.size - size + 1, size):
            means.append(sel[i:i + size].mean())
    m = np.asarray(means)
    if m.size < 2:
        return float("nan")
    return float(m.std(ddof=1) / np.sqrt(m.size))


def _tagged(ev: Evidence, part: str) -> Evidence:
    ev.part = part
    return ev


RULE1_TEST = ("rule 1 of the plan (\"if ECSV fails to improve both (i) perplexity and (ii) acceptance length over "
              "SD-1 on ≥2 datasets, reject\"), its acceptance-length half: per configuration (variant, B, k) and "
              "prompt set, a one-sided z-test of ECSV's accepted length against SD-1's (Bonferroni over the cells, "
              "batch se over windows); a configuration survives with ≥2 sets significantly longer and is rejected "
              "when fewer than 2 can still be (significantly shorter, or no gain though a gain of the tolerance "
              "would be seen at power 0.9). Perplexity is not graded: under matching verification both emit the "
              "verifier's own text, so it ties by construction")


#: where each row of cells reads its (d, se): the subject, or a control's broken SD-1 baseline
_CELL = {"subject": lambda c: (c["diff"], c["se"]), "k1": lambda c: (c["diff_k1"], c["se_k1"]),
         "bonus": lambda c: (c["diff"] - 1.0, c["se"])}


def _cells(rep: ECSVReplay, which: str) -> dict:
    """``{(variant, B, k): {set: (d, se)}}`` of the subject (``which`` = "subject") or of a control:
    "k1" (SD-1 replayed at draft length 1: ECSV must look longer) or "bonus" (SD-1 counted with its
    bonus token, τ + 1: ECSV must look shorter)."""
    cell = _CELL[which]
    return {(r["variant"], r["B"], r["k"]): {ds: cell(c) for ds, c in r["sets"].items()} for r in rep.rows}


def rule1_evidence(rep: ECSVReplay, alpha: float, tolerance: float = TOLERANCE_TAU) -> list[Evidence]:
    """The graded row of ``ecsv.falsification`` (part rule1) on real traces and its two negative
    controls (each must be decided the other way from a broken SD-1 baseline)."""
    out = []
    subject = _cells(rep, "subject")
    dec = length_decisions(subject, alpha, tolerance)
    surv = [c for c, v in dec["configs"].items() if v == "survives"]
    und = [c for c, v in dec["configs"].items() if v == "undetermined"]
    counts = {k: sum(v == k for v in dec["configs"].values()) for k in ("survives", "rejected", "undetermined")}
    cells = [(cfg, ds, d, se) for cfg, per in subject.items() for ds, (d, se) in per.items()]
    best = max(cells, key=lambda c: c[2] / c[3] if np.isfinite(c[3]) and c[3] > 0 else -np.inf)
    n = rep.positions
    det = None
    if dec["outcome"] != "pass":
        # the deviation the least powerful cell that the verdict rests on sees at power 0.9
        det = float(np.sqrt(dec["factor"]) * tolerance)
    z_best = best[2] / best[3] if np.isfinite(best[3]) and best[3] > 0 else 0.0
    ev = Evidence(
        "logits", "real traces, teacher-forced harness, matching verification", 1.0, float(len(surv)), n=n,
        alpha=alpha, p_value=float(_st.norm.sf(z_best)), power=POWER, detectable=det, tolerance=tolerance,
        test=RULE1_TEST, outcome=dec["outcome"], part="rule1",
        note=f"{rep.context}; configurations: {counts['survives']} survive, {counts['rejected']} rejected, "
             f"{counts['undetermined']} undetermined of {len(dec['configs'])}, over {len(rep.sets)} prompt sets "
             f"({', '.join(rep.sets)}); z_c = {dec['z_crit']:.3f} ({dec['n_tests']} cells); most favourable cell: "
             f"{best[0][0]} B={best[0][1]} k={best[0][2]} on {best[1]}: {best[2]:+.4f} ± {best[3]:.4f} tokens"
             + (f"; surviving: {', '.join(f'{v} B={B} k={k}' for v, B, k in surv[:4])}" if surv else "")
             + (f"; undetermined: {', '.join(f'{v} B={B} k={k}' for v, B, k in und[:4])}" if und else ""))
    out.append(ev)
    for which, must, setup in (
            ("k1", "pass", "SD-1 replayed at draft length 1 whatever k (the draft length ignored): ECSV "
                           "must be found longer"),
            ("bonus", "fail", "SD-1's accepted length counted with its bonus token (τ + 1): ECSV must be "
                              "found shorter")):
        cd = length_decisions(_cells(rep, which), alpha, tolerance)
        e = Evidence("logits", f"real traces, rule 1's length half against a broken SD-1 ({which})", 1.0,
                     float(sum(v == "survives" for v in cd["configs"].values())), n=n, alpha=alpha,
                     test=RULE1_TEST, outcome=cd["outcome"], part="rule1",
                     note=f"must be decided {must}; decided {cd['outcome']}")
        out.append(control_row(e, cd["outcome"] == must, f"the same test with {setup}"))
    return out


def logits_evidence(run, alpha: float = 1e-3, *, Bs=DEFAULT_BS, ks=DEFAULT_KS, n_mc: int = N_MC,
                    seed: int = 0, tolerance: float = TOLERANCE_TAU) -> dict[str, list[Evidence]]:
    """``logits`` evidence for ``ecsv.falsification`` (part rule1; info rows for the lossy reading's
    distance from p) and ``ecsv.majority`` (part drafting)."""
    alpha = check_level(alpha)
    tolerance = check_real(tolerance, "tolerance", lo=0.0, lo_open=True)
    rep = replay(run, Bs=Bs, ks=ks, n_mc=n_mc, seed=seed)
    if rep is None:
        return {}
    out: dict[str, list[Evidence]] = {"ecsv.falsification": [], "ecsv.majority": []}
    zc = float(_st.norm.isf(alpha))     # each depth-1 vote row is its own one-sided test at the per-test level
    out["ecsv.falsification"] += rule1_evidence(rep, alpha, tolerance)
    for r in rep.rows:
        out["ecsv.falsification"].append(_tagged(stats.info(
            "logits", f"real traces {r['variant']} B={r['B']} k={r['k']}", r["sd1"], r["ecsv"], n=r["windows"],
            test="accepted length along the captured text: claimed = SD-1 (Σ_j Π β), measured = ECSV (matching "
                 "verification, teacher-forced rows)", note=f"difference {r['diff']:+.3f} ± {r['se']:.3f}"), "rule1"))
    for r in rep.lossy:
        out["ecsv.falsification"].append(_tagged(stats.info(
            "logits", f"real traces, lossy reading (min(1, p/q̄)), Vote-unif B={r['B']}, depth 1", 0.0, r["tv_lower"],
            test="TV(output law, p) at one position on the lumped pair: a lower bound on the true TV (lumping can "
                 "only shrink TV)", note=f"cross-entropy to p of the lossy output {r['ce_lossy']:.4f} nats vs "
                                     f"H(p) {r['entropy_p']:.4f}; {r['n_mc']} fused drafts per position"), "lossless"))
    for r in rep.drafting:
        for lab, key, dkey, skey in (("plurality", "vote", "diff", "se"), ("first-branch", "first", "first_diff",
                                                                              "first_se")):
            se = r[skey]
            z = r[dkey] / se if se > 0 else 0.0
            outcome = "pass" if z > zc else ("fail" if z < -zc else "underpowered")
            e = Evidence(
                "logits", f"real traces, depth 1, {lab} of B={r['B']} drafts", r["single_hi"], r[key],
                r[key] - zc * se, None, n=r["n"], alpha=alpha, p_value=float(_st.norm.sf(z)),
                test="P(plurality of B drafts = the verifier's sample) > P(one draft = it): claimed = upper end of "
                     "Σ p q (slice exact, leftover bounded), measured = mean p(t*) (Monte Carlo over drafts, leftover "
                     "counted as a miss); one-sided z-test, batch se over positions",
                outcome=outcome, part="drafting",
                note=f"one draft {r['single']:.4f} (≤ {r['single_hi']:.4f}), {lab} {r[key]:.4f}; {rep.context}")
            if key == "first":   # the negative control: the same draws, the vote ignored; it must not pass
                e = control_row(e, outcome != "pass", "the fused token replaced by the first branch's (the vote "
                                                      "ignored: one draft), the same draws and test")
            out["ecsv.majority"].append(e)
    return out
