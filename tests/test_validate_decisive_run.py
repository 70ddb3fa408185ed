"""The shipped decisive run (issue 25): `spectheory verify --logits data/runs/qwen2.5-coder-T1-decisive`
gives every graded logits test of every family loop the sample its power statement needs (power 0.9
at its tolerance, the full report's per-test α) and every logits-mode negative control is rejected;
each family's claim gets a real-pair verdict of its own. The replay needs no model."""
from pathlib import Path

import pytest

from spectheory.sims.registry import total_mc_tests
from spectheory.sims.runner import run_claims

RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "qwen2.5-coder-T1-decisive"

#: the claims whose real-pair tests the family loops and real SD carry
LOOP_CLAIMS = ["sd.acceptance", "sd.expected_tokens", "se.acceptance", "gbv.optimal", "spectr_gbv.attains",
               "kseq.rho", "ersd.lemma3_1"]


@pytest.fixture(scope="module")
def evidence():
    if not (RUN / "run.json").exists():
        pytest.skip("the shipped decisive run is not in this checkout")
    pytest.importorskip("torch")
    # what `verify --logits` adds for these claims (spectheory.cli.runs.real_logits_evidence), without the
    # trace replays of other claims: real SD's evidence and the family loops', at the report's per-test α
    from spectheory.validate import replay_loops
    from spectheory.validate.evidence import sd_evidence
    from spectheory.validate.experiment import load_run
    run = load_run(RUN)
    alpha = 0.01 / total_mc_tests()
    out = sd_evidence(run, alpha)
    for cid, evs in replay_loops.logits_evidence(run, alpha).items():
        out.setdefault(cid, []).extend(evs)
    return out


def _graded(evs):
    return [e for e in evs if e.mode == "logits" and e.outcome != "info"]


@pytest.mark.parametrize("claim", LOOP_CLAIMS)
def test_every_graded_logits_test_is_powered(evidence, claim):
    graded = _graded(evidence[claim])
    assert graded, f"{claim}: no graded logits evidence"
    for e in graded:
        assert e.outcome != "underpowered", (claim, e.instance, e.n, e.detectable, e.tolerance)
        if e.tolerance and e.detectable is not None:   # a statistical test (exact ones state no power)
            assert e.detectable <= e.tolerance, (claim, e.instance, e.n, e.detectable)


@pytest.mark.parametrize("claim", LOOP_CLAIMS)
def test_every_logits_control_is_rejected(evidence, claim):
    controls = [e for e in evidence[claim] if e.control]
    assert controls, f"{claim}: no logits-mode negative control"
    assert all(e.control == "rejected" for e in controls), \
        [(e.instance, e.claimed, e.measured, e.n, e.test) for e in controls if e.control != "rejected"]


@pytest.mark.parametrize("claim", LOOP_CLAIMS)
def test_each_claim_has_a_real_pair_verdict_of_its_own(evidence, claim):
    c = run_claims(claim, quick=True, progress=False, extra_evidence={claim: evidence[claim]})["claims"][0]
    real = c["sources"]["real"]
    assert real["verdict"] in ("holds", "fails"), (claim, real)
    assert real["controls"]["rejected"] == real["controls"]["total"] >= 1, (claim, real)


@pytest.mark.slow
def test_hrad_accuracy_is_decided_and_its_control_rejected():
    """sb.hrad on the decisive run's 380 captured texts (150 HumanEval, 80 MT-Bench, 150 sonnets;
    about 2 min: ten cross-validated MLPs): the graded gain test is decided (not underpowered), its
    shuffled-label control is rejected, the real pair has a verdict of its own, and every category's
    gain over its own majority class is reported beside it (info)."""
    if not (RUN / "run.json").exists():
        pytest.skip("the shipped decisive run is not in this checkout")
    pytest.importorskip("torch")
    from spectheory.validate import replay_sb
    from spectheory.validate.experiment import load_run
    run = load_run(RUN)
    assert len(run.traces) == 380
    evs = replay_sb.hrad_evidence(run.traces, None, 0.01 / total_mc_tests())
    graded = _graded(evs)
    assert len(graded) == 1 and graded[0].outcome == "pass" and graded[0].n == 380, graded
    assert graded[0].measured - graded[0].claimed > 0.02          # the gain over the pooled majority class
    (ctl,) = [e for e in evs if e.control]
    assert ctl.control == "rejected"
    cats = {e.instance.split(" (")[0].rsplit(" ", 1)[-1]: e for e in evs if "within category" in e.instance}
    assert set(cats) == {"chat", "code", "poetry"} and all(e.outcome == "info" for e in cats.values())
    c = run_claims("sb.hrad", quick=True, progress=False, extra_evidence={"sb.hrad": evs})["claims"][0]
    real = c["sources"]["real"]
    assert real["verdict"] == "holds" and real["controls"] == {"rejected": 1, "total": 1, "not_rejected": []}
