"""Exact engine and closed forms of standard speculative sampling (claims sd.*).

Cheap, deterministic checks (pymc's testing.py style): every number here is exact up to
float64 rounding, so tolerances are 1e-12, not statistical.
"""
import numpy as np
import pytest

from spectheory.closed_forms import sd as cf
from spectheory.exact import sd as ex
from spectheory.pairs import pair_from_tables, perturbed_pair, random_pair
from spectheory.rules.sd import BROKEN_NO_BONUS, BROKEN_RESIDUAL_P, BROKEN_SWAPPED_RATIO, STANDARD

TOL = 1e-12


def test_textbook_example_by_hand():
    """V = 2, p = (0.7, 0.3), q = (0.4, 0.6), γ = 1, worked by hand.

    Draft 0 (prob 0.4) is always accepted; draft 1 (prob 0.6) is accepted w.p. 0.3/0.6 = 0.5.
    β = 0.4 + 0.3 = 0.7. On rejection (0.3) the residual norm(max(p−q,0)) = (1, 0) emits 0.
    Blocks: (0,b) w.p. 0.4·p(b); (1,b) w.p. 0.3·p(b); (0,) w.p. 0.3.
    """
    pair = pair_from_tables([0.7, 0.3], [0.4, 0.6])
    blocks = ex.block_distribution(pair, 1)
    expected = {(0, 0): 0.4 * 0.7, (0, 1): 0.4 * 0.3, (1, 0): 0.3 * 0.7, (1, 1): 0.3 * 0.3, (0,): 0.3}
    assert blocks.keys() == expected.keys()
    for k, v in expected.items():
        assert blocks[k] == pytest.approx(v, abs=TOL)
    np.testing.assert_allclose(ex.tau_distribution(pair, 1), [0.3, 0.7], atol=TOL)
    assert ex.expected_tokens(pair, 1) == pytest.approx(1.7, abs=TOL)
    assert cf.expected_tokens(0.7, 1) == pytest.approx(1.7, abs=TOL)
    # first emitted token: 0.4 + 0.3 = 0.7 for token 0 — exactly p
    np.testing.assert_allclose(ex.first_tokens_distribution(pair, 1, 1), [0.7, 0.3], atol=TOL)


EDGE_CASES = {
    "equal (residual of zero mass)": ([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]),
    "disjoint supports": ([0.5, 0.5, 0.0], [0.0, 0.0, 1.0]),
    "draft tokens with q = 0": ([0.3, 0.3, 0.4], [0.5, 0.5, 0.0]),
    "target tokens with p = 0": ([0.5, 0.5, 0.0], [0.2, 0.3, 0.5]),
    "one-token vocabulary": ([1.0], [1.0]),
}


@pytest.mark.parametrize("case", EDGE_CASES)
@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_lossless_on_edge_cases(case, gamma):
    pair = pair_from_tables(*EDGE_CASES[case])
    d = ex.first_tokens_distribution(pair, gamma, 3)
    np.testing.assert_allclose(d, pair.target.sequence_probs(3), atol=TOL)


@pytest.mark.parametrize("order,how,strength", [(0, "mix", 0.5), (1, "mix", 0.4), (2, "temperature", 2.0),
                                                (1, "top_k", 2), (1, "quantize", 1.0)])
def test_lossless_over_several_iterations_on_markov_pairs(order, how, strength):
    pair = perturbed_pair(3, order, how=how, strength=strength, seed=order + 10)
    for start in range(pair.n_states):
        d = ex.first_tokens_distribution(pair, 2, 5, start_state=start)
        np.testing.assert_allclose(d, pair.target.sequence_probs(5, start), atol=TOL)


@pytest.mark.parametrize("rule", [BROKEN_RESIDUAL_P, BROKEN_SWAPPED_RATIO])
def test_broken_rules_are_not_lossless(rule):
    """Negative control: the same exact comparison must see the broken verifiers."""
    pair = random_pair(3, 0, seed=1)
    d = ex.first_tokens_distribution(pair, 2, 3, rule)
    assert 0.5 * np.abs(d - pair.target.sequence_probs(3)).sum() > 1e-6  # rounding is ~1e-16


def test_no_bonus_is_lossless_but_yields_fewer_tokens():
    pair = random_pair(3, 0, seed=2)
    d = ex.first_tokens_distribution(pair, 2, 3, BROKEN_NO_BONUS)
    np.testing.assert_allclose(d, pair.target.sequence_probs(3), atol=TOL)
    assert ex.expected_tokens(pair, 2, BROKEN_NO_BONUS) < ex.expected_tokens(pair, 2) - 0.1


@pytest.mark.parametrize("gamma", [1, 2, 3, 5])
def test_iid_tau_is_truncated_geometric_and_matches_the_formula(gamma):
    pair = random_pair(4, 0, seed=gamma)
    a = float(pair.acceptance_by_state()[0])
    tau = ex.tau_distribution(pair, gamma)
    expected = [(1 - a) * a ** k for k in range(gamma)] + [a ** gamma]
    np.testing.assert_allclose(tau, expected, atol=TOL)
    assert ex.expected_tokens(pair, gamma) == pytest.approx(cf.expected_tokens(a, gamma), abs=TOL)
    for c in (0.0, 0.1, 1.0):
        assert ex.expected_tokens(pair, gamma) / (gamma * c + 1) == pytest.approx(
            cf.walltime_improvement(a, gamma, c), abs=TOL)


def test_closed_form_limits():
    assert cf.expected_tokens(1.0, 4) == 5.0
    assert cf.expected_tokens(0.0, 4) == 1.0
    np.testing.assert_allclose(cf.expected_tokens(np.array([0.0, 0.5, 1.0]), 2), [1.0, 1.75, 3.0])


@pytest.mark.parametrize("order", [1, 2])
def test_chain_dp_equals_enumeration_from_every_state(order):
    pair = perturbed_pair(3, order, how="mix", strength=0.5, seed=7)
    dp = cf.expected_tokens_chain(pair, 3)
    tails = cf.tau_tail_chain(pair, 3)
    for s in range(pair.n_states):
        assert dp[s] == pytest.approx(ex.expected_tokens(pair, 3, start_state=s), abs=TOL)
        tau = ex.tau_distribution(pair, 3, start_state=s)
        np.testing.assert_allclose(tails[:, s], tau[::-1].cumsum()[::-1], atol=TOL)


def test_iteration_kernel_is_stochastic_and_matches_enumeration():
    pair = perturbed_pair(3, 1, how="mix", strength=0.5, seed=8)
    K = cf.iteration_kernel(pair, 2)
    np.testing.assert_allclose(K.sum(axis=1), 1.0, atol=TOL)
    for s in range(pair.n_states):
        row = np.zeros(pair.n_states)
        for b in ex.iteration_blocks(pair, 2, start_state=s):
            row[b.end_state] += b.prob
        np.testing.assert_allclose(K[s], row, atol=TOL)


def test_constant_alpha_formula_is_exact_only_without_state_dependence():
    iid = random_pair(4, 0, seed=3)
    a = cf.stationary_acceptance(iid)
    assert cf.long_run_block_efficiency(iid, 4) == pytest.approx(cf.expected_tokens(a, 4), abs=TOL)
    markov = perturbed_pair(4, 1, how="mix", strength=0.7, seed=3)
    gap = cf.long_run_block_efficiency(markov, 4) - cf.expected_tokens(cf.stationary_acceptance(markov), 4)
    assert abs(gap) > 1e-3  # the deviation the report shows as info


def test_enumeration_refuses_huge_instances():
    with pytest.raises(ValueError, match="too many"):
        ex.iteration_blocks(random_pair(50, 0, seed=0), 4)
    with pytest.raises(ValueError, match="gamma"):
        ex.iteration_blocks(random_pair(3, 0, seed=0), 0)


def test_standard_rule_accept_probability():
    p, q = np.array([0.7, 0.3, 0.0]), np.array([0.4, 0.6, 0.0])
    np.testing.assert_allclose(STANDARD.accept_probability(p, q)[:2], [1.0, 0.5])
    np.testing.assert_allclose(BROKEN_SWAPPED_RATIO.accept_probability(p, q)[:2], [4 / 7, 1.0])


@pytest.mark.parametrize("k", [4, 6, 8, 10, 12, 14, 15])
@pytest.mark.parametrize("gamma", [1, 4, 16])
def test_expected_tokens_keeps_precision_as_alpha_goes_to_one(k, gamma):
    """α = 1 − 10^-k: the closed form must agree with the exact rational Σ_{j≤γ} α^j to
    1e-14 relative (the textbook quotient (1 − α^{γ+1})/(1 − α) is off by ~10^(k−16))."""
    from fractions import Fraction
    a = 1.0 - 10.0 ** -k
    exact = float(sum(Fraction(a) ** j for j in range(gamma + 1)))
    got = float(cf.expected_tokens(a, gamma))
    assert abs(got - exact) <= 1e-14 * exact, (got, exact)
    assert float(cf.walltime_improvement(a, gamma, 0.25)) == pytest.approx(exact / (gamma * 0.25 + 1), rel=1e-14)


def test_expected_tokens_vectorised_and_monotone():
    grid = np.linspace(0.0, 1.0, 1001)
    e = cf.expected_tokens(grid, 3)
    np.testing.assert_allclose(e, 1 + grid + grid ** 2 + grid ** 3, rtol=1e-14)
    assert np.all(np.diff(e) > 0) and e[0] == 1.0 and e[-1] == 4.0
    assert np.ndim(cf.expected_tokens(0.5, 2)) == 0 and cf.expected_tokens(0.5, 2) == 1.75


def test_acceptance_is_row_wise_overlap():
    p = np.array([[0.7, 0.3, 0.0], [0.2, 0.2, 0.6]])
    q = np.array([[0.4, 0.0, 0.6], [0.2, 0.3, 0.5]])
    np.testing.assert_allclose(cf.acceptance(p, q), [0.4, 0.9], atol=TOL)


def test_stationary_acceptance_weights_beta_by_the_targets_stationary_law():
    """α = Σ_s π(s) β(s) with π the *target's* stationary law, here from an eigen-decomposition
    written out independently; on this pair the draft's stationary law gives a different α."""
    pair = perturbed_pair(3, 1, how="mix", strength=0.8, seed=21)
    T = pair.target.transition_matrix()
    w, v = np.linalg.eig(T.T)
    pi = np.real(v[:, np.argmin(np.abs(w - 1))])
    pi /= pi.sum()
    beta = np.minimum(pair.target.table, pair.draft.table).sum(axis=1)
    assert cf.stationary_acceptance(pair) == pytest.approx(float(pi @ beta), abs=1e-12)
    w, v = np.linalg.eig(pair.draft.transition_matrix().T)
    pi_q = np.real(v[:, np.argmin(np.abs(w - 1))])
    assert abs(float(pi_q / pi_q.sum() @ beta) - float(pi @ beta)) > 1e-3
