"""Your own claims, in one file (docs/your_claims.md walks through it).

A (made-up) paper proposes *typical acceptance*: accept the drafted token x when the target finds it
typical enough, p(x) ≥ min(ε, δ·exp(−H(p))), else draw a correction from norm(max(p − q, 0)) as
standard speculative sampling does. It claims two things, and we add one known claim as a sanity
check of our own code:

* ``example.lossless``: the emitted tokens follow the target p (law) — checked exactly and by Monte
  Carlo; it fails, and the report gives the smallest counterexample with the call that recomputes it;
* ``example.accepts_more``: it accepts at least as many draft tokens per iteration as standard SD (≥)
  — checked exactly on the built-in instances and where a seeded search finds it tightest;
* ``example.sd_lossless``: our own re-implementation of standard SD keeps p (it holds).

Run it:  spectheory verify --claims-from docs/examples/typical_acceptance.py --quick
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spectheory.sims.papers import Paper, add
from spectheory.sims.registry import Control, Reading, Scope, register
from spectheory.sims.shapes import each, grid, label, least_slack, mc_law, shrinker, sweep
from spectheory.sims.slack import PairSpace, search_pairs
from spectheory.distributions import residual
from spectheory.divergences import total_variation
from spectheory.exact import sd as exact_sd
from spectheory.rules.sd import TokenRule

add(Paper("example2026", "A. Example & B. Example", "Typical Acceptance for Speculative Decoding (a worked example)",
          "spectheory tutorial", 2026))

INSTANCES = ("iid-V4-random", "iid-V4-strong", "iid-V3-disjoint", "markov1-V3-mix0.4", "markov1-V4-weak")


# --- the rules, as data: the proposal, standard SD re-implemented, and broken variants ------------

@dataclass(frozen=True)
class TypicalAcceptance(TokenRule):
    """Accept x iff p(x) ≥ min(ε, δ·exp(−H(p))); on rejection draw from norm(max(p − q, 0))."""

    name: str = "typical"
    epsilon: float = 0.3
    delta: float = 0.6
    bonus: bool = True

    def threshold(self, p) -> float:
        p = np.asarray(p, dtype=np.float64)
        entropy = -float(np.sum(p[p > 0] * np.log(p[p > 0])))
        return min(self.epsilon, self.delta * np.exp(-entropy))

    def accept_probability(self, p, q):
        return (np.asarray(p, dtype=np.float64) >= self.threshold(p)).astype(np.float64)

    def residual_distribution(self, p, q):
        return residual(p, q)


@dataclass(frozen=True)
class RatioRule(TokenRule):
    """Standard speculative sampling written from the paper: accept w.p. min(1, p/q)."""

    name: str = "ratio"
    bonus: bool = True

    def accept_probability(self, p, q):
        p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(q > 0, np.minimum(1.0, p / np.where(q > 0, q, 1.0)), 1.0)

    def residual_distribution(self, p, q):
        return residual(p, q)


@dataclass(frozen=True)
class AcceptAll(TokenRule):
    """Negative control: accept every drafted token (emits the draft's law)."""

    name: str = "accept-all"
    bonus: bool = True

    def accept_probability(self, p, q):
        return np.ones_like(np.asarray(q, dtype=np.float64))

    def residual_distribution(self, p, q):
        return residual(p, q)


@dataclass(frozen=True)
class RejectAll(TokenRule):
    """Negative control: reject every drafted token (accepts nothing)."""

    name: str = "reject-all"
    bonus: bool = True

    def accept_probability(self, p, q):
        return np.zeros_like(np.asarray(q, dtype=np.float64))

    def residual_distribution(self, p, q):
        return np.asarray(p, dtype=np.float64)


TYPICAL, RATIO, ACCEPT_ALL, REJECT_ALL = TypicalAcceptance(), RatioRule(), AcceptAll(), RejectAll()


# --- measures: (claimed, measured) at one setting, used by the checks, the shrinker and the calls --

def lossless_tv(pair, rule, gamma: int = 1, n_tokens: int = 2):
    """(claimed 0, exact TV between the first ``n_tokens`` emitted tokens' law and p^n)."""
    law = exact_sd.first_tokens_distribution(pair, gamma, n_tokens, rule)
    return 0.0, float(total_variation(law, pair.target.sequence_probs(n_tokens)))


def accepted_vs_sd(pair, rule, gamma: int = 2):
    """(standard SD's exact E[tokens per iteration], the rule's), from state 0."""
    return exact_sd.expected_tokens(pair, gamma, RATIO), exact_sd.expected_tokens(pair, gamma, rule)


def slack_accepts(pair, rule=TYPICAL, gamma: int = 2):
    claimed, measured = accepted_vs_sd(pair, rule, gamma)
    return measured - claimed


def first_token_samples(pair, rule, n: int, rng) -> np.ndarray:
    """Monte Carlo: the first emitted token from state 0, ``n`` independent runs of one verification
    step (draft x ~ q, accept it w.p. accept_probability, else a correction), in plain NumPy."""
    p, q = pair.target.conditional(0), pair.draft.conditional(0)
    x = rng.choice(pair.V, size=n, p=q)
    accept = rng.random(n) < rule.accept_probability(p, q)[x]
    correction = rng.choice(pair.V, size=n, p=rule.residual_distribution(p, q))
    return np.where(accept, x, correction)


# --- checks: the subject (a rule) and every control go through the same comparisons ---------------

def check_lossless(ctx, rule):
    ev = each(INSTANCES, lambda name, pair: sweep(
        label(name, N=2), grid(gamma=(1, 2)), lambda gamma: lossless_tv(pair, rule, gamma),
        grade="distance", what="TV(first 2 emitted tokens, p²), max over γ"), get=ctx.get)
    for name in ("iid-V4-random", "markov1-V3-mix0.4"):
        pair = ctx.get(name)
        n = ctx.size(200_000, 40_000)
        toks = first_token_samples(pair, rule, n, ctx.rng(name))
        ev.append(mc_law(ctx, label(name, N=1), np.bincount(toks, minlength=pair.V), pair.target.conditional(0),
                         tolerance_w=0.05, note=f"{n} runs of one verification step (plain NumPy)"))
    return ev


def in_scope(pair, **settings):
    """The speed-up claim speaks about drafts that can propose every token p can emit."""
    for s in range(pair.n_states):
        if np.any((pair.target.conditional(s) > 0) & (pair.draft.conditional(s) == 0)):
            return f"the draft misses part of p's support (state {s})"
    return None


SCOPE = Scope("the draft puts mass on every token the target can emit", in_scope)


def check_accepts_more(ctx, rule):
    ev = each([n for n in INSTANCES if not in_scope(ctx.get(n))], lambda name, pair: sweep(
        label(name), grid(gamma=(1, 2, 3)), lambda gamma: accepted_vs_sd(pair, rule, gamma),
        grade="bound", side="ge", what="E[tokens] vs standard SD's"), get=ctx.get)
    ev.append(least_slack(ctx, "main", lambda: search_pairs(
        slack_accepts, PairSpace(V=3), budget=ctx.size(400, 150), restarts=3, settings={"rule": rule},
        scope=SCOPE)))
    return ev


register(
    id="example.lossless", relation="law", paper="example2026", reference="§2, Prop. 1",
    statement="Typical acceptance emits tokens distributed exactly as the target p.",
    readings=(Reading("paper", "The first emitted tokens follow p on any pair.", ("main",), role="principal",
                      quote="§2: 'typical acceptance keeps the target distribution while accepting more tokens'",
                      why="the proposition's own words; no assumption on the pair is stated"),),
    interpretation="Exact: TV of the first 2 emitted tokens against p² for γ = 1, 2 on five built-in pairs. "
                   "MC: chi-square of the first emitted token on two pairs.",
    check=check_lossless, subject=TYPICAL, mc_tests=2,
    controls=(Control("accept-all", ACCEPT_ALL, "negative control: accept every draft (emits q)"),),
    shrink=shrinker(lossless_tv, fails=lambda c, m: m > 1e-9, applies=("V", "order", "gamma", "seed"),
                    gammas=(1, 2)))

register(
    id="example.accepts_more", relation="≥", paper="example2026", reference="§3, Prop. 2",
    statement="Typical acceptance accepts at least as many tokens per iteration as standard SD.",
    readings=(Reading("paper", "E[tokens per iteration] ≥ standard SD's, every γ, any covered pair.", ("main",),
                      role="principal", quote="§3: 'it never accepts fewer tokens than rejection sampling'",
                      why="the proposition as stated"),),
    scope=SCOPE,
    interpretation="Exact expected tokens per iteration from state 0, γ = 1..3, on the built-in pairs whose draft "
                   "covers p, and at the least-slack V = 3 pair of a seeded search.",
    check=check_accepts_more, subject=TYPICAL, modes=("exact",),
    controls=(Control("reject-all", REJECT_ALL, "negative control: a rule that accepts nothing"),),
    shrink=shrinker(accepted_vs_sd, fails=lambda c, m: m < c - 1e-12, applies=("V", "order", "gamma", "seed"),
                    gammas=(1, 2), scope=SCOPE))

register(
    id="example.sd_lossless", relation="law", paper="leviathan2023", reference="Thm 3.5",
    statement="Standard speculative sampling (our own re-implementation) emits tokens distributed as p.",
    interpretation="The same checks as example.lossless, run on our RatioRule: a sanity check of this file.",
    check=check_lossless, subject=RATIO, mc_tests=2,
    controls=(Control("typical acceptance", TYPICAL, "negative control: the lossy proposal"),
              Control("accept-all", ACCEPT_ALL, "negative control: accept every draft (emits q)")))
