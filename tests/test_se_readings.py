"""The se.* readings, scopes, open choices and identities (issue 24; sims/claims/se.py): one quoted
principal reading per claim, every alternative with its kind; each scope guard pinned by an
in-scope and an out-of-scope instance; each identity's proof holds and rejects a wrong identity;
the tie of Cor 3.5 at its threshold; Thm 3.6's one-cycle reading against the enumerated cycle; and
the principal readings at every admissible value of their open choices."""
from __future__ import annotations

import pytest
import sympy as sp

from spectheory.sims.claims import se
from spectheory.sims.registry import Context, load_all
from spectheory.sims.shrink import recompute
from spectheory import instances as inst
from spectheory.judge import stats
from spectheory.pairs import pair_from_tables, random_pair
from spectheory.rules.se import BROKEN_BONUS_UNCHECKED, STANDARD

CLAIMS = load_all()
SE = {cid: c for cid, c in CLAIMS.items() if cid.startswith("se.")}


def _check(cid, subject=None, quick=True, **choices):
    c = CLAIMS[cid]
    ctx = Context(seed=0, quick=quick, claim_id=cid, subject_name="subject", parts=c.parts,
                  claim_choices=c.choices, scope=c.scope, choices=choices)
    return c.check(ctx, c.subject if subject is None else subject), ctx


def _verdicts(evidence):
    out = {}
    for e in evidence:
        if e.outcome != "info":
            out.setdefault(e.part, set()).add(e.outcome)
    return {p: ("fails" if "fail" in o else "holds" if o == {"pass"} else "inconclusive") for p, o in out.items()}


def test_every_claim_has_one_quoted_principal_reading():
    assert len(SE) == 10
    for cid, c in SE.items():
        pr = c.principal
        assert pr.quote and any(k in pr.quote for k in ("§", "Thm", "Cor")), cid
        assert pr.why, cid
        assert c.scope is not None and c.scope.statement, cid
        for r in c.readings:
            assert r.role == "principal" or r.kind, (cid, r.id)


PRINCIPAL = {"se.thm3_6": ("long-run", ("iid",)), "se.cor3_7": ("paper", ("never-slower", "equality-only-when")),
             "se.thm3_1": ("constant-alpha", ("tokens", "speedup"))}


@pytest.mark.parametrize("cid", sorted(PRINCIPAL))
def test_principal_readings_and_their_parts(cid):
    rid, parts = PRINCIPAL[cid]
    assert (SE[cid].principal.id, SE[cid].principal.parts) == (rid, parts)


IDENTITIES = {("se.acceptance", "main"), ("se.thm3_2", "bound"), ("se.thm3_2", "equality"),
              ("se.cor3_3", "choose-proposer"), ("se.cor3_3", "at-least-half"), ("se.cor3_5", "never-slower"),
              ("se.cor3_7", "never-slower"), ("se.thm3_6", "one-cycle")}
#: for each identity part, a wrong right-hand side its proof must reject
WRONG = {
    ("se.acceptance", "main"): dict(half=1),
    ("se.thm3_2", "bound"): dict(bound=lambda lam: lam + sp.Rational(1, 100)),
    ("se.thm3_2", "equality"): dict(alpha=lambda lam, s: lam + (1 - lam) * (s - sp.Rational(1, 10))),
    ("se.cor3_3", "choose-proposer"): dict(bound=lambda lam: sp.Rational(1, 100)),
    ("se.cor3_3", "at-least-half"): dict(half=sp.Rational(3, 5)),
    ("se.cor3_5", "never-slower"): dict(gamma=2),
    ("se.cor3_7", "never-slower"): dict(costs=lambda c: (c + 1, c, 1, 2 * c + 1)),
    ("se.thm3_6", "one-cycle"): dict(bonus=lambda a, gq, gp: a ** (gq + gp)),
}


def test_identity_parts_are_exactly_the_listed_ones():
    found = {(cid, p.id) for cid, c in SE.items() for p in c.parts if p.identity}
    assert found == IDENTITIES


@pytest.mark.parametrize("key", sorted(IDENTITIES))
def test_identity_is_proved_and_a_wrong_identity_is_rejected(key):
    part = SE[key[0]].part(key[1])
    ok, detail = part.proof()
    assert ok and "simplify" in detail, detail
    bad, why = part.proof(**WRONG[key])
    assert not bad and "NOT shown" in why, why


def test_identity_parts_still_pass_their_implementation_tests():
    for cid in ("se.acceptance", "se.thm3_2", "se.cor3_3"):
        ev, _ = _check(cid)
        v = _verdicts(ev)
        for p in SE[cid].parts:
            if p.identity:
                assert v.get(p.id, v.get(None)) == "holds", (cid, p.id)   # one-part claims: tagged by the runner


# --- scope guards: one instance inside, one outside --------------------------------------------

IID = random_pair(2, 0, 1.0, seed=0)
MARKOV = inst.get("markov1-V3-mix0.4")
EQUAL = pair_from_tables([0.3, 0.7], [0.3, 0.7])


def test_thm3_6_scope():
    g = SE["se.thm3_6"].scope
    assert g.why_out(IID, gamma=(1, 1), c=0.5) is None
    assert "order-1" in g.why_out(MARKOV, c=0.5)
    assert "α = 1" in g.why_out(EQUAL, c=0.5)                              # p = q: never rejected
    assert "c = 0" in g.why_out(IID, c=0.0)


def test_thm3_6_counterexample_is_in_scope_and_recomputes():
    cex = SE["se.thm3_6"].shrink(Context(claim_id="se.thm3_6"), STANDARD)
    pair = recompute("import spectheory.pairs; " + cex["source"])
    assert SE["se.thm3_6"].scope.why_out(pair, c=cex["c"]) is None
    f, x, _ = recompute(cex["call"])
    assert (f, x) == (cex["claimed"], cex["measured"])


def test_thm3_6_shrinker_skips_what_is_out_of_scope():
    """With a scope that excludes V = 2, the shrinker moves on instead of returning a V = 2 pair."""
    from spectheory.sims.registry import Scope
    from spectheory.sims.shapes import shrinker
    wider = Scope("V ≥ 3 only", lambda pair, **kw: "V = 2" if pair.V == 2 else se.thm3_6_guard(pair, **kw))
    shrink = shrinker(se.thm3_6_on, fails=lambda f, x: abs(f - x) > 1e-10, scope=wider, part="iid",
                      applies=("V", "order", "gamma", "c", "seed"), V_values=(2, 3), orders=(0,), gammas=((1, 1),),
                      extra={"c": (0.5,)})
    cex = shrink(Context(claim_id="se.thm3_6"), STANDARD)
    assert cex["V"] == 3


def test_thm3_1_scope():
    g = SE["se.thm3_1"].scope
    assert g.why_out(IID) is None and "order-1" in g.why_out(MARKOV)


def test_cor3_4_and_cor3_5_search_regions_keep_off_the_threshold():
    region = se.away_from_threshold(1e-3)
    assert region.why_out(IID, lam=0.5, c=1.0).startswith("|λ − c/(1+c)|")
    assert region.why_out(IID, lam=0.6, c=1.0) is None
    assert "not a weight" in region.why_out(IID, lam=1.5, c=1.0)
    edge = pair_from_tables([0.0, 1.0], [1.0, 0.0])                        # disjoint: α_q = λ
    assert 0 < se.cor3_4_slack(edge, se.BOUNDS, 1.0, 0.0, 1e-9) < 1e-9      # the infimum 0, not attained
    assert se.cor3_4_slack(edge, se.BOUNDS, 1.0, 0.0, 1e-3) > 1e-4


def test_weighted_ensemble_scopes():
    assert SE["se.thm3_2"].scope.why_out(IID, lam=0.5) is None
    assert "λ = 1" in SE["se.thm3_2"].scope.why_out(IID, lam=1.0)         # r = q: not an ensemble
    assert SE["se.cor3_3"].scope.why_out(IID, lam=1.0) is None             # both proposers: λ = 1 is fine
    assert "not a weight" in SE["se.cor3_3"].scope.why_out(IID, lam=1.2)
    assert SE["se.cor3_5"].scope.why_out(IID, lam=0.0) is None
    assert SE["se.cor3_4"].scope.why_out(IID, lam=0.5, c=0.5) is None      # 0.5 > 1/3
    assert "hypothesis" in SE["se.cor3_4"].scope.why_out(IID, lam=0.2, c=0.5)
    assert "outside [0, 1]" in SE["se.cor3_4"].scope.why_out(IID, c=0.5, u=1.5)


def test_out_of_scope_findings_are_labelled_info():
    for cid, part in (("se.thm3_2", "equality"), ("se.thm3_1", "formula-on-markov"), ("se.thm3_6", "markov")):
        ev, _ = _check(cid)
        out = [e for e in ev if e.part == part and (e.note or "").startswith(se.OUTSIDE)]
        assert out and all(e.outcome == "info" for e in out), cid


# --- ties ---------------------------------------------------------------------------------------

def test_cor3_5_faster_ties_at_the_threshold_on_disjoint_supports():
    """Disjoint supports with λ = c/(1+c): every γ and proposer gives exactly 1×, a strict '>' that
    fails by equality only (the proof's own exception, exempted from the part); one step off the
    threshold it is strictly faster."""
    M = se.on_pair("iid-V3-disjoint", "WE", 0.5)
    best = se.best_sbe(M, 1.0, STANDARD)
    assert best == pytest.approx(1.0, abs=1e-12)
    ev = se.never_below("tie", [dict(c=1.0)], lambda c: (1.0, se.best_sbe(M, c, STANDARD)), strict=True,
                        what="best speedup > 1")
    ev = ev[0] if isinstance(ev, list) else ev
    assert ev.outcome == "fail" and ev.tie and abs(ev.measured - ev.claimed) <= stats.EXACT_TOL
    assert "tie" in ev.note
    ok = se.never_below("off", [dict(c=0.9)], lambda c: (1.0, se.best_sbe(M, c, STANDARD)), strict=True, what="x")
    assert (ok[0] if isinstance(ok, list) else ok).outcome == "pass"
    assert se.faster_points([dict(lam=0.5, c=1.0)], disjoint=True) == []
    assert se.best_sbe(M, 0.9, STANDARD) > 1 + 1e-3


# --- Thm 3.6: the one-cycle reading and the long-run reading --------------------------------------

def test_thm3_6_one_cycle_reading_matches_the_enumerated_cycle_and_the_long_run_does_not():
    M = se.models("iid-V4-random WE λ=0.5")
    for gq, gp, c in ((1, 1, 0.5), (3, 2, 0.1), (2, 1, 2.0)):
        f, one = se.thm3_6_one_cycle(M, STANDARD, gq, gp, c)
        assert one == pytest.approx(f, rel=1e-12)
        f2, process = se.thm3_6_at(M, STANDARD, gq, gp, c)
        assert f2 == f and abs(process - f) > 1e-3
        _, broken = se.thm3_6_one_cycle(M, BROKEN_BONUS_UNCHECKED, gq, gp, c)   # the control moves it
        assert abs(broken - f) > 1e-3


def test_thm3_6_readings_verdicts():
    ev, _ = _check("se.thm3_6")
    v = _verdicts(ev)
    assert v["iid"] == "fails" and v["one-cycle"] == "holds" and "markov" not in v


# --- Cor 3.7: 'only when' holds, 'iff' fails at c = 0 ---------------------------------------------

def test_cor3_7_only_when_holds_and_iff_fails_at_c_zero():
    ev, _ = _check("se.cor3_7")
    v = _verdicts(ev)
    assert v["never-slower"] == "holds" and v["equality-only-when"] == "holds" and v["equality-iff"] == "fails"
    bad = [pt for e in ev if e.part == "equality-iff" and e.outcome == "fail" for pt in (e.points or [])
           if pt.get("measured", 0) > 0]
    assert bad and all(pt["c"] == 0.0 for pt in bad)
    ev, _ = _check("se.cor3_7", se.NO_SWAP)                                   # the control fails the iff too
    assert _verdicts(ev)["equality-iff"] == "fails"


# --- open choices: the principal reading at every admissible value --------------------------------

@pytest.mark.parametrize("gmax", next(c for c in SE["se.cor3_5"].choices if c.name == "gamma_max").values)
def test_cor3_5_holds_at_every_gamma_max(gmax):
    ev, _ = _check("se.cor3_5", gamma_max=gmax)
    assert set(_verdicts(ev).values()) == {"holds"}


def test_tables_principal_parts_hold_at_every_cost_ratio_grid():
    choice = next(c for c in SE["se.tables"].choices if c.name == "cost_ratios")
    for cs in choice.values:
        ev, _ = _check("se.tables", cost_ratios=cs)
        v = _verdicts(ev)
        assert all(v[p] == "holds" for p in ("se-never-slower", "se-beats-sd", "cd-falls-with-mu",
                                             "sd-can-be-slower")), (cs, v)


def test_thm3_6_fails_at_every_mc_tolerance():
    choice = next(c for c in SE["se.thm3_6"].choices if c.name == "mc_tolerance")
    assert choice.invented
    for tol in choice.values:
        ev, _ = _check("se.thm3_6", mc_tolerance=tol)
        assert _verdicts(ev)["iid"] == "fails"


@pytest.mark.parametrize("cid", ["se.cor3_4", "se.cor3_5"])
def test_strict_parts_hold_at_every_threshold_margin_and_the_wrong_constant_still_fails(cid):
    choice = next(c for c in SE[cid].choices if c.name == "threshold_margin")
    assert choice.invented and choice.default in choice.values
    for margin in choice.values:
        ev, ctx = _check(cid, threshold_margin=margin)
        assert set(_verdicts(ev).values()) == {"holds"}, (cid, margin)
        strict = next(p.id for p in SE[cid].parts if p.relation == ">")
        assert ctx.slack[strict]["value"] > 0
        if margin == choice.default:                   # where the +0.01 control is judged: it fails there
            assert ctx.slack[strict]["value"] < 0.01
