"""Monte Carlo kernels of the SpecBranch family: bit for bit equal to the plain-Python twin fed
the same uniforms, in agreement with the exact engines where both exist (seeded tests with the
error rate and power stated below), independent of the thread count.

Statistics. Rates: z = (estimate − exact)/SE with the delta-method SE over 16 independent
streams; |z| < 4.42 is a two-sided test at α = 1e-5 per comparison (≈ 1e-3 over the ~80
comparisons here); it detects a bias of 5.4 SE with power 0.9. Laws: Pearson χ² against the
exact law at α = 1e-4; with 40,000 runs over ≤ 64 sequences it detects an effect size
w = 0.045 (TV ≈ 0.02 spread over a few cells) with power 0.9.
"""
from __future__ import annotations

import numba
import numpy as np
import pytest
from scipy import stats

from _sb import ALL_METHODS, CORRECT, IID, LAW_CONTROLS, M4, PIPE, with_rule
from spectheory.closed_forms import sb as cf
from spectheory.exact import sb as ex
from spectheory.montecarlo import sb as mc
from spectheory.rules import sb as R

Z_MAX = 4.42
CHI2_ALPHA = 1e-4
RATES = ("tokens_per_time", "rollback_rate", "submitted_rollback_rate", "waste_rate", "target_idle", "draft_idle",
         "tokens_per_call", "accepted_per_call")


def _chi2_p(counts, probs):
    keep = probs > 1e-15
    assert counts[~keep].sum() == 0, "a sequence of probability 0 was emitted"
    return stats.chisquare(counts[keep], probs[keep] * counts.sum() / probs[keep].sum()).pvalue


def _codes(tokens, V):
    return tokens @ (V ** np.arange(tokens.shape[1] - 1, -1, -1))


@pytest.mark.parametrize("method", ALL_METHODS, ids=lambda m: m.name)
def test_kernel_equals_plain_python_twin(method):
    U = mc.n_uniforms(M4, method, PIPE)
    u = np.random.default_rng(7).random((600, U))
    u[::7] = np.minimum(u[::7] * 1e-9, 0.999)          # near-zero uniforms
    u[3::11] = np.nextafter(1.0, 0.0)                  # the largest double below 1
    for a, b in zip(mc.run_uniforms(M4, method, PIPE, u, start_state=1),
                    mc.reference_rounds(M4, method, PIPE, u, start_state=1)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ALL_METHODS, ids=lambda m: m.name)
def test_mc_rates_agree_with_the_exact_chain(method):
    res = mc.simulate(M4, method, PIPE, 15_000, seed=11, burn_in=50)
    e = ex.long_run_rates(M4, method, PIPE)
    for what in RATES:
        est, se = res.estimate(what)
        want = getattr(e, what)
        if not np.isfinite(want):
            assert not np.isfinite(est) or se == 0
            continue
        if se == 0:
            assert abs(est - want) < 1e-12, (what, est, want)
            continue
        assert abs(est - want) / se < Z_MAX, (what, est, want, se)


@pytest.mark.parametrize("method", CORRECT + R.CONTROLS + (with_rule(R.CODE), with_rule(R.SEED_RATIO),
                                                           with_rule(R.IID_KSEQ)), ids=lambda m: m.name)
def test_first_tokens_follow_the_exact_law(method):
    law = ex.first_tokens_distribution(M4, method, PIPE, 3)
    toks = mc.first_tokens(M4, method, PIPE, 40_000, 3, seed=5)
    assert _chi2_p(np.bincount(_codes(toks, 4), minlength=64), law) > CHI2_ALPHA


@pytest.mark.parametrize("method", LAW_CONTROLS + (with_rule(R.CODE),), ids=lambda m: m.name)
def test_mc_sees_the_lossy_ones(method):
    toks = mc.first_tokens(M4, method, PIPE, 40_000, 3, seed=6)
    assert _chi2_p(np.bincount(_codes(toks, 4), minlength=64), M4.target.sequence_probs(3)) < 1e-8


@pytest.mark.parametrize("gamma", [2, 4])
def test_sps_accepted_per_round_is_the_truncated_geometric_on_iid(gamma):
    res = mc.simulate(IID, R.SPS, R.Pipeline(gamma, c=2.0), 20_000, seed=3)
    counts = res.hist_acc.sum(axis=0)[: gamma + 1]
    assert _chi2_p(counts, cf.trunc_geom_pmf(0.8, gamma)) > CHI2_ALPHA


def test_psd_mc_latency_matches_theorem_1_on_iid():
    for gamma, c in ((2, 3.0), (4, 4.0), (6, 3.0)):
        res = mc.simulate(IID, R.PSD, R.Pipeline(gamma, c=c), 20_000, seed=gamma)
        est, se = res.estimate("latency")
        assert abs(est - cf.psd_latency(0.8, gamma, c)) / se < Z_MAX


def test_thread_count_does_not_change_results():
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a = mc.simulate(M4, R.SPECBRANCH, PIPE, 2000, seed=9).sums
        fa = mc.first_tokens(M4, R.SPECBRANCH, PIPE, 500, 4, seed=9)
        numba.set_num_threads(max(1, numba.config.NUMBA_NUM_THREADS))
        b = mc.simulate(M4, R.SPECBRANCH, PIPE, 2000, seed=9).sums
        fb = mc.first_tokens(M4, R.SPECBRANCH, PIPE, 500, 4, seed=9)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fa, fb)


def test_same_seed_same_result_and_different_seed_differs():
    a = mc.simulate(M4, R.PEARL, PIPE, 1000, seed=1).sums
    b = mc.simulate(M4, R.PEARL, PIPE, 1000, seed=1).sums
    c = mc.simulate(M4, R.PEARL, PIPE, 1000, seed=2).sums
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_speedup_over_sps_agrees_with_exact():
    pipe = PIPE
    a = mc.simulate(M4, R.SPECBRANCH, pipe, 15_000, seed=21)
    b = mc.simulate(M4, R.SPS, pipe, 15_000, seed=22)
    r, se = a.speedup_over(b)
    want = ex.long_run_rates(M4, R.SPECBRANCH, pipe).speedup_over(ex.long_run_rates(M4, R.SPS, pipe))
    assert abs(r - want) / se < Z_MAX
