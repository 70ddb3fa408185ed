"""The one non-degeneracy rule (issue 34, item 2): declared once in the judge
(``spectheory.judge.degeneracy``), applied by every claim with a strict-monotonicity or
strict-improvement part through its scope. The walk: every such claim declares the rule's cases
its quantity cannot move in; every built-in instance (and every family's own) that the rule calls
degenerate for those cases is outside the claim's scope; and the tie found on a degenerate
instance is reported beside the headline, never graded."""
import numpy as np
import pytest

from spectheory.sims import registry
from spectheory.sims.registry import Control, Part, Scope, degenerate_reason, load_all
from spectheory.sims.report import beside
from spectheory.sims.runner import run_claims
from spectheory.sims.shapes import in_scope
from spectheory import instances as inst
from spectheory.judge import degeneracy as D
from spectheory.judge import stats
from spectheory.markov import MarkovPair, MarkovSource
from spectheory.pairs import pair_from_tables, random_pair


def test_the_rule_reads_each_case_from_numbers():
    p = np.array([[0.5, 0.5], [0.9, 0.1]])
    assert D.case_of(D.cannot_move(("q = p",), p=p, q=p.copy())) == "q = p"
    assert D.cannot_move(("q = p",), p=p, q=p[::-1]) is None
    assert D.case_of(D.cannot_move(("point-mass draft",), q=[[0.0, 1.0], [1.0, 0.0]])) == "point-mass draft"
    assert D.cannot_move(("point-mass draft",), q=[[0.0, 1.0], [0.5, 0.5]]) is None
    # only the contexts the target reaches count
    assert D.case_of(D.cannot_move(("point-mass draft",), q=[[0.0, 1.0], [0.5, 0.5]], reached=[True, False]))
    assert D.case_of(D.cannot_move(("acceptance 1",), acceptance=[1.0, 1.0])) == "acceptance 1"
    assert D.cannot_move(("acceptance 1",), acceptance=[1.0, 0.99]) is None
    assert D.case_of(D.cannot_move(("λ = 1",), lam=1.0)) == "λ = 1" and D.cannot_move(("λ = 1",), lam=0.9) is None
    assert D.cannot_move(("q = p",), p=p, q=p, lam=1.0) is not None and D.cannot_move((), p=p, q=p) is None
    sat = D.degenerate("saturation", "at its cap")
    assert D.case_of(sat) == "saturation" and sat.endswith("at its cap") and D.case_of("V = 2: no vote") is None
    with pytest.raises(ValueError, match="unknown degeneracy case"):
        D.degenerate("p = 0")
    with pytest.raises(ValueError, match="unknown degeneracy case"):
        D.cannot_move(("p = 0",))


def _equal_pair(V=3, order=1, seed=5):
    p = random_pair(V, order, seed=seed)
    return MarkovPair(p.target, p.target, f"equal-V{V}-o{order}")


def _point_mass_pair(V=3):
    q = np.zeros((V, V))
    q[:, 0] = 1.0
    p = random_pair(V, 1, seed=3)
    return MarkovPair(p.target, MarkovSource(q, 1), f"point-mass-V{V}")


def _instances():
    """Every built-in instance and every family's own: the sb and ersd families' builders, the ecsv
    family's sources (V = 3, V = 8, the drafting sources)."""
    from spectheory.sims.claims import ecsv, ersd, sb
    out = {n: inst.get(n) for n in inst.names()}
    out.update({n: sb.pair(n) for n in sb._BUILDERS})
    out.update({n: ersd.get(n) for n in ersd._LOCAL if "V50" not in n})
    out.update({f"ecsv {n}": p for n, p in {**ecsv.small_sources(), **ecsv.drafting_sources()}.items()})
    out["ecsv averaged"] = ecsv.averaged_drafting_source()
    return out


STRICT = [c for c in load_all().values() if c.strict_parts]


def test_every_strict_claim_declares_the_rule():
    assert len(STRICT) >= 9  # the walk below is not vacuous
    for c in STRICT:
        assert c.scope is not None and c.scope.degenerate is not None, c.id
        assert set(c.scope.degenerate) <= set(D.CASES), c.id
        assert "degenera" in c.scope.statement.lower() or not c.scope.degenerate, c.id  # the scope says so


@pytest.mark.parametrize("claim", STRICT, ids=lambda c: c.id)
def test_every_degenerate_instance_is_outside_the_scope(claim):
    """The walk: each instance the rule calls degenerate for the claim's declared cases is outside its
    scope, with the rule's reason (the guard's own reasons come after the rule's)."""
    cases = claim.scope.degenerate
    readable = [c for c in cases if c in ("q = p", "point-mass draft", "acceptance 1")]
    probes = dict(_instances(), equal=_equal_pair(), point_mass=_point_mass_pair())
    flagged = 0
    for name, pair in probes.items():
        why = degenerate_reason(readable, pair)
        if why is None:
            continue
        flagged += 1
        out = claim.scope.why_out(pair)
        assert D.case_of(out) is not None, (claim.id, name, out)
    if readable:
        assert flagged >= 1, claim.id  # the q = p probe at least
    if "λ = 1" in cases:
        assert D.case_of(claim.scope.why_out(None, lam=1.0)) == "λ = 1"


def test_the_built_in_degenerate_instances_are_the_expected_ones():
    flagged = {n for n, p in _instances().items() if degenerate_reason(("q = p", "point-mass draft"), p)}
    assert {"iid-V3-equal", "markov1-V3-equal"} <= flagged and "iid-V4-random" not in flagged


# --- on a toy claim: the tie goes beside the headline ------------------------------------------------------

@pytest.fixture
def empty_registry(monkeypatch):
    monkeypatch.setattr(registry, "REGISTRY", {})


def test_a_tie_on_a_degenerate_instance_is_reported_beside_and_not_graded(empty_registry):
    """'Bound(K) strictly increases' on q = p is a tie, not a failure: the instance is outside the
    scope (the rule), the headline holds on the others, and the tie is shown beside it."""
    pairs = {"generic": random_pair(3, 1, seed=2), "equal": _equal_pair()}

    def check(ctx, subject):
        out = []
        for name, pair in pairs.items():
            if name == "equal":  # a count-encoded tie (2 steps K → K+1 that do not rise, none falls)
                e = stats.exact_equal(name, 0.0, 2.0, what="steps that do not rise")
                e.tie, e.note = True, "fails by equality (tie)"
            else:
                e = stats.exact_bound(name, 0.0, 0.1 if subject == "good" else -0.1, side="ge")
            out.append(in_scope(ctx, pair, e))
        return out
    registry.register(id="toy.deg", paper="leviathan2023", reference="§1", statement="strictly increases",
                      parts=(Part("rises", "strictly increases", "monotone", strict=True),), modes=("exact",),
                      scope=Scope("drafts that can move (non-degeneracy: q = p is outside)", degenerate=("q = p",)),
                      check=check, subject="good", controls=(Control("bad", "bad", "broken"),))
    c = run_claims("toy.*", progress=False)["claims"][0]
    assert c["verdict"] == "holds"
    assert c["degenerate"] == [{"case": "q = p", "part": "rises", "instance": "equal", "tie": True}]
    assert c["scope"]["checked"] == 2 and c["scope"]["degenerate_cases"] == ["q = p"]
    assert beside(c) == ["tie outside the scope, degenerate: q = p (equal)"]
    outside = c["scope"]["out_of_scope"]
    assert len(outside) == 1 and outside[0]["reason"].startswith("degenerate instance (q = p)")


def test_rule_only_scoping_keeps_a_controls_instances_graded(empty_registry):
    """``in_scope(..., rule_only=True)`` applies the rule alone: an instance the claim's own guard would
    exclude stays graded (a negative control's sources), a degenerate one does not."""
    from spectheory.sims.registry import Context
    ctx = Context(claim_id="toy", scope=Scope("x", guard=lambda pair, **_: "the guard says no", degenerate=("q = p",)))
    kept = in_scope(ctx, random_pair(3, 1, seed=2), stats.exact_equal("a", 1, 1), rule_only=True)
    dropped = in_scope(ctx, _equal_pair(), stats.exact_equal("b", 1, 1), rule_only=True)
    guarded = in_scope(ctx, random_pair(3, 1, seed=2), stats.exact_equal("c", 1, 1))
    assert kept.outcome == "pass" and dropped.outcome == "info" and guarded.outcome == "info"
    assert [w for _, _, w in ctx.scope_checked][1].startswith("degenerate instance (q = p)")
    assert pair_from_tables([0.5, 0.5], [0.5, 0.5]).V == 2  # (the helper the probes use elsewhere)


def test_the_rule_speaks_of_strict_parts_only():
    """A non-strict part (a law, an equality) keeps its degenerate instances: q = p is in scope for
    'lossless', outside it for 'rises strictly'; a guard's own degenerate reason is dropped likewise."""
    from spectheory.sims.registry import Context
    guard = lambda pair, **_: D.degenerate("saturation", "at its cap")  # noqa: E731
    scope = Scope("x", guard=guard, degenerate=("q = p",))
    ctx = Context(claim_id="toy", scope=scope,
                  parts=(Part("lossless", "law", "law"), Part("rises", "strictly", "monotone", strict=True)))
    eq, rnd = _equal_pair(), random_pair(3, 1, seed=2)
    assert ctx.out_of_scope(eq, part="lossless") is None and ctx.out_of_scope(rnd, part="lossless") is None
    assert D.case_of(ctx.out_of_scope(eq, part="rises")) == "q = p"
    assert D.case_of(ctx.out_of_scope(rnd, part="rises")) == "saturation"
    with ctx.part("lossless"):
        assert ctx.out_of_scope(eq) is None and ctx.degenerate(eq) is None
    with ctx.part("rises"):
        assert ctx.degenerate(eq) is not None
    assert [p for _, p, _ in ctx.scope_checked] == ["lossless", "lossless", "rises", "rises", "lossless", "lossless",
                                                   "rises"]
