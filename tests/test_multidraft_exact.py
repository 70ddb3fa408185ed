"""Exact engine and closed forms of the multi-draft family (Lin et al. 2026; K-SEQ of Sun et al. 2023)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from spectheory import instances as inst
from spectheory.closed_forms import multidraft as cf
from spectheory.closed_forms import optimum as opt
from spectheory.divergences import total_variation
from spectheory.exact import multidraft as ex
from spectheory.pairs import pair_from_tables, random_pair
from spectheory.rules import multidraft as R


def test_hand_worked_gamma1_k2():
    """p = q = (0.2, 0.3, 0.5), K = 2, γ = 1: h(x) = p/(1 − (1 − p)^2); Alg. 1 accepts the
    first draft w.p. h(x1); if rejected, a different second draft w.p. h(x2)."""
    p = np.array([0.2, 0.3, 0.5])
    h = p / (1 - (1 - p) ** 2)
    tree = cf.iid_tree(p, p, 1)
    np.testing.assert_allclose(cf.h_tables(tree, 2)[1], h)
    acc = sum(p[a] * (h[a] + (1 - h[a]) * sum(p[b] * h[b] for b in range(3) if b != a)) for a in range(3))
    assert ex.expected_tau(tree, 2) == pytest.approx(acc, abs=1e-14)
    assert cf.lemma51_bound(tree, 2) == pytest.approx(1.0)  # the bound is 1; Alg. 1 falls short
    assert acc < 1.0 - 0.2


def test_outcomes_are_a_distribution():
    for name in ("iid-V4-random", "markov1-V3-mix0.4", "iid-V3-disjoint", "iid-V1"):
        pair = inst.get(name)
        for rule in (R.SPECTR_GBV, R.KSEQ, R.GBV_SEC33, R.BROKEN_IGNORE_H):
            for g, K in ((1, 2), (2, 3)):
                tot = sum(o.prob for o in ex.iteration_outcomes(cf.block_tree(pair, g, 0), K, rule))
                assert tot == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("name", ["markov1-V3-mix0.4", "iid-V4-random", "markov1-V4-topk2", "iid-V3-equal"])
def test_gbv_and_kseq_lossless_over_iterations(name):
    pair = inst.get(name)
    ref = pair.target.sequence_probs(3)
    for g in (1, 2, 3):
        assert total_variation(ex.first_tokens_distribution(pair, g, 1, 3, R.GBV), ref) < 1e-12
    for K in (2, 3):
        assert total_variation(ex.first_tokens_distribution(pair, 2, K, 3, R.KSEQ), ref) < 1e-12


def test_no_modification_breaks_gbv():
    pair = inst.get("markov1-V3-mix0.4")
    ref = pair.target.sequence_probs(3)
    assert total_variation(ex.first_tokens_distribution(pair, 3, 1, 3, R.BROKEN_NO_MODIFY), ref) > 1e-3


def test_spectr_gbv_k1_is_gbv_and_attains_bound():
    for seed in range(3):
        pair = random_pair(3, 1, 1.0, seed=seed)
        for g in (1, 2, 3):
            tree = cf.block_tree(pair, g, 0)
            assert ex.expected_tau(tree, 1) == pytest.approx(cf.gbv_optimum(tree), abs=1e-12)
            assert cf.lemma51_bound(tree, 1) == pytest.approx(cf.gbv_optimum(tree), abs=1e-12)
            assert ex.expected_tau(tree, 1) >= cf.sd_expected_tau(tree) - 1e-12


def test_spectr_gbv_as_printed_is_lossy_for_k2():
    """The finding: Alg. 1 as printed is not lossless for K ≥ 2 (smallest case V = 2, γ = 1)."""
    pair = random_pair(2, 0, 1.0, seed=0)
    d = ex.first_tokens_distribution(pair, 1, 2, 3, R.SPECTR_GBV)
    assert total_variation(d, pair.target.sequence_probs(3)) > 1e-3


def test_h_in_unit_interval():
    for seed in range(5):
        pair = random_pair(3, 1, 0.5, seed=seed)
        tree = cf.block_tree(pair, 3, 0)
        for K in (1, 2, 5):
            for hi in cf.h_tables(tree, K)[1:]:
                assert np.all((hi >= 0) & (hi <= 1))


def test_kseq_rho_edges():
    p = np.array([0.5, 0.5, 0.0])
    assert cf.kseq_rho(p, p, 3) == 1.0                       # p = q
    assert cf.kseq_rho(p, np.array([0, 0, 1.0]), 3) == 1.0   # disjoint supports
    assert cf.kseq_rho(p, np.array([0.3, 0.3, 0.4]), 1) == 1.0
    rng = np.random.default_rng(0)
    for _ in range(50):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        for K in (2, 3, 8):
            r = cf.kseq_rho(p, q, K)
            b = cf.kseq_beta(p, q, r)
            assert 1.0 <= r <= K
            assert 1 - (1 - b) ** K == pytest.approx(r * b, abs=1e-12)
    with pytest.raises(ValueError):
        cf.kseq_rho(p, q, 0)


def test_lp_matches_gamma1_closed_forms():
    rng = np.random.default_rng(1)
    for _ in range(10):
        V = int(rng.integers(2, 6))
        p, q = rng.dirichlet(np.ones(V) * 0.7), rng.dirichlet(np.ones(V) * 0.7)
        for K in (1, 2, 3):
            lp = opt.lp_optimum(cf.iid_tree(p, q, 1), K)
            assert lp == pytest.approx(opt.gamma1_optimum(p, q, K), abs=1e-8)
            assert opt.gamma1_optimum_fast(p, q, K) == pytest.approx(opt.gamma1_optimum(p, q, K), abs=1e-12)


def test_lp_dominates_algorithms_and_k1_optimum_is_gbv():
    pair = inst.get("markov1-V3-mix0.4")
    tree = cf.block_tree(pair, 2, 0)
    assert opt.lp_optimum(tree, 1) == pytest.approx(cf.gbv_optimum(tree), abs=1e-9)
    lp = opt.lp_optimum(tree, 2)
    for rule in (R.SPECTR_GBV, R.KSEQ):
        assert ex.expected_tau(tree, 2, rule) <= lp + 1e-9
    assert lp >= cf.lemma51_bound(tree, 2) - 1e-9


def test_one_iteration_tv_zero_for_gbv():
    tree = cf.block_tree(inst.get("markov1-V4-weak"), 3, 0)
    assert ex.one_iteration_tv(tree, 1, R.GBV)[0] < 1e-12


def test_rule_validation():
    with pytest.raises(ValueError):
        R.MultiDraftRule("x", algorithm="nope")
    with pytest.raises(ValueError):
        cf.block_tree(inst.get("iid-V4-random"), 0)


def test_cic_search_returns_feasible_couplings_below_lp():
    pair = random_pair(2, 1, 0.7, seed=12)
    tree = cf.block_tree(pair, 2, 0)
    val, arg = opt.cic_search(tree, restarts=3, iters=10, seed=1)
    r1, r2 = arg["r1"], arg["r2"]
    p = tree.P[2][arg["target_blocks"]]
    q = tree.Q[2][arg["draft_blocks"]]
    joint = np.einsum("y,ay,by->ab", p, r1, r2)
    np.testing.assert_allclose(joint, np.outer(q, q), atol=1e-9)  # drafts i.i.d. q
    np.testing.assert_allclose(r1.sum(axis=0), 1, atol=1e-9)
    assert val <= opt.lp_optimum(tree, 2) + 1e-9
    assert val <= cf.lemma51_bound(tree, 2) + 1e-9


def _brute_force_alg1(tree, K):
    """Alg. 1 read literally: every ordered K-tuple of drafts, every accept/reject branch of
    every η test, H as a list of token tuples — no dynamic programming, no pruning."""
    V, g = tree.V, tree.gamma
    h = cf.h_tables(tree, K)
    law: dict = {}

    def block(code, i):
        return tuple(_digits(code, g)[:i])

    def run(drafts, k, tau, t, H, w):
        if k == K or tau == g:
            law[(tau, t)] = law.get((tau, t), 0.0) + w
            return

        def inner(i, tau, t, H, w):
            if i > g:
                run(drafts, k + 1, tau, t, H, w)
                return
            b = block(drafts[k], i)
            code = 0
            for x in b:
                code = code * V + x
            if b in H:
                inner(i + 1, tau, t, H, w)
                return
            hi = float(h[i][code])
            if hi > 0:
                if i == g:
                    law[(g, b)] = law.get((g, b), 0.0) + w * hi  # line 13: break
                else:
                    inner(i + 1, i, b, H, w * hi)
            if hi < 1:
                inner(i + 1, tau, t, H + [b], w * (1 - hi))
        inner(tau + 1, tau, t, H, w)

    for drafts in itertools.product(range(V ** g), repeat=K):
        w = float(np.prod([tree.Q[g][c] for c in drafts]))
        if w > 0:
            run(drafts, 0, 0, (), [], w)
    return law


def _digits(code, g, V=3):
    return [(code // V ** (g - 1 - j)) % V for j in range(g)]


def test_dp_matches_literal_alg1():
    for name, K in (("markov1-V3-mix0.4", 2), ("iid-V3-equal", 3), ("markov2-V3-temp2", 2)):
        tree = cf.block_tree(inst.get(name), 2, 0)
        lit = _brute_force_alg1(tree, K)
        dp = ex.spectr_gbv_accept_law(tree, K)
        got = {}
        for (tau, code), w in dp.items():
            key = (tau, tuple(_digits(code, tau)) if tau else ())
            got[key] = got.get(key, 0.0) + w
        keys = set(lit) | set(got)
        assert max(abs(lit.get(k, 0) - got.get(k, 0)) for k in keys) < 1e-13


def test_gamma1_optimum_fast_with_zero_masses():
    """The O(V log V) γ = 1 optimum against the exhaustive subset minimum and the LP when p or q
    puts zero mass on some tokens (a token with p = 0 < q is the cheapest to put in H; one
    with q = 0 < p is never worth it) — the Dirichlet draws above have no zeros."""
    rng = np.random.default_rng(7)
    cases = [(np.array([0.0, 0.5, 0.5]), np.array([0.6, 0.2, 0.2])),
             (np.array([0.7, 0.3, 0.0]), np.array([0.0, 0.4, 0.6]))]
    for _ in range(6):
        V = int(rng.integers(3, 6))
        p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
        p[rng.integers(V)] = 0.0
        q[rng.integers(V)] = 0.0
        cases.append((p / p.sum(), q / q.sum()))
    for p, q in cases:
        for K in (1, 2, 3):
            want = opt.gamma1_optimum(p, q, K)
            assert opt.gamma1_optimum_fast(p, q, K) == pytest.approx(want, abs=1e-12)
            assert opt.lp_optimum(cf.iid_tree(p, q, 1), K) == pytest.approx(want, abs=1e-8)


def test_sd_expected_tau_equals_exact_sd_engine():
    """Token-level SD's E[τ] from the block tree against the SD exact engine (E[tokens] = E[τ] + 1,
    the correction or bonus) for every γ ≤ 3 and start state, and the i.i.d. closed form
    Σ_{i≤γ} α^i."""
    from spectheory.exact import sd as exact_sd
    pair = inst.get("markov1-V3-mix0.4")
    for g in (1, 2, 3):
        for s in range(pair.n_states):
            want = exact_sd.expected_tokens(pair, g, start_state=s) - 1.0
            assert cf.sd_expected_tau(cf.block_tree(pair, g, s)) == pytest.approx(want, abs=1e-12)
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    a = np.minimum(p, q).sum()
    for g in (1, 2, 4):
        assert cf.sd_expected_tau(cf.iid_tree(p, q, g)) == pytest.approx(sum(a ** i for i in range(1, g + 1)), abs=1e-14)


def test_bound_limit_is_the_mass_of_q_support():
    """lim_{K→∞} Bound(K) = Σ_i Σ_{x^i: q(x^i) > 0} p(x^i): below γ when q misses part of p's
    support, reached by Lemma 5.1's bound at large K, and consistent with bound_limit_gap."""
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4, 0.0])
    tree = cf.iid_tree(p, q, 2)
    want = 0.8 + 0.8 ** 2
    assert cf.bound_limit(tree) == pytest.approx(want, abs=1e-14)
    assert cf.lemma51_bound(tree, 400) == pytest.approx(want, abs=1e-9)
    assert cf.bound_limit_gap(tree, 3) == pytest.approx(cf.bound_limit(tree) - cf.lemma51_bound(tree, 3), abs=1e-14)
    full = cf.iid_tree(p, np.array([0.2, 0.3, 0.5]), 2)
    assert cf.bound_limit(full) == pytest.approx(2.0, abs=1e-14)


def test_cic_optimum_v2_gamma1_has_a_closed_form():
    """V = 2, γ = 1, K = 2: the constraint Σ_y p(y)(r1(0|y) − q0)(r2(0|y) − q0) = 0 with the marginals
    reduces to (a − q0)(u − q0)·p0(1 + p0/p1) = 0, so one draft is independent of Y, and the other
    takes the maximal coupling: the CIC optimum is Σ_y p(y)[1 − (1 − m(y))(1 − q(y))], below Lemma
    5.1's Σ_y p(y)[1 − (1 − m(y))²] by Σ_y p(y)(1 − m(y))(m(y) − q(y)) ≥ 0."""
    for seed in range(6):
        pair = random_pair(2, 0, 0.7, seed=seed)
        p, q = pair.target.conditional(0), pair.draft.conditional(0)
        m = np.minimum(1.0, q / p)
        tree = cf.block_tree(pair, 1, 0)
        val, arg = opt.cic_optimum(tree)
        assert val == pytest.approx(float((p * (1 - (1 - m) * (1 - q))).sum()), abs=1e-9)
        assert cf.lemma51_bound(tree, 2) - val == pytest.approx(float((p * (1 - m) * (m - q)).sum()), abs=1e-9)
        assert arg["evaluations"] == 1  # nothing left to search: one direction


@pytest.mark.parametrize("V, gamma, order, seed", [(3, 1, 0, 1), (2, 2, 1, 12), (2, 2, 0, 3)])
def test_cic_optimum_is_a_feasible_coupling_between_heuristic_and_lp(V, gamma, order, seed):
    tree = cf.block_tree(random_pair(V, order, 0.7, seed=seed), gamma, 0)
    val, arg = opt.cic_optimum(tree, grid=8, refine=1, maxfev=40)
    recomputed, viol = opt.cic_value(tree, arg["r1"], arg["r2"])
    assert viol < 1e-7 and recomputed == pytest.approx(val, abs=1e-9)
    assert val <= opt.lp_optimum(tree, 2) + 1e-9
    assert val >= opt.cic_search(tree, restarts=3, iters=10, seed=0)[0] - 1e-3
    assert val <= cf.lemma51_bound(tree, 2) + 1e-9  # Lemma 5.1 on these pairs


def test_cic_optimum_edge_cases_and_limits():
    tree = cf.iid_tree(np.array([0.2, 0.3, 0.5]), np.array([0.2, 0.3, 0.5]), 1)  # p = q: X1 = Y, X2 ⊥ Y
    assert opt.cic_optimum(tree)[0] == pytest.approx(1.0, abs=1e-9)
    with pytest.raises(ValueError, match="≤ 4 blocks"):
        opt.cic_optimum(cf.block_tree(random_pair(3, 0, 1.0, seed=0), 2, 0))
