"""SpecBranch's real-logits replay on the shipped validation run (no models needed)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from validate import replay_sb
from validate.experiment import load_run

RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "qwen2.5-coder-T1-n12"


@pytest.fixture(scope="module")
def evidence():
    if not (RUN / "run.json").exists():
        pytest.skip("the shipped validation run is not in this checkout")
    return replay_sb.logits_evidence(load_run(RUN))


def test_evidence_names_parts_and_is_info(evidence):
    assert set(evidence) == {"sb.trunc_geom", "sb.rollback", "sb.speedup", "sb.hrad"}
    for cid, evs in evidence.items():
        for e in evs:
            assert e.mode == "logits" and e.outcome == "info" and e.part
            assert np.isfinite(e.claimed) and np.isfinite(e.measured)


def test_replay_rates_are_sane(evidence):
    sp = [e for e in evidence["sb.speedup"] if "flat c" in e.instance]
    assert sp and all(0.2 < e.measured < 5 for e in sp)
    rb = [e for e in evidence["sb.rollback"] if "flat c" in e.instance]
    assert all(0 <= e.claimed <= 1 and 0 <= e.measured <= 1 for e in rb)


def test_replay_of_sps_matches_the_truncated_geometric_rate():
    """On a constant-β text the replayed SpS rollback rate is the closed form 1 − E[τ]/γ."""
    rng = np.random.default_rng(0)
    beta = np.full(4000, 0.7)
    conf = np.full(4000, 0.9)
    surv = np.tile([0.7, 0.8, 0.85, 0.9], (4000, 1))
    sums = sum(replay_sb._replay("sps", beta, conf, surv, 4, np.full(5, 2.0), rng) for _ in range(20))
    from spectheory.closed_forms import sb as cf
    want = 1 - cf.trunc_geom_mean(0.7, 4) / 4
    assert abs(sums[3] / (sums[2] + sums[3]) - want) < 0.01
