"""SpecBranch's real-logits replay on the shipped validation run (no models needed)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spectheory.validate import replay_sb
from spectheory.validate.experiment import load_run

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
    from spectheory.sims.claims.sb import iid_pair
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


# --- sb.hrad on the captured hidden states (the shipped b32 run) ---------------------------------------------------

RUN_HIDDEN = Path(__file__).resolve().parents[1] / "data" / "runs" / "qwen2.5-coder-T1-b32"


@pytest.fixture(scope="module")
def hrad_run():
    if not (RUN_HIDDEN / "run.json").exists():
        pytest.skip("the shipped b32 validation run is not in this checkout")
    pytest.importorskip("torch")
    return load_run(RUN_HIDDEN)


@pytest.fixture(scope="module")
def hrad_ev(hrad_run):
    from spectheory.validate.replay_sb import _measured_costs
    return replay_sb.hrad_evidence(hrad_run.traces, _measured_costs(hrad_run)[0])


def test_hrad_on_b32_cross_validated_gain_is_graded_and_control_rejected(hrad_ev):
    """The numbers docs/sb.md states: 5-fold cross-validation by prompt over the 16 captured prompts,
    1,441 decisions, γ = 4; the gain over the majority class is graded (one-sided t-test, prompts the
    unit), underpowered at 16 prompts; the shuffled-label MLP shows no gain (control rejected)."""
    acc = [e for e in hrad_ev if e.part == "accuracy" and "within category" not in e.instance]
    assert len(acc) == 2 and all(e.mode == "logits" and e.n == 16 for e in acc)
    # beside the headline, each category against its own majority class: info, never graded
    cat = {e.instance.split(" (")[0]: e for e in hrad_ev if "within category" in e.instance}
    assert set(cat) == {"H-RAD MLP within category chat", "H-RAD MLP within category code"}
    assert all(e.outcome == "info" and e.n == 8 and "outcome alone" in e.note for e in cat.values())
    mlp, shuf = acc
    assert "5-fold cross-validation by prompt" in mlp.instance and "1441 decisions" in mlp.instance
    assert mlp.outcome == "underpowered" and mlp.tolerance == 0.02 and mlp.alpha == pytest.approx(1e-3)
    assert mlp.claimed == pytest.approx(0.6422, abs=5e-4)             # majority: all-accept
    assert mlp.measured == pytest.approx(0.6735, abs=0.01)
    assert 0 < mlp.p_value < 0.1 and mlp.detectable > 0.02 and "ceiling" in mlp.note
    assert shuf.outcome == "info" and shuf.control == "rejected" and "fails, as it must" in shuf.test
    assert shuf.measured < shuf.claimed   # the negative control does not beat the majority class
    eff = {e.instance.split(",")[0]: e for e in hrad_ev if e.part == "effect"}
    assert len(eff) == 4 and all(0.5 < e.measured < 3 for e in eff.values())
    (eps,) = [e for e in hrad_ev if e.part == "eps-robust"]
    assert eps.measured < eps.claimed  # H-RAD less sensitive to ε than the pure threshold on these texts


def test_hrad_gain_test_grades_by_significance_then_power():
    """pass on a significant gain; fail when no gain and the test sees the tolerance; underpowered
    otherwise — and a gain that is real but below significance never passes."""
    rng = np.random.default_rng(3)
    kw = dict(accuracy=0.6, majority=0.5, alpha=1e-3, tolerance=0.02)
    assert replay_sb.gain_test("x", 0.05 + 0.01 * rng.standard_normal(40), **kw).outcome == "pass"
    assert replay_sb.gain_test("x", 0.001 * rng.standard_normal(400), **kw).outcome == "fail"
    assert replay_sb.gain_test("x", 0.0 + 0.1 * rng.standard_normal(10), **kw).outcome == "underpowered"
    e = replay_sb.gain_test("x", [0.01, 0.02, 0.015, 0.012], **kw)
    assert e.outcome != "pass" and e.p_value > 1e-3
    with pytest.raises(ValueError, match="at least 2 prompts"):
        replay_sb.gain_test("x", [0.1], **kw)


def test_hrad_study_is_seeded_and_every_prompt_is_held_out_once(hrad_run):
    a, b = replay_sb.hrad_study(hrad_run.traces), replay_sb.hrad_study(hrad_run.traces)
    assert a["accuracy"] == b["accuracy"] and (a["pred"] == b["pred"]).all()
    assert a["folds"] == 5 and sorted(a["test"].tolist()) == list(range(len(hrad_run.traces)))
    cats = np.array([t.meta["category"] for t in hrad_run.traces])
    for f in range(5):   # stratified: each fold holds prompts of both categories (16 prompts, 8 + 8)
        assert set(cats[a["fold"] == f]) == {"code", "chat"}
    assert a["per_prompt_gain"].size == len(hrad_run.traces)


def test_hrad_missing_fields_on_the_n12_run(evidence):
    (e,) = evidence["sb.hrad"]
    assert e.outcome == "info" and "hidden_proj" in e.note and "emb_proj" in e.note
    assert "spectheory.trace/3" in e.note and "--hidden-layers" in e.note


def test_hrad_label_probabilities_by_hand():
    """β = (0.9, 0.5, 0.8, 0.6, 0.7), γ = 4 (continuations of 3 tokens): decisions at t = 1, 2;
    t = 1: P(all-reject) = 1 − 0.5, P(all-accept) = 0.5·0.8·0.6 = 0.24, P(confidence) = 0.26;
    t = 2: 0.2, 0.8·0.6·0.7 = 0.336, 0.464."""
    pos, P = replay_sb.hrad_label_probabilities([0.9, 0.5, 0.8, 0.6, 0.7], 4)
    assert pos.tolist() == [1, 2]
    np.testing.assert_allclose(P, [[0.5, 0.26, 0.24], [0.2, 0.464, 0.336]], atol=1e-12)
    pos, P = replay_sb.hrad_label_probabilities([0.9, 0.5, 0.8], 2)   # γ = 2: one token, no 'confidence'
    np.testing.assert_allclose(P, [[0.5, 0.0, 0.5], [0.2, 0.0, 0.8]], atol=1e-12)


def test_hrad_features_come_from_the_position_before_the_decision():
    """Decision t reads the hidden state and embedding at t − 1 (the survivor) and the draft's confidence at t."""
    from spectheory.validate.trace import CompactTrace
    T = 6
    st = {k: np.full(T, 0.5) for k in ("beta", "tv", "kl_pq", "kl_qp", "entropy_p", "entropy_q", "p_token",
                                         "q_token", "beta_slice", "p_rest", "q_rest")}
    sq = np.tile([0.6, 0.4], (T, 1)).astype(np.float32)
    sq[:, 0] = np.linspace(0.5, 1.0, T)
    sq[:, 1] = 1 - sq[:, 0]
    tr = CompactTrace(tokens=np.arange(T), stats=st, slice_ids=np.tile([0, 1], (T, 1)), slice_p=sq, slice_q=sq,
                      hidden_proj=np.arange(T * 2, dtype=np.float16).reshape(T, 2),
                      emb_proj=-np.arange(T * 2, dtype=np.float16).reshape(T, 2))
    pos, _ = replay_sb.hrad_label_probabilities(st["beta"], 4)
    X = replay_sb.hrad_features(tr, pos)
    np.testing.assert_allclose(X[:, :2], tr.hidden_proj[pos - 1])
    np.testing.assert_allclose(X[:, 2:4], tr.emb_proj[pos - 1])
    np.testing.assert_allclose(X[:, 4], sq[pos, 0], rtol=1e-6)


def test_replay_signal_all_accept_and_all_reject():
    """Driven by a constant signal, SpecBranch's blocks are γ − 1 (all-accept) or empty (all-reject)."""
    T, g = 2000, 4
    beta, conf, surv = np.ones(T), np.full(T, 0.1), np.ones((T, 4))
    rng = np.random.default_rng(0)
    acc = replay_sb._replay("specbranch", beta, conf, surv, g, np.full(g + 1, 2.0), rng, np.full(T, 2))
    rej = replay_sb._replay("specbranch", beta, conf, surv, g, np.full(g + 1, 2.0), rng, np.zeros(T, int))
    assert acc[1] == rej[1] == T
    assert acc[0] == pytest.approx(T / g * g, rel=0.01) and rej[0] == pytest.approx(T * g, rel=0.01)


def test_hrad_by_category_baseline_is_each_categorys_own_majority():
    """A classifier that only recognises the category gains over the pooled majority class but
    nothing over each category's own (the stricter reading reported beside the graded test)."""
    a, b = np.tile([0.1, 0.1, 0.8], (3, 1)), np.tile([0.7, 0.2, 0.1], (2, 1))
    out = replay_sb._by_category(["a", "a", "b", "b"], [a, a, b, b], [np.full(3, 2), np.full(3, 2),
                                                                       np.zeros(2, int), np.zeros(2, int)])
    assert out["a"]["majority_class"] == 2 and out["b"]["majority_class"] == 0
    assert out["b"]["majority"] == pytest.approx(0.7) and out["b"]["ceiling"] == pytest.approx(0.7)
    assert out["a"]["decisions"] == 6 and out["b"]["prompts"] == 2
    assert np.allclose(out["a"]["gains"], 0) and np.allclose(out["b"]["gains"], 0)
    # pooled, category b's prompts gain 0.6 each over the all-accept majority
    P = np.vstack([a, a, b, b])
    assert int(np.argmax(P.mean(axis=0))) == 2 and b[0, 0] - b[0, 2] == pytest.approx(0.6)
