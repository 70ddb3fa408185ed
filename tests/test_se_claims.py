"""The se.* claims' parts, least-slack searches, controls and findings (sims/claims/se.py):
every least-slack record recomputes from its call, the wrong constant is judged where the claimed
bound is tightest, the Thm 3.6 counterexample is the smallest one and recomputes, the set where
Thm 3.6 and the process coincide, Cor 3.7's equality set, and the cost model's SD facts."""
from __future__ import annotations

import numpy as np
import pytest

from spectheory.sims.claims import se
from spectheory.sims.registry import Context, load_all
from spectheory.sims.shrink import recompute
from spectheory.closed_forms import se as cf
from spectheory.pairs import pair_from_tables, random_pair
from spectheory.rules.se import STANDARD

CLAIMS = load_all()


def _check(cid, subject=None, quick=True):
    c = CLAIMS[cid]
    ctx = Context(seed=0, quick=quick, claim_id=cid, subject_name="subject", parts=c.parts,
                  claim_choices=c.choices, scope=c.scope)
    return c.check(ctx, c.subject if subject is None else subject), ctx


def test_parts_and_controls_as_registered():
    parts = {cid: [p.id for p in c.parts] for cid, c in CLAIMS.items() if cid.startswith("se.")}
    assert parts["se.thm3_2"] == ["bound", "equality"]
    assert parts["se.cor3_7"] == ["never-slower", "equality-only-when", "equality-iff"]
    assert parts["se.thm3_6"] == ["iid", "one-cycle", "markov"]
    assert parts["se.cor3_5"] == ["never-slower", "faster"]
    assert parts["se.lossless"] == ["sec3.2", "alg1", "alg2"]
    tables = {p.id: p for p in CLAIMS["se.tables"].parts}
    assert not tables["sd-slower-3model-we"].checkable and "1/3" in tables["sd-slower-3model-we"].reason
    assert tables["sd-can-be-slower"].relation == "exists" and tables["cd-falls-with-mu"].relation == "monotone"
    ctl = {k.name: k for k in CLAIMS["se.cor3_7"].controls}
    assert ctl["no-swap"].parts == ("equality-only-when", "equality-iff") and ctl["bound + 0.01"].subject.shift == 0.01


@pytest.mark.parametrize("cid", ["se.thm3_2", "se.cor3_3", "se.cor3_4", "se.cor3_7"])
def test_least_slack_records_recompute_and_the_wrong_constant_is_judged_there(cid):
    """Each inequality part gets a record whose call recomputes its value; the wrong constant (+0.01)
    is evaluated at the claimed bound's least-slack instance: the same tables, the slack 0.01 less."""
    _, ctx = _check(cid)
    _, wrong = _check(cid, se.WRONG_CONSTANT)
    ineq = [p.id for p in CLAIMS[cid].parts if p.relation in ("≥", ">", "ordering", "monotone")]
    assert sorted(ctx.slack) == sorted(ineq)
    for part, rec in ctx.slack.items():
        assert recompute(rec["call"]) == pytest.approx(rec["value"], abs=1e-15)
        # tight: found within 1e-6, or (strict parts) within the wrong constant's 0.01 at the searched
        # distance threshold_margin from the open hypothesis' edge
        assert 0 <= rec["value"] < (1e-6 if CLAIMS[cid].part(part).relation != ">" else 0.01), (part, rec)
        w = wrong.slack[part]
        assert (w["instance"]["p"], w["instance"]["q"]) == (rec["instance"]["p"], rec["instance"]["q"])
        assert w["value"] == pytest.approx(rec["value"] - 0.01, abs=1e-12) and "WRONG_CONSTANT" in w["call"]
        assert recompute(w["call"]) == pytest.approx(w["value"], abs=1e-15)


def test_cor3_5_search_finds_the_threshold_and_both_parts_get_it():
    """The default-tier search lands next to λ = c/(1+c) (kept threshold_margin = 1e-3 away, where the
    best speedup tends to 1 on disjoint supports), below the wrong constant's 0.01."""
    _, ctx = _check("se.cor3_5", quick=False)
    rec = ctx.slack["never-slower"]
    assert ctx.slack["faster"] == rec and 0 < rec["value"] < 0.01
    lam, c = rec["instance"]["lam"], rec["instance"]["c"]
    assert 1e-3 <= abs(lam - c / (1 + c)) < 1e-2
    assert recompute(rec["call"]) == pytest.approx(rec["value"], abs=1e-15)


def test_cor3_5_exempts_only_disjoint_supports_at_the_threshold():
    pts = [dict(lam=lam, c=c) for lam in (0.3, 0.5) for c in (0.5, 1.0)]
    assert se.faster_points(pts, disjoint=False) == pts
    assert se.faster_points(pts, disjoint=True) == [p for p in pts if (p["lam"], p["c"]) != (0.5, 1.0)]
    # and there the best speedup is exactly 1 (both proposers), while λ ≠ c/(1+c) is faster
    M = se.on_pair("iid-V3-disjoint", "WE", 0.5)
    assert se.best_sbe(M, 1.0, STANDARD) == pytest.approx(1.0, abs=1e-12)
    assert se.best_sbe(M, 0.5, STANDARD) > 1 + 1e-3


def test_thm3_6_counterexample_is_the_smallest_and_recomputes():
    cex = CLAIMS["se.thm3_6"].shrink(Context(claim_id="se.thm3_6"), STANDARD)
    assert (cex["V"], cex["order"], tuple(cex["gamma"]), cex["c"], cex["seed"]) == (2, 0, (1, 1), 0.5, 0)
    assert cex["part"] == "iid"
    f, x, details = recompute(cex["call"])
    assert (f, x) == (cex["claimed"], cex["measured"]) and f < x          # the formula is too slow
    assert details["relative_error"] == pytest.approx((f - x) / x)


def test_thm3_6_formula_and_process_coincide_exactly_on_the_described_set():
    M = se.models("iid-V4-random WE λ=0.5")
    a = float(M.acceptance(0)[0])
    for (gq, gp), cstar in se.COINCIDE:
        f, x = se.thm3_6_at(M, STANDARD, gq, gp, cstar(a))
        assert f == pytest.approx(x, rel=1e-12), (gq, gp)
        f, x = se.thm3_6_at(M, STANDARD, gq, gp, cstar(a) + 0.25)      # off the set (but for γ = (2, 2))
        assert (abs(f - x) < 1e-12) == ((gq, gp) == (2, 2)), (gq, gp)
    # at α = 0 the two agree for any γ and c
    assert cf.thm3_6_speedup(0.0, 3, 1, 0.4) == pytest.approx(cf.alternating_speedup_iid(0.0, 0.0, 3, 1, 0.4))


def test_cor3_7_equality_exactly_when_alpha_q_is_zero():
    """Process speedup − 1 = α_q(1 + cα_p)/(1 + c + cα_q(1 − α_p)) for γq = γp = 1 on i.i.d. pairs:
    1 exactly when α_q = 0 (any c), 1 + α_q at c = 0 (not 1, as the formula has it)."""
    for lam, c in ((0.3, 0.5), (0.7, 2.0)):
        M = se.on_pair("iid-V4-random", "WE", lam)
        aq, ap = float(M.acceptance(0)[0]), float(M.acceptance(1)[0])
        sp = se.speedup(M, (1, 1), c, STANDARD)
        assert sp - 1 == pytest.approx(aq * (1 + c * ap) / (1 + c + c * aq * (1 - ap)), rel=1e-12)
    zero = se.on_pair("iid-V3-disjoint", "WE", 0.0)                      # r = p, q disjoint from p: α_q = 0
    assert float(zero.acceptance(0)[0]) == 0.0
    assert all(se.speedup(zero, (1, 1), c, STANDARD) == pytest.approx(1.0, abs=1e-12) for c in (0.1, 1.0, 3.0))
    M = se.models("iid-V4-random WE λ=0.5")
    assert se.speedup(M, (1, 1), 0.0, STANDARD) == pytest.approx(1 + float(M.acceptance(0)[0]), rel=1e-12)
    assert se.speedup(M, (1, 1), 0.5, se.NO_SWAP.rule, "sbe") == pytest.approx(1.0, abs=1e-12)  # the control


def test_sd_on_the_ensemble_in_the_cost_model():
    """γ = 1: SD runs at (1 + α)Σt/(t_q + Σt), below 1 exactly when α < t_q/Σt; on a 3-model weighted
    ensemble with weights 1/3 and equal costs α ≥ 1/3 = t_q/Σt, so SD is never slower there."""
    from spectheory.ensembles import weighted_n_ensemble
    from spectheory.exact.se import SEModels
    from spectheory.markov import MarkovSource
    from spectheory.pairs import dirichlet_source
    for seed in range(6):
        srcs = [dirichlet_source(3, 0, 0.3, seed=10 * seed + k) for k in range(3)]
        M = SEModels.build(srcs, weighted_n_ensemble([1 / 3] * 3), "3")
        sd1 = cf.sd_on_ensemble_chain(M.r_source, MarkovSource(M.tables[0], 0), 1, 1.0, 3.0)["speedup"]
        assert sd1 == pytest.approx((1 + float(M.acceptance(0)[0])) * 3 / 4, rel=1e-12) and sd1 >= 1 - 1e-12
    M = se.on_pair("markov1-V50-weak", "CD", 2.0)
    assert se.stationary_alpha(M) < 0.5 and se.sd_best(M, 1.0) < 1             # α < c/(1+c) at c = 1
    assert se.sd_best(M, 1.0, sd_pass="target") > 1                             # the control: ≥ 1 + α


def test_speedup_does_not_always_fall_with_mu():
    """Fig. 5's 'speedup falls as μ grows' is not a property of every pair: a V = 2 pair where it rises."""
    pair = pair_from_tables([0.1318, 0.8682], [0.2232, 0.7768])
    assert se.mu_drop(pair, 0.26, 0.39) < -0.1
    assert se.mu_drop(random_pair(3, 0, 1.0, seed=0), 0.3, 0.1) > 0          # and falls on another


def test_tables_every_pair_reading_fails_and_its_record_recomputes():
    """The stricter reading (SE falls with μ on every pair, μ in the paper's 0.1..0.5) fails at a
    searched V = 2 pair; the CD+ control fails there too."""
    ev, ctx = _check("se.tables")
    rec = ctx.slack["cd-falls-every-pair"]
    assert rec["value"] < -0.01 and recompute(rec["call"]) == rec["value"]
    assert 0.1 <= rec["instance"]["mu"] <= 0.4
    assert any(e.part == "cd-falls-every-pair" and e.outcome == "fail" for e in ev)
    _, wrong = _check("se.tables", se.CD_PLUS_MU)
    assert wrong.slack["cd-falls-every-pair"]["value"] < 0


def test_tables_grid_least_slack_of_the_monotone_part_recomputes():
    _, ctx = _check("se.tables")
    rec = ctx.slack["cd-falls-with-mu"]
    assert recompute(rec["call"]) == pytest.approx(rec["value"]) and rec["value"] > 0
    for part in ("se-never-slower", "se-beats-sd"):
        assert 0 <= ctx.slack[part]["value"] < 1e-6 and recompute(ctx.slack[part]["call"]) == ctx.slack[part]["value"]
    assert not np.isnan(rec["value"])
