"""Exact engines of the SpecBranch family: branch-point laws, the law of the first N emitted
tokens (which rules and methods keep p), the round chain and its rewards (no sampling)."""
from __future__ import annotations

import numpy as np
import pytest

from _sb import CORRECT, IID, LAW_CONTROLS, M4, PIPE, POLICY, with_rule
from spectheory.closed_forms import multidraft as cf_md
from spectheory.exact import sb as ex
from spectheory.pairs import perturbed_pair
from spectheory.rules import sb as R

RNG = np.random.default_rng(20261125)
ROWS = [(RNG.dirichlet(np.ones(4) * a), RNG.dirichlet(np.ones(4) * a)) for a in (0.4, 1.0, 3.0) for _ in range(3)]
LOSSLESS = (R.SEED_MATCH, R.RRS_WOR, R.IID_KSEQ)
LOSSY = (R.SEED_RATIO, R.CODE, R.BROKEN_FIRST)


@pytest.mark.parametrize("rule", R.BRANCH_RULES, ids=lambda r: r.name)
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_branch_law_is_a_distribution(rule, k):
    for p, q in ROWS:
        surv, corr = ex.branch_law(p, q, k, rule)
        assert (surv >= -1e-15).all() and (corr >= -1e-15).all()
        assert abs(surv.sum() + corr.sum() - 1) < 1e-12


@pytest.mark.parametrize("rule", LOSSLESS, ids=lambda r: r.name)
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_lossless_rules_emit_p_at_the_branch_point(rule, k):
    for p, q in ROWS:
        assert ex.branch_point_tv(p, q, k, rule) < 1e-12


def test_seed_ratio_reading_is_lossy_hand_example():
    """Top-1 branch of q = (0.7, 0.3) tested with min(1, p/q) against p = (0.6, 0.4): the top
    token is emitted with probability 6/7 (accepted) + 0 (the residual is (0, 1)), not 0.6."""
    surv, corr = ex.branch_law([0.6, 0.4], [0.7, 0.3], 1, R.SEED_RATIO)
    assert abs(surv[0] - 6 / 7) < 1e-15 and abs(corr[1] - 1 / 7) < 1e-15


def test_code_rule_argmax_residual_is_lossy_and_sampling_it_is_not_enough():
    p, q = np.array([0.1, 0.3, 0.2, 0.4]), np.array([0.4, 0.1, 0.4, 0.1])
    # k = 1: one draw from q, one ratio test: only the argmax of the residual differs from SD
    assert ex.branch_point_tv(p, q, 1, R.CODE) > 0.05
    assert ex.branch_point_tv(p, q, 1, R.CODE_SAMPLED_RESIDUAL) < 1e-12
    # k = 2: testing the largest-p branch only is lossy even with a sampled residual
    assert ex.branch_point_tv(p, q, 2, R.CODE_SAMPLED_RESIDUAL) > 0.01


@pytest.mark.parametrize("rule", LOSSY, ids=lambda r: r.name)
def test_lossy_rules_are_lossy_somewhere(rule):
    assert max(ex.branch_point_tv(p, q, k, rule) for p, q in ROWS for k in (1, 2, 3)) > 0.05


@pytest.mark.parametrize("K", [1, 2, 3, 4])
def test_kseq_branch_survival_is_the_multidraft_closed_form(K):
    for p, q in ROWS:
        assert abs(ex.survival_probability(p, q, K, R.IID_KSEQ) - cf_md.kseq_acceptance(p, q, K)) < 1e-12


def test_recursive_rejection_with_one_branch_is_sd():
    for p, q in ROWS:
        surv, corr = ex.branch_law(p, q, 1, R.RRS_WOR)
        assert np.abs(surv - np.minimum(p, q)).max() < 1e-15


@pytest.mark.parametrize("method", CORRECT + tuple(with_rule(r) for r in LOSSLESS), ids=lambda m: m.name)
def test_correct_methods_keep_p_for_the_first_tokens(method):
    assert ex.first_tokens_tv(M4, method, PIPE, 4)[0] < 1e-12
    assert ex.first_tokens_tv(M4, method, PIPE, 3, start_state=2)[0] < 1e-12


@pytest.mark.parametrize("method", LAW_CONTROLS + tuple(with_rule(r) for r in LOSSY), ids=lambda m: m.name)
def test_controls_and_lossy_rules_change_the_law(method):
    tv, seq, claimed, measured = ex.first_tokens_tv(M4, method, PIPE, 3)
    assert tv > 0.01 and abs(claimed - measured) > 0.002


def test_keep_overlap_is_lossless_on_iid_but_changes_the_rate():
    """An i.i.d. source has one context, so a kept overlapped draft is tested correctly; the
    control then only shows in the rates (it skips the invalidation)."""
    pipe = R.Pipeline(3, c=3.0)
    assert ex.first_tokens_tv(IID, R.BROKEN_PEARL_KEEPS_OVERLAP, pipe, 4)[0] < 1e-12
    assert ex.long_run_rates(IID, R.BROKEN_PEARL_KEEPS_OVERLAP, pipe).latency < \
        ex.long_run_rates(IID, R.PEARL, pipe).latency - 0.05
    assert ex.long_run_rates(IID, R.BROKEN_PSD_KEEPS_OVERLAP, pipe).latency < \
        ex.long_run_rates(IID, R.PSD, pipe).latency - 0.05


def test_rate_controls():
    pipe = R.Pipeline(3, c=3.0)
    assert ex.first_tokens_tv(M4, R.BROKEN_PSD_NO_OVERLAP, pipe, 3)[0] < 1e-12
    r = ex.long_run_rates(IID, R.BROKEN_PSD_NO_OVERLAP, pipe)
    assert r.latency > ex.long_run_rates(IID, R.PSD, pipe).latency + 0.5
    # the inverted ratio changes the accepted count: a truncated geometric at another α
    law = ex.long_run_rates(IID, R.BROKEN_SPS_SWAPPED, pipe).accepted_per_call
    assert abs(law - ex.long_run_rates(IID, R.SPS, pipe).accepted_per_call) > 0.05


@pytest.mark.parametrize("method", CORRECT + R.CONTROLS, ids=lambda m: m.name)
def test_round_chain_rows_and_merged_rewards(method):
    states, T, Rw = ex.round_chain(M4, method, PIPE)
    assert np.abs(T.sum(axis=1) - 1).max() < 1e-12
    mdl = ex.model(M4, method, PIPE)
    for st, rw in zip(states[:6], Rw[:6]):
        outs = ex.round_outcomes(mdl, st, tokens=True)
        assert abs(sum(o[2] for o in outs) - 1) < 1e-12
        agg = sum(o[2] * o[3] for o in outs)
        assert np.abs(agg - rw).max() < 1e-10
        # emitted counts agree with the tokens of each outcome
        for toks, _, _, r in outs:
            assert abs(r[ex.REWARDS.index("emitted")] - len(toks)) < 1e-9


@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_sps_rollback_rate_is_one_minus_mean_tau_over_gamma(gamma):
    pipe = R.Pipeline(gamma, c=2.0)
    law = ex.accepted_per_round_law(M4, gamma)
    r = ex.long_run_rates(M4, R.SPS, pipe)
    assert abs(r.rollback_rate - (1 - law @ np.arange(gamma + 1) / gamma)) < 1e-12
    assert abs(r.accepted_per_call - law @ np.arange(gamma + 1)) < 1e-12


def test_busy_and_idle_times():
    pipe = R.Pipeline(3, c=5.0)
    r = ex.long_run_rates(M4, R.PEARL, pipe)
    assert abs(r.target_idle) < 1e-12 and abs(r.draft_idle - (1 - 3 / 5)) < 1e-12
    s = ex.long_run_rates(M4, R.SPS, pipe)
    assert abs(s.target_idle - 3 / 8) < 1e-12 and abs(s.draft_idle - 5 / 8) < 1e-12


def test_policies_shape_the_pipeline():
    keep = ex.long_run_rates(M4, R.PEARL, PIPE)
    none = ex.long_run_rates(M4, R.SB_NO_BRANCH, R.Pipeline(3, c=2.5, k_max=6, eps=0.45,
                                                            policy_table=np.tile([1.0, 0, 0], (4, 1))))
    # all-reject everywhere: one token per round, the AR rate when c ≥ γ ... here c < γ: max(c, γ) = γ
    assert abs(none.tokens_per_call - 1) < 1e-12 and abs(none.latency - 3.0) < 1e-12
    assert keep.tokens_per_call > 1.5


def test_hrad_policy_needs_a_table_of_the_right_shape():
    with pytest.raises(ValueError, match="policy_table"):
        ex.long_run_rates(M4, R.SPECBRANCH, R.Pipeline(3, c=2.0))
    with pytest.raises(ValueError, match="rows"):
        ex.long_run_rates(M4, R.SPECBRANCH, R.Pipeline(3, c=2.0, policy_table=POLICY[:3]))


def test_larger_markov_pair_is_fast_enough():
    pair = perturbed_pair(8, 1, concentration=0.5, strength=0.5, seed=1)
    pol = np.tile([0.2, 0.3, 0.5], (8, 1))
    r = ex.long_run_rates(pair, R.SPECBRANCH, R.Pipeline(5, c=5.0, k_max=4, eps=0.3, policy_table=pol))
    assert 0 < r.rollback_rate < 1 and r.speedup_ar > 0


@pytest.mark.parametrize("method", (R.PEARL, R.SPECBRANCH, R.SB_NO_BRANCH, R.SB_NO_HRAD, R.BROKEN_SB_FIRST_BRANCH,
                                    R.BROKEN_PEARL_NO_OVERLAP, with_rule(R.CODE), with_rule(R.IID_KSEQ), R.SPS,
                                    R.BROKEN_SPS_SWAPPED, R.PSD, R.BROKEN_PSD_NO_OVERLAP),
                         ids=lambda m: m.name)
@pytest.mark.parametrize("gamma", [1, 2, 4])
def test_matrix_engine_equals_the_round_walk(method, gamma):
    for pair in (M4, IID):
        pol = np.tile([0.2, 0.5, 0.3], (pair.n_states, 1))
        pipe = R.Pipeline(gamma, c=3.0, k_max=5, eps=0.45, policy_table=pol)
        a = ex.long_run_rates(pair, method, pipe, engine="walk").as_dict()
        b = ex.long_run_rates(pair, method, pipe, engine="matrix").as_dict()
        for k, v in a.items():
            if k == "per_round":
                assert max(abs(v[r] - b[k][r]) for r in v) < 1e-10
            elif np.isfinite(v):
                assert abs(v - b[k]) < 1e-10, k
    with pytest.raises(ValueError, match="matrix engine"):
        ex.long_run_rates(M4, R.AR, PIPE, engine="matrix")
