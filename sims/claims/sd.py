"""Claims ``sd.*``: standard speculative sampling (Leviathan, Kalman & Matias, ICML 2023; Chen et
al., arXiv 2023), written in the check shapes of :mod:`sims.shapes` (the worked example of
docs/architecture.md).

Each claim below is: its statement and reading (``register``), its instances, and the one
function specific to it, a *measure* ``(pair, rule, **settings) -> (claimed, measured)`` that
the exact sweep, the shrinker and the counterexample's one-line call all use. Each check takes
the verification rule under test (:class:`spectheory.rules.sd.SDRule`), so the broken rules
registered as controls go through exactly the same comparisons.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spectheory import instances as inst
from spectheory.closed_forms import sd as cf
from spectheory.divergences import overlap, total_variation
from spectheory.exact import sd as exact_sd
from spectheory.judge import stats
from spectheory.montecarlo import sd as mc_sd
from spectheory.montecarlo.clock import PARALLEL, SERIAL, CallSchedule, ratio_of_means, simulate_clocks
from spectheory.rules.sd import BROKEN_NO_BONUS, BROKEN_RESIDUAL_P, BROKEN_SWAPPED_RATIO, STANDARD, SDRule

from ..registry import Control, Part, register
from ..shapes import each, grid, label, mc_law, mc_mean, mc_per_state, shrinker, sweep

PAPER = ("leviathan2023", "chen2023")

CTRL_RESIDUAL = Control("residual=norm(p)", BROKEN_RESIDUAL_P, BROKEN_RESIDUAL_P.description)
CTRL_SWAPPED = Control("accept=min(1,q/p)", BROKEN_SWAPPED_RATIO, BROKEN_SWAPPED_RATIO.description)
CTRL_NO_BONUS = Control("no-bonus", BROKEN_NO_BONUS, BROKEN_NO_BONUS.description)


# --- sd.lossless ------------------------------------------------------------------------------

LOSSLESS_GAMMAS = (1, 2, 3)
#: Monte Carlo instances (name, γ, N): a Markov pair, an i.i.d. pair, and pairs whose target
#: and draft have different row maps (permuted rows; an order-2 target with a lifted order-1
#: n-gram draft; an order-0 n-gram draft with one row shared by every state), so a kernel
#: reading a table through the wrong row map is seen.
LOSSLESS_MC = (("markov1-V3-mix0.4", 3, 4), ("iid-V4-random", 2, 3), ("markov1-V4-permrows", 3, 3),
               ("markov2-V3-ngram1", 2, 4), ("markov1-V3-ngram0", 2, 4))


def lossless_tv(pair, rule: SDRule, gamma: int, n_tokens: int = 3):
    """(claimed 0, TV between the law of the first ``n_tokens`` emitted tokens and p^n), exact."""
    d = exact_sd.first_tokens_distribution(pair, gamma, n_tokens, rule)
    return 0.0, float(total_variation(d, pair.target.sequence_probs(n_tokens)))


def check_lossless(ctx, rule):
    n_first = lambda pair: 4 if pair.V <= 3 else 3
    ev = each(inst.EXACT, lambda name, pair: sweep(
        label(name, γ="1..3", N=n_first(pair)), grid(gamma=LOSSLESS_GAMMAS),
        lambda gamma: lossless_tv(pair, rule, gamma, n_first(pair)), grade="distance",
        what="TV(first N emitted tokens, p^N), max over γ"))
    for name, gamma, N in LOSSLESS_MC:
        pair = inst.get(name)
        n = ctx.size(2_000_000, 200_000)
        toks = mc_sd.sample_first_tokens(pair, gamma, N, n, rule=rule, seed=ctx.rng(name))
        counts = np.bincount(toks @ (pair.V ** np.arange(N - 1, -1, -1)), minlength=pair.V ** N)
        ev.append(mc_law(ctx, label(name, γ=gamma, N=N), counts, pair.target.sequence_probs(N), tolerance_w=0.03,
                         note=f"{n} independent runs of the Numba kernel, first {N} emitted tokens"))
    return ev


register(
    id="sd.lossless", relation="law",
    paper=PAPER, reference="Leviathan et al. 2023, Thm 3.5 / App. A.1",
    statement="Token-level rejection sampling (accept x w.p. min(1, p(x)/q(x)), else sample "
              "norm(max(p−q,0)); bonus from p after γ accepts) emits sequences distributed "
              "exactly as p, over any number of iterations.",
    interpretation="Checked on the first N emitted tokens from a fixed context, over as many "
                   "iterations as it takes: their law must be p^N. Exact: enumeration of every "
                   "draft and accept/reject outcome (TV ≤ 1e-12), on edge cases too (disjoint "
                   "supports, p = q so the residual has zero mass, one-token vocabulary, top-k "
                   "drafts with q = 0 tokens). MC: chi-square on V^N sequences.",
    check=check_lossless, subject=STANDARD, controls=(CTRL_RESIDUAL, CTRL_SWAPPED), mc_tests=len(LOSSLESS_MC),
    shrink=shrinker(lossless_tv, fails=lambda c, m: m > 1e-12))


# --- sd.acceptance ----------------------------------------------------------------------------

#: per-state acceptance on a stream: V = 50 pairs and the permuted-row-map pair
ACCEPTANCE_MC = ("markov1-V50-strong", "markov1-V50-weak", "markov1-V4-permrows")


def acceptance_at(pair, rule: SDRule, state: int = 0):
    """(β(s) = Σ min(p, q), the algorithm's exact P(accept the first draft) in state s, details)."""
    p, q = pair.target.conditional(state), pair.draft.conditional(state)
    beta, acc = float(overlap(p, q)), 1.0 - exact_sd.tau_distribution(pair, 1, rule, state)[0]
    one_minus_tv = 1.0 - float(total_variation(p, q))
    return beta, acc, {"gap": max(abs(acc - beta), abs(acc - one_minus_tv)), "identity": abs(beta - one_minus_tv)}


def acceptance(pair, rule: SDRule):
    """(β, acceptance) in the state where the algorithm is furthest from β or 1 − TV."""
    return max((acceptance_at(pair, rule, s) for s in range(pair.n_states)), key=lambda r: r[2]["gap"])[:2]


def check_acceptance(ctx, rule):
    ev = each(inst.EXACT, lambda name, pair: sweep(
        label(name, states=pair.n_states), grid(state=range(pair.n_states)),
        lambda state: acceptance_at(pair, rule, state), worst=lambda c, m, d, p: d["gap"],
        what="P(accept first draft) vs Σmin(p,q), worst state",
        note=lambda p, c, m, d: f"|Σmin(p,q) − (1 − TV)| = {d['identity']:.1e}"))
    for name in ACCEPTANCE_MC:
        pair = inst.get(name)
        n = ctx.size(1_000_000, 150_000)
        res = mc_sd.simulate(pair, 4, n, rule=rule, seed=ctx.rng(name), count_states=True)
        ev.append(mc_per_state(ctx, label(name, γ=4), res.attempts, res.accepts, pair.acceptance_by_state(),
                               tolerance=0.01,
                               note=f"stream of {n} iterations; every verification attempt counted in its state"))
    return ev


register(
    id="sd.acceptance", relation="=",
    paper=PAPER, reference="Leviathan et al. 2023, Def. 3.1 / Thm 3.5 (β = 1 − D_LK)",
    statement="P(accept at a position) = Σ_x min(p(x), q(x)) = 1 − TV(p, q).",
    interpretation="Checked state by state: the exact probability that the algorithm accepts "
                   "the drafted token in state s equals β(s) = Σ min(p(·|s), q(·|s)) and 1 − TV. "
                   "MC: acceptance counts per state of a long stream (all positions) against β(s).",
    check=check_acceptance, subject=STANDARD, controls=(CTRL_SWAPPED,), mc_tests=len(ACCEPTANCE_MC),
    shrink=shrinker(acceptance, applies=("V", "order", "seed"), gammas=(1,)))


# --- sd.expected_tokens -----------------------------------------------------------------------

ET_GAMMAS = (1, 2, 3, 4)


def expected_tokens_iid(pair, rule: SDRule, gamma: int):
    """(the constant-α formula at α = β(state 0), the algorithm's exact E[tokens per iteration])."""
    return cf.expected_tokens(float(pair.acceptance_by_state()[0]), gamma), exact_sd.expected_tokens(pair, gamma, rule)


def expected_tokens_chain(pair, rule: SDRule, gamma: int, start: int = 0):
    """(the chain DP Σ_k (A^k 1)[start], the algorithm's exact E[tokens per iteration] from start)."""
    return cf.expected_tokens_chain(pair, gamma, start), exact_sd.expected_tokens(pair, gamma, rule, start)


def check_expected_tokens(ctx, rule):
    alpha = lambda pair: float(pair.acceptance_by_state()[0])
    with ctx.part("iid"):
        ev = each(inst.IID, lambda name, pair: sweep(
            label(name, γ="1..4", α=f"{alpha(pair):.4f}"), grid(gamma=ET_GAMMAS),
            lambda gamma: expected_tokens_iid(pair, rule, gamma),
            what="(1−α^{γ+1})/(1−α) vs enumeration, worst γ"))
    with ctx.part("chain"):
        ev += each(inst.MARKOV, lambda name, pair: sweep(
            label(name, γ="1..3", start=0), grid(gamma=(1, 2, 3)), lambda gamma: expected_tokens_chain(pair, rule, gamma),
            what="chain DP 1 + Σ_k (A^k 1)[s] vs enumeration, worst γ"))
    with ctx.part("formula-on-markov"):
        for name in inst.MARKOV + ("markov1-V50-strong", "markov1-V50-weak"):
            pair = inst.get(name)
            a_bar = cf.stationary_acceptance(pair)
            formula, exact = cf.expected_tokens(a_bar, 4), cf.long_run_block_efficiency(pair, 4)
            ev.append(stats.info("exact", label(name, γ=4, α=f"{a_bar:.4f}"), formula, exact,
                                 test="constant-α formula at α = E_π[β] vs exact long-run tokens per "
                                      "target call (chain DP)",
                                 note=f"formula off by {100 * (formula - exact) / exact:+.2f}%; outside the "
                                      "formula's i.i.d. assumption: reported, not graded"))
    n = ctx.size(4_000_000, 400_000)
    pair = inst.get("iid-V4-random")
    res = mc_sd.simulate(pair, 4, n, rule=rule, seed=ctx.rng("iid"), restart=True)
    ev.append(mc_mean(ctx, label("iid-V4-random", γ=4), cf.expected_tokens(alpha(pair), 4), res.n_emitted,
                      tolerance=0.02, what="tokens per iteration", note=f"{n} i.i.d. iterations", part="iid"))
    pair = inst.get("markov1-V50-weak")
    res = mc_sd.simulate(pair, 4, n, rule=rule, seed=ctx.rng("markov"), restart=True)
    ev.append(mc_mean(ctx, label("markov1-V50-weak", γ=4, start=0), cf.expected_tokens_chain(pair, 4, 0),
                      res.n_emitted, tolerance=0.02, what="tokens per iteration",
                      note=f"{n} iterations restarted from state 0; claimed = chain DP", part="chain"))
    return ev


register(
    id="sd.expected_tokens",
    paper=PAPER, reference="Leviathan et al. 2023, Eq. 1 (Thm 3.8's numerator)",
    statement="With a constant per-position acceptance α, E[tokens per iteration] = "
              "(1 − α^{γ+1})/(1 − α). On a Markov source the exact value comes from a dynamic "
              "program over the chain.",
    interpretation="Graded where the formula's assumption holds (order-0 pairs, γ = 1..4) and, "
                   "for Markov pairs, the chain DP E = Σ_{k=0}^{γ} (A^k 1)[s] with "
                   "A[s,s'] = Σ_{x→s'} min(p,q) against enumeration. The constant-α formula "
                   "at the stationary mean acceptance vs the exact long-run tokens per target "
                   "call on Markov pairs is reported as info.",
    parts=(Part("iid", "With constant per-position acceptance α (order-0 pairs), E[tokens per iteration] = "
                       "(1 − α^{γ+1})/(1 − α).", relation="="),
           Part("chain", "On a Markov source, the chain DP Σ_{k=0}^{γ} (A^k 1)[s] equals the algorithm's "
                         "E[tokens per iteration] from state s.", relation="="),
           Part("formula-on-markov", "The constant-α formula at α = E_π[β] equals the long-run tokens per "
                                     "target call on a Markov source.", relation="=", checkable=False,
                reason="outside the formula's constant-α assumption (the paper does not claim it): reported "
                       "as info, with the relative error")),
    check=check_expected_tokens, subject=STANDARD, controls=(CTRL_NO_BONUS,), mc_tests=2,
    shrink=shrinker(expected_tokens_iid, orders=(0,), part="iid"))


# --- sd.walltime ------------------------------------------------------------------------------

WT_COSTS = (0.0, 0.05, 0.2, 1.0)
#: Gamma shape of the simulated call durations in the Monte Carlo clock (coefficient of
#: variation 1/2): the formula must hold in expectation with variable call times too.
WT_CALL_SHAPE = 4.0


@dataclass(frozen=True)
class Timed:
    """What sd.walltime tests: a verification rule and the model calls an iteration makes."""

    rule: SDRule
    schedule: CallSchedule = PARALLEL


WT_STANDARD = Timed(STANDARD, PARALLEL)
WT_NO_BONUS = Timed(BROKEN_NO_BONUS, PARALLEL)
#: the target scores the drafted tokens one call per emitted token instead of one parallel call
WT_SERIAL = Timed(STANDARD, SERIAL)
CTRL_WT_NO_BONUS = Control("no-bonus", WT_NO_BONUS, BROKEN_NO_BONUS.description)
CTRL_WT_SERIAL = Control(
    "serial-verify", WT_SERIAL,
    "negative control: the target scores the drafted tokens one call per emitted token instead of "
    "one parallel call (same tokens, more target time)")


def walltime(pair, timed: Timed, gamma: int, c: float):
    """(Thm 3.8's improvement at α = β(state 0), E_exact[tokens] / E_exact[call time] of the
    algorithm with draft-call cost c and target-call cost 1)."""
    tokens = exact_sd.expected_tokens(pair, gamma, timed.rule)
    return (cf.walltime_improvement(float(pair.acceptance_by_state()[0]), gamma, c),
            tokens / timed.schedule.expected_time(gamma, c, tokens))


def check_walltime(ctx, subject):
    ev = each(inst.IID, lambda name, pair: sweep(
        label(name, γ="1..4", c="0..1"), grid(gamma=ET_GAMMAS, c=WT_COSTS),
        lambda gamma, c: walltime(pair, subject, gamma, c),
        what="formula vs E_exact[tokens] / E_exact[call time], worst (γ, c)"))
    gamma, c = 4, 0.2
    pair = inst.get("iid-V4-strong")
    n = ctx.size(4_000_000, 400_000)
    res = mc_sd.simulate(pair, gamma, n, rule=subject.rule, seed=ctx.rng("tokens"))
    # discrete-event clocks: the speculative one advances by every draft call (mean c) and
    # target call (mean 1) the schedule makes; the autoregressive one by one target call per
    # emitted token. Call times are Gamma-distributed (CV 1/2), drawn independently.
    ar, sd_time = simulate_clocks(res.n_emitted, gamma, c, schedule=subject.schedule,
                                  seed=ctx.rng("clock"), shape=WT_CALL_SHAPE)
    ratio, se = ratio_of_means(ar, sd_time)
    ev.append(mc_mean(ctx, label("iid-V4-strong", γ=gamma, c=c),
                      cf.walltime_improvement(float(pair.acceptance_by_state()[0]), gamma, c), mean=ratio, se=se, n=n,
                      tolerance=0.02, what="walltime improvement Σ AR time / Σ SD time (delta-method se)",
                      note=f"{n} iterations of the Numba kernel timed on simulated clocks: Gamma call times "
                           f"(shape {WT_CALL_SHAPE:g}, means c and 1) for each draft and target call made"))
    return ev


register(
    id="sd.walltime", relation="=",
    paper=PAPER, reference="Leviathan et al. 2023, Thm 3.8",
    statement="Walltime improvement over autoregressive decoding (1 − α^{γ+1}) / ((1 − α)(γc + 1)) "
              "in the cost model (draft call c, target call 1).",
    interpretation="Cost model: an iteration makes γ draft calls (time c each) and one parallel "
                   "target call (time 1); autoregressive decoding makes one target call per token. "
                   "Exact on order-0 pairs for γ = 1..4, c ∈ {0, 0.05, 0.2, 1}: E[tokens] by "
                   "enumeration over E[time] from the calls made. MC: the kernel's iterations "
                   "timed on simulated clocks that advance by each call's duration (Gamma call "
                   "times with means c and 1, so the formula must hold in expectation), ratio of "
                   "the two clocks against the formula.",
    check=check_walltime, subject=WT_STANDARD, controls=(CTRL_WT_NO_BONUS, CTRL_WT_SERIAL), mc_tests=1,
    shrink=shrinker(walltime, applies=("V", "order", "gamma", "c", "seed"), orders=(0,), extra={"c": WT_COSTS}))
