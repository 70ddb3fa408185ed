"""Readings, scope guards, ties, identities and open choices of the multi-draft family (issue 24):
each claim's principal reading is quoted from the paper; the scope guards put an instance in or out
for the reason they state; a violation outside the scope is info, never a counterexample; a strict
increase that fails by equality says so; Remark 5.2's K = 1 bullet is proved symbolically (and a
wrong identity is not); the checks read the open choices in force."""
from __future__ import annotations

import numpy as np
import pytest

from spectheory.sims.claims import multidraft as md
from spectheory.sims.registry import REGISTRY, Context, load_all
from spectheory.sims.shrink import recompute
from spectheory import instances as inst
from spectheory.judge.evidence import combine
from spectheory.pairs import random_pair
from spectheory.rules import multidraft as R

load_all()

FAMILY = ("kseq.rho", "gbv.lossless", "gbv.optimal", "spectr_gbv.lossless", "spectr_gbv.sub_block",
          "spectr_gbv.upper_bound", "spectr_gbv.attains", "spectr_gbv.remark5_2", "spectr_gbv.cost",
          "spectr_gbv.tables")


def _ctx(cid: str, **choices) -> Context:
    c = REGISTRY[cid]
    return Context(seed=0, quick=True, claim_id=cid, subject_name="subject", parts=c.parts, claim_choices=c.choices,
                   scope=c.scope, choices=choices)


@pytest.mark.parametrize("cid", FAMILY)
def test_every_claim_has_a_quoted_principal_reading_and_a_scope(cid):
    c = REGISTRY[cid]
    p = c.principal
    assert p.id != "paper" or p.quote, cid  # an explicit reading, not the registry's default
    assert p.quote.split(":")[0].strip() and "'" in p.quote, p.quote  # "Section: '...'"
    assert p.why and c.scope is not None and c.scope.statement
    for r in c.readings:
        assert r.role == "principal" or (r.kind and r.why), r


# --- scope guards: an in-scope and an out-of-scope instance each -----------------------------------------

def test_multi_draft_scope():
    g = md.MULTI_DRAFT.why_out
    assert g(inst.get("markov1-V3-mix0.4"), K=2, gamma=1) is None
    assert g(inst.get("iid-V3-equal"), K=3) is None  # p = q: K drafts can differ, in scope
    assert "K = 1" in g(inst.get("markov1-V3-mix0.4"), K=1)
    assert "one block" in g(inst.get("iid-V1"), K=2)
    assert "one block" in g(inst.get("iid-V3-disjoint"), K=2)  # a point-mass draft
    assert md.MULTI_DRAFT_ANY_K.why_out(inst.get("markov1-V3-mix0.4"), K=1) is None  # K = 1: a comparison's base
    assert md.MULTI_DRAFT_ANY_K.why_out(inst.get("iid-V1"), K=2)


def test_remark_scope_is_the_covering_draft():
    g = md.REMARK_SCOPE.why_out
    assert g(inst.get("iid-V4-random"), gamma=2) is None
    # q = p covers p's support, but the bound is γ for every K: degenerate (the non-degeneracy rule)
    assert g(inst.get("iid-V3-equal"), gamma=1).startswith("degenerate instance (q = p)")
    assert "misses part of p's support" in g(inst.get("markov1-V4-topk2"), gamma=1)
    assert g(md.edge_pair(2, 0, 1.0, 1), gamma=1).startswith("degenerate instance (point-mass draft)")  # q = (1, 0)
    for tree_pair in (random_pair(3, 1, 1.0, seed=s) for s in range(5)):
        assert g(tree_pair) is None


def test_out_of_scope_violations_are_info_not_counterexamples():
    c = REGISTRY["spectr_gbv.remark5_2"]
    ev = c.check(_ctx(c.id), c.subject)
    topk = [e for e in ev if e.instance.startswith("markov1-V4-topk2") and e.part in ("increasing", "limit")]
    assert topk and all(e.outcome == "info" and "misses part of p's support" in e.out_of_scope for e in topk)
    assert any("graded: fail" in e.note for e in topk)  # it would fail there: reported, not graded
    lit = [e for e in ev if e.instance.startswith("markov1-V4-topk2") and e.part == "limit-any-draft"]
    assert lit and all(e.outcome == "fail" for e in lit)  # the literal reading grades it
    # the principal limit's shrinker, kept in scope, finds nothing; the literal one finds q = (1, 0)
    assert md.REMARK_SHRINK[1](_ctx(c.id), c.subject) is None
    lit_cex = md.REMARK_SHRINK[3](_ctx(c.id), c.subject)
    assert lit_cex["part"] == "limit-any-draft" and lit_cex["source"] == "spectheory.sims.claims.multidraft.edge_pair(2, 0, 1, 1)"
    assert md.REMARK_SCOPE.why_out(recompute_pair(lit_cex), gamma=1)
    out = recompute(lit_cex["call"])
    assert (out[0], out[1]) == (lit_cex["claimed"], lit_cex["measured"]) and out[1] == pytest.approx(0.7767, abs=1e-4)


def recompute_pair(cex):
    import spectheory.sims.claims.multidraft  # noqa: F401  (the source names it)
    return eval(cex["source"], {"spectheory": __import__("spectheory.sims")})


@pytest.mark.parametrize("cid", ["spectr_gbv.lossless", "spectr_gbv.sub_block", "spectr_gbv.attains",
                                 "spectr_gbv.upper_bound"])
def test_instances_outside_the_multi_draft_scope_are_info(cid):
    c = REGISTRY[cid]
    ev = c.check(_ctx(cid), c.subject)
    for name in ("iid-V1", "iid-V3-disjoint"):
        mine = [e for e in ev if e.instance.startswith(name)]
        assert mine and all(e.outcome == "info" and e.out_of_scope for e in mine), (cid, name)


# --- the substantive failures stay failures, in scope --------------------------------------------------

def test_printed_spectr_gbv_fails_in_scope_for_k_ge_2():
    pair = random_pair(2, 0, 1.0, seed=0)
    assert md.MULTI_DRAFT.why_out(pair, K=2, gamma=1) is None
    c, m, _ = md.lossless_worst_sequence(pair, R.SPECTR_GBV, 1, 2)
    assert abs(c - m) > 0.03
    b, e = md.bound_and_tau(pair, R.SPECTR_GBV, 1, 2)
    assert b - e > 0.07


# --- ties -------------------------------------------------------------------------------------------------

def test_step_ties_tell_equality_from_a_fall():
    assert md.step_ties([1.0, 1.0, 1.0]) == (2, True)
    assert md.step_ties([0.5, 0.6, 0.7]) == (0, True)
    assert md.step_ties([0.5, 0.6, 0.4]) == (1, False)  # a strict fall is not a tie


def test_remark_increasing_ties_only_at_q_eq_p_which_is_degenerate():
    """Strict increase never fails in scope; at q = p it ties (the bound is γ for every K), and q = p is a
    degenerate instance under the non-degeneracy rule: outside the scope, the tie kept in the reason."""
    c = REGISTRY["spectr_gbv.remark5_2"]
    ev = c.check(_ctx(c.id), c.subject)
    assert not [e for e in ev if e.part == "increasing" and e.outcome == "fail"]
    equal = [e for e in ev if e.part == "increasing" and e.instance.startswith("iid-V3-equal")]
    assert equal and all(e.outcome == "info" and e.out_of_scope.startswith("degenerate instance (q = p)")
                         and "a tie" in e.out_of_scope and "saturated at γ" in e.note for e in equal)
    assert combine([e for e in ev if e.part == "limit"]) == "holds"
    assert combine([e for e in ev if e.part == "limit-any-draft"]) == "fails"
    # 200 random (full-support, p ≠ q) pairs: graded, all strictly increase and reach γ
    rnd = [e for e in ev if e.instance == "200 random pairs"]
    assert len(rnd) == 2 and all(e.outcome == "pass" and e.measured == 200.0 for e in rnd)


def test_control_that_drops_k_fails_without_being_a_tie_in_the_limit():
    c = REGISTRY["spectr_gbv.remark5_2"]
    ev = c.check(_ctx(c.id), md.bound_at_one_draft)
    assert combine([e for e in ev if e.part == "increasing"]) == "fails"
    assert combine([e for e in ev if e.part == "limit"]) == "fails"


# --- identities ---------------------------------------------------------------------------------------------

def test_k1_bullet_is_proved_and_a_wrong_identity_is_not():
    part = REGISTRY["spectr_gbv.remark5_2"].part("k1")
    assert part.identity and part.proof is md.bound_k1_identity
    holds, detail = part.proof()
    assert holds and "simplifies to 0" in detail
    for wrong in (0, 2, 3):  # exponent of (1 − m) other than 1: not Σ min
        assert md.bound_k1_identity(wrong)[0] is False
    tree = md.tree0(inst.get("markov1-V4-weak"), 2)  # and the implementation agrees with the identity
    assert md.bound_as_printed(tree, 1) == pytest.approx(md.cf.gbv_optimum(tree), abs=1e-14)


# --- open choices: the checks read the value in force ---------------------------------------------------------

def test_line5_choice_swaps_the_rule_and_the_failure_is_robust():
    assert md.line5_rule(_ctx("spectr_gbv.lossless"), R.SPECTR_GBV) is R.SPECTR_GBV
    ctx = _ctx("spectr_gbv.lossless", line5="ignore-H")
    assert md.line5_rule(ctx, R.SPECTR_GBV) is R.BROKEN_IGNORE_H
    assert md.line5_rule(ctx, R.BROKEN_NO_MODIFY) is R.BROKEN_NO_MODIFY  # a control stays itself
    ev = md.lossless_exact(ctx, md.line5_rule(ctx, R.SPECTR_GBV), ((1, 2),))
    assert combine(ev) == "fails"
    ctx = _ctx("spectr_gbv.attains", line5="ignore-H")
    b, e = md.bound_and_tau(random_pair(2, 0, 1.0, seed=0), md.line5_rule(ctx, R.SPECTR_GBV), 1, 2)
    assert abs(b - e) > 1e-3  # above the bound, here: not a coupling of p either


def test_gbv_form_choice_gives_the_same_law():
    ctx = _ctx("gbv.lossless", gbv_form="sec3.3")
    assert md.gbv_rule(ctx, R.GBV) is R.GBV_SEC33
    assert combine(md.lossless_exact(ctx, md.gbv_rule(ctx, R.GBV), ((1, 1), (2, 1)))) == "holds"


def test_rho_k_choice_initial_is_lossy():
    ctx = _ctx("kseq.rho", rho_k="initial")
    assert md.rho_rule(ctx, R.KSEQ) is R.KSEQ_RHO_INITIAL
    assert md.rho_rule(_ctx("kseq.rho"), R.KSEQ) is R.KSEQ
    assert combine(md.lossless_exact(ctx, md.rho_rule(ctx, R.KSEQ), ((2, 3),))) == "fails"


def test_cost_band_is_a_named_invented_choice():
    ch = REGISTRY["spectr_gbv.cost"].choice("exponent_tol")
    assert ch.invented and ch.default == 0.05 and set(ch.values) >= {0.05}
    c = REGISTRY["spectr_gbv.cost"]
    ev = c.check(_ctx(c.id, exponent_tol=0.1), c.subject)
    assert {e.tolerance for e in ev if e.outcome != "info"} == {0.1, 0.2}


def test_kseq_literal_strict_rise_fails_only_by_ties_at_the_cap():
    c = REGISTRY["kseq.rho"]
    assert c.reading_of("rises-strictly").kind == "literal" and c.principal.id == "paper"
    ev = c.check(_ctx(c.id), c.subject)
    lit = [e for e in ev if e.part == "rises-strictly"]
    failing = {e.instance.split()[0] for e in lit if e.outcome == "fail"}
    assert failing == {"markov1-V4-topk2", "iid-V3-equal", "iid-V3-disjoint", "iid-V1"}  # at the cap from K = 1
    assert all(e.tie for e in lit if e.outcome == "fail")
    assert combine([e for e in ev if e.part == "rises"]) == "holds"  # the principal reading
    ctrl = c.check(_ctx(c.id), R.KSEQ_RHO_K)  # ρ = K: the acceptance falls, a strict violation
    assert any(e.outcome == "fail" and not e.tie for e in ctrl if e.part == "rises-strictly")
