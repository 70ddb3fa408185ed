"""Closed forms of the SpecBranch family against the exact renewal-reward engine (exact, no
sampling): the truncated geometric, ideal parallel SD, the derived Theorem 1 (PSD), PEARL, SpS."""
from __future__ import annotations

import numpy as np
import pytest

from _sb import ALPHA_IID, IID, M4, iid_pair
from spectheory.closed_forms import sb as cf
from spectheory.exact import sb as ex
from spectheory.rules import sb as R


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.8, 1.0])
@pytest.mark.parametrize("gamma", [1, 3, 6])
def test_trunc_geom_pmf_sums_and_mean(alpha, gamma):
    pmf = cf.trunc_geom_pmf(alpha, gamma)
    assert pmf.shape == (gamma + 1,) and abs(pmf.sum() - 1) < 1e-14
    assert abs(pmf @ np.arange(gamma + 1) - cf.trunc_geom_mean(alpha, gamma)) < 1e-12


@pytest.mark.parametrize("gamma", [1, 2, 5])
def test_chain_dp_is_the_truncated_geometric_on_iid(gamma):
    assert np.abs(ex.accepted_per_round_law(IID, gamma) - cf.trunc_geom_pmf(ALPHA_IID, gamma)).max() < 1e-13
    assert ex.trunc_geom_tv(IID, gamma) < 1e-13


def test_markov_source_deviates_and_alpha_readings_differ():
    tv = ex.trunc_geom_tv(M4, 4)
    assert tv > 0.01  # β varies by state: the law of τ is a mixture, not a truncated geometric
    r = ex.alpha_readings(M4, 4)
    assert set(r) == {"stationary", "round_start", "per_position"}
    assert len({round(v, 6) for v in r.values()}) > 1
    law = ex.accepted_per_round_law(M4, 4)
    assert abs(law.sum() - 1) < 1e-12 and (law >= 0).all()


@pytest.mark.parametrize("gamma", [1, 2, 4, 7])
@pytest.mark.parametrize("c", [0.5, 2.0, 4.0, 9.0])
def test_ideal_parallel_latency_is_the_engines_at_alpha_one(gamma, c):
    pair = iid_pair(1.0)
    want = max(gamma, c) / gamma
    assert abs(cf.ideal_parallel_latency(gamma, c) - want) < 1e-15
    for method in (R.PSD, R.PEARL):
        assert abs(ex.long_run_rates(pair, method, R.Pipeline(gamma, c=c)).latency - want) < 1e-12


def test_ideal_gain_peaks_at_gamma_equal_c_and_stays_below_two():
    for c in (1.0, 2.0, 3.0, 7.0, 50.0):
        gs = np.arange(1, 4 * int(c) + 2)
        gains = cf.ideal_gain(gs, c)
        assert gs[np.argmax(gains)] == c
        assert abs(gains.max() - 2 * c / (c + 1)) < 1e-12 and gains.max() < 2
        assert abs(cf.best_ideal_gain(c, bonus=False) - 2.0) < 1e-12
    assert 2 - cf.best_ideal_gain(1e6) < 1e-5
    g, c = np.meshgrid(np.linspace(1, 40, 80), np.linspace(0.1, 40, 80))
    assert (cf.ideal_gain(g, c) <= 2 + 1e-12).all()


@pytest.mark.parametrize("alpha", [0.0, 0.35, 0.8, 0.97])
@pytest.mark.parametrize("gamma", [1, 2, 3, 6])
@pytest.mark.parametrize("c", [0.5, 2.0, 3.5, 8.0])
def test_thm1_psd_sps_pearl_equal_the_exact_engine(alpha, gamma, c):
    pair = iid_pair(alpha)
    pipe = R.Pipeline(gamma, c=c)
    assert abs(ex.long_run_rates(pair, R.PSD, pipe).latency - cf.psd_latency(alpha, gamma, c)) < 1e-11
    assert abs(ex.long_run_rates(pair, R.PEARL, pipe).latency - cf.pearl_latency(alpha, gamma, c)) < 1e-11
    assert abs(ex.long_run_rates(pair, R.SPS, pipe).latency - cf.sps_latency(alpha, gamma, c)) < 1e-11
    assert abs(ex.long_run_rates(pair, R.AR, pipe).latency - c) < 1e-12


def test_constant_cost_profile_equals_c():
    a = ex.long_run_rates(M4, R.PEARL, R.Pipeline(3, c=3.5))
    b = ex.long_run_rates(M4, R.PEARL, R.Pipeline(3, target_cost=[3.5] * 6))
    assert abs(a.latency - b.latency) < 1e-13
    # a profile that grows with the positions scored costs more
    c = ex.long_run_rates(M4, R.PEARL, R.Pipeline(3, target_cost=[3.5, 3.6, 3.7, 3.8]))
    assert c.latency > a.latency


@pytest.mark.parametrize("alpha", [0.2, 0.6, 0.9, 0.99])
@pytest.mark.parametrize("c", [1.0, 1.7, 3.0, 6.0, 12.0])
def test_psd_minimiser_is_at_most_c_and_is_the_grid_argmin(alpha, c):
    g_star = cf.psd_minimiser(alpha, c)
    assert 1.0 <= g_star <= c
    gs = np.linspace(1.0, 3 * c, 20001)
    vals = cf.psd_latency(alpha, gs, c)
    assert abs(gs[np.argmin(vals)] - g_star) <= 2 * (gs[1] - gs[0])
    gi = cf.psd_minimiser(alpha, c, integer=True, gamma_max=40)
    ints = np.arange(1, 41)
    assert gi == ints[np.argmin(cf.psd_latency(alpha, ints, c))]
    if float(c).is_integer():
        assert gi <= c


def test_integer_minimiser_can_exceed_a_non_integer_c():
    assert cf.psd_minimiser(0.99, 2.5, integer=True) == 3.0
    assert cf.psd_latency(0.99, 3, 2.5) < cf.psd_latency(0.99, 2, 2.5)


@pytest.mark.parametrize("alpha,g,c", [(0.5, 1.5, 4.0), (0.9, 3.2, 4.0), (0.9, 5.0, 4.0), (0.99, 2.0, 8.0)])
def test_derivative_matches_finite_differences(alpha, g, c):
    h = 1e-6
    fd = (cf.psd_latency(alpha, g + h, c) - cf.psd_latency(alpha, g - h, c)) / (2 * h)
    assert abs(cf.psd_latency_derivative(alpha, g, c) - fd) < 1e-6


def test_geom_sum_keeps_precision_near_one():
    a = 1 - 1e-12
    assert abs(cf.geom_sum(a, 5) - 5) < 1e-9
    assert cf.geom_sum(0.0, 3) == 1.0 and cf.geom_sum(0.0, 0) == 0.0
    assert abs(cf.psd_latency(a, 4, 4.0) - 1.0) < 1e-9
