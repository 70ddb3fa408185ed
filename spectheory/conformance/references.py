"""Reference block verifiers written as plain callables ``(p, q, draft, rng) -> tokens``,
the shape a user's code is tested in (probability inputs, unbatched, NumPy).

``reference_verifier`` is standard speculative sampling (Leviathan et al. 2023, Alg. 1) made
float-safe: accept x iff u < p(x)/q(x) (strict: u = 0 never accepts a token with p = 0),
correction from norm(max(p − q, 0)) falling back to p where that residual has no mass (p = q:
rejection has probability 0 in exact arithmetic), inverse-CDF draws that never return a
zero-mass token. :func:`rule_verifier` wraps the rules of :mod:`spectheory.rules.sd` (the
broken ones are the negative controls), and the functions below are three further bugs seen
in real implementations; the conformance checks must reject every one of them.

:func:`accept_p_verifier` is a *lossless* verifier that is not Alg. 1: it treats the drafted
token as if it were deterministic — accept x with probability p(x), else emit a draw from p
without x. Position by position the emitted token has law q(y)p(y) + Σ_{x≠y} q(x)(1 − p(x))·
p(y)/(1 − p(x)) = p(y), so it holds every lossless check (tests/test_conformance_groups.py checks
it by exact enumeration) and fails the block law, acceptance β(s), E[τ] and tokens per call: the
negative control of the "matches standard speculative sampling" checks.
"""
from __future__ import annotations

import numpy as np

from ..rules.sd import BROKEN_NO_BONUS, BROKEN_RESIDUAL_P, BROKEN_SWAPPED_RATIO, STANDARD, SDRule
from .forced import inverse_cdf


def _ratio(p: float, q: float) -> float:
    if q > 0:
        return min(1.0, p / q)
    return 1.0 if p > 0 else 0.0


def _residual(p_row, q_row, guard: bool = True, floor: float = 0.0):
    r = np.maximum(np.asarray(p_row, np.float64) - np.asarray(q_row, np.float64), floor)
    s = r.sum()
    if s <= 0 and guard:
        return np.asarray(p_row, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return r / s  # unguarded: 0/0 = NaN where p = q


def rule_verifier(rule: SDRule = STANDARD, *, strict: bool = True, bonus_row: int = 0,
                  guard_residual: bool = True, floor: float = 0.0, name: str | None = None):
    """A block verifier following ``rule``; the keyword switches insert the classic bugs:
    ``strict=False`` accepts on ``u ≤ ratio``, ``bonus_row=-1`` draws the bonus from the row
    before the bonus position, ``guard_residual=False`` divides a zero-mass residual (NaN),
    ``floor`` clamps the residual from below (every token keeps that mass: ``clamp(p − q,
    min=floor)``, a serving engine's bug that gives tokens with p = 0 mass growing with V)."""
    if not isinstance(rule, SDRule):
        raise TypeError(f"rule must be an SDRule (spectheory.rules.sd), got {type(rule).__name__}")
    if bonus_row not in (0, -1) or isinstance(bonus_row, bool):
        raise ValueError(f"bonus_row must be 0 (the bonus position) or -1 (the broken control), got {bonus_row!r}")

    def verify(p, q, draft, rng):
        p = np.asarray(p, dtype=np.float64)
        q = np.asarray(q, dtype=np.float64)
        draft = [int(x) for x in draft]
        for i, x in enumerate(draft):
            u = rng.random()
            if rule.accept == "ratio":
                ratio = _ratio(p[i, x], q[i, x])
            else:
                ratio = _ratio(q[i, x], p[i, x])
            if (u < ratio) if strict else (u <= ratio):
                continue
            dist = p[i] if rule.residual == "p" else _residual(p[i], q[i], guard_residual, floor)
            return draft[:i] + [inverse_cdf(dist, rng.random())]
        if not rule.bonus:
            return draft
        row = p[len(draft) + bonus_row]
        return draft + [inverse_cdf(row, rng.random())]

    verify.__name__ = verify.__qualname__ = name or f"rule_verifier[{rule.name}]"
    return verify


reference_verifier = rule_verifier(STANDARD, name="reference_verifier")


def accept_p_verifier(p, q, draft, rng):
    """Lossless, not Alg. 1: accept the drafted x with probability p(x) (u < p(x)); on a
    rejection emit a draw from p with x removed (renormalised); after γ accepts, a bonus from
    the last row. Rejecting x is only possible when p(x) < 1, so p without x has mass."""
    p = np.asarray(p, dtype=np.float64)
    draft = [int(x) for x in draft]
    for i, x in enumerate(draft):
        if rng.random() < p[i, x]:
            continue
        rest = p[i].copy()
        rest[x] = 0.0
        if rest.sum() <= 0:  # p(x) = 1 up to rounding and u landed above it: emit x's only option
            rest = p[i]
        return draft[:i] + [inverse_cdf(rest, rng.random())]
    return draft + [inverse_cdf(p[len(draft)], rng.random())]

#: Negative controls: (name, callable, description).
CONTROLS = (
    ("residual=norm(p)", rule_verifier(BROKEN_RESIDUAL_P), BROKEN_RESIDUAL_P.description),
    ("accept=min(1,q/p)", rule_verifier(BROKEN_SWAPPED_RATIO), BROKEN_SWAPPED_RATIO.description),
    ("no-bonus", rule_verifier(BROKEN_NO_BONUS), BROKEN_NO_BONUS.description),
    ("bonus-from-row-γ−1", rule_verifier(bonus_row=-1, name="bonus-from-row-γ−1"),
     "negative control: the bonus token drawn from p at the last drafted position instead of the "
     "bonus position (invisible on i.i.d. sources)"),
    ("accept-u≤ratio", rule_verifier(strict=False, name="accept-u≤ratio"),
     "negative control: accept on u ≤ p/q, so u = 0 accepts a drafted token with p = 0"),
    ("unguarded-residual", rule_verifier(guard_residual=False, name="unguarded-residual"),
     "negative control: the residual max(p−q,0) divided by its sum without a guard: NaN when "
     "rounding makes p ≤ q everywhere and the draft is rejected"),
    ("residual-clamped-1e-5", rule_verifier(floor=1e-5, name="residual-clamped-1e-5"),
     "negative control of impossible_tokens: the residual clamped from below at 1e-5 (clamp(p − q, min=1e-5)), so "
     "every token, p = 0 ones included, keeps mass in the correction: ~V·1e-5, which grows with the vocabulary"),
    ("lossless:accept=p(x)", accept_p_verifier,
     "negative control of the standard-SD checks (lossless, not Alg. 1): accept the draft x with "
     "probability p(x), else a draw from p without x"),
)
