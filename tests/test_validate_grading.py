"""The planner (spectheory.validate.plan, .power) and the grading of real-pair (``logits``) evidence on small
hand-made inputs, no model: which row sizes what, a control's effect and rejection, the power statement's
arithmetic, which test decides a real-pair verdict, H-RAD's one-sided gain test and its cross-validation.
Each test kills bugs seeded in tests/mutants/validate_grading.py; the expected numbers are worked out in
the comments."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats as sst

from spectheory.judge import stats, verdicts
from spectheory.judge.evidence import Evidence
from spectheory.validate.experiment import Run
from spectheory.validate.loops import LoopRun
from spectheory.validate.plan import Plan, PlanRow, _control_effect, plan_run
from spectheory.validate.power import control_row, n_needed

from test_validate_settings import _PR, _loop_runs, sd_run

Z95 = 1.959963984540054


def _fake_loop_tests(monkeypatch, evs_by_claim, prs_of):
    """loop_tests replaced by one returning ``evs_by_claim`` and ``prs_of(tol, tol_tau)`` (the tolerances the
    planner passes on)."""
    import spectheory.validate.replay_loops as RL
    monkeypatch.setattr(RL, "loop_tests", lambda name, runs, alpha, tol, tol_tau, **k: (evs_by_claim, prs_of(tol, tol_tau)))


# --- power statements ------------------------------------------------------------------------------------

def test_n_needed_is_the_textbook_sample_size_rounded_up():
    # α = 0.05 two-sided, power 0.8, δ = 0.1, v = 0.25: ((1.95996 + 0.84162)/0.1)² · 0.25 = 196.22 → 197
    # (rounding to nearest gives 196; a power quantile z_0.2 = −0.84162 gives 31.27 → 32)
    assert n_needed(0.25, 0.05, 0.1, 0.8) == 197
    # exactly integral products stay put: v = 0 needs no trial
    assert n_needed(0.0, 0.05, 0.1, 0.8) == 0


# --- the planner -----------------------------------------------------------------------------------------

def test_control_effect_uses_the_size_of_the_deviation_and_the_intervals_own_level():
    # a broken rule that LOWERS the measured value: d̂ = |0.5 − 0.6| = 0.1, se 0.01 (95% interval, no α)
    # → δ = max(0.02, 0.1 − 2·0.01) = 0.08 (without |·|: max(0.02, −0.12) = 0.02)
    below = Evidence("logits", "c", 0.6, 0.5, 0.5 - Z95 * 0.01, 0.5 + Z95 * 0.01, outcome="pass")
    eff, why = _control_effect(below, 0.02)
    assert eff == pytest.approx(0.08) and "pilot deviation 0.1000 (se 0.0100)" in why
    # the pilot's evidence as the tests make it: interval at 1 − α = 0.999, half-width z_0.9995·se =
    # 3.29053·0.01; se read at that level is 0.01 → δ = 0.08 (read at 1.96 it would be 0.01679 → 0.0664)
    ev = stats.z_test_mean("c", 0.6, mean=0.5, se=0.01, n=1000, alpha=1e-3, tolerance=0.02)
    assert ev.ci_high - ev.ci_low == pytest.approx(2 * 3.2905267314919255 * 0.01)
    eff, why = _control_effect(ev, 0.02)
    assert eff == pytest.approx(0.08) and "(se 0.0100)" in why


def test_an_underpowered_control_is_sized_not_counted_as_rejected(monkeypatch):
    # the control's test did not fail (p = 0.3, underpowered): d̂ = 0.01, se = 0.01 → δ = max(0.02, −0.01)
    # = 0.02; 300 trials over 6 prompts = 50 per prompt; n needed at power 0.9, α = 1e-3, v = 0.2:
    # ((3.29053 + 1.28155)/0.02)² · 0.2 = 10451.95 → 10452; prompts ⌈1.25 · 10452 / 50⌉ = 262, per set 131
    ev = Evidence("logits", "c", 0.5, 0.51, 0.51 - Z95 * 0.01, 0.51 + Z95 * 0.01, p_value=0.3, outcome="underpowered")
    _fake_loop_tests(monkeypatch, {"kseq.rho": [ev]}, lambda tol, tt: [_PR("kseq.rho", "t", 300, 0.2, tol)])
    (row,) = plan_run(Run("pilot", {}, [], {}, {"kseq-control": _loop_runs(6, "kseq")}, {}), 1e-3).rows
    assert row.note.startswith("pilot deviation") and "nothing more" not in row.note
    assert (row.effect, row.n_needed, row.prompts_needed, row.per_set) == (pytest.approx(0.02), 10452, 262, 131)


def test_a_rejected_control_keeps_its_pilot_prompts_rounded_up_per_set(monkeypatch):
    # rejected in the pilot on 5 prompts over 2 sets (chat ×3, code ×2): needs its 5 prompts, ⌈5/2⌉ = 3 per
    # set (5 // 2 = 2 would drop a prompt); the pilot holds ⌈5/2⌉ = 3 per set of the loop
    ev = Evidence("logits", "c", 0.5, 0.7, 0.69, 0.71, p_value=1e-12, outcome="fail")
    _fake_loop_tests(monkeypatch, {"kseq.rho": [ev]}, lambda tol, tt: [_PR("kseq.rho", "t", 250, 0.2, tol)])
    plan = plan_run(Run("pilot", {}, [], {}, {"kseq-control": _loop_runs(5, "kseq")}, {}), 1e-3)
    (row,) = plan.rows
    assert (row.prompts_needed, row.per_set, row.n_needed) == (5, 3, 250) and "nothing more" in row.note
    assert row.trials_per_prompt == 50.0       # 250 trials over its 5 prompts (per set: 125)
    assert plan.controls_n == {"kseq": 3} and plan.family_n == {}
    assert plan.setup["have"]["kseq-control"] == 3


def test_accepted_length_tests_and_their_controls_are_sized_at_their_own_tolerance(monkeypatch):
    """GBV's two E[τ] tests (value, verifier law) are graded at 0.1 tokens: the loop's rows and its control's
    rows are sized for 0.1, and the control's second test is sized too."""
    # tests: v = 0.2 and 0.5 at δ = 0.1: (4.57208/0.1)² · v = 418.08 → 419 and 1045.19 → 1046 trials;
    # 400 trials over 4 prompts = 100 per prompt → ⌈1.25·419/100⌉ = 6 and ⌈1.25·1046/100⌉ = 14 prompts, 3 and 7 per set
    # (at δ = 0.02 the same rows would need 10452 and 26130 trials)
    _fake_loop_tests(monkeypatch, {}, lambda tol, tt: [_PR("gbv.optimal", "value", 400, 0.2, tt),
                                                       _PR("gbv.optimal", "verifier", 400, 0.5, tt)])
    plan = plan_run(Run("pilot", {}, [], {}, {"gbv": _loop_runs(4)}, {}), 1e-3)
    assert [(r.effect, r.n_needed, r.prompts_needed, r.per_set) for r in plan.rows] == [(0.1, 419, 6, 3),
                                                                                         (0.1, 1046, 14, 7)]
    assert plan.family_n == {"gbv": 7}
    # the control: neither test rejected, d̂ = 0.05 and 0.03 with se 0.01 → δ = max(0.1, ·) = 0.1 for both
    e1 = Evidence("logits", "c1", 1.0, 1.05, 1.05 - Z95 * 0.01, 1.05 + Z95 * 0.01, p_value=0.2, outcome="underpowered")
    e2 = Evidence("logits", "c2", 1.0, 1.03, 1.03 - Z95 * 0.01, 1.03 + Z95 * 0.01, p_value=0.4, outcome="underpowered")
    info = Evidence("logits", "ge-sd", 1.0, 1.1, outcome="info")
    _fake_loop_tests(monkeypatch, {"gbv.optimal": [e1, e2, info]},
                     lambda tol, tt: [_PR("gbv.optimal", "value", 400, 0.2, tt), _PR("gbv.optimal", "verifier", 400, 0.5, tt)])
    plan = plan_run(Run("pilot", {}, [], {}, {"gbv-control": _loop_runs(4)}, {}), 1e-3)
    assert [(r.role, r.effect, r.n_needed, r.per_set) for r in plan.rows] == [("control", 0.1, 419, 3),
                                                                              ("control", 0.1, 1046, 7)]
    assert plan.controls_n == {"gbv": 7}


def test_real_sd_control_is_sized_with_the_drafting_law_test():
    """Real SD's control row pairs the drafting-law evidence with the drafting-law power row (variance
    mean β(1 − β)), not the verifier law's."""
    # one γ = 2 record: iteration 1 accepts both drafts (2 verified positions), iteration 2 rejects the first
    # (1 verified position): trials a = (1, 1, 0) against β = 0.5 each (v = 0.25) and r = (0.9, 0.9, 0.1)
    # (v = 0.09). Not rejected (3 trials): d̂ = 2/3 − 1/2, se = √0.75/3 = 0.2887 → δ = 0.02; n needed
    # (4.57208/0.02)² · 0.25 = 13064.94 → 13065 (with the verifier row's 0.09: 4704); 3 trials on 1 prompt
    # → ⌈1.25 · 13065 / 3⌉ = 5444 prompts, one set (category code)
    ctl = sd_run([2, 0], [[0.5, 0.5], [0.5, 0.5]], accept=[[0.9, 0.9], [0.1, 0.1]])
    plan = plan_run(Run("pilot", {}, [], {}, {}, {2: [ctl]}), 1e-3)
    (row,) = plan.rows
    assert (row.loop, row.claim, row.role) == ("sd-control", "sd.acceptance", "control")
    assert (row.n_had, row.var_per_trial, row.effect) == (3, pytest.approx(0.25), pytest.approx(0.02))
    assert (row.n_needed, row.prompts_needed, row.per_set) == (13065, 5444, 5444)


def test_prompt_sets_are_counted_from_the_sd_records_too():
    """An SD-only pilot over two categories splits the prompts over two sets."""
    # two prompts (code, chat), γ = 1, 2 iterations each: trials a = (1, 0) per prompt against β = 0.5,
    # v = 0.25 → 13065 trials for each test; 4 trials over 2 prompts = 2 per prompt → ⌈1.25·13065/2⌉ = 8166
    # prompts, ⌈8166 / 2⌉ = 4083 per set (one set: 8166)
    a = sd_run([1, 0], [[0.5], [0.5]], name="a", category="code")
    b = sd_run([1, 0], [[0.5], [0.5]], name="b", category="chat")
    plan = plan_run(Run("pilot", {}, [], {1: [a, b]}, {}, {}), 1e-3)
    assert plan.sets == 2
    assert [(r.loop, r.n_needed, r.prompts_needed, r.per_set) for r in plan.rows] == [("sd", 13065, 8166, 4083)] * 2
    assert plan.family_n == {"sd": 4083} and plan.setup["have"]["sd"] == 1


def test_plan_needs_split_tests_and_controls():
    """family_n reads the test rows, controls_n the control rows (by loop, the largest per set)."""
    def row(loop, role, per_set):
        return PlanRow(loop, "c", "t", role, 1, 1, 1.0, 0.1, 0.02, 1, 1, per_set)
    plan = Plan("p", 1e-3, 0.9, 1.25, 2, rows=[row("gbv", "test", 7), row("gbv", "test", 9), row("gbv-control", "control", 2),
                                               row("sd-control", "control", 4), row("sd", "test", 5)])
    assert plan.family_n == {"gbv": 9, "sd": 5}
    assert plan.controls_n == {"gbv": 2, "sd": 4}


# --- the real-pair verdict -------------------------------------------------------------------------------

def _t(name, outcome, n, need):
    return Evidence("logits", name, 0.5, 0.5, p_value=0.5, n=n, outcome=outcome, tolerance=0.02,
                    note=f"power: n needed 1 (power 0.8) / {need} (power 0.9, the report's grading)")


def test_real_pair_verdict_is_decided_by_n_over_n_needed_not_by_n():
    # A: 1000 of 500 needed (ratio 2), B: 2000 of 4000 (ratio 0.5): B decides although its n is larger
    a, b = _t("A", "pass", 1000, 500), _t("B", "pass", 2000, 4000)
    for evs in ([a, b], [b, a]):
        v = verdicts.real_pair_verdict(evs)
        assert (v["verdict"], v["instance"], v["n"], v["n_needed"], v["tests"]) == ("holds", "B", 2000, 4000, 2)


def test_n_needed_from_the_detectable_deviation_scales_as_its_square():
    # no power statement in the note: n · (detectable/tolerance)² = 400 · (0.04/0.02)² = 1600 (not 800)
    e = Evidence("logits", "x", 0.5, 0.5, p_value=0.5, n=400, detectable=0.04, tolerance=0.02, outcome="underpowered")
    assert verdicts.n_needed(e) == 1600
    assert verdicts.real_pair_verdict([e])["n_needed"] == 1600


def test_real_pair_counts_only_rejected_controls():
    ok = Evidence("logits", "A (must fail)", 0.5, 0.7, outcome="info", control="rejected")
    bad = Evidence("logits", "B (must fail)", 0.5, 0.51, outcome="info", control="not rejected")
    v = verdicts.real_pair_verdict([_t("T", "pass", 10, 5), ok, bad, bad])
    assert v["controls"] == {"rejected": 1, "total": 3, "not_rejected": ["B (must fail)", "B (must fail)"]}


# --- a control is rejected only when its test fails ------------------------------------------------------

def test_real_sd_controls_rejected_only_when_their_test_fails():
    # 3 trials (see test_real_sd_control_is_sized_with_the_drafting_law_test): p large, underpowered → not rejected
    weak = sd_run([2, 0], [[0.5, 0.5], [0.5, 0.5]], accept=[[0.9, 0.9], [0.1, 0.1]])
    # 200 iterations all accepting both drafts against β = r = 0.5: 400 trials, mean 1 vs 0.5,
    # se = √(400·0.25)/400 = 0.025, z = 20 → fail → rejected
    strong = sd_run([2] * 200, np.full((200, 2), 0.5))
    from spectheory.validate.evidence import sd_evidence
    for runs, want in (([weak], "not rejected"), ([strong], "rejected")):
        ev = sd_evidence(Run("r", {}, [], {}, {}, {2: runs}), 1e-3)
        rows = ev["sd.acceptance"] + ev["sd.expected_tokens"]
        assert len(rows) == 2 and all(e.outcome == "info" and e.control == want for e in rows), [e.control for e in rows]


def test_loop_controls_rejected_only_when_their_test_fails():
    from spectheory.validate.replay_loops import logits_evidence

    def kseq(tau, probs):
        return LoopRun("kseq", {"tau": np.asarray(tau), "depth_accept_prob": np.asarray(probs)}, [],
                       meta=dict(name="p0", category="code", loop="kseq", rule="broken"))
    # weak: trials (1, 0) then (0) against 0.5 → p large, underpowered → not rejected;
    # strong: 200 iterations accepting both depths against 0.5: z = 20 → fail → rejected
    for rec, want in ((kseq([1, 0], [[0.5, 0.5], [0.5, 0.5]]), "not rejected"),
                      (kseq([2] * 200, np.full((200, 2), 0.5)), "rejected")):
        (e,) = logits_evidence(Run("r", {}, [], {}, {"kseq-control": [rec]}, {}))["kseq.rho"]
        assert e.outcome == "info" and e.control == want and e.instance.endswith("(must fail)")


def test_table_keeps_the_control_rows():
    from spectheory.validate.table import rows_from_evidence
    test = Evidence("logits", "real kseq loop: acceptance", 0.5, 0.51, 0.49, 0.53, p_value=0.4, n=5000,
                    detectable=0.015, tolerance=0.02, outcome="pass",
                    note="power: n needed 2000 (power 0.8) / 2800 (power 0.9, the report's grading)")
    ctl = control_row(Evidence("logits", "broken", 0.5, 0.52, 0.5, 0.54, p_value=0.05, n=300, outcome="underpowered"),
                      False, "the same loop")
    rows = rows_from_evidence({"kseq.rho": [test, ctl]}, {"temperature": 1.0}, "r", claims=["kseq.rho"])
    assert [(r.role, r.verdict, r.n, r.n_needed) for r in rows] == [("test", "pass", 5000, 2800),
                                                                     ("control", "control not rejected", 300, None)]


def test_replayed_tokens_per_iteration_are_graded_at_gamma_times_the_tolerance():
    from spectheory.validate.compare import compare

    from test_validate import synthetic_trace
    ev = compare(synthetic_trace(T=12, V=10, seed=2), 3, 0.1, n_mc=20, seed=1)
    (acc,), (_, mc) = ev["sd.acceptance"], ev["sd.expected_tokens"]
    assert acc.tolerance == pytest.approx(0.01) and mc.tolerance == pytest.approx(0.03)   # 3 drafts × 0.01


# --- H-RAD: the one-sided gain test, its control, its cross-validation ---------------------------------------

def test_hrad_gain_test_is_one_sided_by_hand():
    from spectheory.validate.replay_sb import gain_test
    g = -0.1 + 0.01 * np.array([1, -1] * 10)     # 20 prompts: mean −0.1, se = 0.01·√(20/19)/√20 = 0.01/√19
    se = 0.01 / math.sqrt(19)
    e = gain_test("x", g, 0.4, 0.5, alpha=1e-3, tolerance=0.02)
    # one-sided: p = P(t_19 > −43.6) ≈ 1; critical t_(0.999, 19) = 3.5794, t_(0.9, 19) = 1.3277:
    # detectable (3.5794 + 1.3277)·0.0022942 = 0.011258 ≤ 0.02 → fail (a two-sided p would pass a loss)
    tc = sst.t.ppf(1 - 1e-3, 19)
    assert tc == pytest.approx(3.5794001489547154)
    assert e.outcome == "fail" and e.p_value > 0.999
    assert e.detectable == pytest.approx((tc + sst.t.ppf(0.9, 19)) * se) and e.detectable == pytest.approx(0.011258, abs=1e-6)
    assert e.ci_low == pytest.approx(0.5 - 0.1 - tc * se) and e.ci_high is None
    up = gain_test("x", -g, 0.6, 0.5, alpha=1e-3, tolerance=0.02)        # the same gain, positive: pass
    assert up.outcome == "pass" and up.p_value < 1e-3


def _hrad_study_dict(gains):
    return dict(per_prompt_gain=np.asarray(gains), accuracy=0.5, majority=0.5, folds=2, n=10, n_train=5, majority_class=2,
                accuracy_sampled=0.5, majority_sampled=0.5, ceiling=0.6, predicted_share=np.array([0.2, 0.3, 0.5]),
                confusion=np.zeros((3, 3), dtype=int), confusion_expected=np.zeros((3, 3)), by_category={})


@pytest.mark.parametrize("shuffled, want", [
    ([0.3, -0.3, 0.2, -0.25], "rejected"),          # underpowered (no evidence of a gain): rejected
    ([-0.1 + 0.01 * s for s in [1, -1] * 10], "rejected"),   # decided no gain (fail): rejected
    ([0.1 + 0.01 * s for s in [1, -1] * 10], "not rejected"),  # a significant gain: the control passes
])
def test_hrad_shuffled_control_is_rejected_unless_it_shows_a_gain(monkeypatch, shuffled, want):
    import spectheory.validate.replay_sb as SB
    studies = {False: _hrad_study_dict([0.01, 0.02, 0.0, 0.01]), True: _hrad_study_dict(shuffled)}
    monkeypatch.setattr(SB, "_hrad_missing", lambda traces: None)
    monkeypatch.setattr(SB, "hrad_study", lambda traces, g, shuffle=False: studies[shuffle])
    tr = SimpleNamespace(hidden_proj=np.zeros((3, 4)), emb_proj=np.zeros((3, 2)), meta={"category": "code"})
    _, ctl = SB.hrad_evidence([tr] * 4, None)
    assert ctl.outcome == "info" and ctl.control == want and ctl.instance.startswith("shuffled-label MLP")


def _hrad_traces(n=10, T=12):
    """``n`` stand-in traces (chat, code alternating) at constant β = 0.6: at γ = 4 every decision has
    P(all-reject) = 0.4, P(confidence) = 0.6 − 0.216 = 0.384, P(all-accept) = 0.6³ = 0.216; feature 0 (the
    hidden state) is the prompt's index, so a stand-in MLP can tell which prompts it trained on."""
    return [SimpleNamespace(stats={"beta": np.full(T, 0.6)}, hidden_proj=np.full((T, 2), float(i)), emb_proj=np.zeros((T, 1)),
                            slice_q=np.full((T, 2), 0.5), tokens=np.zeros(T, dtype=np.int64),
                            meta={"category": "code" if i % 2 else "chat"}) for i in range(n)]


def test_hrad_study_holds_every_prompt_out_of_its_own_training(monkeypatch):
    """With the MLP replaced by a recorder: every prompt is predicted exactly once, by a model that never
    trained on it; the majority class comes from the exact label probabilities."""
    import spectheory.validate.replay_sb as SB
    calls = []

    def fake_train(X, y, seed):
        trained = set(X[:, 0].astype(int).tolist())          # feature 0 = the prompt's id
        calls.append(dict(trained=trained, predicted=[]))

        def predict(Z):
            calls[-1]["predicted"] += sorted(set(Z[:, 0].astype(int).tolist()))
            return np.zeros(len(Z), dtype=np.int64)
        return predict

    monkeypatch.setattr(SB, "train_mlp", fake_train)
    traces = _hrad_traces()
    st = SB.hrad_study(traces, 4, folds=5, seed=19)
    assert len(calls) == 5
    predicted = [i for c in calls for i in c["predicted"]]
    assert sorted(predicted) == list(range(10))                          # each prompt predicted once
    assert all(not (set(c["predicted"]) & c["trained"]) for c in calls)  # never by a model trained on it
    assert np.bincount(st["fold"], minlength=5).tolist() == [2] * 5
    # 9 decisions per prompt (t = 1..T − 3); predicted class 0 everywhere: accuracy = mean P(all-reject) = 0.4
    assert st["n"] == 90 and st["accuracy"] == pytest.approx(0.4)
    # the majority class of the exact probabilities is all-reject (0.4 > 0.384 > 0.216), whatever the
    # sampled labels say (with this seed 46 of the 90 sampled labels are 'confidence', 26 all-reject:
    # the test needs that to mean anything)
    assert np.bincount(st["labels"], minlength=3).tolist() == [26, 46, 18]
    assert st["majority_class"] == 0 and st["majority"] == pytest.approx(0.4)
    np.testing.assert_allclose(st["per_prompt_gain"], 0.0, atol=1e-15)


def test_hrad_shuffled_control_trains_on_permuted_labels_and_scores_against_the_majority(monkeypatch):
    """The negative control trains each fold on a permutation of the same sampled labels (the same
    multiset, another order); its gain is measured against the exact-probability majority class."""
    import spectheory.validate.replay_sb as SB
    seen = []

    def fake_train(X, y, seed):
        seen.append((X[:, 0].astype(int), np.asarray(y).copy()))
        return lambda Z: np.zeros(len(Z), dtype=np.int64)

    monkeypatch.setattr(SB, "train_mlp", fake_train)
    traces = _hrad_traces()
    st = SB.hrad_study(traces, 4, folds=5, seed=19)
    plain = seen[:]
    seen.clear()
    sh = SB.hrad_study(traces, 4, folds=5, seed=19, shuffle=True)
    assert len(plain) == len(seen) == 5
    for (ids, y), (ids_s, y_s) in zip(plain, seen):
        np.testing.assert_array_equal(ids, ids_s)                 # same folds, same training prompts
        assert sorted(y.tolist()) == sorted(y_s.tolist())         # the same labels ...
        assert (y != y_s).any()                                   # ... in another order
    # every prediction is class 0 = the majority (exact P 0.4): each prompt's gain is 0.4 − 0.4 = 0
    # (against all-accept, 0.216, it would be 0.184)
    for s in (st, sh):
        np.testing.assert_allclose(s["per_prompt_gain"], 0.0, atol=1e-15)


def test_table_says_exact_rows_need_no_sample():
    from spectheory.validate.table import _need, rows_from_evidence
    # an exact comparison (no p-value): n needed 0, printed "n (exact)"; a graded test: its power statement
    exact = Evidence("logits", "tokens per iteration = τ + 1", 2.5, 2.5, n=120, tolerance=0.0, outcome="pass")
    rows = rows_from_evidence({"sd.expected_tokens": [exact]}, {"temperature": 1.0}, "r", claims=["sd.expected_tokens"])
    assert [(r.role, r.n, r.n_needed) for r in rows] == [("test", 120, 0)]
    assert _need(rows[0]) == "120 (exact)"


def test_exact_bound_rows_of_a_loop_control_are_not_controls():
    """ERSD's exact bounds are facts of the rows, not of the verifier: a control run leaves them out; only its
    graded first-token test becomes a control row."""
    from spectheory.validate.replay_loops import logits_evidence
    # 200 positions: ERSD's first token always accepted (index 1) against an exact value 0.5 → z = 0.5 /
    # (√(200·0.25)/200) = 14.1 → fail → rejected; bound 0.4 ≤ 0.5 ≤ β = 0.6 hold exactly
    n = 200
    rec = LoopRun("ersd", {"index_ersd": np.ones(n, dtype=np.int64), "index_gsd": np.ones(n, dtype=np.int64),
                           "exact": np.full(n, 0.5), "bound": np.full(n, 0.4), "beta": np.full(n, 0.6)}, [],
                  meta=dict(name="p0", category="code", loop="ersd", rule="broken", k=4))
    rows = logits_evidence(Run("r", {}, [], {}, {"ersd-control": [rec]}, {}))["ersd.lemma3_1"]
    ctl = [e for e in rows if e.control]
    assert [(e.control, e.part) for e in ctl] == [("rejected", "formula")]
    assert all(e.outcome == "info" for e in rows)
    assert not any("at every visited context" in e.instance for e in rows)


def test_real_pair_verdict_reads_only_logits_evidence():
    # a failing Monte Carlo comparison belongs to the paper-level verdict, not to the real pair's
    mc = Evidence("mc", "synthetic", 0.5, 0.6, p_value=1e-9, n=100, outcome="fail")
    v = verdicts.real_pair_verdict([mc, _t("T", "pass", 3000, 1500)])
    assert (v["verdict"], v["tests"], v["instance"], v["n"], v["n_needed"]) == ("holds", 1, "T", 3000, 1500)
    assert verdicts.real_pair_verdict([mc]) is None


def test_summary_theory_comes_from_the_prompts_sd_ran_on():
    """A run that captured more prompts than it decoded: the row's α̂ is the mean β of the traces of the
    prompts SD ran on (prompt a, β = ½), not of every capture (a and b, β = 0.1: mean 0.3)."""
    from spectheory.validate.analysis import summarize
    from spectheory.validate.trace import CompactTrace

    def trace(p, name):
        P = np.tile([p, 1 - p], (8, 1))            # β = Σ min(p, q) with q the reversed row = 2·min(p, 1 − p)
        return CompactTrace.from_distributions(P, P[:, ::-1].copy(), np.zeros(8, dtype=np.int64), top_k=2,
                                               target_call_s=np.full(8, 0.2), draft_call_s=np.full(8, 0.1),
                                               meta={"category": "code", "name": name})
    a, b = trace(0.75, "a"), trace(0.95, "b")
    assert np.allclose(a.beta, 0.5) and np.allclose(b.beta, 0.1)
    sd = sd_run([0, 1], [[0.5, 0.5], [0.5, 0.5]], name="a", category="code")
    (row,) = summarize(Run("r", {"gammas": [2]}, [a, b], {2: [sd]}))
    assert (row["n_prompts"], row["n_positions"]) == (1, 8)
    assert row["alpha_capture"] == pytest.approx(0.5) and row["tokens_closed_form"] == pytest.approx(1.75)  # 1 + ½ + ¼


# --- the planner's stages: per-set counts, capture-only sets, the ECSV harness's captures ---------------

def _trace(i, cat):
    return SimpleNamespace(meta=dict(name=f"t{i}", category=cat), category=cat, hidden_proj=None)


def _fake_ecsv(monkeypatch, ev):
    import spectheory.validate.replay_ecsv as RE
    monkeypatch.setattr(RE, "logits_evidence", lambda run, alpha, **k: {"ecsv.falsification": [ev]})


def test_prompts_per_set_held_are_the_largest_set_not_the_mean():
    """Loops take the first k prompts of every set: a control held on 8 code and 2 chat prompts holds 8
    per set (10 / 2 = 5 would re-ask for nothing and state less than the run holds)."""
    runs = [LoopRun("kseq", {}, [], meta=dict(name=f"{c}{i}", category=c)) for c, k in (("code", 8), ("chat", 2))
            for i in range(k)]
    from spectheory.validate.plan import _per_set
    assert _per_set(runs) == 8 and _per_set([]) == 0


def test_a_set_only_captured_gets_a_capture_stage_and_stays_out_of_the_tests(monkeypatch):
    """A pilot whose loops ran on code and chat and that also captured sonnets: the tests' command names
    the default sets (no --prompts: SD and the loops must not run on poetry) and the captures it holds in
    those sets; a second, capture-only stage names all three sets at the most any set holds."""
    _fake_loop_tests(monkeypatch, {}, lambda tol, tt: [_PR("kseq.rho", "t", 400, 0.2, tol)])
    traces = [_trace(i, c) for i, c in enumerate(["code"] * 5 + ["chat"] * 3 + ["poetry"] * 7)]
    run = Run("pilot", {"temperature": 0.7}, traces, {}, {"kseq": _loop_runs(4, "kseq")}, {})
    plan = plan_run(run, 1e-3, harnesses=False)
    main, cap = plan.commands("NEW")
    assert "--prompts" not in main and "--capture-n 5 " in main and "sonnets" not in main
    assert cap == ("spectheory validate --out NEW -t 0.7 --hidden-layers 0 --prompts human-eval,mt-bench,sonnets "
                   "--capture-n 7 --families '' --no-sd")
    # captures only in the tested sets: one command, its --capture-n the captures held per set
    run = Run("pilot", {}, traces[:8], {}, {"kseq": _loop_runs(4, "kseq")}, {})
    (only,) = plan_run(run, 1e-3, harnesses=False).commands("NEW")
    assert "--capture-n 5 " in only


def test_the_ecsv_harness_sizes_the_captures_from_its_power_statement(monkeypatch):
    """An undecided rule-1 row: n needed = n·(detectable/tolerance)² windows; texts needed =
    ⌈margin · n needed / (windows per text)⌉, split over the captured sets; a set too small is named."""
    # 4 texts (2 code, 2 chat), 400 windows: 100 per text; detectable 0.3 at tolerance 0.1 → 400·9 = 3600
    # windows → ⌈1.25·3600/100⌉ = 45 texts, ⌈45/2⌉ = 23 per set
    ev = Evidence("logits", "rule1", 1.0, 0.0, n=400, detectable=0.3, tolerance=0.1, p_value=0.2,
                  outcome="underpowered", part="rule1")
    _fake_ecsv(monkeypatch, ev)
    run = Run("pilot", {}, [_trace(i, c) for i, c in enumerate(["code", "chat"] * 2)], {}, {}, {})
    (row,) = plan_run(run, 1e-3).rows
    assert (row.role, row.claim, row.n_had, row.n_needed, row.prompts_needed, row.per_set) == \
        ("capture", "ecsv.falsification", 400, 3600, 45, 23)
    plan = plan_run(run, 1e-3)
    assert plan.capture_n == 23 and plan.family_n == {} and "--capture-n 23 " in plan.command("N")
    # MT-Bench holds 80 prompts: a need of 90 per set says so
    ev.detectable = 0.6            # 400·36 = 14400 → 180 texts, 90 per set
    (row,) = plan_run(run, 1e-3).rows
    assert row.per_set == 90 and "mt-bench holds 80" in row.note and "human-eval" not in row.note
    # the boundary: exactly what MT-Bench holds is not "too few" (d/t = 2.0/0.5 = 4 exactly: 6400 windows,
    # margin 2.5 → 160 texts → 80 per set; margin 2 → 64)
    ev.detectable, ev.tolerance = 2.0, 0.5
    (row,) = plan_run(run, 1e-3, margin=2.0).rows
    assert (row.n_needed, row.per_set) == (6400, 64) and "holds" not in row.note
    (row,) = plan_run(run, 1e-3, margin=2.5).rows
    assert row.per_set == 80 and "holds" not in row.note, row
    ev.detectable, ev.tolerance = 0.3, 0.1
    # a run that also captured sonnets: the capture-only stage asks every captured set for the need
    poetry = Run("pilot", {}, run.traces + [_trace(9, "poetry")], {}, {"kseq": _loop_runs(2, "kseq")}, {})
    _fake_loop_tests(monkeypatch, {}, lambda tol, tt: [])
    plan = plan_run(poetry, 1e-3)
    (row,) = [r for r in plan.rows if r.role == "capture"]
    assert row.per_set == math.ceil(math.ceil(1.25 * 3600 / (400 / 5)) / 3) == 19
    main, cap = plan.commands("N")
    assert "--capture-n 2 " in main and cap.endswith("--prompts human-eval,mt-bench,sonnets --capture-n 19 "
                                                     "--families '' --no-sd")
    # a decided row needs what the pilot holds, and a control row never sizes the captures
    ev.outcome, ev.detectable = "pass", None
    ctl = control_row(Evidence("logits", "c", 1.0, 0.0, n=400, detectable=9.0, tolerance=0.1, outcome="underpowered",
                               part="rule1"), False, "broken")
    ctl.outcome = "underpowered"
    import spectheory.validate.replay_ecsv as RE
    monkeypatch.setattr(RE, "logits_evidence", lambda run, alpha, **k: {"ecsv.falsification": [ev, ctl]})
    (row,) = plan_run(run, 1e-3).rows
    assert (row.prompts_needed, row.per_set) == (4, 2) and "nothing more" in row.note
    ev.outcome = "fail"            # decided against the claim: nothing more either
    (row,) = plan_run(run, 1e-3).rows
    assert (row.prompts_needed, row.per_set) == (4, 2) and "decided (fail)" in row.note
    # greedy decoding: ECSV does not apply, no row (and no replay)
    monkeypatch.setattr(RE, "logits_evidence", lambda *a, **k: pytest.fail("replayed where ECSV does not apply"))
    assert plan_run(Run("pilot", {"temperature": 0.0}, run.traces, {}, {}, {}), 1e-3,
                    starting=lambda: pytest.fail("announced a replay that does not run")).rows == []
    assert plan_run(run, 1e-3, harnesses=False).rows == []


def test_plan_of_a_shipped_pilot_prints_the_harness_capture_row():
    """End to end on a shipped 4-text pilot: `validate plan` replays ECSV on its traces, and the capture
    row carries that replay's own n needed; the command asks for the captures per set (at the CLI's
    per-test level, ≈ 4e-5, its 4 texts leave rule 1 undecided)."""
    from pathlib import Path

    from typer.testing import CliRunner

    from spectheory.cli.main import app
    from spectheory.validate.experiment import load_run
    from spectheory.validate.replay_ecsv import logits_evidence
    from spectheory.sims.registry import total_mc_tests
    path = Path(__file__).resolve().parents[1] / "data" / "runs" / "qwen2.5-coder-T1"
    run = load_run(path)
    alpha = 0.01 / total_mc_tests()          # what the command uses (--alpha 0.01 over the registry)
    plan = plan_run(run, alpha)
    (row,) = [r for r in plan.rows if r.role == "capture"]
    (ev,) = [e for e in logits_evidence(run, alpha)["ecsv.falsification"]
             if e.part == "rule1" and e.outcome != "info" and not e.control]
    assert ev.outcome == "underpowered" and row.n_needed == verdicts.n_needed(ev) > row.n_had == ev.n
    assert row.prompts_needed == math.ceil(1.25 * row.n_needed / (ev.n / len(run.traces)))
    res = CliRunner().invoke(app, ["validate", "plan", str(path), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "| capture | ecsv.falsification |" in res.output and f"--capture-n {row.per_set} " in res.output
    assert "replaying ECSV's harness" not in res.output
    res = CliRunner().invoke(app, ["validate", "plan", str(path), "--no-harnesses"])
    assert res.exit_code == 0 and "| capture |" not in res.output and "replaying" not in res.output
    res = CliRunner().invoke(app, ["validate", "plan", str(path)])
    assert res.exit_code == 0 and "replaying ECSV's harness on the pilot's 4 captured texts" in res.output


# --- a third round: rounding, rows, counts, boundaries, which test decides -------------------------------

def test_sd_prompts_are_counted_once_whatever_the_gammas():
    """Real SD at γ = 1 and γ = 2 on the same prompt: one prompt, its trials pooled over both γs."""
    # γ = 1, τ = (1, 0): 1 + 1 verified positions, a = (1, 0); γ = 2, τ = (2, 0): 2 + 1, a = (1, 1, 0);
    # 5 trials against β = r = ½ (v = ¼) → n needed 13065 per test; 5 trials per prompt → ⌈1.25·13065/5⌉ =
    # 3267 prompts in one set (counted once per γ, 2 prompts: 2.5 per prompt → 6533)
    a1 = sd_run([1, 0], [[0.5], [0.5]], name="a")
    a2 = sd_run([2, 0], [[0.5, 0.5], [0.5, 0.5]], name="a")
    plan = plan_run(Run("pilot", {}, [], {1: [a1], 2: [a2]}, {}, {}), 1e-3)
    assert [(r.prompts_had, r.n_had, r.trials_per_prompt, r.n_needed, r.prompts_needed, r.per_set) for r in plan.rows] \
        == [(1, 5, 5.0, 13065, 3267, 3267)] * 2


def test_real_sd_control_rejected_on_its_drafting_law_needs_nothing_more():
    """The control row pairs the drafting-law evidence with the drafting-law power row: a broken verifier
    that accepts everything fails the drafting law (rejected: nothing more), while its verifier law (r = 1,
    every trial accepted) passes exactly and would be sized as if not rejected."""
    # 200 iterations accepting both drafts: 400 trials, mean 1 against β = ½ (z = 20 → fail, rejected) and
    # against r = 1 (exact agreement → pass). Rejected: n needed = n had = 400 on its 1 prompt; the verifier
    # law's pass would ask ⌈(4.57208/0.02)²·¼⌉ = 13065 trials
    ctl = sd_run([2] * 200, np.full((200, 2), 0.5), accept=np.ones((200, 2)))
    (row,) = plan_run(Run("pilot", {}, [], {}, {}, {2: [ctl]}), 1e-3).rows
    assert (row.role, row.claim, row.n_had, row.n_needed, row.prompts_needed, row.per_set) == \
        ("control", "sd.acceptance", 400, 400, 1, 1)
    assert row.note.startswith("rejected in the pilot") and row.var_per_trial == pytest.approx(0.25)


def _underpowered_control(monkeypatch, n_had=300):
    ev = Evidence("logits", "c", 0.5, 0.51, 0.51 - Z95 * 0.01, 0.51 + Z95 * 0.01, p_value=0.3, outcome="underpowered")
    _fake_loop_tests(monkeypatch, {"kseq.rho": [ev]}, lambda tol, tt: [_PR("kseq.rho", "t", n_had, 0.2, tol)])


def test_plan_splits_over_the_sets_asked_for(monkeypatch):
    # the underpowered control of test_an_underpowered_control_is_sized_not_counted_as_rejected: 262 prompts;
    # --sets 4 → ⌈262/4⌉ = 66 per set (the pilot's 2 sets: 131)
    _underpowered_control(monkeypatch)
    plan = plan_run(Run("pilot", {}, [], {}, {"kseq-control": _loop_runs(6, "kseq")}, {}), 1e-3, sets=4)
    (row,) = plan.rows
    assert plan.sets == 4 and (row.prompts_needed, row.per_set) == (262, 66)


def test_prompts_are_told_apart_by_set_and_name(monkeypatch):
    """Two prompt sets may name a prompt alike (p0 in code and in chat): two prompts, not one."""
    # 300 trials over 2 prompts = 150 per prompt → ⌈1.25·10452/150⌉ = ⌈87.1⌉ = 88 prompts, 44 per set
    # (one prompt: 300 per prompt → 44 prompts, 22 per set)
    _underpowered_control(monkeypatch)
    runs = [LoopRun("kseq", {}, [], meta=dict(name="p0", category=c)) for c in ("code", "chat")]
    (row,) = plan_run(Run("pilot", {}, [], {}, {"kseq-control": runs}, {}), 1e-3).rows
    assert (row.prompts_had, row.trials_per_prompt, row.prompts_needed, row.per_set) == (2, 150.0, 88, 44)


def test_controls_held_are_the_largest_over_gammas():
    from spectheory.validate.plan import pilot_setup
    # the γ = 1 control holds 3 prompts of code, the γ = 2 control 1: the pilot holds 3 per set
    c1 = [sd_run([1, 0], [[0.5], [0.5]], name=f"c{i}") for i in range(3)]
    c2 = [sd_run([2, 0], [[0.5, 0.5], [0.5, 0.5]], name="c0")]
    assert pilot_setup(Run("pilot", {}, [], {}, {}, {1: c1, 2: c2}), 1)["have"]["sd-control"] == 3


def test_command_never_asks_fewer_prompts_than_the_pilot_holds():
    def row(loop, role, per_set):
        return PlanRow(loop, "c", "t", role, 1, 1, 1.0, 0.1, 0.02, 1, 1, per_set)
    # needs: SD 2, gbv 3, gbv's control 6 per set; the pilot holds SD 7, gbv 5, gbv's control 4
    plan = Plan("p", 1e-3, 0.9, 1.25, 2, rows=[row("sd", "test", 2), row("gbv", "test", 3), row("gbv-control", "control", 6)],
                setup={"options": [], "have": {"sd": 7, "gbv": 5, "gbv-control": 4}})
    assert plan.command("N") == "spectheory validate --out N -n 7 --capture-n 0 --family-n gbv=5 --controls-n gbv=6"


def test_a_decided_harness_row_keeps_the_largest_set_it_holds(monkeypatch):
    # 3 code texts and 1 chat text, rule 1 decided: the captures per set are the most a set holds, 3
    # (4 texts split evenly: 2, and the resumed run would drop a code text)
    _fake_ecsv(monkeypatch, Evidence("logits", "rule1", 1.0, 0.0, n=400, tolerance=0.1, p_value=0.9, outcome="pass",
                                     part="rule1"))
    run = Run("pilot", {}, [_trace(i, c) for i, c in enumerate(["code", "code", "code", "chat"])], {}, {}, {})
    (row,) = plan_run(run, 1e-3).rows
    assert (row.prompts_needed, row.per_set, row.n_needed) == (4, 3, 400) and "decided (pass)" in row.note


# --- power statements: which number is which, the variance of the right trials -------------------------------

def test_power_statement_states_each_power_and_the_verdict_reads_the_graded_one():
    from spectheory.validate.power import martingale_test
    # 100 Bernoulli trials against μ = ½ (v = ¼), α = 1e-3, tolerance 0.02: at power 0.8
    # ((3.29053 + 0.84162)/0.02)²·¼ = 10671.65 → 10672; at 0.9 ((3.29053 + 1.28155)/0.02)²·¼ = 13064.94 → 13065
    ev, row = martingale_test("c", "i", [1, 0] * 50, [0.5] * 100, alpha=1e-3, tolerance=0.02, what="x", trials="t")
    assert (row.n_needed_08, row.n_needed_report, row.var_per_trial) == (10672, 13065, 0.25)
    assert "n needed 10672 (power 0.8) / 13065 (power 0.9" in ev.note and verdicts.n_needed(ev) == 13065


def test_estimated_and_known_variance_tests_by_hand():
    from spectheory.validate.power import martingale_test_estimated, martingale_test_known
    # D = Y − μ = (0.3, 0.1) × 50: v = mean D² = (0.09 + 0.01)/2 = 0.05 (not centred: the bias is part of it;
    # centred it would be 0.01); se = √(0.05·100)/100 = 0.022361, interval mean ± 3.29053·se
    y, mu = np.array([0.8, 0.6] * 50), np.full(100, 0.5)
    ev, row = martingale_test_estimated("c", "e", y, mu, alpha=1e-3, tolerance=0.5, what="x", trials="t")
    assert row.var_per_trial == pytest.approx(0.05) and ev.measured == pytest.approx(0.7)
    assert ev.ci_high - ev.measured == pytest.approx(3.2905267314919255 * math.sqrt(0.05 * 100) / 100)
    # known variances ¼ each of 4 trials: se = √(4·¼)/4 = 0.25 (from the mean variance: 0.125)
    ev, row = martingale_test_known("c", "k", [1, 0, 1, 0], [0.5] * 4, [0.25] * 4, alpha=0.05, tolerance=1.0,
                                    what="x", trials="t")
    assert ev.ci_high - ev.measured == pytest.approx(Z95 * 0.25) and row.var_per_trial == pytest.approx(0.25)


# --- the real-pair verdict: which outcome, which pool ----------------------------------------------------

def test_real_pair_verdict_outcome_precedence():
    # one failing test fails the pair, whatever passes beside it; it decides (its n / n needed is the pool's)
    v = verdicts.real_pair_verdict([_t("P", "pass", 1000, 500), _t("F", "fail", 100, 400)])
    assert (v["verdict"], v["tests"], v["instance"], v["n"], v["n_needed"]) == ("fails", 2, "F", 100, 400)
    # one underpowered test leaves the pair underpowered, a passing one beside it notwithstanding
    v = verdicts.real_pair_verdict([_t("P", "pass", 100, 50), _t("U", "underpowered", 1000, 2000)])
    assert (v["verdict"], v["tests"], v["instance"], v["n"], v["n_needed"]) == ("underpowered", 2, "U", 1000, 2000)
    # tests with no sample size (exact): the deciding test is named, not the first graded one
    v = verdicts.real_pair_verdict([Evidence("logits", "exact pass", 1.0, 1.0, outcome="pass"),
                                    Evidence("logits", "exact fail", 1.0, 2.0, outcome="fail")])
    assert (v["verdict"], v["instance"], v["n"], v["n_needed"], v["tests"]) == ("fails", "exact fail", None, None, 2)


# --- the real SD and loop tests on their own records ---------------------------------------------------------

def test_real_sd_tests_each_law_against_its_own_probabilities():
    from spectheory.validate.evidence import sd_evidence
    # 200 iterations at γ = 2 accepting both drafts: 400 trials of 1; β = ½ (drafting law: z = 20, fail);
    # r = 1 (verifier law: claimed mean r = 1, exact agreement, pass); the verifier returned τ + 1 = 3 tokens
    # every iteration (exact check: pass)
    rec = sd_run([2] * 200, np.full((200, 2), 0.5), accept=np.ones((200, 2)))
    ev = sd_evidence(Run("r", {}, [], {2: [rec]}, {}, {}), 1e-3)
    acc = [e for e in ev["sd.acceptance"] if e.outcome != "info"]
    tok = [e for e in ev["sd.expected_tokens"] if e.outcome != "info"]
    assert [(e.claimed, e.measured, e.n, e.outcome) for e in acc] == [(0.5, 1.0, 400, "fail")]
    assert [(e.claimed, e.measured, e.n, e.outcome) for e in tok] == [(1.0, 1.0, 400, "pass"), (3.0, 3.0, 200, "pass")]
    assert "0 of 200 iterations differ" in tok[1].note


def test_real_sd_control_rows_stay_with_their_claims():
    from spectheory.validate.evidence import sd_evidence
    ctl = sd_run([2] * 200, np.full((200, 2), 0.5), accept=np.ones((200, 2)))
    ev = sd_evidence(Run("r", {}, [], {}, {}, {2: [ctl]}), 1e-3)
    (a,), (t,) = ev["sd.acceptance"], ev["sd.expected_tokens"]
    assert "drafting law" in a.instance and a.control == "rejected"        # z = 20 against β = ½
    assert "verifier law" in t.instance and t.control == "not rejected"    # r = 1: exact agreement


def test_kseq_trials_include_the_rejected_depth():
    from spectheory.validate.replay_loops import loop_tests
    # iteration 1 (τ = 1): depths 0, 1 verified, accepted (1, 0) at 0.6, 0.3; iteration 2 (τ = 0): depth 0,
    # rejected, at 0.4 → 3 trials, measured 1/3, claimed (0.6 + 0.3 + 0.4)/3
    rec = LoopRun("kseq", {"tau": [1, 0], "depth_accept_prob": [[0.6, 0.3], [0.4, 0.9]]}, [],
                  meta=dict(name="p0", category="code", loop="kseq"))
    (e,) = loop_tests("kseq", [rec], 1e-3)[0]["kseq.rho"]
    assert (e.n, e.measured, e.claimed) == (3, pytest.approx(1 / 3), pytest.approx(1.3 / 3))


def test_se_trials_stop_at_the_proposals_made():
    from spectheory.validate.replay_loops import se_trials
    # cycle 1 proposed 1 token and it was accepted (τ = 1): one trial; cycle 2 (τ = 0 of 3): its first,
    # rejected: one trial. Position 2 of cycle 1 was never proposed
    rec = LoopRun("se", {"tau": [1, 0], "n_proposed": [1, 3], "alpha": [[0.7, 0.6, 0.5], [0.4, 0.3, 0.2]],
                         "accept_prob": [[0.9, 0.8, 0.7], [0.6, 0.5, 0.4]]}, [], meta=dict(name="p0", category="code"))
    acc, al, ap = se_trials([rec])
    assert acc.tolist() == [1.0, 0.0] and al.tolist() == [0.7, 0.4] and ap.tolist() == [0.9, 0.6]


def _gbv_record():
    # K = 1, γ = 2, two iterations with the same draft: path products P = (0.5, 0.2), Q = (0.4, 0.4);
    # acceptances h = (½, ½); τ = 2 then 0
    return LoopRun("gbv", {"tau": [2, 0], "path_p": [[[0.5, 0.2]]] * 2, "path_q": [[[0.4, 0.4]]] * 2,
                           "h": [[[0.5, 0.5]]] * 2}, [], meta=dict(name="p0", category="code", loop="gbv", K=1))


def test_gbv_tests_by_hand_at_the_accepted_length_tolerance():
    from spectheory.validate.replay_loops import logits_evidence, loop_tests
    # θ̂ = Σ_i min(1, P_i/Q_i) = 1 + 0.5 = 1.5 per iteration (averaging the positions: 0.75);
    # D = τ − θ̂ = (0.5, −1.5): v = (0.25 + 2.25)/2 = 1.25
    # verifier law: P(τ ≥ 1) = 1 − ½·½ = ¾, P(τ ≥ 2) = ½ → E[τ | draft] = 1.25; P(τ = 1) = ¼, P(τ = 2) = ½:
    # Var = ¼·1 + ½·4 − 1.25² = 0.6875 (the raw second moment would be 2.25)
    evs, rows = loop_tests("gbv", [_gbv_record()], 1e-3)
    value, verifier = [e for e in evs["gbv.optimal"] if e.outcome != "info"]
    assert (value.claimed, value.measured, value.tolerance) == (pytest.approx(1.5), 1.0, 0.1)
    assert (verifier.claimed, verifier.measured, verifier.tolerance) == (pytest.approx(1.25), 1.0, 0.1)
    assert [r.var_per_trial for r in rows] == [pytest.approx(1.25), pytest.approx(0.6875)]
    got = logits_evidence(Run("r", {}, [], {}, {"gbv": [_gbv_record()]}, {}))["gbv.optimal"]
    assert [e.tolerance for e in got if e.outcome != "info"] == [0.1, 0.1]


def test_loop_power_rows_leave_out_the_controls():
    from spectheory.validate.replay_loops import power_rows
    ctl = LoopRun("kseq", {"tau": [1, 0], "depth_accept_prob": [[0.6, 0.3], [0.4, 0.9]]}, [],
                  meta=dict(name="p0", category="code", loop="kseq", rule="broken"))
    rows = power_rows(Run("r", {}, [], {}, {"gbv": [_gbv_record()], "kseq-control": [ctl]}, {}), 1e-3)
    assert [(r.claim, r.n_had) for r in rows] == [("gbv.optimal", 2)] * 2


def test_ersd_first_token_and_its_bound_at_a_rounding_tie():
    from spectheory.validate.replay_loops import loop_tests
    # ERSD's accepted index per position (1, 2, 0, 1): its first drafted token accepted at 2 of 4 (index 2
    # is a later token of the batch); the lower bound H = 0.1 + 0.2 = 0.30000000000000004 against the exact
    # 0.3 differs by rounding only: it holds
    n = 4
    rec = LoopRun("ersd", {"index_ersd": [1, 2, 0, 1], "index_gsd": [1] * n, "exact": np.full(n, 0.3),
                           "bound": np.full(n, 0.1 + 0.2), "beta": np.full(n, 0.6)}, [],
                  meta=dict(name="p0", category="code", loop="ersd", k=4))
    assert (0.1 + 0.2) - 0.3 > 0
    evs = loop_tests("ersd", [rec], 1e-3)[0]["ersd.lemma3_1"]
    first, lower, upper = evs[:3]
    assert (first.n, first.measured, first.claimed) == (4, 0.5, pytest.approx(0.3))
    assert (lower.part, lower.outcome, upper.outcome) == ("lower", "pass", "pass")


# --- the table's n needed column and the assumptions table -------------------------------------------------

def test_table_need_column_of_a_control_is_its_n():
    from spectheory.validate.table import _need, rows_from_evidence
    ctl = control_row(Evidence("logits", "broken", 0.5, 0.52, 0.5, 0.54, p_value=0.05, n=300, outcome="underpowered"),
                      False, "the same loop")
    (row,) = rows_from_evidence({"kseq.rho": [ctl]}, {"temperature": 1.0}, "r", claims=["kseq.rho"])
    assert (row.role, row.n_needed, _need(row)) == ("control", None, "300")


def test_assumption_rows_by_hand():
    from spectheory.validate.table import assumption_rows
    # γ = 2, β = ½ everywhere (α on-policy ½), τ = (0, 1, 2, 0), the last iteration drafted 1 token:
    # closed form at γ: 1 + ½ + ¼ = 1.75; for the drafts each had: (3·1.75 + 1.5)/4 = 1.6875;
    # measured τ + 1 = (1, 2, 3, 1): mean 1.75, sd (ddof 1) √(2.75/3) = 0.957427, se 0.478714;
    # z = (1.75 − 1.6875)/0.478714 = 0.130558 (against 1.75: 0; with ddof 0, se = 0.414578)
    rec = sd_run([0, 1, 2, 0], np.full((4, 2), 0.5), n_drafted=[2, 2, 2, 1])
    (row,) = assumption_rows(Run("r", {}, [], {2: [rec]}, {}, {}))
    assert (row["alpha"], row["closed_form"], row["closed_form_drafted"], row["measured"]) == (0.5, 1.75, 1.6875, 1.75)
    assert row["se"] == pytest.approx(math.sqrt(2.75 / 3) / 2) and row["z"] == pytest.approx(0.0625 / 0.4787135538781691)


# --- H-RAD: the boundary of the power, prompts without decisions, which accuracy is claimed ------------------

def test_hrad_gain_test_at_exactly_its_detectable_gain_is_decided():
    from spectheory.validate.replay_sb import gain_test
    g = -0.1 + 0.01 * np.array([1, -1] * 10)       # test_hrad_gain_test_is_one_sided_by_hand: detectable 0.011258
    det = gain_test("x", g, 0.4, 0.5, alpha=1e-3, tolerance=0.02).detectable
    assert gain_test("x", g, 0.4, 0.5, alpha=1e-3, tolerance=det).outcome == "fail"     # det ≤ tolerance
    assert gain_test("x", g, 0.4, 0.5, alpha=1e-3, tolerance=det * (1 - 1e-9)).outcome == "underpowered"


def test_hrad_study_scores_only_prompts_with_decisions(monkeypatch):
    import spectheory.validate.replay_sb as SB
    monkeypatch.setattr(SB, "train_mlp", lambda X, y, seed: (lambda Z: np.zeros(len(Z), dtype=np.int64)))
    traces = _hrad_traces()
    short = _hrad_traces(T=3)[3]                # 3 positions < γ = 4: no decision (t = 1..T − 3 is empty)
    traces[3] = short
    st = SB.hrad_study(traces, 4, folds=5, seed=19)
    # 9 prompts × 9 decisions; each gain 0.4 − 0.4 = 0 (class 0 predicted, the majority)
    assert st["n"] == 81 and st["per_prompt_gain"].shape == (9,)
    np.testing.assert_allclose(st["per_prompt_gain"], 0.0, atol=1e-15)


def test_hrad_graded_row_claims_the_majority_and_measures_hrad(monkeypatch):
    import spectheory.validate.replay_sb as SB
    main = {**_hrad_study_dict([0.05, 0.06, 0.04, 0.05]), "accuracy": 0.55, "majority": 0.5}
    studies = {False: main, True: _hrad_study_dict([0.0, 0.01, -0.01, 0.0])}
    monkeypatch.setattr(SB, "_hrad_missing", lambda traces: None)
    monkeypatch.setattr(SB, "hrad_study", lambda traces, g, shuffle=False: studies[shuffle])
    tr = SimpleNamespace(hidden_proj=np.zeros((3, 4)), emb_proj=np.zeros((3, 2)), meta={"category": "code"})
    e, _ = SB.hrad_evidence([tr] * 4, None)
    assert (e.claimed, e.measured) == (0.5, 0.55)


# --- ECSV's rule 1 on real traces: the cells counted, the cell that is shown, the detectable deviation -------

def test_rule1_bonferroni_counts_only_cells_with_a_test():
    from spectheory.validate import replay_ecsv as rp
    # one cell has no standard error (no test): one test, z_c = z_(1 − 0.01) = 2.3263 (2 cells: 2.5758)
    d = rp.length_decisions({"A": {"code": (1.0, float("nan")), "chat": (1.0, 0.01)}}, 0.01, 0.1)
    assert d["n_tests"] == 1 and d["z_crit"] == pytest.approx(2.3263478740408408)
    # a powered null is not an improvement: above on one set, no gain on the other → rejected
    d = rp.length_decisions({"A": {"code": (0.1, 0.01), "chat": (0.0, 0.01)}}, 0.01, 0.1)
    assert d["cells"]["A"] == {"code": "above", "chat": "no gain"} and d["configs"]["A"] == "rejected"
    assert d["outcome"] == "fail"


def _ecsv_rep(sets):
    cell = lambda d, se: {"diff": d, "se": se, "windows": 100, "diff_k1": 2.0, "se_k1": 0.01}  # noqa: E731
    return SimpleNamespace(rows=[{"variant": v, "B": 2, "k": 2, "ecsv": 1.5, "sd1": 1.5, "diff": 0.0, "se": 0.01,
                                  "windows": 100, "sets": {ds: cell(*x) for ds, x in per.items()}}
                                 for v, per in sets.items()], sets=("chat", "code"), positions=321, context="toy")


def test_rule1_shows_its_most_significant_cell_and_sizes_an_open_verdict():
    from spectheory.validate import replay_ecsv as rp
    # A: +0.05 ± 0.01 on both sets (z = 5), B: +1.0 ± 0.5 (z = 2, the larger difference): the most favourable
    # cell is A's, p = P(Z > 5) = 2.8665e-7
    (e, *_) = rp.rule1_evidence(_ecsv_rep({"A": {"chat": (0.05, 0.01), "code": (0.05, 0.01)},
                                           "B": {"chat": (1.0, 0.5), "code": (1.0, 0.5)}}), 0.01, 0.1)
    assert e.p_value == pytest.approx(2.866515718791933e-07) and "A B=2 k=2 on chat: +0.0500 ± 0.0100" in e.note
    # one configuration, both cells open (test_rule1_length_half_decisions_by_hand: factor
    # ((2.5758 + 1.2816)·0.05/0.1)² = 3.7198): detectable √3.7198·0.1 = 0.19287; n needed 321·3.7198 = 1194.07
    # → 1195 positions (the factor itself as the deviation's scale: 4442)
    (e, *_) = rp.rule1_evidence(_ecsv_rep({"A": {"chat": (0.0, 0.05), "code": (0.01, 0.05)}}), 0.01, 0.1)
    assert e.outcome == "underpowered" and e.detectable == pytest.approx(0.19286904345467507)
    assert verdicts.n_needed(e) == 1195


def test_rule1_controls_standard_errors_are_their_own():
    from spectheory.validate import replay_ecsv as rp
    # one code trace of 16 starts: differences 0 ×8 then 1 ×8 → batch means 0, 1: se = 0.7071/√2 = 0.5; the k1
    # control's differences are 3× those: se 1.5; the bonus control's are the subject's − 1: se 0.5
    pool = SimpleNamespace(bounds=((0, 16), (16, 32)), categories=("code", "chat"))
    diff = np.r_[np.zeros(8), np.ones(8), np.zeros(16)]
    got = rp._per_set(diff, 3 * diff, pool, np.arange(32), ["chat", "code"])
    assert (got["code"]["se"], got["code"]["se_k1"]) == (pytest.approx(0.5), pytest.approx(1.5))
    rep = SimpleNamespace(rows=[{"variant": "V", "B": 2, "k": 2, "sets": got}])
    assert rp._cells(rep, "k1")[("V", 2, 2)]["code"] == (pytest.approx(1.5), pytest.approx(1.5))
    assert rp._cells(rep, "bonus")[("V", 2, 2)]["code"] == (pytest.approx(-0.5), pytest.approx(0.5))


@pytest.mark.parametrize("first_diff, want", [(0.0, "rejected"), (-0.1, "rejected"), (0.1, "not rejected")])
def test_ecsv_first_branch_control_is_rejected_unless_it_passes(monkeypatch, first_diff, want):
    """The depth-1 vote's control (the first branch instead of the vote) must not pass: undecided (z = 0)
    and decided below (z = −10) both reject it; only a significant gain (z = 10 > z_(1 − 0.001) = 3.09)
    does not."""
    from spectheory.validate import replay_ecsv as rp
    toy = _ecsv_rep({"A": {"chat": (0.05, 0.01), "code": (0.05, 0.01)}})
    rep = rp.ECSVReplay(toy.rows, [{"B": 3, "vote": 0.6, "single": 0.5, "single_hi": 0.5, "diff": 0.1, "se": 0.01,
                                    "n": 50, "first": 0.5 + first_diff, "first_diff": first_diff, "first_se": 0.01}],
                        [], {2: 100}, "toy", ("chat", "code"), 321)
    monkeypatch.setattr(rp, "replay", lambda run, **k: rep)
    vote, first = rp.logits_evidence(None, 1e-3)["ecsv.majority"]
    assert vote.outcome == "pass" and not vote.control
    assert first.outcome == "info" and first.control == want


def test_ecsv_vote_rows_are_tested_at_the_per_test_level_whatever_the_harness_size(monkeypatch):
    """Each depth-1 vote row is its own one-sided test at the per-test α: z = 3.2 passes at α = 1e-3
    (z_c = 3.0902) with one harness configuration or with 36 (a Bonferroni over the 36 unrelated harness
    rows would ask z > z_(1 − 1e-3/36) = 4.03 and leave it undecided)."""
    from spectheory.validate import replay_ecsv as rp
    cells = {"chat": (0.05, 0.01), "code": (0.05, 0.01)}
    for n_cfg in (1, 36):
        toy = _ecsv_rep({f"C{i}": cells for i in range(n_cfg)})
        rep = rp.ECSVReplay(toy.rows, [{"B": 3, "vote": 0.532, "single": 0.5, "single_hi": 0.5, "diff": 0.032,
                                        "se": 0.01, "n": 50, "first": 0.5, "first_diff": 0.0, "first_se": 0.01}],
                            [], {2: 100}, "toy", ("chat", "code"), 321)
        monkeypatch.setattr(rp, "replay", lambda run, rep=rep, **k: rep)
        vote, first = rp.logits_evidence(None, 1e-3)["ecsv.majority"]
        assert len(rep.rows) == n_cfg and vote.outcome == "pass", n_cfg
        assert vote.ci_low == pytest.approx(0.532 - 3.090232306167813 * 0.01)


def test_a_rejected_controls_row_states_the_prompts_its_largest_set_holds(monkeypatch):
    """A control rejected on 8 code and 2 chat prompts holds 8 per set: its row's per set and the
    command agree (⌈10/2⌉ = 5 would state less than the run holds)."""
    ev = Evidence("logits", "c", 0.5, 0.7, 0.69, 0.71, p_value=1e-12, outcome="fail")
    _fake_loop_tests(monkeypatch, {"kseq.rho": [ev]}, lambda tol, tt: [_PR("kseq.rho", "t", 250, 0.2, tol)])
    runs = [LoopRun("kseq", {}, [], meta=dict(name=f"{c}{i}", category=c)) for c, k in (("code", 8), ("chat", 2))
            for i in range(k)]
    plan = plan_run(Run("pilot", {}, [], {}, {"kseq-control": runs}, {}), 1e-3)
    (row,) = plan.rows
    assert (row.prompts_needed, row.per_set) == (10, 8) and plan.controls_n == {"kseq": 8}
    assert "--controls-n kseq=8" in plan.command("N")


def test_hrad_mlp_is_the_same_network_whatever_the_callers_thread_count():
    """H-RAD's MLP trains on one torch thread: the same seed gives bitwise the same outputs whether
    the caller runs torch on 1 or 2 threads (on 2, a product split over threads changes the last
    bits: the decisive run's accuracy read 0.7171 once for 0.7170)."""
    torch = pytest.importorskip("torch")
    from spectheory.validate.replay_sb import train_mlp
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 129)).astype(np.float32)
    y = rng.integers(0, 3, 3000)
    before = torch.get_num_threads()
    out = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            predict = train_mlp(X, y, seed=5, steps=30)
            assert torch.get_num_threads() == threads            # the caller's setting is restored
            cells = dict(zip(predict.__code__.co_freevars, (c.cell_contents for c in predict.__closure__)))
            with torch.no_grad():
                out.append(cells["net"](torch.as_tensor((X - cells["mu"]) / cells["sd"])).numpy())
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(out[0], out[1])
