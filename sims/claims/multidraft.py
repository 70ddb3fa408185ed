"""Claims ``kseq.*``, ``gbv.*``, ``spectr_gbv.*``: multi-draft and block verification (Lin et
al., SpecTr-GBV, 2026; Sun et al., SpecTr, 2023), written in the check shapes of
:mod:`spectheory.sims.shapes`.

Each check takes the rule under test (:class:`spectheory.rules.multidraft.MultiDraftRule`, or a
bound/step function for the closed-form and cost claims), so the broken variants registered as
controls go through exactly the same comparisons. Exact evidence comes from
:mod:`spectheory.exact.multidraft` (all draft outcomes, acceptance uniforms integrated), Monte
Carlo from the Numba kernels of :mod:`spectheory.montecarlo.multidraft`. The measures (module
level, settings in, claimed and measured out) are what the sweeps, the shrinkers and the
counterexamples' one-line calls use.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable

import numpy as np

from spectheory import instances as inst
from spectheory.closed_forms import multidraft as cf
from spectheory.closed_forms import optimum as opt
from spectheory.divergences import total_variation
from spectheory.exact import multidraft as ex
from spectheory.judge import stats
from spectheory.judge.degeneracy import degenerate
from spectheory.montecarlo import multidraft as mc
from spectheory.opcount import count_opcodes
from spectheory.pairs import random_pair
from spectheory.rules import multidraft as R

from ..registry import Choice, Control, Part, Reading, Scope, register
from ..shapes import differs, each, grid, in_scope, label, least_slack, shortfall, shrinker, sweep
from ..slack import PairSpace, exhaustive, search_pairs
from ..shrink import smallest_counterexample

PAPER = "lin2026"  # Lin et al., SpecTr-GBV (sims/papers.py)
KSEQ_PAPER = ("sun2023", "lin2026")  # SpecTr's K-SEQ as summarised in Lin et al. Sec. 3.2

#: small instances for exact enumeration (edge cases: p = q, disjoint supports, V = 1, top-k draft)
EXACT = ("iid-V4-random", "markov1-V3-mix0.4", "markov1-V4-weak", "markov1-V4-topk2",
         "iid-V3-equal", "iid-V3-disjoint", "iid-V1")
MC_PAIR = "markov1-V3-mix0.4"

CTRL_NO_MODIFY = Control("no-modification", R.BROKEN_NO_MODIFY, R.BROKEN_NO_MODIFY.description)
CTRL_RESIDUAL_P = Control("residual=p", R.BROKEN_RESIDUAL_P, R.BROKEN_RESIDUAL_P.description)
CTRL_POWER_1 = Control("(1-m)^1", R.BROKEN_POWER_1, R.BROKEN_POWER_1.description)
CTRL_ACCEPT_ALL = Control("accept-all", R.BROKEN_ACCEPT_ALL, R.BROKEN_ACCEPT_ALL.description)


def tree0(pair, gamma: int):
    """The block tree of ``pair`` from state 0 (every one-iteration claim starts there)."""
    return cf.block_tree(pair, gamma, 0)


def decode(idx: int, n: int, V: int) -> list:
    """The tokens of block code ``idx`` (first token most significant) of length n."""
    return [int(idx // V ** (n - 1 - j) % V) for j in range(n)]


# --- scope: what an instance must satisfy for a multi-draft claim to speak about it (issue 24) ------

def two_draft_blocks(pair, gamma: int = 1) -> bool:
    """Whether two i.i.d. drafts can differ: the draft puts positive mass on ≥ 2 blocks of length γ
    from state 0 (V = 1, or a draft that is a point mass, cannot)."""
    return int((tree0(pair, gamma).Q[gamma] > 0).sum()) >= 2


def multi_draft_guard(pair, K: int | None = None, gamma: int | None = None, **_) -> str | None:
    """The multi-draft scope: K ≥ 2 drafts (when K is set) that can differ (always)."""
    if K is not None and K < 2:
        return "one draft (K = 1): the multi-draft mechanism is inactive (SpecTr-GBV is GBV there, graded by gbv.*)"
    if not two_draft_blocks(pair, gamma or 1):
        return "the drafts cannot differ: the draft puts all its mass on one block"
    return None


def drafts_can_differ(pair, gamma: int | None = None, **_) -> str | None:
    """The multi-draft scope of claims whose K is a step K → K + 1 or a comparison across K: only
    that K ≥ 2 drafts can differ."""
    return None if two_draft_blocks(pair, gamma or 1) else \
        "the drafts cannot differ: the draft puts all its mass on one block"


MULTI_DRAFT = Scope(
    "K ≥ 2 i.i.d. drafts that can differ (the draft puts positive mass on at least two blocks), on any pair: "
    "the statement is for 'K i.i.d. draft sequences' and 'any prefix'; K = 1 is GBV (gbv.*), V = 1 or a "
    "point-mass draft gives K copies of one draft.", guard=multi_draft_guard)
MULTI_DRAFT_ANY_K = Scope(
    "Any K (K = 1 included, as the base of a comparison across K) with drafts that can differ (the draft puts "
    "positive mass on at least two blocks).", guard=drafts_can_differ)

#: Alg. 1 line 5 as printed ("η < h_ik and x_k^i ∉ H": a sub-block already rejected is skipped without a
#: trial) or with the H test dropped (re-sampled): the paper's text and pseudocode leave it at that
LINE5 = Choice("line5", "as-printed", ("as-printed", "ignore-H"),
               why="Alg. 1 line 5 tests x_k^i ∉ H, the prose says the sampling step is skipped for a block in H; "
                   "'ignore-H' re-samples it (R.BROKEN_IGNORE_H): both readings are run")
#: GBV's acceptance: SpecTr-GBV's Eq. 2-4 at K = 1 (what Remark 5.2's consistency bullet names) or Sec. 3.3's
#: printed α with an unclipped ν (clipped to [0, 1])
GBV_FORM = Choice("gbv_form", "eq2-4-at-K1", ("eq2-4-at-K1", "sec3.3"),
                  why="Sec. 3.3 prints α(x^i) with an unclipped ν_i; Remark 5.2 says Bound(1) 'corresponds exactly "
                      "to GBV', i.e. Eq. 2-4 at K = 1; the two give the same law on every instance checked")


def line5_rule(ctx, rule):
    """SpecTr-GBV read with the line-5 choice in force (any other subject: unchanged)."""
    return R.BROKEN_IGNORE_H if rule is R.SPECTR_GBV and ctx.choice("line5") == "ignore-H" else rule


def gbv_rule(ctx, rule):
    """GBV read with the gbv_form choice in force (any other subject: unchanged)."""
    return R.GBV_SEC33 if rule is R.GBV and ctx.choice("gbv_form") == "sec3.3" else rule


def scoped(ctx, evidence, pair, **settings):
    """Evidence on an instance outside the claim's scope turns into info "outside the claim's scope: ..."
    (issue 24, item 2); in scope it is returned unchanged."""
    out = []
    for e in evidence if isinstance(evidence, list) else [evidence]:
        why = ctx.out_of_scope(pair, part=e.part, **settings)   # the non-degeneracy rule speaks of strict parts
        if why is not None and e.outcome != "info":
            e = ctx.outside(replace(e, note=f"graded: {e.outcome}; {e.note}"), why)
        out.append(e)
    return out if isinstance(evidence, list) else out[0]


# --- shared measures ------------------------------------------------------------------------------

def lossless_tv(pair, rule, gamma: int, K: int = 1, n_tokens: int = 3):
    """(claimed 0, TV between the law of the first ``n_tokens`` emitted tokens and p^n, the worst
    sequence with its p and emitted probability), exact over as many iterations as it takes."""
    d = ex.first_tokens_distribution(pair, gamma, K, n_tokens, rule)
    ref = pair.target.sequence_probs(n_tokens)
    k = int(np.argmax(np.abs(d - ref)))
    return 0.0, float(total_variation(d, ref)), {"sequence": decode(k, n_tokens, pair.V), "p": float(ref[k]),
                                                 "emitted": float(d[k])}


def lossless_worst_sequence(pair, rule, gamma: int, K: int = 1, n_tokens: int = 3):
    """(p(s), P(the first ``n_tokens`` emitted tokens are s)) at the sequence s furthest from p."""
    _, tv, d = lossless_tv(pair, rule, gamma, K, n_tokens)
    return d["p"], d["emitted"], {"sequence": d["sequence"], "n_tokens": n_tokens, "TV": tv,
                                  "what": "P(first N emitted tokens = sequence): claimed p(sequence), measured"}


def _worst_seq_note(pt, c, m, d):
    return f"largest error at sequence {d['sequence']}: p = {d['p']:.6g}, emitted with probability {d['emitted']:.6g}"


def lossless_exact(ctx, rule, points, n_tokens: int = 3):
    """TV of the first N emitted tokens to p^N on every exact instance, worst (γ, K) named (an instance
    outside the claim's scope reported as info)."""
    return each(EXACT, lambda name, pair: scoped(ctx, sweep(
        lambda pt: label(name, γ=pt["gamma"], K=pt["K"], N=n_tokens), [dict(gamma=g, K=K) for g, K in points],
        lambda gamma, K: lossless_tv(pair, rule, gamma, K, n_tokens), grade="distance",
        what="TV(first N emitted tokens, p^N), worst (γ, K)", note=_worst_seq_note, keep=False), pair))


def lossless_info(rule, gamma: int, K: int, reading: str, test: str, tail: str):
    """An alternative reading's TV (info, not graded) on the Monte Carlo pair."""
    _, tv, d = lossless_tv(inst.get(MC_PAIR), rule, gamma, K)
    kw = dict(γ=gamma, K=K, N=3) if K > 1 else dict(γ=gamma, N=3)
    return stats.info("exact", label(MC_PAIR, **kw, reading=reading), 0.0, tv, test=test,
                      note=f"worst sequence {d['sequence']}: p = {d['p']:.6g}, emitted {d['emitted']:.6g}{tail}")


def lossless_mc(ctx, rule, gamma: int, K: int, N: int):
    """Chi-square of the kernel's first N emitted tokens against p^N."""
    pair = inst.get(MC_PAIR)
    n = ctx.size(600_000, 150_000)
    res = mc.simulate(pair, gamma, K, n, N, rule=rule, seed=ctx.rng(MC_PAIR, str(K)))
    return ctx.mc(stats.chisquare_gof(
        label(MC_PAIR, γ=gamma, K=K, N=N), mc.sequence_counts(res.tokens, pair.V), pair.target.sequence_probs(N),
        alpha=ctx.alpha_test, tolerance_w=0.03,
        note=f"{n} independent runs of the Numba kernel (Alg. 3, modification carried), first {N} emitted tokens"))


def tau_samples(ctx, rule, gamma: int, K: int, *seed: str):
    """The kernel's accepted lengths τ, one iteration each from state 0 of the MC pair."""
    n = ctx.size(600_000, 150_000)
    return mc.simulate(inst.get(MC_PAIR), gamma, K, n, 1, rule=rule, seed=ctx.rng(*seed)).tau.astype(float)


def tau_mc(ctx, rule, gamma: int, K: int, tag: str):
    """(mean, se, n, samples) of τ (plain SD, the K-SEQ control with ρ = 1, runs one draft)."""
    K = 1 if rule.algorithm == "kseq" and rule.rho == "one" else K
    x = tau_samples(ctx, rule, gamma, K, tag, str(K))
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)), x.size, x


def tau_mean_test(ctx, rule, gamma: int, K: int, claimed: float, seed: tuple, instance: str, what: str,
                  note: str):
    """Two-sided z-test of the kernel's mean τ against a claimed E[τ]."""
    x = tau_samples(ctx, rule, gamma, K, *seed)
    return ctx.mc(stats.z_test_mean(instance, claimed, x, alpha=ctx.alpha_test, tolerance=0.02, what=what,
                                    note=note.format(n=x.size)))


def lossless_shrinker(K_values, applies=("V", "order", "gamma", "K", "seed"), part=None, scope=None):
    return shrinker(lossless_worst_sequence, fails=lambda c, m: differs(c, m, 1e-12), applies=applies, part=part,
                    V_values=(2, 3), orders=(0, 1), gammas=(1, 2), K_values=K_values, seeds=range(4), scope=scope)


# --- kseq.rho ----------------------------------------------------------------------------------

KSEQ_KS = (1, 2, 3, 4)


def rule_rho(rule, p, q, K: int) -> float:
    """The ρ a K-SEQ rule uses with K drafts alive (the root of the ρ equation, or a broken constant)."""
    return {"one": 1.0, "K": float(K)}.get(rule.rho) or cf.kseq_rho(p, q, K)


def kseq_acceptances(pair, rule, state: int = 0) -> list:
    """The rule's exact P(some of K candidates is accepted) at the first position, in a state, K = 1..4."""
    tree = cf.block_tree(pair, 1, state)
    return [1.0 - ex.tau_distribution(tree, K, rule)[0] for K in KSEQ_KS]


def kseq_at(pair, rule, state: int = 0):
    """Per K = 1..4 in a state: (residual of the ρ equation at the rule's ρ plus ρ's distance from
    [1, K], ρ*β(ρ*) at the root ρ*, the rule's exact acceptance, the rule's ρ)."""
    p, q = pair.target.conditional(state), pair.draft.conditional(state)
    rows = {}
    for K, acc in zip(KSEQ_KS, kseq_acceptances(pair, rule, state)):
        rho, star = rule_rho(rule, p, q, K), cf.kseq_rho(p, q, K)
        b = cf.kseq_beta(p, q, rho)
        resid = abs(1.0 - (1.0 - b) ** K - rho * b) + max(0.0, 1.0 - rho) + max(0.0, rho - K)
        rows[K] = (resid, star * cf.kseq_beta(p, q, star), acc, rho)
    return rows


def rise_steps(pair, accs, state: int = 0):
    """(the steps K → K+1 of the acceptance, which of them start below the cap p(supp q): the
    most any number of drafts can accept, so a step from the cap may be 0)."""
    p, q = pair.target.conditional(state), pair.draft.conditional(state)
    return np.diff(accs), np.array(accs[:-1]) < float(p[q > 0].sum()) - 1e-12


def kseq_rise_slack(pair, rule, state: int = 0) -> float:
    """Least slack of 'the acceptance rises with K' over K = 1..4: the smallest step K → K+1 that
    starts below the cap, or a fall from the cap (1, the largest possible, when there is neither)."""
    steps, below = rise_steps(pair, kseq_acceptances(pair, rule, state), state)
    return float(min(1.0, np.where(below | (steps < 0), steps, 1.0).min()))


def kseq_saturated(pair, **_) -> str | None:
    """kseq.rho's scope guard for its rise in K (the non-degeneracy rule's saturation): degenerate when
    in every context the acceptance already sits at its cap p(supp q) at K = 1 (q ≥ p wherever q > 0:
    p = q, a top-k draft, V = 1, disjoint supports), where no number of drafts can raise it."""
    rows = [(pair.target.conditional(s), pair.draft.conditional(s)) for s in range(pair.n_states)]
    if all(float(np.minimum(p, q).sum()) >= float(p[q > 0].sum()) - 1e-12 for p, q in rows):
        return degenerate("saturation", "K-SEQ's acceptance is at its cap p(supp q) from K = 1 in every context "
                                        "(q ≥ p wherever q > 0): no number of drafts can raise it")
    return None


RHO_K = Choice("rho_k", "retained", ("retained", "initial"),
               why="after a position only the drafts carrying the accepted token go on (Sec. 3.2); the paper does "
                   "not say whether ρ is re-solved for that number ('retained') or kept for the initial K "
                   "('initial', R.KSEQ_RHO_INITIAL, lossy: info row)")


def rho_rule(ctx, rule):
    """K-SEQ read with the rho_k choice in force (any other subject: unchanged)."""
    return R.KSEQ_RHO_INITIAL if rule is R.KSEQ and ctx.choice("rho_k") == "initial" else rule


def check_kseq(ctx, rule):
    rule = rho_rule(ctx, rule)
    ev = []
    for name in EXACT:
        pair = inst.get(name)
        per = {s: kseq_at(pair, rule, s) for s in range(pair.n_states)}
        pts = grid(state=range(pair.n_states), K=KSEQ_KS)
        ev.append(sweep(label(name, K="1..4"), pts, lambda state, K: (0.0, per[state][K][0]), keep=False, part="rho",
                        what="|1 − (1 − β(ρ))^K − ρβ(ρ)| + distance of ρ from [1, K], worst state/K",
                        note=lambda p, c, m, d: f"worst at state {p['state']}, K={p['K']}, "
                                                f"ρ={per[p['state']][p['K']][3]:.12g}"))
        ev.append(sweep(label(name, K="1..4"), pts, lambda state, K: per[state][K][1:3], keep=False,
                        part="acceptance", what="P(some candidate accepted) vs ρβ(ρ), worst state/K",
                        note=lambda p, c, m, d: f"worst at state {p['state']}, K={p['K']}"))
        steps = [rise_steps(pair, [per[s][K][2] for K in KSEQ_KS], s) for s in per]
        bad = sum(int(((st < -1e-12) | (below & (st <= 0.0))).sum()) for st, below in steps)
        with ctx.part("rises"):
            ev.append(in_scope(ctx, pair, stats.exact_equal(
                label(name, K="1..4"), 0.0, float(bad),
                what="number of steps K → K+1 where the acceptance falls, or fails to rise while below its cap "
                     "p(supp q)", note=f"smallest step over states: {min(float(st.min()) for st, _ in steps):+.3g}")))
        flat = sum(int((st <= 1e-12).sum()) for st, _ in steps)
        falls = sum(int((st < -1e-12).sum()) for st, _ in steps)
        strict = stats.exact_equal(label(name, K="1..4"), 0.0, float(flat),
                                   what="number of steps K → K+1 (any state) where the acceptance does not rise strictly",
                                   note=f"smallest step over states: {min(float(st.min()) for st, _ in steps):+.3g}")
        if strict.outcome == "fail" and falls == 0:
            strict.tie = True
            strict.note = ("fails by equality (tie): no step falls; the acceptance stays at its cap p(supp q) (the most "
                           f"any number of drafts can accept) from K = 1 on; {strict.note}")
        ev.append(ctx.part("rises-strictly")(strict))
    if ctx.wants("exact", "rises"):
        ev.append(least_slack(ctx, "rises", lambda: search_pairs(
            kseq_rise_slack, PairSpace(V=3), budget=ctx.size(240, 45), restarts=3, settings={"rule": rule}),
            what="least step of the acceptance in K (below its cap)"))
    with ctx.part("lossless"):
        ev += lossless_exact(ctx, rule, ((1, 2), (2, 2), (2, 3))) if ctx.wants("exact", "lossless") else []
        if rule is R.KSEQ:
            ev.append(lossless_info(R.KSEQ_RHO_INITIAL, 2, 3, "ρ for the initial K",
                                    "TV(first 3 tokens, p^3) if ρ is not re-solved after drafts are dropped",
                                    ": that reading is lossy"))
        if ctx.wants("mc"):
            ev.append(lossless_mc(ctx, rule, 2, 3, 3))
    if ctx.wants("mc"):
        p, q = (inst.get(MC_PAIR).target.conditional(0), inst.get(MC_PAIR).draft.conditional(0))
        star = cf.kseq_rho(p, q, 3)
        n = ctx.size(600_000, 150_000)
        res = mc.simulate(inst.get(MC_PAIR), 1, 3, n, 1, rule=rule, seed=ctx.rng("acc"))
        ev.append(ctx.part("acceptance")(ctx.mc(stats.z_test_mean(
            label(MC_PAIR, K=3, state=0), star * cf.kseq_beta(p, q, star), (res.tau > 0).astype(float),
            alpha=ctx.alpha_test, tolerance=0.01, what="acceptance at the first position", note=f"{n} iterations"))))
    return ev


register(
    id="kseq.rho",
    paper=KSEQ_PAPER, reference="Sun et al. 2023 (K-SEQ) as summarised in Lin et al. 2026 Sec. 3.2 (ρ equation, K-SEQ residual)",
    statement="SpecTr's K-SEQ: ρ ∈ [1, K] solves 1 − (1 − β(ρ))^K = ρβ(ρ), β(ρ) = Σ min(q, p/ρ); "
              "K-SEQ is lossless and its acceptance rises with K.",
    interpretation="ρ solved by brentq on [1, K] (unique root unless supports are disjoint; ρ = 1 "
                   "when K = 1 or β(1) ∈ {0, 1}). After a position, ρ is re-solved for the number of "
                   "drafts still alive (the paper is silent; switch rho_k). 'Rises with K' is read as: never falls, "
                   "and rises strictly while below p(supp q), the most any number of drafts can accept "
                   "(a draft with q ≥ p on its support, such as top-k, is there already at K = 1; p = q too). "
                   "Exact, per state of 7 pairs (p = q, disjoint supports, V = 1, a top-k draft among them), "
                   "K = 1..4: the equation's residual, the engine's acceptance against ρβ(ρ), the law of the "
                   "first 3 emitted tokens over iterations; the rise in K also where it is least, by a seeded "
                   "search over V = 3 pairs. MC: chi-square of the first 3 tokens (γ = 2, K = 3), z-test of the "
                   "first-position acceptance (K = 3).",
    parts=(Part("rho", "The ρ used solves 1 − (1 − β(ρ))^K = ρβ(ρ) with β(ρ) = Σ_x min(q(x), p(x)/ρ), ρ ∈ [1, K].",
                relation="=", modes=("exact",)),
           Part("acceptance", "K-SEQ accepts one of K candidates at a position with probability ρβ(ρ) "
                              "(= 1 − (1 − β(ρ))^K at the root).", relation="="),
           Part("lossless", "K-SEQ emits sequences distributed exactly as p.", relation="law"),
           Part("rises", "K-SEQ's acceptance rises with K: it never falls, and rises strictly while below "
                         "p(supp q).", relation="monotone", modes=("exact",), strict=True),
           Part("rises-strictly", "K-SEQ's acceptance rises strictly at every step K → K + 1, on any pair (literal).",
                relation="monotone", modes=("exact",))),
    readings=(Reading(
        "paper", "K-SEQ's ρ solves the ρ equation, K-SEQ accepts with probability ρβ(ρ), is lossless, and its "
                 "acceptance rises with K (never falls; strictly while below p(supp q), the most any number of "
                 "drafts can accept).", ("rho", "acceptance", "lossless", "rises"), role="principal",
        quote="Sec. 3.2: 'ρ∈[1,K] is a scaling factor determined by solving the equation 1−(1−β(ρ))^K=ρ·β(ρ)'; "
              "'Theoretically, it can be shown that as K increases, the likelihood of accepting a draft token also "
              "increases, which in turn leads to further speedups.'",
        why="Sec. 3.2 is the paper's account of SpecTr's K-SEQ (Sun et al. 2023), a verification for SD, which "
            "preserves the target; 'increases' is read where acceptance can still rise: it is capped at "
            "p(supp q), reached at K = 1 by p = q or a top-k draft (there nothing can increase)"),
              Reading("literal", "K-SEQ's acceptance rises strictly with every added draft, on any pair.",
                      ("rises-strictly",), kind="literal",
                      why="'increases' read as strict everywhere: where the acceptance is at its cap from K = 1 (p = q, "
                          "a top-k draft, V = 1, disjoint supports) it cannot rise, and the steps tie")),
    scope=Scope("Any pair, K = 1..4 (K = 1 is token-level SD); ρ equation and acceptance per state, the law of the "
                "first 3 emitted tokens over iterations. Non-degeneracy (the rise in K): a pair whose acceptance sits "
                "at its cap p(supp q) from K = 1 in every context (q = p, a top-k draft, V = 1, disjoint supports) "
                "cannot rise: saturated, outside the scope of 'rises', its tie reported beside the headline; in a "
                "pair saturated in some contexts only, those contexts' steps may be 0.", guard=kseq_saturated,
                degenerate=("q = p", "saturation")),
    choices=(RHO_K,),
    check=check_kseq, subject=R.KSEQ,
    controls=(Control("rho=1", R.KSEQ_RHO_ONE, R.KSEQ_RHO_ONE.description, parts=("rho", "acceptance", "lossless")),
              Control("rho=K", R.KSEQ_RHO_K, R.KSEQ_RHO_K.description, parts=("rises", "rises-strictly"))),
    mc_tests=2, shrink=lossless_shrinker((2, 3), part="lossless"))


# --- gbv.lossless --------------------------------------------------------------------------------

def check_gbv_lossless(ctx, rule):
    rule = gbv_rule(ctx, rule)
    ev = lossless_exact(ctx, rule, ((1, 1), (2, 1), (3, 1)))
    if rule is R.GBV:
        ev.append(lossless_info(R.GBV_SEC33, 3, 1, "Sec. 3.3 as printed",
                                "TV(first 3 tokens, p^3) of the alternative reading (printed α with unclipped ν, "
                                "plus the modification)",
                                "; not graded: the default reading is the greedy GBV (see docs/multidraft.md)"))
    ev.append(lossless_mc(ctx, rule, 3, 1, 3))
    return ev


register(
    id="gbv.lossless", relation="law",
    paper=PAPER, reference="Lin et al. 2026 Sec. 3.3 (Sun et al. 2024c greedy block verification)",
    statement="Greedy block verification (single draft) with the distribution modification preserves p "
              "over iterations.",
    interpretation="GBV = SpecTr-GBV's Eq. 2-4 and Alg. 2 at K = 1 (the greedy block verification; "
                   "Sec. 3.3's printed α with an unclipped ν is the alternative reading, reported as "
                   "info). Checked on the first 3 emitted tokens over as many iterations as it takes, "
                   "γ = 1..3, exact (TV ≤ 1e-12) and MC (chi-square, γ = 3, first 3 tokens).",
    readings=(Reading(
        "paper", "GBV (one draft) with the distribution modification emits sequences distributed as p, over "
                 "iterations.", ("main",), role="principal",
        quote="Sec. 3.3: 'which ensures distributional consistency within a single iteration. To maintain the same "
              "output distribution across multiple SD iterations, the target distribution is modified at all "
              "unaccepted positions before the next iteration'",
        why="Sec. 3.3 states the property for one iteration and, with the modification, across iterations; the "
            "law of the first emitted tokens over as many iterations as it takes is that statement"),),
    scope=Scope("Any pair (one draft), γ = 1..3."),
    choices=(GBV_FORM,),
    check=check_gbv_lossless, subject=R.GBV, controls=(CTRL_NO_MODIFY, CTRL_RESIDUAL_P),
    mc_tests=1, shrink=lossless_shrinker((1,), applies=("V", "order", "gamma", "seed")))


# --- gbv.optimal ---------------------------------------------------------------------------------

def gbv_rows(pair, rule, gamma: int, lp: bool = True):
    """(Σ_i Σ min(p(x^i), q(x^i)), the rule's exact E[τ] with one draft, token-level SD's E[τ], the
    one-draft optimum over all couplings (LP; None when V^γ > 64 or not asked for))."""
    tree = tree0(pair, gamma)
    return (cf.gbv_optimum(tree), ex.expected_tau(tree, 1, rule), cf.sd_expected_tau(tree),
            opt.lp_optimum(tree, 1) if lp and pair.V ** gamma <= 64 else None)


def gbv_expected_tau(pair, rule, gamma: int):
    """(Σ_i Σ min(p(x^i), q(x^i)), the rule's exact E[τ] with one draft)."""
    return gbv_rows(pair, rule, gamma)[:2]


def gbv_over_sd(pair, rule, gamma: int = 2) -> float:
    """Slack of 'GBV ≥ token-level SD': the rule's exact E[τ] with one draft minus SD's."""
    tree = tree0(pair, gamma)
    return ex.expected_tau(tree, 1, rule) - cf.sd_expected_tau(tree)


def check_gbv_optimal(ctx, rule):
    rule = gbv_rule(ctx, rule)
    ev = []
    for name in EXACT:
        pair = inst.get(name)
        rows = {g: gbv_rows(pair, rule, g, lp=ctx.wants("exact", "optimal")) for g in (1, 2, 3)}
        with_lp = [g for g in rows if rows[g][3] is not None]
        ev.append(sweep(label(name, γ="1..3"), grid(g=rows), lambda g: rows[g][:2], keep=False, part="value",
                        what="E[τ] vs Σ_i Σ min(p(x^i), q(x^i)), worst γ"))
        if with_lp:
            ev.append(sweep(label(name, γ=f"≤{max(with_lp)}"), grid(g=with_lp), lambda g: (rows[g][3], rows[g][1]),
                            keep=False, part="optimal",
                            what="E[τ] vs the one-draft optimum (LP over all couplings, HiGHS), worst γ"))
        ev.append(sweep(lambda pt: label(name, γ=pt["g"]), grid(g=rows), lambda g: (rows[g][2], rows[g][1]),
                        grade="bound", keep=False, part="ge-sd", judge=lambda i, sd, got, n: stats.exact_equal(
                            i, 0.0, min(0.0, got - sd), what="shortfall of E[τ] below token-level SD's (0 if GBV ≥ "
                                                             "SD), worst γ", note=n),
                        note=lambda p, sd, got, d: f"GBV {got:.6g}, SD {sd:.6g}"))
        if rule is R.GBV:
            tree = tree0(pair, 3)
            ev.append(ctx.part("value")(stats.info(
                "exact", label(name, γ=3, reading="Sec. 3.3 as printed"), cf.gbv_optimum(tree),
                ex.expected_tau(tree, 1, R.GBV_SEC33), test="E[τ] of the alternative reading (printed α, unclipped ν) "
                                                            "vs Σ min")))
    if ctx.wants("exact", "ge-sd"):
        ev.append(least_slack(ctx, "ge-sd", lambda: search_pairs(
            gbv_over_sd, PairSpace(V=2, order=1), budget=ctx.size(400, 100), restarts=3, settings={"rule": rule}),
            what="E[τ_GBV] − E[τ_SD] (γ = 2)"))
    if ctx.wants("mc"):
        ev.append(ctx.part("value")(tau_mean_test(ctx, rule, 3, 1, cf.gbv_optimum(tree0(inst.get(MC_PAIR), 3)),
                                                  ("tau",), label(MC_PAIR, γ=3), "accepted length τ",
                                                  "{n} iterations from state 0")))
    return ev


register(
    id="gbv.optimal",
    paper=PAPER, reference="Lin et al. 2026 Sec. 3.3 and Remark 5.2 (consistency)",
    statement="GBV's expected accepted length is Σ_{i=1}^{γ} Σ_{x^i} min(p(x^i), q(x^i)), the optimum "
              "for one draft, and at least token-level SD's.",
    interpretation="Exact E[τ] of one iteration from state 0 of 7 pairs (edge cases among them), γ = 1..3: "
                   "against the sum, against the true one-draft optimum (LP over all couplings of q-blocks and "
                   "p-blocks, HiGHS; V^γ ≤ 64) and against token-level SD's E[τ]. GBV ≥ SD also where it is "
                   "tightest: a seeded search over order-1 V = 2 pairs at γ = 2 (at γ = 1 the two coincide on "
                   "every pair: Σ min(p, q) is SD's acceptance). MC: z-test of the kernel's mean τ (γ = 3).",
    parts=(Part("value", "GBV's E[τ] = Σ_{i=1}^{γ} Σ_{x^i} min(p(x^i), q(x^i)).", relation="="),
           Part("optimal", "That value is the optimum for one draft: no coupling of one q-block with the p-block "
                           "has a larger E[τ].", relation="=", modes=("exact",)),
           Part("ge-sd", "GBV's E[τ] is at least token-level SD's.", relation="ordering", modes=("exact",))),
    readings=(Reading(
        "paper", "GBV's E[τ] is Σ_i Σ min(p(x^i), q(x^i)), no one-draft coupling does better, and so it is at least "
                 "token-level SD's.", ("value", "optimal", "ge-sd"), role="principal",
        quote="Sec. 3.3: 'Theoretically, GBV achieves the highest expected number of accepted tokens within a single "
              "SD iteration among all valid verification algorithms in the single draft setting.'; Remark 5.2: "
              "'When K=1, the bound reduces to the single-draft setting, which corresponds exactly to GBV: "
              "Bound(1)=Σ_τ Σ_{x^τ} min{p(x^τ),q(x^τ)}'",
        why="the value is Remark 5.2's, optimality Sec. 3.3's ('among all valid verification algorithms': every "
            "coupling, the LP), and token-level SD is one of those algorithms"),),
    scope=Scope("Any pair (one draft), one iteration from state 0, γ = 1..3."),
    choices=(GBV_FORM,),
    check=check_gbv_optimal, subject=R.GBV,
    controls=(Control("accept-all", R.BROKEN_ACCEPT_ALL, R.BROKEN_ACCEPT_ALL.description, parts=("value", "optimal")),
              Control("h/2", R.BROKEN_HALF_H, R.BROKEN_HALF_H.description, parts=("ge-sd",))),
    mc_tests=1, shrink=shrinker(gbv_expected_tau, applies=("V", "order", "gamma", "seed"), seeds=range(4),
                                part="value"))


# --- spectr_gbv.lossless ---------------------------------------------------------------------------

def check_sgbv_lossless(ctx, rule):
    rule = line5_rule(ctx, rule)
    ev = lossless_exact(ctx, rule, ((1, 2), (2, 2), (1, 3)))
    for name in ("iid-V3-equal", MC_PAIR):
        tree = tree0(inst.get(name), 2)
        tv, seq, pc, pm = max((ex.one_iteration_tv(tree, K, rule) for K in (2, 3)), key=lambda r: r[0])
        ev.append(stats.exact_distance(label(name, γ=2, K="2,3"), tv,
                                       what="Thm 4.2 in one iteration: TV of O = (t, y, tail from Alg. 2) to p^γ",
                                       note=f"worst sequence {list(seq)}: p = {pc:.6g}, emitted {pm:.6g}"))
    if rule is R.SPECTR_GBV:
        ev.append(lossless_info(R.BROKEN_IGNORE_H, 2, 2, "line 5 without the H test",
                                "TV(first 3 tokens, p^3) of the alternative reading of Alg. 1", "; not lossless either"))
    ev.append(lossless_mc(ctx, rule, 2, 2, 3))
    return ev


register(
    id="spectr_gbv.lossless", relation="law",
    paper=PAPER, reference="Thm 4.2 (Alg. 1 + Alg. 2 = Alg. 3), App. A",
    statement="Alg. 1 + Alg. 2 (Alg. 3) emits sequences distributed as p.",
    interpretation="Alg. 1 as printed: drafts in order, sub-blocks x_k^i for i = τ+1..γ accepted when "
                   "η < h_ik and x_k^i ∉ H (a sub-block already rejected is not re-sampled), break after a "
                   "full block; correction from Eq. 4; Alg. 2's modification carried into the next "
                   "iteration. Exact: first 3 emitted tokens over iterations, (γ, K) ∈ {(1,2), (2,2), "
                   "(1,3)}, and Thm 4.2's one-iteration statement. MC: chi-square (γ = 2, K = 2). Conventions: "
                   "a 0/0 ratio in h is 0 (x/0 is 1); Eq. 4's residual of zero mass falls back to the target's "
                   "row. On p = q that residual is 0/0 while Alg. 1 still rejects (probability 0.231 at K = 2, "
                   "γ = 1), so that one instance's verdict rests on the convention; the claim's does not: it "
                   "fails on every pair of its grid with p ≠ q and full support (5 of 7; the point-mass draft of "
                   "disjoint supports and V = 1 pass, both outside the multi-draft scope: their K drafts cannot "
                   "differ), its smallest counterexample among them.",
    readings=(Reading(
        "paper", "Alg. 1 + Alg. 2 (Alg. 3), with K i.i.d. drafts, emits sequences distributed as the target, over "
                 "iterations (and in one iteration, Thm 4.2's output O).", ("main",), role="principal",
        quote="Thm 4.2: 'SpecTr-GBV preserves the target model distribution. Specifically, for any prefix c, given "
              "conditional distributions p and q from the draft and target models, draft length L, and draft "
              "sequences X^L∼q^{⊕K}(·), the output O=(t^τ,y,x^{L−τ−1}) satisfies: O∼SpecTr-GBV(c,p,q,X^L) ⟹ O∼q(·)' "
              "(the paper's q is our p)",
        why="the theorem states it for any prefix, any pair of conditionals and K i.i.d. drafts; Alg. 3 'functions "
            "as a valid SD method', so the law over iterations is what it promises; Alg. 1 is run as printed"),),
    scope=MULTI_DRAFT, choices=(LINE5,),
    check=check_sgbv_lossless, subject=R.SPECTR_GBV, controls=(CTRL_NO_MODIFY, CTRL_RESIDUAL_P),
    mc_tests=1, shrink=lossless_shrinker((1, 2, 3), scope=MULTI_DRAFT))


# --- spectr_gbv.sub_block -------------------------------------------------------------------------

#: the shrink grid of the one-iteration claims (sub_block, attains): γ ∈ {1, 2}, K = 1..3
ONE_ITERATION = dict(applies=("V", "order", "gamma", "K", "seed"), gammas=(1, 2), K_values=(1, 2, 3), seeds=range(4))


def sub_block(pair, rule, gamma: int, K: int):
    """(A(x^i), P(τ ≥ i, t^i = x^i)) at the block x^i where they differ most (ties: the last)."""
    tree = tree0(pair, gamma)
    acc = ex.prefix_acceptance(tree, K, rule)
    worst = (0.0, None, 0.0, 0.0)
    for i in range(1, tree.gamma + 1):
        a = cf.A(tree.P[i], tree.Q[i], K)
        d = np.abs(acc[i] - a)
        j = int(np.argmax(d))
        if d[j] >= worst[0]:
            worst = (float(d[j]), decode(j, i, pair.V), float(a[j]), float(acc[i][j]))
    return worst[2], worst[3], {"block": worst[1], "what": "A(x^i) claimed, P(τ ≥ i, t^i = x^i) measured"}


def check_sub_block(ctx, rule):
    rule = line5_rule(ctx, rule)
    ev = each(EXACT, lambda name, pair: scoped(ctx, sweep(
        label(name, γ="1,2", K="1..3"), grid(gamma=(1, 2), K=(1, 2, 3)), lambda gamma, K: sub_block(pair, rule, gamma, K),
        what="P(τ ≥ i, t^i = x^i) vs A(x^i), worst block", keep=False,
        note=lambda p, c, m, d: f"worst block x^{len(d['block'])} = {d['block']}"), pair))
    pair = inst.get(MC_PAIR)
    K, g = 3, 2
    n = ctx.size(600_000, 150_000)
    res = mc.simulate(pair, g, K, n, 1, rule=rule, seed=ctx.rng("sub"))
    first = np.where(res.tau >= 1, res.tcode // pair.V ** np.maximum(res.tau - 1, 0), pair.V)
    a1 = cf.A(tree0(pair, g).P[1], tree0(pair, g).Q[1], K)
    ev.append(ctx.mc(stats.chisquare_gof(label(MC_PAIR, γ=g, K=K, i=1), np.bincount(first, minlength=pair.V + 1),
                                         np.append(a1, 1.0 - a1.sum()), alpha=ctx.alpha_test, tolerance_w=0.03,
                                         note="cells: first accepted token x (claimed A(x)) and τ = 0 "
                                              f"(claimed 1 − Σ A); {n} iterations")))
    return ev


register(
    id="spectr_gbv.sub_block", relation="=",
    paper=PAPER, reference="Lemma A.1 (App. A, Eq. 7-12)",
    statement="P(drafts contain x^i and the accepted length of x^i ≥ i) = A(x^i) = p(x^i)[1 − (1 − m(x^i))^K].",
    interpretation="'Accepted length of x^i ≥ i' read as: Alg. 1's final accepted block t has τ ≥ i and "
                   "prefix t^i = x^i (then the drafts contain x^i). Exact for every block, γ ∈ {1, 2}, "
                   "K = 1..3, on 7 pairs; MC: chi-square of the first accepted token (γ = 2, K = 3). It holds "
                   "at K = 1 (SpecTr-GBV is GBV there) and fails for K ≥ 2 on the 5 pairs in scope (disjoint "
                   "supports and V = 1, whose drafts cannot differ, pass: outside the multi-draft scope).",
    readings=(Reading(
        "paper", "In SpecTr-GBV, P(the drafts contain x^i and x^i's acceptance length ≥ i) = A(x^i) for every block "
                 "x^i, i = 1..γ.", ("main",), role="principal",
        quote="Lemma A.1: 'For all i∈[1,L] and X^L, in SpecTr-GBV, we have P(X^L has x^i, τ^{x^i}≥i)=q(x^i)[1−(1−"
              "min{p(x^i)/q(x^i),1})^K], where τ^{x^i} denotes the acceptance length of token block x^i.'",
        why="the lemma is stated for SpecTr-GBV (Alg. 1) and every block; 'acceptance length of x^i ≥ i' is read "
            "as Alg. 1's final block t having τ ≥ i and t^i = x^i, the event its proof sums in Thm 5.3 (E[τ] = "
            "Σ_i Σ_{x^i} P(X^L has x^i, τ^{x^i} ≥ i))"),),
    scope=MULTI_DRAFT, choices=(LINE5,),
    check=check_sub_block, subject=R.SPECTR_GBV, controls=(CTRL_POWER_1,), mc_tests=1,
    shrink=shrinker(sub_block, scope=MULTI_DRAFT, **ONE_ITERATION))


# --- spectr_gbv.upper_bound / attains ----------------------------------------------------------------

def bound_as_printed(tree, K):
    """Lemma 5.1's bound Σ_i Σ_{x^i} A(x^i) (Eq. 5, translated)."""
    return cf.lemma51_bound(tree, K)


def bound_fewer_drafts(tree, K):
    """Broken: the bound for one draft fewer (at K = 2, GBV's one-draft Σ min)."""
    return cf.lemma51_bound(tree, max(1, K - 1))


@dataclass(frozen=True)
class BoundCheck:
    """What spectr_gbv.upper_bound tests: a bound on E[τ] (``bound(tree, K)``) and the coupling the
    paper builds (a rule), which must stay within it."""

    rule: R.MultiDraftRule
    bound: Callable


UPPER = BoundCheck(R.SPECTR_GBV, bound_as_printed)
#: the controls' subjects, module-level so that their least-slack calls name them (spectheory.sims.shrink.expr_of)
UPPER_ACCEPT_ALL = BoundCheck(R.BROKEN_ACCEPT_ALL, bound_as_printed)
UPPER_FEWER_DRAFTS = BoundCheck(R.SPECTR_GBV, bound_fewer_drafts)


def bound_and_tau(pair, rule, gamma: int, K: int, bound=bound_as_printed):
    """(the bound, the rule's exact E[τ] of one iteration from state 0)."""
    tree = tree0(pair, gamma)
    return bound(tree, K), ex.expected_tau(tree, K, rule)


def rule_bound_slack(pair, subject: BoundCheck, gamma: int = 2, K: int = 2) -> float:
    """Slack of 'E[τ] ≤ bound' for the subject's rule: bound − E[τ]."""
    b, e = bound_and_tau(pair, subject.rule, gamma, K, subject.bound)
    return b - e


#: searches of the conditionally independent class (K = 2): (V, order, concentration, seed); at γ = 1
#: the first three are graded one by one and every one enters the least slack (default tier)
CIC_GAMMA1 = ((2, 0, 1.0, 0), (2, 1, 0.7, 12), (3, 0, 1.0, 0)) + tuple((2, o, 0.7, s) for o in (0, 1) for s in range(10))
CIC_GAMMA2 = ((2, 1, 0.7, 12), (2, 0, 0.7, 0))


@lru_cache(maxsize=64)
def cic_best(V: int, order: int, concentration: float, seed: int, gamma: int, grid: int = 12):
    """(the best E[τ] of a conditionally independent coupling of 2 drafts found, its constraint
    violation, the LP optimum over all couplings) for random_pair(V, order, concentration, seed)
    (spectheory.closed_forms.optimum.cic_optimum; cached: it does not depend on the subject)."""
    tree = tree0(random_pair(V, order, concentration, seed=seed), gamma)
    val, arg = opt.cic_optimum(tree, grid=grid, refine=1 if grid < 8 else 2, maxfev=min(80, 8 * grid))
    return val, opt.cic_value(tree, arg["r1"], arg["r2"])[1], opt.lp_optimum(tree, 2)


def cic_slack(V: int, order: int, concentration: float, seed: int, gamma: int = 2, bound=bound_as_printed,
              grid: int = 12) -> float:
    """Slack of Lemma 5.1 against the conditionally independent class: bound(K = 2) − the best CIC E[τ]."""
    return bound(tree0(random_pair(V, order, concentration, seed=seed), gamma), 2) - \
        cic_best(V, order, concentration, seed, gamma, grid)[0]


def check_upper_bound(ctx, subject: BoundCheck):
    ev = []
    with ctx.part("spectr-gbv"):
        for name in EXACT if ctx.wants("exact", "spectr-gbv") else ():
            pair = inst.get(name)
            ev.append(scoped(ctx, sweep(lambda pt: label(name, γ=pt["gamma"], K=pt["K"]), grid(gamma=(1, 2), K=(1, 2, 3)),
                            lambda gamma, K: bound_and_tau(pair, subject.rule, gamma, K, subject.bound), grade="bound",
                            side="le", keep=False, note=lambda p, b, e, d: f"E[τ] = {e:.6g}, bound = {b:.6g}",
                            judge=lambda i, b, e, n: stats.exact_equal(
                                i, 0.0, max(0.0, e - b), note=n,
                                what="excess of E[τ] over Lemma 5.1's bound (0 if within), worst (γ, K)")), pair))
        if ctx.wants("mc"):
            m, se, n, _ = tau_mc(ctx, subject.rule, 2, 3, "ub")
            ev.append(ctx.mc(stats.z_test_bound(
                label(MC_PAIR, γ=2, K=3), subject.bound(tree0(inst.get(MC_PAIR), 2), 3), mean=m, se=se, n=n,
                side="le", alpha=ctx.alpha_test, tolerance=0.02, what="accepted length τ", note=f"{n} iterations")))
    if ctx.wants("exact", "spectr-gbv"):
        ev.append(least_slack(ctx, "spectr-gbv", lambda: search_pairs(
            rule_bound_slack, PairSpace(V=2), budget=ctx.size(200, 40), restarts=2, settings={"subject": subject},
            scope=MULTI_DRAFT_ANY_K),
            what="bound − E[τ_SpecTr-GBV] (γ = 2, K = 2)"))
    if ctx.wants("exact", "cic-gamma1") or ctx.wants("exact", "cic-gamma2"):
        ev += check_cic(ctx, subject)
    return ev


def check_cic(ctx, subject: BoundCheck):
    """The conditionally independent class itself, K = 2: γ = 1 (exact) and γ = 2 (V = 2)."""
    ev = []
    with ctx.part("cic-gamma1"):  # exact: p's support has V ≤ 4 blocks, the search is over directions
        for V, order, conc, seed in CIC_GAMMA1[:ctx.size(3, 2)]:
            b = subject.bound(tree0(random_pair(V, order, conc, seed=seed), 1), 2)
            best, viol, lp = cic_best(V, order, conc, seed, 1, ctx.size(12, 6))
            ev.append(_cic_evidence(f"random_pair(V={V}, order={order}, {conc:g}, seed={seed}) γ=1 K=2", b, best,
                                    viol, lp))
    ev.append(least_slack(ctx, "cic-gamma1", lambda: exhaustive(
        cic_slack, [dict(V=V, order=o, concentration=c, seed=sd, gamma=1, bound=subject.bound, grid=ctx.size(12, 6))
                    for V, o, c, sd in CIC_GAMMA1[:ctx.size(len(CIC_GAMMA1), 2)]]),
        what="bound − the best CIC E[τ] (γ = 1, K = 2)"))
    with ctx.part("cic-gamma2"):
        pts = CIC_GAMMA2[:ctx.size(2, 1)]
        for V, order, conc, seed in pts:
            b = subject.bound(tree0(random_pair(V, order, conc, seed=seed), 2), 2)
            best, viol, lp = cic_best(V, order, conc, seed, 2, ctx.size(12, 3))
            ev.append(_cic_evidence(f"random_pair(V={V}, order={order}, {conc:g}, seed={seed}) γ=2 K=2", b, best,
                                    viol, lp))
    ev.append(least_slack(ctx, "cic-gamma2", lambda: exhaustive(
        cic_slack, [dict(V=V, order=o, concentration=c, seed=sd, gamma=2, bound=subject.bound, grid=ctx.size(12, 3))
                    for V, o, c, sd in pts]), what="bound − the best CIC E[τ] (γ = 2, K = 2)"))
    return ev


def _cic_evidence(instance, bound, best, viol, lp):
    return stats.exact_equal(instance, 0.0, max(0.0, best - bound), tol=1e-9,
                             what="excess over the bound of the best conditionally independent coupling of 2 drafts",
                             note=f"best CIC E[τ] {best:.7g} (constraints met to {viol:.1e}), bound {bound:.7g}, "
                                  f"slack {bound - best:+.3g}; LP over all couplings {lp:.7g} "
                                  f"({'below' if lp <= bound + 1e-12 else 'above'} the bound by {abs(lp - bound):.3g}: "
                                  f"{'it confirms the bound here' if lp <= bound + 1e-12 else 'it cannot confirm it'})")


register(
    id="spectr_gbv.upper_bound",
    paper=PAPER, reference="Lemma 5.1 (Eq. 5), App. B Eq. 13",
    statement="Every conditionally independent coupling has E[τ] ≤ Σ_{i=1}^{γ} Σ_{x^i} A(x^i).",
    interpretation="Lemma 5.1's class: couplings π(x_1..x_K, y) = p(y) Π_k r_k(x_k|y) of K i.i.d. q-blocks with "
                   "the p-block (conditionally independent, CIC). The LP over *all* couplings (HiGHS) bounds the "
                   "class from above but lies above the bound on every searched pair with p ≠ q (by up to 0.13), "
                   "so it cannot confirm it; the class is searched itself for K = 2 (spectheory.closed_forms."
                   "optimum.cic_optimum): the two kernels' deviations from q span p-orthogonal subspaces, one of "
                   "them can be taken constant (r2 = q: one LP) or one-dimensional (a direction f: for fixed f the "
                   "optimum is exact, one LP per vertex of the other kernel's box). Exact outright when p's support "
                   "has 2 blocks (γ = 1, V = 2); a grid + Nelder–Mead search over f otherwise (γ = 1, V = 3; γ = 2, "
                   "V = 2). Least slacks: over the pairs listed (exhaustive; 2 quick, 23 / 2 default). K ≥ 3 "
                   "(triple-product constraints) and larger supports are not searched. Also checked: the coupling "
                   "the paper builds (SpecTr-GBV) stays within the bound, exact on 7 pairs (γ ∈ {1, 2}, K = 1..3) "
                   "and where tightest (seeded search, γ = K = 2), MC one-sided z-test (γ = 2, K = 3).",
    parts=(Part("spectr-gbv", "SpecTr-GBV, the coupling the paper builds, has E[τ] ≤ Σ_i Σ_{x^i} A(x^i).",
                relation="≤"),
           Part("cic-gamma1", "For γ = 1 and K = 2, every conditionally independent coupling has E[τ] ≤ "
                              "Σ_x A(x).", relation="≤", modes=("exact",)),
           Part("cic-gamma2", "For γ = 2 and K = 2, every conditionally independent coupling has E[τ] ≤ "
                              "Σ_{i≤2} Σ_{x^i} A(x^i).", relation="≤", modes=("exact",))),
    readings=(Reading(
        "paper", "Every conditionally independent coupling of K i.i.d. draft blocks with the target block, the one "
                 "SpecTr-GBV builds among them, has E[τ] ≤ Σ_i Σ_{x^i} A(x^i).", ("spectr-gbv", "cic-gamma1",
                                                                                 "cic-gamma2"), role="principal",
        quote="Lemma 5.1: 'For any coupling π∈Π_CIC(p^{⊕K},q), the expected acceptance length is upper bounded by: "
              "E[τ] ≤ Σ_{τ=1}^{L} Σ_{x^τ} q(x^τ)[1−(1−min{p(x^τ)/q(x^τ),1})^K]' (Eq. 5)",
        why="the lemma names its class (CIC, Sec. 4.1: P_π(X^L|y^L) = Π_k P_π(x_k^L|y^L)); Sec. 5 places "
            "SpecTr-GBV in it ('the design of SpecTr-GBV ensures that it achieves the maximum expected acceptance "
            "length established in Lemma 5.1')"),),
    scope=Scope("Any pair whose drafts can differ; the class searched itself at K = 2 (γ = 1: V = 2 exact, V = 3; "
                "γ = 2: V = 2), SpecTr-GBV at K = 1..3.", guard=drafts_can_differ),
    check=check_upper_bound, subject=UPPER, mc_tests=1,
    controls=(Control("accept-all", UPPER_ACCEPT_ALL, R.BROKEN_ACCEPT_ALL.description, parts=("spectr-gbv",)),
              Control("bound for K-1 drafts", UPPER_FEWER_DRAFTS,
                      "negative control: the bound with one draft fewer (a wrong term: at K = 2, one draft's Σ min)",
                      parts=("cic-gamma1", "cic-gamma2"))))


def check_attains(ctx, rule):
    rule = line5_rule(ctx, rule)
    ev = each(EXACT, lambda name, pair: scoped(ctx, sweep(
        lambda pt: label(name, γ=pt["gamma"], K=pt["K"]), grid(gamma=(1, 2), K=(1, 2, 3)),
        lambda gamma, K: bound_and_tau(pair, rule, gamma, K), keep=False, what="E[τ] vs Lemma 5.1's bound, worst (γ, K)"),
        pair))
    ev.append(tau_mean_test(ctx, rule, 2, 3, cf.lemma51_bound(tree0(inst.get(MC_PAIR), 2), 3), ("att", "3"),
                            label(MC_PAIR, γ=2, K=3), "accepted length τ", "{n} iterations"))
    return ev


register(
    id="spectr_gbv.attains", relation="=",
    paper=PAPER, reference="Thm 5.3 (Eq. 6), App. B",
    statement="SpecTr-GBV's E[τ] equals Lemma 5.1's bound Σ_i Σ_{x^i} A(x^i).",
    interpretation="Exact E[τ] of one iteration of Alg. 1 (all draft outcomes, uniforms integrated), "
                   "γ ∈ {1, 2}, K = 1..3, on 7 pairs; MC: two-sided z-test of the kernel's mean τ (γ = 2, K = 3). "
                   "Equal at K = 1 (GBV); below the bound for K ≥ 2 on the 5 pairs in scope (disjoint supports "
                   "and V = 1, whose drafts cannot differ, equal it: outside the multi-draft scope). No conditionally independent coupling found reaches the bound either "
                   "(spectr_gbv.upper_bound's cic parts).",
    readings=(Reading(
        "paper", "SpecTr-GBV's E[τ] equals Lemma 5.1's bound Σ_i Σ_{x^i} A(x^i) (Eq. 6).", ("main",), role="principal",
        quote="Thm 5.3: 'The SpecTr-GBV achieves the upper bound of the expected acceptance length: E[τ] = Σ_{τ=1}^{L} "
              "Σ_{x^τ} q(x^τ)[1−(1−min{p(x^τ)/q(x^τ),1})^K]' (Eq. 6)",
        why="the theorem is about Alg. 1's E[τ] for K i.i.d. drafts; one iteration from a fixed prefix is its setting"),),
    scope=MULTI_DRAFT, choices=(LINE5,),
    check=check_attains, subject=R.SPECTR_GBV, controls=(CTRL_POWER_1,), mc_tests=1,
    shrink=shrinker(bound_and_tau, scope=MULTI_DRAFT, **ONE_ITERATION))


# --- spectr_gbv.remark5_2 ------------------------------------------------------------------------------

def bound_off_by_one(tree, K):
    """Broken: exponent K + 1 (an off-by-one in the number of drafts)."""
    return cf.lemma51_bound(tree, K + 1)


def bound_at_one_draft(tree, K):
    """Broken: Bound(1) whatever K (the number of drafts dropped)."""
    return cf.lemma51_bound(tree, 1)


REMARK_KS = tuple(range(1, 9))


def bound_step(pair, bound, gamma: int, K: int):
    """(Bound(K), Bound(K + 1)) from state 0: the claim says the second is larger."""
    tree = tree0(pair, gamma)
    return bound(tree, K), bound(tree, K + 1), {"what": "Bound(K) (claimed smaller), Bound(K + 1) (measured)"}


def bound_at_infinity(pair, bound, gamma: int):
    """(γ, Bound(10^9)): the claim says the bound tends to γ."""
    return float(gamma), bound(tree0(pair, gamma), 10 ** 9), {"what": "γ (claimed limit), Bound(10^9) (measured)"}


def bound_at_one(pair, bound, gamma: int):
    """(GBV's Σ_i Σ min(p(x^i), q(x^i)), Bound(1))."""
    tree = tree0(pair, gamma)
    return cf.gbv_optimum(tree), bound(tree, 1)


def bound_rise(name: str, gamma: int, bound=bound_as_printed) -> float:
    """Slack of the strict increase on a built-in instance: min over K = 1..7 of Bound(K+1) − Bound(K)."""
    tree = tree0(inst.get(name), gamma)
    return float(np.diff([bound(tree, K) for K in REMARK_KS]).min())


def flat_in_k(tree) -> bool:
    """Where the bound is constant in K: no block has 0 < q(x^i) < p(x^i) (Bound(K) = Σ p·[1 − (1 − m)^K]
    moves only through blocks with 0 < m < 1): q = p, disjoint supports, q ≥ p wherever q > 0 (top-k
    drafts), V = 1."""
    return not any(((tree.Q[i] > 0) & (tree.Q[i] < tree.P[i])).any() for i in range(1, tree.gamma + 1))


def limit_short(tree) -> bool:
    """Where the limit falls short of γ: some block has p(x^i) > 0 = q(x^i) (the limit is Σ_i Σ_{q > 0} p)."""
    return any(((tree.P[i] > 0) & (tree.Q[i] <= 0)).any() for i in range(1, tree.gamma + 1))


@lru_cache(maxsize=1)
def random_trees(n: int = 200) -> tuple:
    """Block trees of n random Dirichlet pairs (V ∈ {2, 3, 4}, order 0/1, γ ∈ {1, 2}, seeds 100..):
    full support and p ≠ q."""
    return tuple(tree0(random_pair(2 + i % 3, i // 3 % 2, 1.0, seed=100 + i), 1 + i // 6 % 2) for i in range(n))


def random_share(test) -> tuple[int, int]:
    """(on how many of the random pairs' trees the test holds, how many there are)."""
    trees = random_trees()
    return sum(bool(test(t)) for t in trees), len(trees)


def remark_guard(pair, gamma: int | None = None, **_) -> str | None:
    """Remark 5.2's scope: drafts that can differ, and a draft that covers p's support (every block with
    p(x^i) > 0 has q(x^i) > 0, at the γ given, else γ = 1..3 as far as V^γ ≤ 64)."""
    gammas = (gamma,) if gamma is not None else tuple(g for g in (1, 2, 3) if pair.V ** g <= 64)
    if any(limit_short(tree0(pair, g)) for g in gammas):
        return ("the draft misses part of p's support (a block with p(x^i) > 0 = q(x^i)): the remark's "
                "convergence to L tacitly needs a draft that covers it")
    return drafts_can_differ(pair, gamma)


REMARK_SCOPE = Scope(
    "A draft that covers p's support (q(x^i) > 0 wherever p(x^i) > 0: the convergence bullet's limit L needs it, "
    "since the bound tends to Σ_i Σ_{q(x^i)>0} p(x^i)) and drafts that can differ (V ≥ 2, a draft that is not a "
    "point mass). Non-degeneracy: at q = p every block has m = 1 and the bound is γ for every K, so it cannot "
    "increase; such a pair is outside the scope and its tie is reported beside the headline.",
    guard=remark_guard, degenerate=("q = p", "point-mass draft"))


def step_ties(vals) -> tuple[int, bool]:
    """(how many steps K → K+1 have Bound(K+1) ≤ Bound(K), whether every such step is an equality (to 1e-12))."""
    d = np.diff(vals)
    return int((d <= 0).sum()), bool((d[d <= 0] >= -1e-12).all())


def bound_k1_identity(exponent: int = 1) -> tuple[bool, str]:
    """Remark 5.2's consistency bullet as an identity of the model (sympy): each block's term of Bound(1),
    p[1 − (1 − m)^1] with m = min(1, q/p), equals min(p, q), in both branches (q ≤ p: m = q/p; q ≥ p: m = 1);
    a block with p = 0 adds 0 to both sides. ``exponent``: the power of (1 − m) the proof is run with (1 is
    the claim; any other value is a wrong identity the proof must reject)."""
    import sympy as sp
    p = sp.Symbol("p", positive=True)
    t = sp.Symbol("t", nonnegative=True)  # q = t·p
    term = lambda m: p * (1 - (1 - m) ** exponent)  # noqa: E731
    below = sp.simplify(term(t) - p * t)   # t ≤ 1: m = t, min(p, q) = q = t·p
    above = sp.simplify(term(sp.Integer(1)) - p)  # t ≥ 1: m = 1, min(p, q) = p
    holds = below == 0 and above == 0
    return holds, (f"per block, q = t·p: p[1 − (1 − t)^{exponent}] − t·p simplifies to {below} (t ≤ 1) and "
                   f"p[1 − (1 − 1)^{exponent}] − p to {above} (t ≥ 1); Bound(1) = Σ_i Σ_(x^i) of these terms")


def check_remark(ctx, bound):
    ev = []
    for name in EXACT:
        pair = inst.get(name)
        for g in (1, 2, 3):
            tree = tree0(pair, g)
            vals = np.array([bound(tree, K) for K in REMARK_KS])
            bad, tie = step_ties(vals)
            inc = stats.exact_equal(label(name, γ=g, K="1..8"), 0.0, float(bad),
                                    what="number of steps K → K+1 with Bound(K+1) ≤ Bound(K)",
                                    note=f"Bound(1..8) = {np.round(vals, 6).tolist()}"
                                         + ("; an edge case: no block has 0 < q < p" if flat_in_k(tree) else ""))
            if inc.outcome == "fail" and tie:
                inc.tie = True
                inc.note = (f"fails by equality (tie): Bound(K + 1) = Bound(K) at every failing step; "
                            + ("the bound is saturated at γ for every K (q = p: every block has m = 1)"
                               if abs(vals[0] - g) <= 1e-12 else "the bound is constant in K: no block has "
                                                                  "0 < q(x^i) < p(x^i)") + f"; {inc.note}")
            lim = stats.exact_equal(label(name, γ=g, K="1e9"), float(g), bound(tree, 10 ** 9), tol=1e-6,
                                    what="Bound(K) → γ as K → ∞ (K = 10^9)",
                                    note=f"analytic limit Σ_i Σ_(q(x^i)>0) p(x^i) = {cf.bound_limit(tree):.6g}"
                                         + ("; an edge case: q misses part of p's support" if limit_short(tree) else ""))
            ev.append(ctx.part("increasing-any-draft")(replace(inc)))
            ev.append(ctx.part("limit-any-draft")(replace(lim)))
            ev += scoped(ctx, [ctx.part("increasing")(inc), ctx.part("limit")(lim)], pair, gamma=g)
            ev.append(ctx.part("k1")(stats.exact_equal(label(name, γ=g, K=1), cf.gbv_optimum(tree), bound(tree, 1),
                                                       what="Bound(1) vs GBV's Σ min(p(x^i), q(x^i))")))
    for part, test, what in (("increasing", lambda t: all(np.diff([bound(t, K) for K in REMARK_KS]) > 0),
                              "strictly increasing over K = 1..8"),
                             ("limit", lambda t: abs(bound(t, 10 ** 9) - t.gamma) <= 1e-6, "Bound(10^9) = γ")):
        held, n = random_share(test)
        ev.append(ctx.part(part)(stats.exact_equal(
            f"{n} random pairs", float(n), float(held),
            what=f"on how many random Dirichlet pairs (full support, p ≠ q: in scope; V 2-4, order 0/1, γ 1-2) the "
                 f"bound is {what}", note=f"{held} of {n}")))
    if ctx.wants("exact", "increasing"):
        in_scope = [dict(name=name, gamma=g, bound=bound) for name in EXACT for g in (1, 2, 3)
                    if ctx.out_of_scope(inst.get(name), gamma=g) is None]
        ev.append(least_slack(ctx, "increasing", lambda: exhaustive(bound_rise, in_scope),
                              what="least rise min_K Bound(K+1) − Bound(K), in scope (0: a tie)"))
    for g in (2, 3) if ctx.wants("mc") else ():
        ev.append(ctx.part("k1")(tau_mean_test(ctx, R.GBV, g, 1, bound(tree0(inst.get(MC_PAIR), g), 1), ("gbv", str(g)),
                                               label(MC_PAIR, γ=g, K=1), "GBV's simulated accepted length vs Bound(1)",
                                               "{n} GBV iterations (Numba kernel)")))
    return ev


def edge_pair(V: int, order: int, concentration: float, seed: int):
    """Shrink candidates for Remark 5.2's edge cases: q = p (even seeds) and a top-(V−1) draft (odd
    seeds); random pairs (full support, p ≠ q) never fail it."""
    from spectheory.markov import MarkovPair
    from spectheory.pairs import dirichlet_source, top_k
    p = dirichlet_source(V, order, concentration, seed=seed)
    q = p if seed % 2 == 0 else top_k(p, V - 1)
    return MarkovPair(p, q, f"edge-V{V}-o{order}-s{seed}", {"construction": f"spectheory.sims.claims.multidraft.edge_pair({V}, "
                                                           f"{order}, {concentration:g}, {seed})"})


def _tie_marked(shrink):
    """A shrinker whose counterexample, when it fails by equality (claimed == measured: Bound(K + 1) =
    Bound(K)), says so."""
    def run(ctx, bound):
        cex = shrink(ctx, bound)
        if cex is not None and abs(cex["claimed"] - cex["measured"]) <= 1e-12:
            cex["tie"] = True
            cex["note"] = "fails by equality (tie): Bound(K + 1) = Bound(K); at q = p the bound is γ for every K"
        return cex
    return run


EDGE = dict(V_values=(2, 3), gammas=(1, 2), seeds=range(4), pair_factory=edge_pair)
STEP = dict(fails=lambda c, m: not m > c, applies=("V", "order", "gamma", "K", "seed"), K_values=(1, 2), **EDGE)
LIMIT = dict(fails=lambda c, m: abs(c - m) > 1e-6, **EDGE)
REMARK_SHRINK = (
    _tie_marked(shrinker(bound_step, part="increasing", scope=REMARK_SCOPE, **STEP)),
    shrinker(bound_at_infinity, part="limit", scope=REMARK_SCOPE, **LIMIT),
    _tie_marked(shrinker(bound_step, part="increasing-any-draft", **STEP)),
    shrinker(bound_at_infinity, part="limit-any-draft", **LIMIT),
    shrinker(bound_at_one, part="k1", **EDGE))


register(
    id="spectr_gbv.remark5_2",
    paper=PAPER, reference="Remark 5.2",
    statement="Lemma 5.1's bound strictly increases in K, tends to γ as K → ∞, and equals GBV's optimum "
              "at K = 1.",
    interpretation="On the bound's closed form from state 0 of 7 pairs, γ = 1..3: strict increase over "
                   "K = 1..8, the limit at K = 10^9, and K = 1 against Σ min; and on 200 random Dirichlet pairs "
                   "(full support, p ≠ q). Bound(K) = Σ_i Σ p(x^i)[1 − (1 − m(x^i))^K] never decreases "
                   "(Bound(K+1) − Bound(K) = Σ p m (1 − m)^K ≥ 0); it increases strictly exactly when some block "
                   "has 0 < q(x^i) < p(x^i), and tends to Σ_i Σ_{x^i: q(x^i)>0} p(x^i), which is γ exactly when q "
                   "covers p's support. Scope: a draft that covers p's support (the convergence bullet's tacit "
                   "assumption) and drafts that can differ; q = p is degenerate (the bound is γ for every K: it "
                   "cannot increase) and outside the scope, its tie reported beside the headline. The literal "
                   "reading (any draft: q = p, top-k, disjoint "
                   "supports, V = 1 too) is reported beside it. K = 1 is an identity of the model, proved "
                   "symbolically; its numerical check and GBV's simulated τ against Bound(1) stay as "
                   "implementation tests.",
    parts=(Part("increasing", "Bound(K) strictly increases in K (draft covering p's support).", relation="monotone",
                modes=("exact",), strict=True),
           Part("limit", "Bound(K) tends to γ as K → ∞ (draft covering p's support).", relation="=", modes=("exact",)),
           Part("k1", "Bound(1) equals GBV's optimum Σ_i Σ_{x^i} min(p(x^i), q(x^i)).", relation="=", identity=True,
                proof=bound_k1_identity, proved_for="general: per block, any p(x^i) > 0 and q(x^i) ≥ 0 (so any V, γ)"),
           Part("increasing-any-draft", "Bound(K) strictly increases in K, for any draft (literal).",
                relation="monotone", modes=("exact",)),
           Part("limit-any-draft", "Bound(K) tends to γ as K → ∞, for any draft (literal).", relation="=",
                modes=("exact",))),
    readings=(
        Reading("paper", "For a draft that covers p's support: Bound(K) strictly increases in K, tends to L = γ, "
                         "and Bound(1) = Σ min (GBV).", ("increasing", "limit", "k1"), role="principal",
                quote="Remark 5.2: 'For any positive integers K1 and K2 satisfying K1>K2, the bound strictly "
                      "increases: Bound(K1)>Bound(K2).' 'The upper bound converges to the maximum acceptance length "
                      "L as the number of drafts K tends to infinity' 'When K=1, the bound reduces to the "
                      "single-draft setting, which corresponds exactly to GBV: Bound(1)=Σ_τ Σ_{x^τ} min{p(x^τ),q(x^τ)}'",
                why="'converges to the maximum acceptance length L' holds only if every block the target can emit "
                    "can be drafted, so the remark tacitly assumes a draft that covers the target's support (the "
                    "paper's drafts are softmax models, positive everywhere); the three bullets are read together "
                    "under that assumption. q = p is a degenerate instance of the strict increase (the bound is γ "
                    "for every K): outside the scope by the non-degeneracy rule, its tie reported beside"),
        Reading("literal", "For any draft (one missing part of p's support too, V = 1): strict increase and the "
                           "limit γ.", ("increasing-any-draft", "limit-any-draft"), kind="literal",
                why="the bullets as printed, without the covering assumption: top-k and disjoint drafts leave the "
                    "bound constant in K and below L in the limit")),
    scope=REMARK_SCOPE,
    check=check_remark, subject=bound_as_printed, mc_tests=2,
    controls=(Control("exponent K+1", bound_off_by_one, "negative control: the bound with exponent K + 1",
                      parts=("k1",)),
              Control("Bound(1) for every K", bound_at_one_draft,
                      "negative control: the bound with the number of drafts dropped (Bound(1) for every K)",
                      parts=("increasing", "limit", "increasing-any-draft", "limit-any-draft"))),
    shrink=lambda ctx, bound: [x for x in (sh(ctx, bound) for sh in REMARK_SHRINK) if x])


# --- spectr_gbv.cost -------------------------------------------------------------------------------------

def sgbv_step(p, q, K):
    """SpecTr-GBV's selection step (Eq. 2), the plain-Python reference the counts are taken on."""
    return cf.selection_step_reference(p, q, 0.3, 0.2, K)


def sgbv_step_loop_power(p, q, K):
    """Broken: each (1 − m)^K by K multiplications (O(V·K) per step)."""
    return cf.selection_step_reference(p, q, 0.3, 0.2, K, power="loop")


def sgbv_step_quadratic(p, q, K):
    """Broken: redoes the O(V) sum ⌈V/256⌉ times (quadratic in V)."""
    return sum(cf.selection_step_reference(p, q, 0.3, 0.2, K) for _ in range(max(1, len(p) // 256)))


def kseq_step(p, q, K):
    """K-SEQ's selection step: ρ by bisection (⌈log2 K⌉ + 1 passes of O(V))."""
    return cf.kseq_rho_reference(p, q, K)


def kseq_step_scan(p, q, K):
    """Broken: ρ by a scan of K − 1 points (O(V·K))."""
    return cf.kseq_rho_reference(p, q, K, search="scan")


@dataclass(frozen=True)
class Steps:
    """What spectr_gbv.cost measures: a SpecTr-GBV and a K-SEQ selection step, ``step(p, q, K)``."""

    sgbv: Callable
    kseq: Callable


STEPS = Steps(sgbv_step, kseq_step)
COST_V = 256  # vocabulary of the sweeps in K
COST_K = 8    # drafts of the sweeps in V
_clock = time.perf_counter  # wall clock of the timing info (a test slows one repeat down through it)


def _rows(V: int, K: int):
    rng = np.random.default_rng(V * 131 + K)
    return rng.dirichlet(np.ones(V)).tolist(), rng.dirichlet(np.ones(V)).tolist()


def step_cost(step, V: int, K: int) -> int:
    """Bytecode instructions one selection step executes at (V, K) (spectheory.opcount)."""
    return count_opcodes(step, *_rows(V, K), K)[1]


def step_time(step, V: int, K: int, repeats: int = 3) -> float:
    """Best of ``repeats`` wall-clock times of one step at (V, K), in seconds (info only)."""
    p, q = _rows(V, K)
    best = np.inf
    for _ in range(repeats):
        t0 = _clock()
        step(p, q, K)
        best = min(best, _clock() - t0)
    return best


def scaling(instance: str, step, points, x, claimed: float, tol: float, what: str):
    """Fitted log-log exponent of the counted operations against ``x(V, K)`` (graded, exact) and of
    the wall-clock times (info beside it)."""
    sizes = [x(V, K) for V, K in points]
    ops = [step_cost(step, V, K) for V, K in points]
    secs = [step_time(step, V, K) for V, K in points]
    counted = stats.scaling_exponent(instance, sizes, ops, claimed=claimed, tolerance=tol, mode="exact",
                                     what=f"counted bytecodes of {what}", note=f"operations {ops}")
    counted.test = (f"fitted log-log exponent of counted bytecodes of {what} (spectheory.opcount: deterministic, "
                    f"load-independent), |exponent − claimed| ≤ {tol:g}")
    timed = stats.info("exact", instance + " wall-clock", claimed, stats.scaling_exponent(
        instance, sizes, secs, claimed=claimed, tolerance=tol).measured,
        test=f"fitted log-log exponent of wall-clock time of {what} (best of 3; info, not graded)",
        note=f"times {[f'{t * 1e6:.0f}us' for t in secs]}; taken under whatever load the machine had")
    return [counted, timed]


EXPONENT_TOL = Choice("exponent_tol", 0.05, (0.03, 0.05, 0.1), invented=True,
                      why="the paper states O(·) without a band: |fitted exponent − claimed| ≤ this (K-SEQ's exponent "
                          "in 1 + log2 K, whose bisection passes step at powers of 2, twice this)")


def check_cost(ctx, steps: Steps):
    Vs = (256, 512, 1024) if ctx.quick else (256, 512, 1024, 2048, 4096)
    Ks = (2, 8, 32, 128)
    tol = float(ctx.choice("exponent_tol"))
    ev = ctx.part("v-linear")(scaling("V=" + ",".join(map(str, Vs)) + f" K={COST_K}", steps.sgbv,
                                      [(V, COST_K) for V in Vs], lambda V, K: V, 1.0, tol,
                                      "SpecTr-GBV's step vs V"))
    ev += ctx.part("k-free")(scaling(f"V={COST_V} K=" + ",".join(map(str, Ks)), steps.sgbv,
                                     [(COST_V, K) for K in Ks], lambda V, K: K, 0.0, tol, "SpecTr-GBV's step vs K"))
    with ctx.part("kseq-log-k"):
        ev += scaling(f"V={COST_V} K=" + ",".join(map(str, Ks)), steps.kseq, [(COST_V, K) for K in Ks],
                      lambda V, K: 1.0 + np.log2(K), 1.0, 2 * tol, "K-SEQ's step vs 1 + log2 K")
        ev += scaling("V=" + ",".join(map(str, Vs)) + f" K={COST_K}", steps.kseq, [(V, COST_K) for V in Vs],
                      lambda V, K: V, 1.0, tol, "K-SEQ's step vs V")
    return ev


register(
    id="spectr_gbv.cost",
    paper=PAPER, reference="Sec. 4.2 (last paragraph), Sec. 6.4",
    statement="One selection step costs O(V), against O(V log K) for K-SEQ.",
    interpretation="A complexity claim, decided from counted operations: the bytecode instructions a "
                   "plain-Python reference of each step executes (spectheory.opcount; the same h and ρ as the "
                   "Numba kernels, tested), which do not depend on the machine's load. Graded by fitted log-log "
                   "exponents: SpecTr-GBV's step (Eq. 2's O(V) sum, each (1 − m)^K one float power) against V "
                   f"(K = {COST_K}), claimed 1 ± 0.05, and against K = 2..128 (V = {COST_V}), claimed 0 ± 0.05; "
                   "K-SEQ's step (ρ by ⌈log2 K⌉ + 1 bisection passes of O(V)) against 1 + log2 K, claimed 1 ± 0.1, "
                   "and against V, claimed 1 ± 0.05. Wall-clock exponents of the same calls (best of 3) are "
                   "info beside each count.",
    parts=(Part("v-linear", "SpecTr-GBV's selection step costs O(V): its work grows linearly in the vocabulary.",
                relation="scaling"),
           Part("k-free", "SpecTr-GBV's selection step does not grow with the number of drafts K.",
                relation="scaling"),
           Part("kseq-log-k", "K-SEQ's selection step (SpecTr) costs O(V log K): linear in V, logarithmic in K.",
                relation="scaling")),
    readings=(Reading(
        "paper", "SpecTr-GBV's selection step costs O(V), independent of K; K-SEQ's costs O(V log K).",
        ("v-linear", "k-free", "kseq-log-k"), role="principal",
        quote="Sec. 4.2: 'For each selection step for x_j^i, SpecTr-GBV exhibits a complexity of O(|Ω|), equivalent to "
              "GBV and more efficient than the O(|Ω|log(K))' of K-SEQ; Sec. 6.4: 'SpecTr using K-SEQ requires a "
              "O(|Ω|log(K)) binary search for the ρ parameter, while SpecTr-GBV computes acceptance probabilities "
              "directly at O(|Ω|).'",
        why="a complexity statement about one step, so it is graded on counted operations (load-independent), as "
            "growth exponents in V and K"),),
    scope=Scope(f"One selection step on Dirichlet rows, V = 256..4096 (K = {COST_K}) and K = 2..128 (V = {COST_V})."),
    choices=(EXPONENT_TOL,),
    check=check_cost, subject=STEPS, modes=("exact",),
    controls=(Control("O(V^2) step", Steps(sgbv_step_quadratic, kseq_step),
                      "negative control: a step that redoes the O(V) sum ⌈V/256⌉ times (quadratic in V)",
                      parts=("v-linear",)),
              Control("(1-m)^K by K products", Steps(sgbv_step_loop_power, kseq_step),
                      "negative control: each (1 − m)^K computed by K multiplications (O(V·K) per step)",
                      parts=("k-free",)),
              Control("ρ by a scan", Steps(sgbv_step, kseq_step_scan),
                      "negative control: K-SEQ's ρ found by scanning K − 1 points (O(V·K) per step)",
                      parts=("kseq-log-k",))))


# --- spectr_gbv.tables -------------------------------------------------------------------------------------

def be_cost_free(tau: float, gamma: int) -> float:
    """Block efficiency in the cost-free model: tokens per target call, E[τ] + 1."""
    return tau + 1.0


def be_as_rate(tau: float, gamma: int) -> float:
    """Broken: block efficiency read as the acceptance rate E[τ]/γ."""
    return tau / gamma


SD_RULE = R.MultiDraftRule("sd", algorithm="kseq", modify=False, rho="one",
                           description="token-level SD (one draft, K-SEQ with ρ = 1 is its rule)")


@dataclass(frozen=True)
class Methods:
    """The methods the tables compare (rules; token-level SD is the fixed baseline) and how block
    efficiency is read from E[τ]."""

    sgbv: R.MultiDraftRule = R.SPECTR_GBV
    kseq: R.MultiDraftRule = R.KSEQ
    gbv: R.MultiDraftRule = R.GBV
    be: Callable = be_cost_free


METHODS = Methods()
#: the controls' subjects, module-level so that their least-slack calls name them (spectheory.sims.shrink.expr_of)
METHODS_SD_AS_SGBV = Methods(sgbv=SD_RULE)
METHODS_RHO_K_SPECTR = Methods(kseq=R.KSEQ_RHO_K)
METHODS_HALF_H_GBV = Methods(gbv=R.BROKEN_HALF_H)
METHODS_RHO_K_AS_SGBV = Methods(sgbv=R.KSEQ_RHO_K)
METHODS_BE_RATE = Methods(be=be_as_rate)


def _drafts(rule, K: int) -> int:
    return 1 if rule.algorithm == "kseq" and rule.rho == "one" else K  # plain SD: one draft


def pair_of(key: str):
    """A pair from its key: a built-in instance name, or "random V order seed" (concentration 1)."""
    if key.startswith("random "):
        V, order, seed = map(int, key.split()[1:])
        return random_pair(V, order, 1.0, seed=seed)
    return inst.get(key)


@lru_cache(maxsize=512)
def _tree(key: str, gamma: int):
    return tree0(pair_of(key), gamma)


@lru_cache(maxsize=4096)
def _tau(key: str, rule, gamma: int, K: int) -> float:
    return ex.expected_tau(_tree(key, gamma), _drafts(rule, K), rule) if rule is not None else \
        cf.sd_expected_tau(_tree(key, gamma))


def block_efficiencies(pair, methods: Methods, gamma: int, K: int):
    """Block efficiency of (SpecTr-GBV, SpecTr (K-SEQ), token-level SD, GBV), one iteration from state
    0 (exact). ``pair``: a pair, or a key of :func:`pair_of` (then cached: the controls share the
    methods they do not replace)."""
    if isinstance(pair, str):
        tau = lambda r, k: _tau(pair, r, gamma, k)
    else:
        tree = tree0(pair, gamma)
        tau = lambda r, k: ex.expected_tau(tree, _drafts(r, k), r) if r is not None else cf.sd_expected_tau(tree)
    return tuple(methods.be(tau(r, k), gamma) for r, k in ((methods.sgbv, K), (methods.kseq, K), (None, 1),
                                                           (methods.gbv, 1)))


#: the tables' orderings, one part each: (part, statement, (the side claimed larger, the other) at
#: (γ, K) given b(γ, K) = BE of (SpecTr-GBV, SpecTr, SD, GBV), the (γ, K) graded, the label's K)
ORDERINGS = (
    ("sgbv-ge-spectr", "SpecTr-GBV's block efficiency is at least SpecTr's (K-SEQ).",
     lambda b, g, K: (b(g, K)[0], b(g, K)[1]), grid(gamma=(1, 2), K=(2, 3)), None),
    ("spectr-ge-sd", "SpecTr's (K-SEQ's) block efficiency is at least token-level SD's.",
     lambda b, g, K: (b(g, K)[1], b(g, K)[2]), grid(gamma=(1, 2), K=(2, 3)), None),
    ("gbv-ge-sd", "GBV's block efficiency is at least token-level SD's.",
     lambda b, g, K: (b(g, K)[3], b(g, K)[2]), grid(gamma=(1, 2), K=(2, 3)), None),
    ("grows-k", "SpecTr-GBV's block efficiency grows with the number of drafts K.",
     lambda b, g, K: (b(g, K + 1)[0], b(g, K)[0]), grid(gamma=(1, 2), K=(1, 2)), "1..3"),
    ("grows-gamma", "SpecTr-GBV's block efficiency grows with the draft length γ.",
     lambda b, g, K: (b(g + 1, K)[0], b(g, K)[0]), grid(gamma=(1, 2), K=(2,)), None),
)
TABLE_PAIRS = ("iid-V4-random", MC_PAIR, "markov1-V4-weak", "iid-V3-equal")


def ordering_sides(pair, methods: Methods, gamma: int, K: int, ordering: str):
    """(BE of the side claimed smaller, BE of the side claimed larger) of one ordering at (γ, K)."""
    big, small = next(o[2] for o in ORDERINGS if o[0] == ordering)(
        lambda g, k: block_efficiencies(pair, methods, g, k), gamma, K)
    return float(small), float(big), {"what": "BE of the side claimed smaller (claimed), of the side claimed "
                                              "larger (measured)"}


def ordering_slack(key: str, methods: Methods, part: str) -> float:
    """An ordering's least BE difference (larger side − smaller side) over its (γ, K) on pair ``key``."""
    return min(b - a for a, b, _ in (ordering_sides(key, methods, **pt, ordering=part)
                                     for pt in next(o[3] for o in ORDERINGS if o[0] == part)))


def table_keys(ctx) -> tuple:
    """The random pairs of the tables' least-slack search: V ∈ {2, 3}, order 0/1, seeds 0..2 (quick: 0)."""
    return tuple(f"random {V} {o} {sd}" for V in (2, 3) for o in (0, 1) for sd in range(ctx.size(3, 1)))


def check_tables(ctx, methods: Methods):
    ev = []
    judged = [o for o in ORDERINGS if ctx.wants("exact", o[0])]
    for name in TABLE_PAIRS:
        for part, _, gap, pts, k_label in judged:
            ev.append(sweep(lambda pt: label(name, γ="1..3" if part == "grows-gamma" else pt["gamma"],
                                             K=k_label or pt["K"]),
                            pts, lambda gamma, K: (0.0, -np.subtract(*ordering_sides(name, methods, gamma, K, part)[:2])),
                            grade="bound",
                            keep=False, part=part, judge=shortfall(shift=1e-13, what=f"shortfall in '{part}' in block "
                                                                                   "efficiency (0 if it holds), worst"),
                            note=lambda p, c, d, x: f"smallest difference {d:+.4g}"))
    for part, *_ in judged:
        ev.append(least_slack(ctx, part, lambda: exhaustive(
            ordering_slack, [dict(key=k, methods=methods, part=part) for k in TABLE_PAIRS + table_keys(ctx)]),
            what=f"least BE difference in '{part}'"))
    if not ctx.wants("mc"):
        return ev
    g, K = 2, 3
    m1, se1, n1, _ = tau_mc(ctx, methods.kseq, g, K, "tab-kseq")
    m2, se2, n2, _ = tau_mc(ctx, methods.sgbv, g, K, "tab-sgbv")
    ev.append(ctx.part("sgbv-ge-spectr")(ctx.mc(stats.z_test_bound(
        label(MC_PAIR, γ=g, K=K), 0.0, mean=m1 - m2, se=float(np.hypot(se1, se2)), n=n1 + n2, side="le",
        alpha=ctx.alpha_test, tolerance=0.02, what="E[τ_SpecTr] − E[τ_SpecTr-GBV]",
        note=f"two independent samples of {n1} iterations; SpecTr {m1:.4f}, SpecTr-GBV {m2:.4f}"))))
    return ev


TABLES_SHRINK = {part: shrinker(ordering_sides, fails=lambda c, m: m < c - 1e-12, part=part, V_values=(2, 3),
                                applies=("V", "order", "gamma", "K", "seed", "ordering"), gammas=(1, 2),
                                K_values=(2, 3) if part != "grows-k" else (1, 2), seeds=range(3),
                                extra={"ordering": (part,)}, scope=MULTI_DRAFT_ANY_K) for part, *_ in ORDERINGS}


def shrink_tables(ctx, methods):
    """The smallest counterexample of each ordering that fails on the graded pairs (found in the
    check's cache), one per part."""
    keys = TABLE_PAIRS + table_keys(ctx)
    failing = [part for part in TABLES_SHRINK if min(ordering_slack(k, methods, part) for k in keys) < -1e-12]
    return [x for x in (TABLES_SHRINK[part](ctx, methods) for part in failing) if x]


register(
    id="spectr_gbv.tables",
    paper=PAPER, reference="Tables 1, 3, 5; Fig. 2a",
    statement="Block efficiency orderings: SpecTr-GBV ≥ SpecTr ≥ SD, GBV ≥ SD; BE grows with γ and with K.",
    interpretation="In the cost-free model BE = E[τ] + 1 (one target call per iteration), compared in exact E[τ] "
                   "of one iteration from state 0, each ordering (≥, not strictly) at γ ∈ {1, 2}, K ∈ {2, 3}; growth "
                   "in K over K = 1..3 (γ ∈ {1, 2}), in γ over γ = 1..3 (K = 2). Graded on 4 pairs (p = q among "
                   "them) and, for the least slack, over these and random Dirichlet pairs (V ∈ {2, 3}, order "
                   "0/1). MC: one-sided test that SpecTr's E[τ] does not exceed SpecTr-GBV's (γ = 2, K = 3).",
    parts=tuple(Part(part, statement, relation="monotone" if part.startswith("grows") else "ordering",
                     modes=None if part == "sgbv-ge-spectr" else ("exact",)) for part, statement, *_ in ORDERINGS),
    readings=(Reading(
        "paper", "In block efficiency SpecTr-GBV ≥ SpecTr ≥ SD and GBV ≥ SD, and SpecTr-GBV's grows with K and with γ "
                 "(orderings ≥, not strict).", tuple(o[0] for o in ORDERINGS), role="principal",
        quote="Sec. 1: 'The results show that SpecTr-GBV consistently outperforms standard SD, SpecTr, and GBV in terms "
              "of both block efficiency and speedup ratio.'; Sec. 6.5: 'as L increases, BE steadily improves', 'the "
              "acceptance rates of both methods increase as K grows'; Sec. 5: 'multiple i.i.d. drafts strictly "
              "improve the upper bound'",
        why="the paper presents the orderings as consequences of its theory (Thm 5.3: E[τ] = the bound, which "
            "grows with K), not as accidents of its models, so they are read on any pair in the cost-free model "
            "(BE = E[τ] + 1, Sec. 6.2's 'decoded tokens per serial call'); ≥ rather than > since at p = q every "
            "method reaches γ"),),
    scope=MULTI_DRAFT_ANY_K,
    check=check_tables, subject=METHODS, mc_tests=1,
    controls=(Control("SD as SpecTr-GBV", METHODS_SD_AS_SGBV, "negative control: plain SD in SpecTr-GBV's place",
                      parts=("sgbv-ge-spectr",)),
              Control("ρ = K in SpecTr", METHODS_RHO_K_SPECTR, "negative control: " + R.KSEQ_RHO_K.description
                      .split(": ", 1)[1] + ", as SpecTr", parts=("spectr-ge-sd",)),
              Control("h/2 in GBV", METHODS_HALF_H_GBV, "negative control: GBV accepting each sub-block "
                                                                  "with half of Eq. 2/3's probability",
                      parts=("gbv-ge-sd",)),
              Control("ρ = K K-SEQ as SpecTr-GBV", METHODS_RHO_K_AS_SGBV,
                      "negative control: K-SEQ with ρ = K in SpecTr-GBV's place (its acceptance falls with K)",
                      parts=("grows-k",)),
              Control("BE = E[τ]/γ", METHODS_BE_RATE,
                      "negative control: block efficiency read as the acceptance rate E[τ]/γ", parts=("grows-gamma",))),
    shrink=shrink_tables)
