"""The simulated clock of sd.walltime: it advances by the calls an iteration makes, so it
can disagree with Thm 3.8's formula (serial verification), agrees with it exactly when call
times are fixed, and in expectation when they vary."""
import numpy as np
import pytest

from spectheory.judge import stats
from spectheory.closed_forms import sd as cf
from spectheory.exact import sd as ex
from spectheory.montecarlo import sd as mc
from spectheory.montecarlo.clock import PARALLEL, SERIAL, ratio_of_means, simulate_clocks
from spectheory.pairs import random_pair


def test_fixed_call_times_count_calls_exactly():
    n = np.array([1, 3, 5, 2])
    ar, sd = simulate_clocks(n, 4, 0.25, schedule=PARALLEL)
    np.testing.assert_array_equal(ar, n)
    np.testing.assert_array_equal(sd, np.full(4, 4 * 0.25 + 1))
    ar, sd = simulate_clocks(n, 4, 0.25, schedule=SERIAL)
    np.testing.assert_array_equal(sd, 4 * 0.25 + n)
    assert PARALLEL.expected_time(4, 0.25, 2.5) == 2.0 and SERIAL.expected_time(4, 0.25, 2.5) == 3.5


def test_variable_call_times_have_the_stated_means_and_spread():
    """Gamma(shape 4) call times: mean c (draft) and 1 (target), CV 1/2. 200,000 iterations
    of γ = 4 drafts and one target call: total time mean 4c + 1 within 5 standard errors."""
    n = np.full(200_000, 3)
    ar, sd = simulate_clocks(n, 4, 0.5, seed=1, shape=4.0)
    var_sd = 4 * 0.5 ** 2 / 4 + 1 / 4       # Var of a Gamma(k, θ) call = mean²/k
    assert abs(sd.mean() - 3.0) < 5 * np.sqrt(var_sd / n.size)
    assert abs(ar.mean() - 3.0) < 5 * np.sqrt(3 / 4 / n.size)
    assert sd.var() == pytest.approx(var_sd, rel=0.05)


@pytest.mark.parametrize("schedule, want", [(PARALLEL, "pass"), (SERIAL, "fail")])
def test_clock_ratio_against_the_formula(schedule, want):
    """400,000 kernel iterations (order-0 pair, γ = 3, c = 0.3), Gamma call times: z-test of the
    clocks' ratio (delta-method se) against Thm 3.8, α = 1e-3, detectable ≤ 0.02 (asserted).
    The parallel schedule must pass; the serial one (one target call per emitted token, whose
    exact improvement is ≥ 0.3 lower) must fail: the clock, not the token count, sees it."""
    pair = random_pair(4, 0, seed=5)
    gamma, c = 3, 0.3
    alpha = float(pair.acceptance_by_state()[0])
    claimed = cf.walltime_improvement(alpha, gamma, c)
    tokens = ex.expected_tokens(pair, gamma)
    assert claimed - tokens / SERIAL.expected_time(gamma, c, tokens) > 0.3
    r = mc.simulate(pair, gamma, 400_000, seed=2)
    ratio, se = ratio_of_means(*simulate_clocks(r.n_emitted, gamma, c, schedule=schedule, seed=3, shape=4.0))
    ev = stats.z_test_mean("t", claimed, mean=ratio, se=se, n=r.n_iterations, alpha=1e-3, tolerance=0.02)
    assert ev.detectable <= 0.02
    assert ev.outcome == want, ev
