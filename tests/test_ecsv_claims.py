"""The ecsv.* claims in the registry: one quick run (the runner, controls included) checked part
by part; counterexample and least-slack calls recompute; sweep jobs; the figure renders; the
real-logits replay on the shipped run."""
from __future__ import annotations

import numpy as np
import pytest

from _figures import render_quick
from spectheory.sims import sweep as sw
from spectheory.sims.runner import run_claims
from spectheory.sims.shrink import recompute

EXPECTED = {
    "ecsv.map": {"uniform-prior": "holds", "printed": "fails"},
    "ecsv.majority": {"s1-share": "holds", "s1-soft": "fails", "s1-prob": "fails", "s1-weak": "holds",
                      "s2-independent": "holds", "s2-correlated": "fails", "drafting": "holds",
                      "drafting-averaged": "fails"},
    "ecsv.prefix_length": {"chain-rule": "holds", "independent": "holds", "markov-marginal": "not-checkable",
                           "monotone": "holds", "monotone-dependent": "fails"},
    "ecsv.budget": {"per-step": "holds", "per-token-parallel": "fails", "per-token-sequential": "fails",
                    "every-method": "not-checkable"},
    # rule3-rs: the exact V = 3 harness is decided against it, the V = 8 harness leaves the (B = 2, k = 4)
    # comparisons undetermined: an 'exists' part does not fail on undecided evidence (issue 34, item 5)
    "ecsv.falsification": {"rule1": "fails", "rule2": "holds", "rule2-lite": "fails", "rule3": "fails",
                           "rule3-rs": "inconclusive", "lossless": "holds"},
}


@pytest.fixture(scope="module")
def report():
    return run_claims("ecsv.*", quick=True, seed=0, progress=False)


def test_every_part_verdict(report):
    got = {c["id"]: {p["id"]: p["verdict"] for p in c["parts"]} for c in report["claims"]}
    for cid, parts in EXPECTED.items():
        for pid, verdict in parts.items():
            assert got[cid][pid] == verdict, (cid, pid, got[cid][pid])
    # the standard final check survives rules 1 and 2 only with enough power: quick leaves them undetermined
    assert got["ecsv.falsification"]["rule1-rs"] in ("inconclusive", "holds")
    assert got["ecsv.falsification"]["rule2-rs"] in ("inconclusive", "holds")


def test_every_control_fails(report):
    for c in report["claims"]:
        for k in c["controls"]:
            assert k["verdict"] == "fails", (c["id"], k["name"], k["parts"])


def test_counterexamples_recompute(report):
    """Every counterexample of every part recomputes exactly the printed claimed and measured numbers
    (the falsification's rule-1 call rebuilds the tuned ECSV-lite: 0.9076, not the untuned 0.9009)."""
    seen = set()
    for c in report["claims"]:
        assert c["counterexample"] is not None, c["id"]
        for p in c["parts"]:
            cex = p["counterexample"]
            if cex is None:
                continue
            assert cex["part"] == p["id"] and p["verdict"] == "fails", (c["id"], p["id"])
            out = recompute(cex["call"])
            if isinstance(out, (int, float)):
                assert out == pytest.approx(cex["measured"], abs=1e-12), (c["id"], p["id"])
            else:
                got = tuple(out)[:2]
                assert got == pytest.approx((cex["claimed"], cex["measured"]), abs=1e-12), (c["id"], p["id"])
            seen.add((c["id"], p["id"]))
    assert {("ecsv.majority", "s1-soft"), ("ecsv.majority", "s1-prob"), ("ecsv.majority", "drafting-averaged"),
            ("ecsv.falsification", "rule1")} <= seen
    for c in report["claims"]:          # the controls' counterexamples recompute too (each with its own subject)
        for k in c["controls"]:
            cex = k.get("counterexample")
            if cex:
                out = recompute(cex["call"])
                got = out if isinstance(out, (int, float)) else tuple(out)[1]
                assert got == pytest.approx(cex["measured"], abs=1e-12), (c["id"], k["name"])
    rule1 = next(p["counterexample"] for c in report["claims"] if c["id"] == "ecsv.falsification"
                 for p in c["parts"] if p["id"] == "rule1")
    assert rule1["measured"] == pytest.approx(0.9076081718333229, abs=1e-9)


def test_ties_and_scope_in_the_report(report):
    """s1-prob fails by equality only, and says so; the principal drafting reading's contexts with
    ε ≥ ½ (averaged over the branches at the position) are info 'outside the principal reading's
    premise', never graded there (the averaged-over-positions reading grades them on average and
    fails, beside the headline)."""
    maj = next(c for c in report["claims"] if c["id"] == "ecsv.majority")
    prob = [e for e in maj["evidence"] if e["part"] == "s1-prob" and e["outcome"] == "fail"]
    assert prob and all(e.get("tie") for e in prob) and all(abs(e["measured"] - e["claimed"]) <= 1e-12 for e in prob)
    draft = [e for e in maj["evidence"] if e["part"] == "drafting" and e["mode"] == "exact"]
    outside = [e for e in draft if e["outcome"] == "info"]
    assert len(outside) >= 3 and all("outside the principal reading's premise" in e["note"] for e in outside)
    assert any(e["measured"] < e["claimed"] for e in outside)   # the vote does lose there
    graded = [e for e in draft if e["outcome"] != "info"]
    assert graded and all(e["outcome"] == "pass" for e in graded)


def test_least_slack_records_recompute(report):
    seen = 0
    for c in report["claims"]:
        for p in c["parts"]:
            ls = p["least_slack"]
            if ls:
                assert recompute(ls["call"]) == pytest.approx(ls["value"], abs=1e-12)
                seen += 1
    assert seen >= 4


def test_falsification_evidence_says_why(report):
    c = next(c for c in report["claims"] if c["id"] == "ecsv.falsification")
    rule1 = [e for e in c["evidence"] if e["part"] == "rule1" and e["mode"] == "mc"][0]
    assert rule1["measured"] == 0 and "accepted" in rule1["note"]
    lossy = [e for e in c["evidence"] if e["part"] == "lossless" and e["outcome"] == "info"]
    assert lossy and all(e["measured"] > 0.01 for e in lossy)   # the min(1, p/q̄) reading's TV, measured


def test_jobs():
    mc_job, ex_job = sw.resolve("ecsv.mc"), sw.resolve("ecsv.exact")
    r = mc_job({"source": "weak", "method": "ECSV-spot(R=2)", "B": 4, "k": 4, "n_steps": 800, "tv_runs": 500},
               np.random.SeedSequence(3))
    assert r["R_used"] == 2 and r["d"] == 2 and 0 <= r["tv"] <= 1 and r["vtpo_sequential"] > 1.0
    e = ex_job({"source": "medium", "method": "Vote-unif", "B": 2, "k": 2}, None)
    assert e["tv"] < 1e-12
    with pytest.raises(ValueError, match="gamma applies"):
        ex_job({"source": "medium", "method": "SD-1", "B": 2, "k": 2, "gamma": 1.0}, None)
    with pytest.raises(ValueError, match="method"):
        ex_job({"source": "medium", "method": "ECSV", "B": 2, "k": 2}, None)


def test_fig_ecsv_harness_quick(tmp_path):
    render_quick("fig_ecsv_harness.py", tmp_path / "fig.png", timeout=300)


def test_logits_replay_on_the_shipped_run():
    from pathlib import Path

    from spectheory.validate import replay_ecsv as rp
    from spectheory.validate.experiment import load_run
    run = load_run(Path(__file__).resolve().parents[1] / "data" / "runs" / "qwen2.5-coder-T1")
    ev = rp.logits_evidence(run, 1e-3, Bs=(2, 4), ks=(2, 4), n_mc=16)
    rule1 = [e for e in ev["ecsv.falsification"] if e.part == "rule1" and e.outcome != "info"]
    assert len(rule1) == 1 and rule1[0].outcome in ("fail", "underpowered") and rule1[0].measured == 0
    drafting = [e for e in ev["ecsv.majority"] if e.part == "drafting" and not e.control]
    assert len(drafting) == 2 and all(e.mode == "logits" for e in drafting)
    assert all(e.measured > e.claimed for e in drafting)  # the real pair is aligned: the vote matches more often
    controls = [e for e in ev["ecsv.majority"] if e.control]   # the first branch instead of the vote
    assert len(controls) == 2 and all(e.control == "rejected" and e.outcome == "info" for e in controls)


def test_replay_fusion_matches_the_exact_fusion_on_shared_rows():
    """Teacher-forced fusion (shared rows) equals the exact engine's fusion on an order-0 source,
    where every branch does share its rows (Vote-unif; ECSV-lite, whose entropy term is then equal)."""
    import itertools

    from spectheory.exact import ecsv as ex
    from spectheory.pairs import pair_from_tables
    from spectheory.rules import ecsv as R
    from spectheory.validate import replay_ecsv as rp
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.3, 0.3, 0.4])
    pair = pair_from_tables(p, q)
    for meth, var in ((R.VOTE_UNIF, rp.Variant("v")), (R.ECSV_LITE, rp.Variant("l", gamma=1.0))):
        setup = R.Setup(pair, meth, 3, 2)
        tok, st, _ = ex._enumerate(setup, 0)
        want = ex.fuse(setup, tok, st, 0)[0]
        Qr = np.tile(q, (1, 2, 1))
        Pr = np.tile(p, (1, 2, 1))
        got = rp.fuse_shared_rows(tok[None], Qr, Pr, var)[0]
        np.testing.assert_array_equal(got, want)
    del itertools


def test_exact_decisions_need_both_metrics():
    """Exact rule 1: improving accepted length without lowering cross-entropy (or the reverse)
    does not count; both on ≥ 2 sources does."""
    from spectheory.sims.claims import ecsv as C

    def row(src, meth, acc, ce, B=2):
        return {"source": src, "drafter": "clean", "B": B, "k": 2, "method": meth, "accepted_length": acc,
                "ce_per_token": ce}
    base = [row(s, "SD-1", 1.0, 1.0) for s in "abc"]
    only_acc = base + [row(s, "ECSV-lite", 1.5, 1.0) for s in "abc"]
    only_ce = base + [row(s, "ECSV-lite", 1.0, 0.5) for s in "abc"]
    both = base + [row("a", "ECSV-lite", 1.5, 0.5), row("b", "ECSV-lite", 1.5, 0.5), row("c", "ECSV-lite", 0.5, 2.0)]
    assert C.exact_decisions(only_acc, ("ECSV-lite",))[0]["reject"]
    assert C.exact_decisions(only_ce, ("ECSV-lite",))[0]["reject"]
    d = C.exact_decisions(both, ("ECSV-lite",))[0]
    assert d["n_improves"] == 2 and not d["reject"]
    v = base + [row(s, "Vote-unif", 1.0, 1.0) for s in "abc"]
    beats = v + [row(s, "ECSV-lite", 1.02, 1.0) for s in "abc"]
    within = v + [row(s, "ECSV-lite", 1.005, 1.0) for s in "abc"]
    assert not C.exact_vote_decisions(beats, ("ECSV-lite",))[0]["revise"]
    assert C.exact_vote_decisions(within, ("ECSV-lite",))[0]["revise"]


def test_vote_correct_splits_ties():
    """A tie between the branches' tokens is broken uniformly: each tied token is right with
    probability 1/|tie set| (the Rao–Blackwellised indicator the MC accuracy tests average)."""
    from spectheory.sims.claims import ecsv as C
    obs = np.array([[0, 1], [0, 0], [2, 1]])
    y = np.array([0, 0, 1])
    got = C.vote_correct(np.ones(2), 3, y, obs)
    np.testing.assert_allclose(got, [0.5, 1.0, 0.5])
    np.testing.assert_allclose(C.vote_correct(np.array([2.0, 1.0]), 3, y, obs), [1.0, 1.0, 0.0])


def test_replay_numbers_by_hand():
    """SD-1's replayed accepted length is Σ_j Π_{i<j} β (no bonus token), and a fused leftover
    pseudo-token counts as a miss (a lower bound)."""
    from spectheory.validate import replay_ecsv as rp
    beta = np.array([0.5, 0.8, 0.9, 0.1])
    pos = np.array([[0, 1], [1, 2], [2, 3]])
    np.testing.assert_allclose(rp.sd1_accepted(beta, pos), [0.5 + 0.4, 0.8 + 0.72, 0.9 + 0.09])
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]])
    np.testing.assert_allclose(rp.matched(P, np.array([0, 2]), leftover=2), [0.6, 0.0])
    np.testing.assert_allclose(rp.matched(P, np.array([1, 1]), leftover=2), [0.3, 0.5])
