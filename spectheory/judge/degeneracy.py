"""The one non-degeneracy rule, declared once (every strict claim applies it through its scope).

A claim that something *strictly* increases, decreases or improves speaks only of instances where
that quantity can move. On an instance where it cannot — the draft equals the target, every
drafted token is accepted anyway, the draft is a point mass (every draft and branch is the same
token), the ensemble weight λ = 1 (the ensemble is the proposer), or the quantity already sits at
its cap (saturation) — a strict inequality can only be met with equality. Such an instance is
**outside the claim's scope**: the equality there (a tie) is reported beside the headline, never
graded as a failure and never counted as support.

The rule is data (:data:`CASES`) and two functions: :func:`cannot_move` detects the cases that can
be read from numbers (the rows of p and q, λ, an acceptance rate), and :func:`degenerate` words a
case a claim detects itself (a saturated cap) the same way, so every report names it alike.
:func:`case_of` reads the case back from a scope reason. Numbers only: the judge knows nothing of
pairs, claims or papers (a claim's scope passes the rows it has).
"""
from __future__ import annotations

import numpy as np

#: the rule in one sentence (docs/readings.md and docs/architecture.md quote it)
RULE = ("An instance on which the quantity a strict-monotonicity or strict-improvement claim says moves cannot "
        "move (q = p, acceptance 1, a point-mass draft, λ = 1, a quantity at its cap) is outside that claim's "
        "scope; the tie there is reported beside the headline, never graded.")

#: the cases of the rule: why the quantity cannot move in each
CASES = {
    "q = p": "the draft equals the target in every context reached: every drafted token is accepted, so nothing "
             "the claim varies can change the outcome",
    "acceptance 1": "every drafted token is accepted (Σ min(p, q) = 1 in every context reached): there is nothing "
                    "left to improve",
    "point-mass draft": "the draft puts all its mass on one token in every context reached: every draft and every "
                        "branch is the same token, so more of them change nothing",
    "λ = 1": "the ensemble weight λ = 1: the ensemble is the proposer itself and acceptance is 1",
    "saturation": "the quantity already sits at its cap, so it cannot rise further",
}
#: how every degenerate scope reason starts (:func:`case_of` reads the case back)
PREFIX = "degenerate instance"
TOL = 1e-12


def degenerate(case: str, detail: str = "") -> str:
    """The scope reason of a degenerate instance: ``degenerate instance (q = p): <why>; <detail>``."""
    if case not in CASES:
        raise ValueError(f"unknown degeneracy case {case!r}; the rule's cases: {', '.join(CASES)}")
    return f"{PREFIX} ({case}): {CASES[case]}" + (f"; {detail}" if detail else "")


def case_of(reason: str | None) -> str | None:
    """The rule's case a scope reason names (None when the reason is not a degeneracy)."""
    if not reason or not reason.startswith(PREFIX + " ("):
        return None
    case = reason[len(PREFIX) + 2:].split(")", 1)[0]
    return case if case in CASES else None


def _rows(x, reached):
    a = np.atleast_2d(np.asarray(x, dtype=np.float64))
    if reached is None:
        return a
    mask = np.asarray(reached, dtype=bool)
    return a[mask] if mask.shape == (a.shape[0],) else a


def cannot_move(cases, *, p=None, q=None, reached=None, lam=None, acceptance=None, tol: float = TOL) -> str | None:
    """The degenerate scope reason for the first of ``cases`` (names of :data:`CASES`) that holds,
    else None. ``p``, ``q``: next-token rows (one row or one per context), ``reached``: which
    contexts count (a boolean mask, default all); ``lam``: an ensemble weight; ``acceptance``: an
    acceptance rate (or one per context). ``saturation`` is not read from numbers: a claim words
    it with :func:`degenerate`."""
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        raise ValueError(f"unknown degeneracy case(s) {unknown}; the rule's cases: {', '.join(CASES)}")
    for case in cases:
        if case == "q = p" and p is not None and q is not None:
            P, Q = _rows(p, reached), _rows(q, reached)
            if P.shape == Q.shape and P.size and float(np.abs(P - Q).max()) <= tol:
                return degenerate(case)
        elif case == "acceptance 1":
            if acceptance is not None:
                a = np.asarray(acceptance, dtype=np.float64)
                if a.size and float(a.min()) >= 1.0 - tol:
                    return degenerate(case, f"acceptance {float(a.min()):.12g}")
            elif p is not None and q is not None:
                P, Q = _rows(p, reached), _rows(q, reached)
                if P.shape == Q.shape and P.size and float(np.minimum(P, Q).sum(axis=1).min()) >= 1.0 - tol:
                    return degenerate(case)
        elif case == "point-mass draft" and q is not None:
            Q = _rows(q, reached)
            if Q.size and float(Q.max(axis=1).min()) >= 1.0 - tol:
                return degenerate(case)
        elif case == "λ = 1" and lam is not None and abs(float(lam) - 1.0) <= tol:
            return degenerate(case)
    return None
