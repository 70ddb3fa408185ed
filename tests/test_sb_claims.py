"""The sb.* claims as registered (parts, controls per part) and a quick run of the cheaper ones:
verdicts per part, every control fails where it must, counterexamples recompute."""
from __future__ import annotations

import pytest

from spectheory.sims import registry
from spectheory.sims.runner import run_claims
from spectheory.sims.shrink import recompute

SB = ("sb.trunc_geom", "sb.ideal_parallel", "sb.thm1", "sb.branch_lossless", "sb.rollback", "sb.speedup", "sb.hrad")


def test_all_seven_claims_are_registered_with_parts():
    claims = registry.load_all()
    for cid in SB:
        c = claims[cid]
        assert c.paper == "shen2026" or "shen2026" in c.paper
        assert len(c.parts) >= 2 and c.controls
    assert {p.id for p in claims["sb.branch_lossless"].parts} == {"seed-match", "seed-ratio", "code"}
    assert not claims["sb.trunc_geom"].part("markov").checkable


@pytest.fixture(scope="module")
def report():
    return run_claims("sb.trunc_geom,sb.ideal_parallel,sb.thm1,sb.branch_lossless", quick=True, seed=0, progress=False)


def _claim(report, cid):
    return next(c for c in report["claims"] if c["id"] == cid)


def test_part_verdicts(report):
    parts = {c["id"]: {p["id"]: p["verdict"] for p in c["parts"]} for c in report["claims"]}
    assert parts["sb.trunc_geom"] == {"iid": "holds", "chain": "holds", "markov": "not-checkable"}
    assert set(parts["sb.ideal_parallel"].values()) == {"holds"}
    assert parts["sb.thm1"]["formula"] == "holds" and parts["sb.thm1"]["min-le-c"] == "holds"
    assert parts["sb.thm1"]["min-le-c-integer"] == "fails"
    assert parts["sb.branch_lossless"] == {"seed-match": "holds", "seed-ratio": "fails", "code": "fails"}


def test_controls_fail_where_required(report):
    for c in report["claims"]:
        for ctl in c["controls"]:
            assert ctl["verdict"] == "fails", (c["id"], ctl["name"], ctl["parts"])


def test_counterexamples_recompute(report):
    thm1 = _claim(report, "sb.thm1")
    cex = thm1["counterexample"]
    assert cex["part"] == "min-le-c-integer" and cex["measured"] > cex["claimed"]
    assert recompute(cex["call"]) == (cex["claimed"], cex["measured"])
    bl = _claim(report, "sb.branch_lossless")["counterexample"]
    assert bl["part"] == "seed-ratio" and bl["V"] == 3  # in scope: V = 2 drafts never fork at k_max = 4
    claimed, measured, _ = recompute(bl["call"])
    assert abs(measured - bl["measured"]) < 1e-12


def test_least_slack_records(report):
    ip = next(p for p in _claim(report, "sb.ideal_parallel")["parts"] if p["id"] == "two-x")
    assert abs(ip["least_slack"]["value"] - 2 / 65) < 1e-9
    assert abs(recompute(ip["least_slack"]["call"]) - ip["least_slack"]["value"]) < 1e-12
    mc = next(p for p in _claim(report, "sb.thm1")["parts"] if p["id"] == "min-le-c")
    assert mc["least_slack"]["value"] >= 0


@pytest.mark.parametrize("which,first,second", [("no_hrad", "weak", "strong"), ("no_branch", "strong", "weak")])
def test_ablation_gap_reads_the_sentence_the_paper_wrote(which, first, second):
    """'H-RAD matters most for weak alignment, branching for strong': the measured gap is the
    drop at the level the paper names minus the drop at the other level."""
    from spectheory.sims.claims import sb as S
    _, gap, d = S.ablation_gap("mix", S.STUDY, which, 4.0, gmax=4)
    assert abs(gap - (d[f"drop_{first}"] - d[f"drop_{second}"])) < 1e-12


def test_hrad_accuracy_is_graded_only_where_some_classifier_could_beat_the_majority():
    """The Bayes rule given the source state is the ceiling of any context classifier: on the weak
    mixing pair at γ = 6 it beats the majority class by 0.0009 (< the 0.001 margin), so no
    classifier can pass there and the point is reported, not graded; every other weak point is."""
    from spectheory.sims.claims import sb as S
    maj, ceil = S.bayes_ceiling("mix-weak-V6", 6)
    assert 0 < ceil - maj < S.ACC_MARGIN and not S.beatable("mix-weak-V6", 6)
    assert all(S.beatable(n, g) for n in S.WEAK for g in S.HR_GAMMAS if (n, g) != ("mix-weak-V6", 6))
    for n in S.WEAK:
        for g in S.HR_GAMMAS:
            _, acc = S.population_accuracy(n, S.HRAD, g)
            assert acc <= S.bayes_ceiling(n, g)[1] + 1e-12  # nothing beats the ceiling


# --- issue 24: readings, scope guards, choices, ties, identities ------------------------------------------

def test_every_claim_has_a_quoted_principal_reading():
    claims = registry.load_all()
    for cid in SB:
        c = claims[cid]
        assert len(c.readings) >= 1 and c.principal.quote.startswith(("Key", "Background")), cid
        assert c.principal.why, cid
    assert claims["sb.thm1"].reading_of("min-le-c-integer").kind == "integer"
    assert claims["sb.branch_lossless"].principal.parts == ("seed-ratio",)
    assert claims["sb.speedup"].reading_of("pearl-ge-sps").role == "alternative"
    assert claims["sb.rollback"].choice("rollback accounting").values == ("rollback_rate", "submitted_rollback_rate")
    assert claims["sb.hrad"].choice("accuracy margin").invented


def test_mechanism_scope_guard():
    """In scope: SpecBranch forks ≥ 2 branches in a reached context; a constant H-RAD is still
    SpecBranch as deployed, except for the ablation of H-RAD (issue 34); q = p and a point-mass draft
    are degenerate (the non-degeneracy rule, applied by the scope to strict parts)."""
    from spectheory.sims.claims import sb as S
    assert "never forks" in S.mechanism_reason(S.weak_pair(2, 0, 0), c=2.0)  # the old smallest counterexample
    assert S.mechanism_reason("bimodal-weak-V6", c=4.0, study=S.STUDY, gmax=8) is None
    assert S.mechanism_reason("bimodal-strong-V6", c=4.0, study=S.STUDY, gmax=8) is None  # H-RAD constant: graded
    assert S.MECHANISM.why_out("markov1-V3-equal").startswith("degenerate instance (q = p)")
    assert S.MECHANISM.why_out("markov1-V3-equal", rule=False) is None or "never forks" in \
        S.MECHANISM.why_out("markov1-V3-equal", rule=False)
    # the ablation needs only the removed component active: branches fork on the strong pair
    assert S.mechanism_reason("bimodal-strong-V6", c=4.0, study=S.STUDY, gmax=8, component="no_branch") is None
    assert S.fork_reason("iid-V4-random") is not None and S.fork_reason("bimodal-V4") is None
    assert S.fork_reason("bimodal-weak-V6", k_max=3) is not None  # max q ≥ 0.366 > 1/3 everywhere


def test_other_scope_guards():
    claims = registry.load_all()
    from spectheory.sims.claims import sb as S
    thm1 = claims["sb.thm1"].scope
    assert thm1.why_out(S.pair("iid-V3-equal")) and thm1.why_out(S.pair("iid-V4-random")) is None
    tg = claims["sb.trunc_geom"].scope
    assert tg.why_out(S.pair("bimodal-V4")) and tg.why_out(S.pair("iid-V4-random")) is None
    hr = claims["sb.hrad"].scope
    assert hr.why_out("mix-weak-V6", gamma=6) and hr.why_out("bimodal-weak-V6", gamma=4) is None
    bl = claims["sb.branch_lossless"].scope
    assert bl.why_out("iid-V4-random") and bl.why_out("bimodal-V4") is None


def test_strict_gap_tells_a_tie_from_a_violation():
    from spectheory.sims.claims import sb as S
    judge = S.strict_gap(what="gap")
    tie, worse, ok = judge("x", 0.0, 0.0, ""), judge("x", 0.0, -0.1, ""), judge("x", 0.0, 0.01, "")
    assert tie.outcome == "fail" and tie.tie and "tie" in tie.note
    assert worse.outcome == "fail" and not worse.tie
    assert ok.outcome == "pass"


def test_ideal_parallel_parts_are_proved_identities():
    import sympy as sp

    from spectheory.sims.claims import sb as S
    claim = registry.load_all()["sb.ideal_parallel"]
    for part in claim.parts:
        assert part.identity and part.proof is not None
        holds, detail = part.proof()
        assert holds and "simplify" in detail, (part.id, detail)
    # a wrong identity is rejected: the best gain is not exactly 2 at finite c
    c = sp.Symbol("c", positive=True)
    best = S.gain_over_sd()[1].subs(sp.Symbol("gamma", positive=True), c)
    holds, detail = S.prove_equal(best, 2, "wrong")
    assert not holds and "-2/(c + 1)" in detail


def test_choices_reach_the_study_and_controls_keep_their_own_rate():
    from dataclasses import replace

    from spectheory.sims.claims import sb as S
    from spectheory.sims.registry import Context
    claim = registry.load_all()["sb.rollback"]
    ctx = Context(claim_id=claim.id, claim_choices=claim.choices, choices={"k_max": 8, "rollback accounting":
                                                                           "submitted_rollback_rate"})
    st = S.in_force(ctx, S.STUDY)
    assert st.k_max == 8 and st.rollback == "submitted_rollback_rate" and st.eps == S.STUDY.eps
    ctl = replace(S.STUDY, rollback="waste_rate")
    assert S.in_force(ctx, ctl).rollback == "waste_rate"
    assert S.in_force(Context(claim_id=claim.id, claim_choices=claim.choices), S.STUDY) is S.STUDY


def test_every_choice_value_keeps_an_instance_in_scope():
    """At every value of every open choice of sb.speedup (a superset of sb.rollback's but the
    accounting, which the scope does not read) some weakly aligned pair at c = 4 is in scope for
    the comparisons with SpecBranch, and some family for each ablation sentence (quick tier's
    γ ≤ 6): the runner's re-runs keep every part graded (the full check: the slow test below)."""
    from spectheory.sims.claims import sb as S
    from spectheory.sims.registry import Context
    claim = registry.load_all()["sb.speedup"]
    for ch in claim.choices:
        for value in ch.values:
            ctx = Context(quick=True, claim_id=claim.id, claim_choices=claim.choices, scope=claim.scope,
                          choices={ch.name: value})
            scope = dict(study=S.in_force(ctx, S.STUDY), gmax=6)
            assert any(ctx.out_of_scope(n, c=4.0, **scope) is None for n in S.WEAK), (ch.name, value)
            for which in ("no_hrad", "no_branch"):
                assert any(S.ablation_reason(ctx, f, which, 4.0, scope) is None for f, _, _ in S.FAMILIES), \
                    (ch.name, value, which)


@pytest.mark.slow
@pytest.mark.parametrize("cid", ["sb.rollback", "sb.speedup"])
def test_every_choice_value_leaves_every_part_graded(cid):
    """The runner re-runs a failing claim at each value of each open choice: every checkable part
    keeps graded (in-scope) evidence in each of its modes at every value (quick tier)."""
    from spectheory.sims.registry import Context
    claim = registry.load_all()[cid]
    for ch in claim.choices:
        for value in ch.values:
            ctx = Context(quick=True, claim_id=claim.id, subject_name="subject", parts=claim.parts,
                          claim_choices=claim.choices, scope=claim.scope, choices={ch.name: value})
            ev = claim.check(ctx, claim.subject)
            for part in claim.checkable_parts:
                graded = {e.mode for e in ev if e.part == part.id and e.outcome != "info"}
                assert set(claim.part_modes(part)) <= graded, (cid, ch.name, value, part.id)


def test_old_v2_counterexamples_are_out_of_scope_and_the_submitted_rollback_ties():
    """The pre-issue-24 smallest counterexamples (V = 2) never fork; under the submitted-tokens
    accounting their rollback comparison is a tie (0.3480 = 0.3480), which strict_gap marks."""
    from dataclasses import replace

    from spectheory.sims.claims import sb as S
    p = S.weak_pair(2, 0, 0)
    assert "never forks" in S.mechanism_reason(p, c=2.0)
    _, gap, d = S.rollback_order(p, replace(S.STUDY, rollback="submitted_rollback_rate"), c=2.0)
    assert abs(d["sb"] - 0.3480) < 5e-5 and abs(gap) < 1e-12
    assert S.strict_gap(what="gap")("x", 0.0, gap, "").tie


def test_default_tier_counterexamples_are_in_scope_and_recompute():
    """The default tier's smallest counterexamples of sb.rollback and sb.speedup (V = 3, order 1):
    in scope, and their calls reproduce the printed numbers."""
    from spectheory.sims.claims import sb as S
    p = S.weak_pair(3, 1, 0)
    assert S.mechanism_reason(p, c=2.0) is None and S.mechanism_reason(p, c=4.0) is None
    _, m, d = recompute("import spectheory.sims.claims.sb; spectheory.sims.claims.sb.rollback_order(spectheory.sims.claims.sb.weak_pair(3, 1, 0), "
                        "spectheory.sims.claims.sb.STUDY, c=2.0)")
    assert abs(m - (-0.13955219260093132)) < 1e-12 and abs(d["sb"] - 0.537264623464293) < 1e-12
    _, m, _ = recompute("import spectheory.sims.claims.sb; spectheory.sims.claims.sb.speed_order(spectheory.sims.claims.sb.weak_pair(3, 1, 0), "
                        "spectheory.sims.claims.sb.STUDY, c=4.0)")
    assert abs(m - (-0.06993723198079127)) < 1e-12
