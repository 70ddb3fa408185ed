"""The exponential-race family's registration and a quick run of every one of its claims through
the runner: each part's verdict (what docs/ersd.md reports), every control failing, and each
inequality part's least-slack record (value in the range the docs give, search stated, the
one-line call recomputing it)."""
from __future__ import annotations

import pytest

from spectheory.sims.registry import INEQUALITIES, load_all
from spectheory.sims.runner import run_claims
from spectheory.sims.shrink import recompute

IDS = ("ersd.lossless", "ersd.lemma3_1", "ersd.batch_crossover", "opt_tree.greedy", "tunstall.thm4_1",
       "tunstall.lemma4_2", "entropy.kl_lower", "entropy.upper", "zero_order.underestimates",
       "opt_tree.log_growth")

#: per claim, per part: the verdict docs/ersd.md reports (quick tier, seed 0)
PARTS = {
    "ersd.lossless": {"ersd": "holds", "gsd": "holds"},
    "ersd.lemma3_1": {"formula": "holds", "lower": "holds", "upper": "holds"},
    "ersd.batch_crossover": {"batch-k1": "holds", "batch-moderate": "fails", "batch-large": "holds",
                             "sequence": "holds"},
    "opt_tree.greedy": {"optimal": "holds", "sibling-closed": "not-checkable"},
    "tunstall.thm4_1": {"main": "holds", "markov": "not-checkable"},
    "tunstall.lemma4_2": {"main": "holds", "any-n": "holds"},
    "entropy.kl_lower": {"distinct": "fails", "iid-list": "holds"},
    "entropy.upper": {"pfr-list": "holds", "ersd-index": "holds", "grs": "not-checkable"},
    "zero_order.underestimates": {"higher-order": "fails", "regimes": "holds"},
    "opt_tree.log_growth": {"lower": "holds", "upper": "holds", "short-lower": "fails", "short-upper": "holds"},
}
#: least slack of (claim, part): the range the docs state for the quick tier's search
SLACK = {
    ("ersd.lemma3_1", "lower"): (0.0, 0.2), ("ersd.lemma3_1", "upper"): (0.0, 0.01),
    ("ersd.batch_crossover", "batch-k1"): (0.0, 0.01), ("ersd.batch_crossover", "batch-moderate"): (-0.02, -0.01),
    ("ersd.batch_crossover", "batch-large"): (0.004, 0.007), ("ersd.batch_crossover", "sequence"): (0.0, 0.02),
    ("opt_tree.greedy", "optimal"): (-1e-12, 1e-12), ("tunstall.thm4_1", "main"): (0.0, 0.1),
    ("tunstall.lemma4_2", "main"): (0.0, 0.1), ("tunstall.lemma4_2", "any-n"): (0.0, 0.1), ("entropy.kl_lower", "distinct"): (-30.0, -0.5),
    ("entropy.kl_lower", "iid-list"): (0.0, 1.0), ("entropy.upper", "pfr-list"): (3.0, 3.5),
    ("entropy.upper", "ersd-index"): (3.0, 3.7), ("zero_order.underestimates", "higher-order"): (-0.1, 0.0),
    ("zero_order.underestimates", "regimes"): (0.0, 0.01), ("opt_tree.log_growth", "lower"): (0.1, 0.13),
    ("opt_tree.log_growth", "upper"): (0.1, 0.2), ("opt_tree.log_growth", "short-lower"): (-0.15, -0.05),
    ("opt_tree.log_growth", "short-upper"): (0.1, 0.2),
}


@pytest.fixture(scope="module")
def report():
    return {c["id"]: c for c in run_claims(",".join(IDS), quick=True, progress=False)["claims"]}


def test_all_ids_registered_with_controls_covering_every_part():
    reg = load_all()
    for cid in IDS:
        c = reg[cid]
        covered = {(p, m) for ctl in c.controls for p, ms in c.control_requirements(ctl).items() for m in ms}
        for part in c.checkable_parts:
            assert {(part.id, m) for m in c.part_modes(part) if m != "logits"} <= covered, (cid, part.id)


def test_part_verdicts(report):
    for cid, parts in PARTS.items():
        got = {p["id"]: p["verdict"] for p in report[cid]["parts"]}
        assert got == parts, cid


def test_every_control_fails(report):
    for cid in IDS:
        for ctl in report[cid]["controls"]:
            assert ctl["verdict"] == "fails", (cid, ctl["name"], ctl["parts"])


def test_least_slack_of_every_inequality_part(report):
    """Every checkable inequality part carries its least slack; the value lies where the docs say;
    the call recomputes it (for the cheap ones)."""
    for cid in IDS:
        for p in report[cid]["parts"]:
            if not p["checkable"] or p["relation"] not in INEQUALITIES:
                continue
            rec = p["least_slack"]
            assert rec is not None, (cid, p["id"])
            lo, hi = SLACK[(cid, p["id"])]
            assert lo <= rec["value"] <= hi, (cid, p["id"], rec["value"])
            assert rec["search"].startswith(("exhaustive over", "2 seeded", "3 seeded", "1 seeded")), rec["search"]
    for cid, part in (("ersd.lemma3_1", "upper"), ("entropy.kl_lower", "distinct"), ("tunstall.thm4_1", "main")):
        rec = next(p for p in report[cid]["parts"] if p["id"] == part)["least_slack"]
        assert recompute(rec["call"]) == pytest.approx(rec["value"], abs=1e-12)


def test_every_control_fails_at_its_own_searched_instance(report):
    """A control runs the same search with its own subject in the parts it must fail (exact), and
    the least slack it finds is negative there; the order-0 control of zero_order is exact: a
    source without dependence has gap 0, so its slack is −margin wherever it is searched."""
    for cid in IDS:
        reg = load_all()[cid]
        for ctl in report[cid]["controls"]:
            spec = next(c for c in reg.controls if c.name == ctl["name"])
            need = {p for p, modes in reg.control_requirements(spec).items() if "exact" in modes}
            searched = {p for p in need if next(q for q in report[cid]["parts"] if q["id"] == p)["least_slack"]}
            assert set(ctl.get("least_slack", {})) == searched, (cid, ctl["name"])
            for part, rec in ctl.get("least_slack", {}).items():
                assert rec["value"] < 0, (cid, ctl["name"], part, rec["value"])
    zo = next(k for k in report["zero_order.underestimates"]["controls"] if k["name"] == "order-0-sources")
    for part in ("higher-order", "regimes"):
        assert zo["least_slack"][part]["value"] == pytest.approx(-0.01, abs=1e-9), part


def test_failing_parts_carry_a_counterexample(report):
    kl = report["entropy.kl_lower"]
    cex = next(p for p in kl["parts"] if p["id"] == "distinct")["counterexample"]
    assert cex["V"] == 2 and cex["order"] == 0
    D, H = recompute(cex["call"])
    assert H < D
    for cid, part in (("ersd.batch_crossover", "batch-moderate"), ("opt_tree.log_growth", "short-lower"),
                      ("zero_order.underestimates", "higher-order")):
        cex = next(p for p in report[cid]["parts"] if p["id"] == part)["counterexample"]
        assert cex is not None and cex["part"] == part, cid
        got = recompute(cex["call"])
        assert (got if not isinstance(got, tuple) else got[1] - got[0]) < 0, (cid, got)
