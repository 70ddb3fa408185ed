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


@pytest.mark.parametrize("method", ["sps", "pearl"])
def test_replay_on_a_constant_beta_text_is_the_exact_pipeline(method):
    """Along a text of constant β the replay is the pipeline on an i.i.d. pair of acceptance β:
    its rollback rate and throughput equal the exact engine's (z < 5 over 40 replicates)."""
    from sims.claims.sb import iid_pair
    from spectheory.exact import sb as ex
    from spectheory.rules import sb as R
    rng = np.random.default_rng(1)
    T, g, c = 3000, 4, 3.0
    beta, conf, surv = np.full(T, 0.7), np.full(T, 0.9), np.full((T, 4), 0.7)
    sums = np.array([replay_sb._replay(method, beta, conf, surv, g, np.full(g + 1, c), rng) for _ in range(40)])
    want = ex.long_run_rates(iid_pair(0.7), {"sps": R.SPS, "pearl": R.PEARL}[method], R.Pipeline(g, c=c))
    rb = sums[:, 3] / (sums[:, 2] + sums[:, 3])
    tpt = sums[:, 1] / sums[:, 0]
    assert abs(rb.mean() - want.rollback_rate) < 5 * rb.std(ddof=1) / np.sqrt(rb.size) + 2e-3
    assert abs(tpt.mean() - want.tokens_per_time) < 5 * tpt.std(ddof=1) / np.sqrt(tpt.size) + 2e-3
