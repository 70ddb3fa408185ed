"""The shipped default `spectheory validate` run decides the two best-established claims
(issue 19's acceptance test): `spectheory verify --logits data/runs/<default run>` gives
`sd.acceptance` and `sd.expected_tokens` **holds**, each with a graded logits test that passes
at a tolerance of at most 0.02 and whose sample reaches the size its power statement needs
(per-test α of the full report, power 0.9 as the report states), and the report gives the real pair
its own verdict beside the paper-level one: `real pair: holds (n had ≥ n needed)`. The replay needs
no model."""
from pathlib import Path

import pytest

from spectheory.sims.runner import run_claims
from spectheory.cli.cmd_verify import real_logits_evidence

RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "qwen2.5-coder-T1-b32"


PROGRESS: list = []


@pytest.fixture(scope="module")
def evidence():
    return real_logits_evidence(RUN, 0.01, ["sd.acceptance", "sd.expected_tokens"], log=PROGRESS.append)


def test_the_replay_runs_only_what_the_claims_need_and_names_it_with_its_eta(evidence):
    """`verify --logits` for the SD claims replays SD alone (the family replays feed other claims),
    with a line naming the replays needed, one naming the replay and its ETA as it starts, and one
    with its time as it ends."""
    from spectheory.validate.evidence import family_modules
    n = 1 + len(family_modules())
    assert len(PROGRESS) == 4, PROGRESS
    assert PROGRESS[0] == f"loading the logits run {RUN} …"
    assert PROGRESS[1].startswith(f"logits replays the selected claims need: sd (1 of {n}; ")
    assert PROGRESS[1].endswith(" in all, estimated from the run's size)")
    assert PROGRESS[2].startswith("logits replay 1/1: sd (for sd.acceptance, sd.expected_tokens, sd.walltime): ") \
        and "all replays done about " in PROGRESS[2]
    assert PROGRESS[3].startswith("logits replay 1/1: sd done in ")
    assert set(evidence) == {"sd.acceptance", "sd.expected_tokens"}  # the claims asked for


@pytest.mark.parametrize("claim", ["sd.acceptance", "sd.expected_tokens"])
def test_default_run_gives_holds_with_powered_logits_tests(evidence, claim):
    graded = [e for e in evidence[claim] if e.outcome != "info"]
    assert graded, f"{claim}: no graded logits evidence"
    for e in graded:
        assert e.tolerance is not None and e.tolerance <= 0.02, (claim, e.instance, e.tolerance)
        assert e.outcome == "pass", (claim, e.instance, e.outcome, e.claimed, e.measured, e.detectable)
    tests = [e for e in graded if e.tolerance > 0]  # statistical (an exact count has tolerance 0)
    assert tests, f"{claim}: no statistical logits test"
    for e in tests:  # powered: the tolerance is detectable at the per-test α with power 0.9
        assert e.detectable is not None and e.detectable <= e.tolerance, (claim, e.instance, e.n, e.detectable)
    c = run_claims(claim, quick=True, progress=False, extra_evidence={claim: evidence[claim]})["claims"][0]
    assert c["verdict"] == "holds", (claim, c["summary"])
    # the real pair's own verdict beside the paper-level one (issue 25 item 3): holds, powered
    real = c["sources"]["real"]
    assert real["verdict"] == "holds", (claim, real)
    assert real["n"] >= real["n_needed"] > 0, (claim, real)
    assert c["sources"]["synthetic"] == "holds"
