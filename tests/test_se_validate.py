"""SE replay on a synthetic logit trace: evidence rows for se.acceptance and se.thm3_2 pass
for the correct rule and fail for the verify-against-member control (level 1e-3, n_mc = 1000
draws at each of 60 positions: standard error ≈ 0.002, so a 0.01 deviation is detected with
probability 0.9)."""
from __future__ import annotations

import numpy as np
import pytest

from spectheory.rules.se import BROKEN_VERIFY_MEMBER
from spectheory.validate import LogitTrace
from spectheory.validate.replay_se import evidence, replay_se, trace_exact_tokens_no_bonus


def _trace(T=60, V=40, seed=0):
    rng = np.random.default_rng(seed)
    tl = rng.normal(0, 2.0, (T, V))
    dl = tl + rng.normal(0, 1.5, (T, V))
    return LogitTrace(tl, dl, rng.integers(0, V, T), name="synthetic")


def test_replay_se_evidence_pass_and_control_fails():
    tr = _trace()
    ev = evidence(replay_se(tr, n_mc=1000, seed=1))
    graded = [e for k in ("se.acceptance", "se.thm3_2") for e in ev[k]]
    assert graded and all(e.mode == "logits" for e in graded)
    assert all(e.outcome == "pass" for e in graded), [(e.instance, e.outcome, e.p_value) for e in graded]
    bad = evidence(replay_se(tr, n_mc=1000, seed=1, rule=BROKEN_VERIFY_MEMBER))
    assert any(e.outcome == "fail" for e in bad["se.acceptance"])


def test_trace_exact_tokens_no_bonus_and_validation():
    a = np.array([0.5, 0.5, 0.5, 0.5])
    assert np.allclose(trace_exact_tokens_no_bonus(a, 3), 1 + 0.5 + 0.25)
    assert np.allclose(trace_exact_tokens_no_bonus(a, 1), 1.0)
    with pytest.raises(ValueError):
        replay_se(_trace(T=5), gamma=6)
    with pytest.raises(ValueError):
        replay_se(_trace(T=5), lambdas=(1.5,))
    with pytest.raises(TypeError):
        replay_se("not a trace")


def test_replay_rows_name_the_parts_of_the_split_claims():
    """se.thm3_2 is split into 'bound' and 'equality', se.thm3_1 has its constant-α formula against
    a varying α in 'formula-on-markov' (info): every replay row names its part, and verify --logits
    takes them (untagged rows of a multi-part claim would be refused)."""
    from pathlib import Path

    from spectheory.sims.runner import run_claims
    from spectheory.cli.cmd_verify import real_logits_evidence
    ev = evidence(replay_se(_trace(), n_mc=200, seed=1))
    assert {e.part for e in ev["se.thm3_2"]} == {"bound"}
    assert {e.part for e in ev["se.thm3_1"]} == {"formula-on-markov"}
    run_dir = Path(__file__).resolve().parents[1] / "data" / "runs" / "qwen2.5-coder-T1"
    extra = real_logits_evidence(run_dir, 0.01)
    assert {e.part for e in extra["se.thm3_2"]} == {"bound", "equality"}
    assert {e.part for e in extra["se.thm3_2"] if e.outcome != "info"} == {"bound"}
    rep = run_claims("se.thm3_2,se.thm3_1", quick=True, progress=False, extra_evidence=extra, extra_source=str(run_dir))
    for c in rep["claims"]:
        rows = [e for e in c["evidence"] if e["mode"] == "logits"]
        assert rows and c["verdict"] == "holds", c["summary"]
        assert {e["part"] for e in rows} == ({"bound", "equality"} if c["id"] == "se.thm3_2" else {"formula-on-markov"})
