"""ECSV closed forms: MAP = weighted vote under the channel model with a uniform prior (and
where it stops), the majority sentences' readings and their smallest counterexamples, the
drafting model's vote, prefix length and budget accounting."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from spectheory.closed_forms import ecsv as cf


def _grid():
    rng = np.random.default_rng(17)
    for V in (2, 3, 4, 6):
        for B in (1, 2, 3, 4):
            if V ** (B + 1) > 5000:
                continue
            for _ in range(25):
                yield V, rng.uniform(0.02, 0.98, B)
            yield V, np.full(B, 0.3)            # equal rates: ties everywhere
            yield V, np.full(B, (V - 1) / V)    # uninformative branches: weight 0


def test_map_equals_weighted_vote_uniform_prior():
    """Brute-force posterior argmax sets = weighted-vote argmax sets on every observation
    tuple, for 400 (V, ε) settings (V ≤ 6, B ≤ 4, random, equal and uninformative ε)."""
    n = 0
    for V, eps in _grid():
        r = cf.map_vote_mismatch(eps, V)
        assert r["n_mismatch"] == 0, (V, eps, r)
        n += 1
    assert n > 300


def test_map_needs_the_uniform_prior():
    """Smallest counterexample: V = 2, B = 1, ε = 0.3, prior (0.8, 0.2): the branch says 1,
    MAP says 0 (posterior of 1 is 0.7·0.2/(0.7·0.2 + 0.3·0.8) = 0.37)."""
    r = cf.map_vote_mismatch([0.3], 2, prior=[0.8, 0.2])
    assert r["n_mismatch"] == 1
    assert r["worst"][:3] == ((1,), (0,), (1,))
    # adding log prior(y) to the vote restores MAP
    law = cf.channel_law([0.3], 2, [0.8, 0.2])
    scores = cf.vote_scores(cf.map_weights([0.3], 2), 2) + np.log([0.8, 0.2])
    assert (cf.map_sets(law) == cf._argmax_sets(scores)).all()


def test_binary_weights_are_not_map_for_V_above_2():
    eps = [0.2, 0.45, 0.45]
    assert cf.map_vote_mismatch(eps, 2, weights=cf.binary_weights(eps))["n_mismatch"] == 0
    assert cf.map_vote_mismatch(eps, 10, weights=cf.binary_weights(eps))["n_mismatch"] > 0


def test_bayes_accuracy_dominates_every_branch_and_every_vote():
    """MAP is optimal: its accuracy is ≥ every single branch's and ≥ the unweighted vote's."""
    for V, eps in _grid():
        bayes = cf.bayes_accuracy(eps, V)
        assert bayes >= cf.branch_accuracy(cf.channel_law(eps, V)).max() - 1e-12
        assert bayes >= cf.vote_accuracy(eps, V, "uniform") - 1e-12
        assert cf.vote_accuracy(eps, V) == pytest.approx(bayes, abs=1e-12)


def test_majority_strict_improvement_fails_at_B2():
    """'Greater than any single branch': with B = 2 the MAP vote follows the better branch
    (or ties), so its accuracy equals the best branch's — never greater."""
    for eps in ([0.1, 0.3], [0.2, 0.2], [0.05, 0.45]):
        for V in (2, 3, 10):
            best = 1 - min(eps)
            assert cf.vote_accuracy(eps, V) == pytest.approx(best, abs=1e-12)


def test_majority_heterogeneous_unweighted_vote_loses():
    """ε = (0.01, 0.4, 0.4), V = 2: the unweighted majority is right w.p. 0.8352, the best
    branch 0.99; the MAP-weighted vote keeps 0.99."""
    assert cf.vote_accuracy([0.01, 0.4, 0.4], 2, "uniform") == pytest.approx(0.8352, abs=1e-12)
    assert cf.vote_accuracy([0.01, 0.4, 0.4], 2) == pytest.approx(0.99, abs=1e-12)


def test_majority_near_one_half():
    """V = 2: the gain over a single branch vanishes as ε → 1/2 (B = 3 i.i.d.); for V > 2,
    ε = 1/2 is still informative ((V−1)/V is the threshold, not 1/2)."""
    gains = [cf.vote_accuracy([e] * 3, 2) - (1 - e) for e in (0.3, 0.4, 0.45, 0.49, 0.5)]
    assert all(g1 > g2 for g1, g2 in zip(gains, gains[1:]))
    assert gains[-1] == pytest.approx(0.0, abs=1e-12)
    assert cf.vote_accuracy([0.5] * 3, 10) > 0.5 + 0.05


def test_coalescing_errors_counterexample():
    c = cf.coalescing_counterexample()
    np.testing.assert_allclose(c["branch_accuracy"], 0.7, atol=1e-12)
    assert c["vote_accuracy"] == pytest.approx(0.55, abs=1e-12)


def test_shared_bias_mixture_only_dilutes():
    """Correlation by a common draw (ρ) lowers the vote's gain but not below a branch."""
    accs = [cf.vote_accuracy([0.3] * 3, 2, rho=r) for r in (0.0, 0.5, 1.0)]
    assert accs[0] > accs[1] > accs[2] == pytest.approx(0.7, abs=1e-12)


def test_pattern_law_marginals():
    pp = np.full((2, 2), 0.25)
    law = cf.pattern_law(pp, 3)
    assert law.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(cf.branch_accuracy(law), 0.5, atol=1e-12)


def test_soft_vote_overturns_a_weighted_majority():
    c = cf.soft_majority_counterexample()
    assert c["share_on_truth"] > 0.5 and c["fused"] != c["truth"]
    # hard fusion: a share > 1/2 on y always wins (exhaustive over B ≤ 4, V ≤ 3, weights on a grid)
    grid = (0.0, 0.5, 1.0, 2.0)
    for B in (1, 2, 3, 4):
        for V in (2, 3):
            for toks in itertools.product(range(V), repeat=B):
                for w in itertools.product(grid, repeat=B):
                    w = np.array(w)
                    if w.sum() == 0:
                        continue
                    s = cf.position_scores(np.array(toks), w)
                    for y in range(V):
                        if w[np.array(toks) == y].sum() > w.sum() / 2:
                            assert np.argmax(s) == y


def test_vote_match_iid_against_brute_force():
    """Enumeration over vote counts equals enumeration over every branch tuple."""
    rng = np.random.default_rng(4)
    for V, B in ((2, 3), (3, 2), (3, 4), (4, 3)):
        p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
        brute = 0.0
        for toks in itertools.product(range(V), repeat=B):
            c = np.bincount(toks, minlength=V)
            win = min(np.flatnonzero(c == c.max()), key=lambda t: (-q[t], t))
            brute += np.prod(q[list(toks)]) * p[win]
        assert cf.vote_match_iid(p, q, B) == pytest.approx(brute, abs=1e-12)
    assert cf.vote_match_iid(p, q, 1) == pytest.approx(cf.single_branch_match(p, q), abs=1e-12)


def test_drafting_model_vote_can_lose_to_one_branch():
    """Branches are independent of the verifier's sample: when q's mode is not p's, the vote
    matches less often than one branch; when the modes agree, it matches more often."""
    p, q = np.array([0.6, 0.4]), np.array([0.4, 0.6])
    assert cf.vote_match_iid(p, q, 3) == pytest.approx(0.4704, abs=1e-12)
    assert cf.single_branch_match(p, q) == pytest.approx(0.48, abs=1e-12)
    assert cf.vote_match_iid(p, p, 3) > cf.single_branch_match(p, p)


def test_prefix_length():
    assert cf.prefix_length([0.5, 0.5]) == pytest.approx(0.75)
    assert cf.prefix_length([1.0, 1.0, 1.0]) == pytest.approx(3.0)
    rng = np.random.default_rng(1)
    for _ in range(200):
        a = rng.uniform(0, 1, 5)
        delta = rng.uniform(0, 0.5)
        b = np.minimum(a * (1 + delta), 1.0)
        assert cf.prefix_length(b) >= cf.prefix_length(a) - 1e-15
        if (a * (1 + delta) <= 1).all():
            assert cf.prefix_length(b) >= (1 + delta) * cf.prefix_length(a) - 1e-12
    c = cf.dependent_monotonicity_counterexample()
    assert (c["marginals_B"] > c["marginals_A"]).all() and c["prefix_B"] < c["prefix_A"]
    assert c["prefix_A"] == pytest.approx(1.0) and c["prefix_B"] == pytest.approx(0.8)


def test_budget_accounting():
    assert cf.vtpo_sequential(0, 2.5) == pytest.approx(1.0)
    assert cf.vtpo_sequential(1, 2.0) == pytest.approx(1.5)
    assert cf.vtpo_parallel(1, 3, 2.5) == pytest.approx(2.0)
    np.testing.assert_allclose(cf.budget_ledger([3, 2, 5], 4), [1, 3, 2])
