"""The recurring shapes of a claim's check, named once (docs/architecture.md, "Check shapes").

A claim module is its statement, its reading, its parts, its instances and the one function
that is really specific to the claim (a *measure*: settings in, claimed and measured values out).
The rest is one of these shapes, and the subject and every negative control go through exactly
the same ones (the runner calls the same check with each):

* :func:`each`: one comparison per instance, in order (the instance loop);
* :func:`sweep`: a parameter sweep graded point by point: every point is compared, the worst
  point is shown (claimed, measured, outcome), every point is kept (``Evidence.points``);
  ``grade="equal"`` (exact value), ``"distance"`` (a distance that must be 0), ``"bound"``
  (an inequality: the point of least slack is shown);
* :func:`mc_law`, :func:`mc_mean`, :func:`mc_bound`, :func:`mc_per_state`: one Monte Carlo test
  against the exact or claimed value, at the report's per-test level, counted for the
  Bonferroni split (``ctx.mc``);
* :func:`least_slack`: a bound checked where it is tightest: the shared search of
  :mod:`spectheory.sims.slack` finds the instance of least slack, the part records it, and the instance is
  graded (so a wrong constant fails there);
* :func:`shrinker`: the claim's ``shrink`` from its measure: the smallest failing instance
  (:mod:`spectheory.sims.shrink`), with only the settings that apply and the one-line call that
  recomputes it.

Every helper takes ``part=`` to tag its evidence with a part of the claim (or use
``with ctx.part("id"):``).
"""
from __future__ import annotations

import itertools
import math
from typing import Callable, Iterable

from spectheory import instances as inst
from spectheory.judge import stats
from spectheory.judge.evidence import Evidence

from .shrink import Expr, call_line, expr_of, smallest_counterexample
from .slack import LeastSlack


def label(name: str, **settings) -> str:
    """An evidence's instance label: the instance name, then ``key=value`` per setting."""
    return name + "".join(f" {k}={v}" for k, v in settings.items())


def grid(**axes) -> list[dict]:
    """The points of a Cartesian grid, first axis outermost: ``grid(gamma=(1, 2), c=(0, 1))``."""
    keys = list(axes)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(tuple(axes[k]) for k in keys))]


def _tag(ev, part):
    if part is not None:
        for e in ev if isinstance(ev, list) else [ev]:
            e.part = part
    return ev


def each(names: Iterable[str], compare: Callable, *, get: Callable = inst.get, part: str | None = None,
         strict: bool = False) -> list[Evidence]:
    """``compare(name, pair)`` for each instance name in order (``get(name)`` builds the pair);
    it returns one Evidence, a list, or None. The evidence, flattened, in instance order.
    ``strict``: the comparisons grade a strict inequality (< or >): a fail whose claimed and
    measured agree within the exact tolerance is marked a tie (:func:`mark_ties`)."""
    out = []
    for name in names:
        r = compare(name, get(name))
        if r is None:
            continue
        out += r if isinstance(r, list) else [r]
    if strict:
        mark_ties(out)
    return _tag(out, part)


def is_tie(claimed, measured, tol: float = stats.EXACT_TOL) -> bool:
    """Claimed and measured equal within ``tol`` (relative for large values, as the exact bounds)."""
    try:
        c, m = float(claimed), float(measured)
    except (TypeError, ValueError):
        return False
    if not (math.isfinite(c) and math.isfinite(m)):
        return False
    return abs(m - c) <= tol * max(1.0, abs(c))


def mark_ties(evidence, tol: float = stats.EXACT_TOL) -> list:
    """Mark every ``fail`` of a strict inequality whose claimed and measured agree within ``tol``
    as a tie (``Evidence.tie``: "fails by equality (tie)", issue 24 item 4). Returns the list."""
    for e in evidence if isinstance(evidence, list) else [evidence]:
        if e.outcome == "fail" and is_tie(e.claimed, e.measured, tol):
            e.tie = True
            if "tie" not in e.note:
                e.note = "; ".join(x for x in (e.note, "fails by equality (tie): claimed = measured within "
                                                        f"{tol:g}") if x)
    return evidence


def strict_bound(instance: str, bound, measured, *, side: str = "gt", tol: float = stats.EXACT_TOL,
                 what: str = "value", note: str = "") -> Evidence:
    """An exact strict inequality: ``measured > bound`` (side "gt") or ``measured < bound``
    ("lt"), by more than ``tol`` (relative for large values). Equality within ``tol`` fails as a
    tie (``Evidence.tie``); a violation beyond it fails strictly."""
    if side not in ("gt", "lt"):
        raise ValueError(f"side must be 'gt' or 'lt', got {side!r}")
    b, m = float(bound), float(measured)
    gap = (m - b) if side == "gt" else (b - m)
    slack = tol * max(1.0, abs(b)) if math.isfinite(b) else 0.0
    tie = abs(gap) <= slack
    ev = Evidence("exact", instance, b, m, test=f"exact {what} {'>' if side == 'gt' else '<'} bound (strict; "
                                                 f"equality within tol {tol:g} is a tie)",
                  tolerance=tol, outcome="pass" if gap > slack else "fail", note=note, slack=gap)
    if tie:
        ev.tie = True
        ev.note = "; ".join(x for x in (note, f"fails by equality (tie): |measured − bound| = {abs(gap):.3g} ≤ "
                                              f"{slack:.3g}") if x)
    return ev


_GRADES = ("equal", "distance", "bound")


def sweep(instance, points: Iterable[dict], measure: Callable, *, grade: str = "equal", side: str = "ge",
          worst: Callable | None = None, tol: float | None = None, what: str = "value", note=None,
          judge: Callable | None = None, keep: bool = True, part: str | None = None) -> Evidence:
    """Grade a sweep point by point and show its worst point.

    ``instance``: the evidence's label, or ``instance(point) -> str`` to name the worst point in it.
    ``measure(**point) -> (claimed, measured[, details])`` at each point. ``grade``: "equal"
    (exact equality, worst = largest |claimed − measured|), "distance" (claimed 0, worst =
    largest measured), "bound" (``measured ≥ claimed`` for side "ge", ``≤`` for "le", strictly
    ``>`` / ``<`` for "gt" / "lt", where equality within the tolerance fails as a tie,
    :func:`strict_bound`; worst = least slack). ``worst(claimed, measured, details, point) -> badness`` overrides the choice
    (largest badness; ties keep the first point). ``note``: a string or ``note(point, claimed,
    measured, details)``. The evidence is the worst point's comparison; ``keep`` stores every
    point with its own outcome in ``Evidence.points``. ``judge(instance, claimed, measured,
    note) -> Evidence`` replaces the comparison (e.g. :func:`clipped_bound`, :func:`shortfall`:
    the encodings some families report bounds in)."""
    if grade not in _GRADES:
        raise ValueError(f"grade must be one of {_GRADES}, got {grade!r}")
    if side not in ("ge", "le", "gt", "lt"):
        raise ValueError(f"side must be 'ge', 'le', 'gt' or 'lt', got {side!r}")
    rows = []
    for pt in points:
        out = measure(**pt)
        rows.append((pt, float(out[0]), float(out[1]), out[2] if len(out) > 2 else None))
    if not rows:
        raise ValueError(f"sweep {instance if isinstance(instance, str) else ''}: no points")
    if worst is None:
        worst = {"equal": lambda c, m, d, p: abs(c - m),
                 "distance": lambda c, m, d, p: m,
                 "bound": (lambda c, m, d, p: c - m) if side in ("ge", "gt") else (lambda c, m, d, p: m - c)}[grade]
    pt, c, m, d = max(rows, key=lambda r: worst(r[1], r[2], r[3], r[0]))
    text = note(pt, c, m, d) if callable(note) else (note or "")
    compare = judge or (lambda i, ci, mi, n: _grade(i, grade, side, ci, mi, tol, what, n))
    name = instance(pt) if callable(instance) else instance
    ev = compare(name, c, m, text)
    if keep:
        ev.points = [{**p, "claimed": ci, "measured": mi, "outcome": compare(name, ci, mi, "").outcome}
                     for p, ci, mi, _ in rows]
    return _tag(ev, part)


def clipped_bound(side: str = "ge", *, strict: bool = False, tol: float = stats.EXACT_TOL, what: str = "value"):
    """A ``judge`` for :func:`sweep`: an exact bound reported as an equality, ``claimed`` = the
    bound and ``measured`` = the bound while it holds, the offending value when it does not
    (``strict``: > or <, by more than ``tol``; else ≥ / ≤ within ``tol``, absolute)."""
    def judge(instance, bound, value, note):
        if side == "ge":
            ok = value > bound + tol if strict else value >= bound - tol
        else:
            ok = value < bound - tol if strict else value <= bound + tol
        ev = stats.exact_equal(instance, bound, bound if ok else value, what=what, note=note)
        ev.slack = (value - bound) if side == "ge" else (bound - value)
        if strict and not ok and abs(value - bound) <= tol:  # a strict inequality met with equality
            ev.outcome, ev.tie = "fail", True
            ev.note = "; ".join(x for x in (note, f"fails by equality (tie): |value − bound| ≤ {tol:g}") if x)
        return ev
    return judge


def shortfall(*, shift: float = 0.0, what: str = "shortfall"):
    """A ``judge`` for :func:`sweep` whose measure returns (0, a − b) for a claim a ≥ b: reported
    as claimed 0 and measured min(0, a − b + shift) (0 while the ordering holds)."""
    def judge(instance, zero, diff, note):
        ev = stats.exact_equal(instance, 0.0, min(0.0, diff + shift), what=what, note=note)
        ev.slack = diff + shift
        return ev
    return judge


def _grade(instance, grade, side, c, m, tol, what, note) -> Evidence:
    if grade == "equal":
        return stats.exact_equal(instance, c, m, tol=stats.EXACT_TOL if tol is None else tol, what=what, note=note)
    if grade == "distance":
        return stats.exact_distance(instance, m, tol=1e-12 if tol is None else tol, what=what, note=note)
    if side in ("gt", "lt"):
        return strict_bound(instance, c, m, side=side, tol=stats.EXACT_TOL if tol is None else tol, what=what,
                            note=note)
    return stats.exact_bound(instance, c, m, side=side, tol=stats.EXACT_TOL if tol is None else tol, what=what,
                             note=note)


def in_scope(ctx, pair, ev, *, rule_only: bool = False, **settings):
    """``ev`` (an Evidence or a list) kept graded when ``pair`` (with ``settings``) is inside the
    claim's scope, else labelled outside it (``ctx.outside``: info, never a counterexample; a
    degenerate instance under the non-degeneracy rule is one such). Every instance a strict part is
    graded on goes through the scope this way (or through ``ctx.out_of_scope`` itself).
    ``rule_only``: the non-degeneracy rule alone (``ctx.degenerate``), for instances chosen outside
    the claim's own guard on purpose (a negative control's sources)."""
    part = next((e.part for e in (ev if isinstance(ev, list) else [ev]) if e.part is not None), None)
    why = (ctx.degenerate(pair, part=part, **settings) if rule_only
           else ctx.out_of_scope(pair, part=part, **settings))
    if why:
        for e in ev if isinstance(ev, list) else [ev]:
            ctx.outside(e, why)
            for pt in e.points or ():
                pt["outcome"] = "info"
    return ev


# --- Monte Carlo against the exact or claimed value -------------------------------------------

def mc_law(ctx, instance: str, counts, probs, *, tolerance_w: float, note: str = "", part=None) -> Evidence:
    """Chi-square goodness of fit of observed counts to the exact law (cells pooled to ≥ 5)."""
    return _tag(ctx.mc(stats.chisquare_gof(instance, counts, probs, alpha=ctx.alpha_test, tolerance_w=tolerance_w,
                                           note=note)), part)


def mc_mean(ctx, instance: str, claimed: float, samples=None, *, mean=None, se=None, n=None, tolerance: float,
            what: str = "mean", note: str = "", part=None) -> Evidence:
    """Two-sided z-test of a simulated mean against the claimed (or exact) value."""
    return _tag(ctx.mc(stats.z_test_mean(instance, claimed, samples, mean=mean, se=se, n=n, alpha=ctx.alpha_test,
                                         tolerance=tolerance, what=what, note=note)), part)


def mc_bound(ctx, instance: str, bound: float, samples=None, *, side: str, mean=None, se=None, n=None,
             tolerance: float, what: str = "mean", note: str = "", part=None) -> Evidence:
    """One-sided z-test of a simulated mean against a bound (side "ge": mean ≥ bound)."""
    return _tag(ctx.mc(stats.z_test_bound(instance, bound, samples, mean=mean, se=se, n=n, side=side,
                                          alpha=ctx.alpha_test, tolerance=tolerance, what=what, note=note)), part)


def mc_per_state(ctx, instance: str, attempts, accepts, beta, *, tolerance: float, note: str = "",
                 part=None) -> Evidence:
    """Acceptance counts per state of a simulated stream against the exact β(s)."""
    return _tag(ctx.mc(stats.per_state_binomial(instance, attempts, accepts, beta, alpha=ctx.alpha_test,
                                                tolerance=tolerance, note=note)), part)


# --- bounds where they are tightest -------------------------------------------------------------

def least_slack(ctx, part: str, search: Callable[[], LeastSlack], *, instance: str = "least-slack instance",
                what: str = "slack of the bound", tol: float = stats.EXACT_TOL) -> Evidence:
    """Run ``search()`` (a :mod:`spectheory.sims.slack` search, e.g. ``lambda: slack.search_pairs(f, space)``),
    record its :class:`~spectheory.sims.slack.LeastSlack` on ``part`` and grade the instance it found: the
    least slack must be ≥ 0 (exact, ``tol``). A bound with a wrong constant or term (a control)
    fails on the instance where the correct one is tightest."""
    rec = search()
    ctx.least_slack(part, rec)
    known = next((p for p in getattr(ctx, "parts", ()) if p.id == part), None)
    name = f"{instance} ({rec.search.split(';')[0]})"
    if known is not None and known.relation in ("<", ">"):  # strict: zero slack is a tie, not a pass
        ev = strict_bound(name, 0.0, rec.value, side="gt", tol=tol, what=what, note=f"instance: {rec.call}")
    else:
        ev = stats.exact_bound(name, 0.0, rec.value, side="ge", tol=tol, what=what, note=f"instance: {rec.call}")
    return _tag(ev, part)


# --- counterexamples ----------------------------------------------------------------------------

def differs(claimed: float, measured: float, tol: float = stats.EXACT_TOL) -> bool:
    """The default failure of a shrunk equality: |claimed − measured| > tol."""
    return abs(claimed - measured) > tol


def shrinker(measure: Callable, *, fails: Callable[[float, float], bool] = differs,
             applies=("V", "order", "gamma", "seed"), modules: tuple[str, ...] = (), part: str | None = None,
             scope=None, **search) -> Callable:
    """A claim's ``shrink(ctx, subject)`` from its measure.

    ``measure(pair, subject, **settings) -> (claimed, measured[, details])``, a module-level
    function (the counterexample's ``call`` names it); ``settings`` are the algorithm settings
    that apply (of gamma, K and the ``extra`` axes). ``fails(claimed, measured)`` decides a
    failure. ``applies``: the settings reported (and the only ones that may vary); ``search``:
    the grid of :func:`spectheory.sims.shrink.smallest_counterexample` (V_values, orders, gammas,
    K_values, seeds, extra, pair_factory). ``modules``: where to look for the subject's name in
    the call (besides the measure's module and the subject's own). ``scope``: the claim's
    :class:`spectheory.sims.registry.Scope` (or any ``guard(pair, **settings)``); candidates outside it are
    skipped, never returned as counterexamples (issue 24, item 2)."""
    guard = getattr(scope, "why_out", scope)

    def shrink(ctx, subject):
        subj = expr_of(subject, measure.__module__, *modules)

        def settings_of(gamma, K, kw):
            return {k: v for k, v in {"gamma": gamma, "K": K, **kw}.items() if k in applies}

        def check(pair, gamma, K, **kw):
            out = measure(pair, subject, **settings_of(gamma, K, kw))
            return (fails(out[0], out[1]), *out)

        def outside(pair, gamma, K, **kw):
            return guard(pair, **settings_of(gamma, K, kw))

        def call(source, **settings):
            return call_line(measure, Expr(source), Expr(subj) if subj else Expr("SUBJECT"), **settings)

        found: list = []
        cex = smallest_counterexample(check, applies=applies, call=call, outside=None if guard is None else outside,
                                      found_outside=found, **search)
        for f in found:  # a failure outside the scope is a finding, never a counterexample
            if part is not None:
                f["part"] = part
            getattr(ctx, "scope_findings", []).append(
                {"part": f.get("part"), "instance": f.get("source", ""), "reason": f.pop("reason"),
                 "claimed": f.get("claimed"), "measured": f.get("measured"), "call": f.get("call"),
                 "settings": {k: v for k, v in f.items() if k not in ("source", "claimed", "measured", "call", "part")}})
        if cex is not None and part is not None:
            cex["part"] = part
        return cex
    return shrink
