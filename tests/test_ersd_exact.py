"""Exact engines, closed forms and trees of Kobus & Gündüz (the ersd family's claims): hand-worked values, identities
the derivations rest on, edge cases, and the broken variants being caught."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from spectheory import trees as T
from spectheory.closed_forms import ersd as cf
from spectheory.distributions import DistributionError
from spectheory.divergences import entropy, harmonic_mean_term, overlap
from spectheory.exact import ersd as ex
from spectheory.pairs import pair_from_tables, perturbed_pair, random_pair
from spectheory.rules import ersd as R
from spectheory.verifiers.ersd import gsd_verify

RNG = np.random.default_rng(2024)
PAIRS = [(RNG.dirichlet(np.ones(V) * c), RNG.dirichlet(np.ones(V) * c))
         for V in (2, 3, 4, 5) for c in (0.3, 1.0, 3.0)]


def test_ersd_v2_hand_worked():
    """V = 2, p = (1/2, 1/2), q = (1/4, 3/4): x = 0 wins both races iff E_1 > E_0·max(1, 3) = 3E_0,
    P = ∫ e^{-e} e^{-3e} de = 1/4; x = 1 iff E_0 > E_1·max(1, 1/3): P = 1/2. Total 3/4."""
    p, q = np.array([0.5, 0.5]), np.array([0.25, 0.75])
    J = ex.ersd_index_law(p, q)
    assert J[0, 0] == pytest.approx(0.25, abs=1e-15)
    assert J[0, 1] == pytest.approx(0.5, abs=1e-15)
    assert cf.ersd_first_acceptance(p, q) == pytest.approx(0.75, abs=1e-15)
    # here it equals 1 − TV = Σ min = 0.25 + 0.5: on V = 2 the shared race is an optimal coupling
    assert overlap(p, q) == pytest.approx(0.75)


@pytest.mark.parametrize("p,q", PAIRS)
def test_index_laws_marginal_is_p_and_first_row(p, q):
    for rule in (R.GSD, R.ERSD, R.BROKEN_ERSD_INDEPENDENT):
        J = ex.index_law(p, q, rule)
        np.testing.assert_allclose(J.sum(axis=0), p, atol=1e-12)
        assert (J >= -1e-15).all()
    np.testing.assert_allclose(ex.gsd_index_law(p, q)[0], np.minimum(p, q), atol=1e-13)
    assert ex.ersd_first_acceptance(p, q) == pytest.approx(float(cf.ersd_first_acceptance(p, q)), abs=1e-12)
    assert float(cf.ersd_first_acceptance_sorted(p, q)) == pytest.approx(float(cf.ersd_first_acceptance(p, q)), abs=1e-12)
    # independent races: P(X_p = X_q) = Σ p q
    assert ex.ersd_first_acceptance(p, q, R.BROKEN_ERSD_INDEPENDENT) == pytest.approx(float(p @ q), abs=1e-12)
    # Lemma 3.1's sandwich
    e = ex.ersd_first_acceptance(p, q)
    assert harmonic_mean_term(p, q) <= e + 1e-12 <= overlap(p, q) + 2e-12


def test_gsd_outcomes_do_not_depend_on_m_for_kept_indices():
    p, q = PAIRS[7]
    A5, _ = ex.gsd_outcomes(p, q, 3)
    for m in (1, 2):
        A, Rr = ex.gsd_outcomes(p, q, m)
        np.testing.assert_allclose(A, A5[:m], atol=1e-14)
        np.testing.assert_allclose(A.sum(0) + Rr, p, atol=1e-12)


def test_broken_variants_are_lossy_at_one_context():
    p, q = np.array([0.6, 0.3, 0.1, 0.0]), np.array([0.1, 0.2, 0.3, 0.4])
    A, Rr = ex.gsd_outcomes(p, q, 2, R.BROKEN_GSD_Q_NOT_UPDATED)
    assert np.abs(A.sum(0) + Rr - p).max() > 1e-3
    pair = pair_from_tables(p, q)
    cont, stop = ex.vertex_law(pair, R.BROKEN_ERSD_RESAMPLE, 0, (1,))
    assert np.abs(cont[1] + stop - p).max() > 1e-3


def test_tree_dp_matches_enumeration_and_is_lossless():
    pair = perturbed_pair(3, 1, how="mix", strength=0.5, seed=3)
    tree = T.Tree(((1,), (2,), (1, 1), (1, 3), (2, 1), (1, 1, 1)))
    for rule in (R.GSD, R.ERSD):
        assert ex.expected_generated(pair, rule, tree, 1) == pytest.approx(
            ex.expected_generated_enumerated(pair, rule, tree, 1), abs=1e-12)
        d = ex.first_tokens_distribution(pair, rule, tree, 3, start_state=2)
        np.testing.assert_allclose(d, pair.target.sequence_probs(3, 2), atol=1e-13)
    # batch k: E = 1 + P(index ≤ k)
    J = ex.index_law(pair.target.conditional(0), pair.draft.conditional(0), R.ERSD)
    assert ex.expected_generated(pair, R.ERSD, T.batch_tree(2), 0) == pytest.approx(1 + J[:2].sum(), abs=1e-13)


def test_edge_cases_lossless():
    cases = [([0.5, 0.5, 0.0], [0.0, 0.0, 1.0]), ([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]), ([1.0], [1.0]),
             ([0.7, 0.3, 0.0], [0.5, 0.0, 0.5])]
    for p, q in cases:
        pair = pair_from_tables(p, q)
        for rule in (R.GSD, R.ERSD):
            for tree in (T.simple_tree(), T.batch_tree(3), T.sequence_tree(2)):
                d = ex.first_tokens_distribution(pair, rule, tree, 2)
                np.testing.assert_allclose(d, pair.target.sequence_probs(2), atol=1e-13)


def test_p_equals_q_always_accepts():
    p = np.array([0.2, 0.3, 0.5])
    for rule in (R.GSD, R.ERSD):
        assert ex.index_law(p, p, rule)[0].sum() == pytest.approx(1.0, abs=1e-13)


def test_acceptance_function_order0_is_product():
    pair = random_pair(3, 0, seed=5)
    a = ex.stationary_index_law(pair, R.ERSD)
    f = ex.acceptance_function(pair, R.ERSD, 0)
    f0 = T.zero_order(a)
    for v in [(1,), (2, 1), (1, 3, 2), (3, 3)]:
        assert f(v) == pytest.approx(f0(v), abs=1e-14)


def test_trees_validation_and_shapes():
    with pytest.raises(ValueError, match="parent"):
        T.Tree(((1, 1),))
    with pytest.raises(ValueError, match="1-based"):
        T.Tree(((0,),))
    t = T.specinfer_tree(5)
    assert t.k == 5 and t.children((1, 1)) == (1, 2, 3) and t.sibling_closed
    assert not T.Tree(((2,),)).sibling_closed
    child, mx = T.Tree(((1,), (3,), (1, 2))).arrays()
    assert child.shape == (4, 3) and child[0, 0] == 1 and child[0, 2] == 2 and child[1, 1] == 3
    assert list(mx) == [3, 2, 0, 0]
    with pytest.raises(ValueError):
        T.sequence_tree(0)


def _count_trees_brute(k, n):
    """Ancestor-closed k-subsets of paths of length ≤ k over n indices, by brute force."""
    paths = [p for d in range(1, k + 1) for p in itertools.product(range(1, n + 1), repeat=d)]
    c = 0
    for sub in itertools.combinations(paths, k):
        s = set(sub)
        c += all(len(v) == 1 or v[:-1] in s for v in sub)
    return c


@pytest.mark.parametrize("k,n", [(1, 2), (2, 2), (3, 2), (2, 3), (3, 3)])
def test_all_trees_enumerates_each_once(k, n):
    trees = list(T.all_trees(k, n))
    assert len(trees) == len({frozenset(t) for t in trees}) == _count_trees_brute(k, n)


def test_alg3_matches_exhaustive_and_bfs_does_not():
    a = np.array([0.55, 0.2, 0.1, 0.15])
    f = T.zero_order(a)
    gaps = []
    for k in range(1, 6):
        _, best, _ = T.exhaustive_optimal(f, k, 3)
        assert T.tree_value(f, T.optimal_tree(f, k, 3)) == pytest.approx(best, abs=1e-14)
        gaps.append(best - T.tree_value(f, T.breadth_first_tree(f, k, 3)))
    assert max(gaps) > 0.05


def test_tunstall_and_lemma42():
    a = np.array([0.6, 0.25, 0.1, 0.05])
    f = T.zero_order(a)
    for k in (1, 4, 32, 256):
        tree = T.optimal_tree(f, k, 3)
        E = T.expected_generated(f, tree)
        assert E <= cf.tunstall_bound(a, k) + 1e-12
        M = max(max(v) for v in tree.vertices)
        b, n = cf.lemma42_min_bound(a, k, M)
        assert E <= b + 1e-12
        # vectorised min over n equals the loop over lemma42_bound
        if M < 4:
            r = 1 - a[:M].sum()
            lo = max(1, int(np.ceil(r / a[M - 1] - 1e-12)))
            loop = min(cf.lemma42_bound(a, k, M, nn) for nn in range(lo, 200))
            assert b <= loop + 1e-12
            assert cf.lemma42_bound(a, k, M, n) == pytest.approx(b, rel=1e-12)
    assert cf.tunstall_bound([1.0], 5) == np.inf
    # the vectorised minimum over n is the minimum of the per-n bound (cap r/n ≤ a(M) and without)
    for M in (1, 2, 3):
        for cap in (True, False):
            b, n = cf.lemma42_min_bound(a, 8, M, n_max=300, require_cap=cap)
            r = 1 - a[:M].sum()
            lo = max(1, int(np.ceil(r / a[M - 1] - 1e-12))) if cap else 1
            vals = [cf.lemma42_bound(a, 8, M, nn) for nn in range(lo, 301)]
            assert b == pytest.approx(min(vals), rel=1e-12) and n == lo + int(np.argmin(vals))
    # base independence of the ratio
    assert cf.tunstall_bound(a, 8, base=2) == pytest.approx(cf.tunstall_bound(a, 8), rel=1e-12)


def test_kl_lower_counterexample_v2():
    """H(index) ≤ log2 V while D_KL is unbounded: eq. 6 read on the methods' index fails."""
    p, q = np.array([0.5, 0.5]), np.array([0.99, 0.01])
    for rule in (R.GSD, R.ERSD):
        H = entropy(ex.index_law(p, q, rule).sum(1), 2)
        assert H <= 1.0 + 1e-12 < float(cf.kl_lower_bound(p, q))


def test_closed_form_input_checks():
    with pytest.raises(DistributionError):
        cf.ersd_first_acceptance([0.5, 0.6], [0.5, 0.5])
    with pytest.raises(DistributionError):
        cf.poisson_matching_bound([0.5, 0.5], [1.0])
    with pytest.raises(ValueError):
        cf.tunstall_bound([0.5, 0.5], -1)
    with pytest.raises(ValueError, match="V ≤"):
        ex.gsd_index_law(np.ones(9) / 9, np.ones(9) / 9)


def test_gsd_verify_checks_and_exactness():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.5, 0.3])
    with pytest.raises(DistributionError, match="distinct"):
        gsd_verify(p, q, [1, 1])
    with pytest.raises(DistributionError, match="q = 0"):
        gsd_verify(p, np.array([0.5, 0.5, 0.0]), [2])
    # frequencies of (index, token) over many calls vs the exact law (chi-square, α = 1e-3)
    from scipy import stats
    rng = np.random.default_rng(1)
    n = 20000
    A, Rr = ex.gsd_outcomes(p, q, 2)
    cells = np.concatenate([A.ravel(), Rr])
    counts = np.zeros(cells.size)
    for _ in range(n):
        d = rng.choice(3, size=2, replace=False, p=q)
        v = gsd_verify(p, q, d, seed=rng)
        counts[(v.index - 1) * 3 + v.token if v.index else 6 + v.token] += 1
    keep = cells > 0
    assert counts[~keep].sum() == 0
    assert stats.chisquare(counts[keep], cells[keep] * n).pvalue > 1e-3


def test_ordered_reading_counts_and_greedy():
    # the ordered enumeration is exactly the sibling-closed subset of all trees
    for k, n in ((2, 2), (3, 2), (3, 3)):
        got = {frozenset(t) for t in T.all_trees(k, n, ordered=True)}
        want = {frozenset(t) for t in T.all_trees(k, n) if T.Tree(t).sibling_closed}
        assert got == want
    a = np.array([0.5, 0.3, 0.15, 0.05])  # decreasing: the ordered greedy is optimal
    f = T.zero_order(a)
    for k in range(1, 6):
        assert T.tree_value(f, T.optimal_tree(f, k, 3, ordered=True)) == pytest.approx(
            T.exhaustive_optimal(f, k, 3, ordered=True)[1], abs=1e-14)
    b = np.array([0.141, 0.01, 0.8, 0.049])  # a low second index hides a high third: it is not
    g = T.zero_order(b)
    gaps = [T.exhaustive_optimal(g, k, 3, ordered=True)[1] - T.tree_value(g, T.optimal_tree(g, k, 3, ordered=True))
            for k in range(1, 5)]
    assert max(gaps) > 0.1


def test_tree_builders_never_use_the_never_accepted_cell():
    """A fitted a has length n + 1 (last cell: no index accepted, fit_zero_order); Alg. 3 (both
    readings) and the brute force must only grow indices 1..n, however large that last cell
    is. With a decreasing on 1..n the greedy trees are optimal, so their value equals the brute
    force's exactly."""
    a = np.array([0.4, 0.2, 0.1, 0.3])  # n = 3 indices, 0.3 never accepted
    f = T.zero_order(a)
    for ordered in (False, True):
        for k in range(1, 6):
            tree = T.optimal_tree(f, k, 3, ordered=ordered)
            assert tree.k == k and max(max(v) for v in tree.vertices) <= 3
            best = T.exhaustive_optimal(f, k, 3, ordered=ordered)
            assert max(max(v) for v in best[0].vertices) <= 3
            assert T.tree_value(f, tree) == pytest.approx(best[1], abs=1e-14)


def test_tunstall_bound_alphabet_counts_positive_mass_only():
    """Thm 4.1's |A| is the number of indices with positive mass: zero cells of a (indices never
    seen) do not enlarge the leaf count; ``alphabet`` overrides it."""
    a = np.array([0.5, 0.25, 0.25, 0.0, 0.0])
    H = -(0.5 * np.log(0.5) + 0.5 * np.log(0.25))
    for k in (0, 1, 7):
        assert cf.tunstall_bound(a, k) == pytest.approx(np.log((k + 1) * 2 + 1) / H, rel=1e-14)
        assert cf.tunstall_bound(a, k, alphabet=5) == pytest.approx(np.log((k + 1) * 4 + 1) / H, rel=1e-14)


def test_entropy_upper_bounds_literal_values():
    """eq. 8 (PFR, Li & El Gamal 2018) D + log2(D + 1) + 4 and eq. 7 in Harsha et al.'s form
    D + 2 log2(D + 1) + C, evaluated by hand (bits)."""
    assert np.allclose(cf.pfr_upper_bound([0.0, 1.0, 3.0]), [4.0, 6.0, 9.0], rtol=0, atol=1e-14)
    assert np.allclose(cf.grs_upper_bound([0.0, 1.0, 3.0]), [0.0, 3.0, 7.0], rtol=0, atol=1e-14)
    assert float(cf.grs_upper_bound(3.0, C=1.5)) == pytest.approx(8.5, abs=1e-14)


# --- channel simulation's list indices (entropy.kl_lower / entropy.upper, part "iid-list") --------

def _simulate_list_index(p, q, n, rng, method):
    """Reference simulation of the list index: X_i ~ q i.i.d.; PFR: arrival times of a rate-1
    Poisson process, K = argmin T_i q(X_i)/p(X_i); GRS: accept step i w.p. (p_i − p_{i−1})(X_i) /
    ((1 − Σ p_{i−1}) q(X_i))."""
    out = np.empty(n, dtype=np.int64)
    for j in range(n):
        if method == "pfr":
            T_ = np.cumsum(rng.exponential(size=400))
            X = rng.choice(p.size, size=400, p=q)
            out[j] = int(np.argmin(T_ * q[X] / p[X])) + 1
        else:
            acc, i = np.zeros_like(p), 0
            while True:
                i += 1
                x = rng.choice(p.size, p=q)
                rem = 1.0 - acc.sum()
                step = np.minimum(p - acc, rem * q)
                if rng.random() * rem * q[x] < step[x]:
                    out[j] = i
                    break
                acc = acc + step
    return out


@pytest.mark.parametrize("method", ["pfr", "grs"])
def test_list_index_laws_against_simulation(method):
    """Chi-square of 20,000 simulated list indices (cells 1..5 and > 5) against the exact law,
    level 1e-3; and the identities: the law sums to 1, GRS accepts its first draw w.p. Σ min(p, q),
    and p = q gives K = 1 always."""
    from scipy import stats
    p, q = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
    law = (cf.pfr_list_index_law if method == "pfr" else cf.grs_list_index_law)(p, q)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    if method == "grs":
        assert law[0] == pytest.approx(overlap(p, q), abs=1e-15)
        assert law[:3] == pytest.approx([0.6, 0.08, 0.064], abs=1e-12)  # hand-worked: s = 1, 1.4, ...
    K = _simulate_list_index(p, q, 20_000, np.random.default_rng(7), method)
    cells = np.append(law[:5], 1.0 - law[:5].sum())
    counts = np.append(np.bincount(np.minimum(K, 6) - 1, minlength=6)[:5], (K > 5).sum())
    assert stats.chisquare(counts, cells * K.size).pvalue > 1e-3
    same = (cf.pfr_list_index_law if method == "pfr" else cf.grs_list_index_law)(p, p)
    assert same[0] == pytest.approx(1.0) and same.size == 1


def test_list_index_laws_refuse_uncovered_support_and_stop_on_rounding():
    with pytest.raises(ValueError, match="supp p ⊆ supp q"):
        cf.pfr_list_index_law([0.5, 0.5], [1.0, 0.0])
    with pytest.raises(ValueError, match="n_max"):
        cf.pfr_list_index_law([0.5, 0.5], [0.01, 0.99], n_max=10)
    # p/q = 9800 at token 0: the geometric tail is 3·10^5 steps long; the recursion stops where
    # adding the remaining mass to s is lost to rounding, with mass ≥ 1 − 1e-11 accounted for
    law = cf.grs_list_index_law([0.98, 0.01, 0.01], [1e-4, 0.5, 0.4999])
    assert 2e5 < law.size < 4e5 and law.sum() > 1 - 1e-11


def test_list_index_entropy_is_at_least_kl_where_the_distinct_index_is_not():
    """eq. 6 split by index: on random_pair(V=2, order 0, seed 0) the methods' own index (over
    distinct tokens, ≤ 1 bit on V = 2) falls below D_KL = 1.061 bits, the list indices do not."""
    pair = random_pair(2, 0, seed=0)
    p, q = pair.target.rows[0], pair.draft.rows[0]
    D = float(cf.kl_lower_bound(p, q))
    assert D == pytest.approx(1.0607, abs=1e-4)
    for rule in (R.GSD, R.ERSD):
        assert float(entropy(ex.index_law(p, q, rule).sum(axis=1), 2.0)) < D
    for law in (cf.pfr_list_index_law(p, q), cf.grs_list_index_law(p, q)):
        assert float(entropy(law, 2.0)) > D


def test_broken_bound_twins():
    p, q = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
    assert cf.harmonic_mean_bound(p, q) == pytest.approx(2 * cf.poisson_matching_bound(p, q))
    assert cf.one_minus_l1(p, q) == pytest.approx(1 - 2 * (1 - overlap(p, q)))
    assert cf.pfr_upper_bound_no_constant(1.0) == pytest.approx(2.0)
    assert cf.kl_lower_bound_doubled(p, q) == pytest.approx(2 * cf.kl_lower_bound(p, q))
