"""Markov sources and pair constructors."""
import numpy as np
import pytest

from spectheory.distributions import DistributionError
from spectheory.markov import MarkovPair, MarkovSource, lift_order, stationary_distribution
from spectheory.pairs import (aligned_pair, dirichlet_source, ngram_pair, ngram_source, pair_from_tables,
                              perturbed_pair, quantize_logits, temperature, top_k)


def test_state_encoding_and_sequence_probs():
    src = dirichlet_source(3, 2, seed=0)
    assert src.n_states == 9
    probs = src.sequence_probs(4, start_state=5)
    assert probs.shape == (81,)
    assert probs.sum() == pytest.approx(1.0, abs=1e-14)
    # p(x1, x2) = p(x1 | s) p(x2 | next(s, x1)); state 5 = context (1, 2)
    s = src.state_of_context([1, 2])
    assert s == 5
    two = src.sequence_probs(2, s)
    x1, x2 = 2, 1
    assert two[x1 * 3 + x2] == pytest.approx(src.conditional(s)[x1] * src.conditional((s * 3 + x1) % 9)[x2])


def test_stationary_matches_long_run_frequencies():
    src = dirichlet_source(3, 1, seed=1)
    pi = src.stationary()
    np.testing.assert_allclose(pi @ src.transition_matrix(), pi, atol=1e-14)
    toks = src.sample(20000, seed=2)
    freq = np.bincount(toks, minlength=3) / toks.size
    np.testing.assert_allclose(freq, pi, atol=0.02)  # ~5 sd for n=20000 with autocorrelation


def test_stationary_of_a_reducible_chain_is_seen_from_start():
    T = np.array([[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(stationary_distribution(T, start=1), [0.0, 1.0])


def test_lift_order_preserves_sequence_law():
    src = dirichlet_source(3, 1, seed=3)
    lifted = lift_order(src, 2)
    assert lifted.n_states == 9
    # context (0, 2) in the lifted source = state 2 of the original
    np.testing.assert_allclose(lifted.sequence_probs(3, 2), src.sequence_probs(3, 2))


def test_shared_rows_for_large_vocabularies():
    src = dirichlet_source(1000, 1, seed=0, n_rows=8)
    assert src.rows.shape == (8, 1000) and src.n_states == 1000
    np.testing.assert_array_equal(src.conditional(9), src.rows[1])


def test_perturbations_are_valid_and_do_what_they_say():
    p = dirichlet_source(6, 1, seed=4)
    for q in (temperature(p, 2.0), top_k(p, 2), quantize_logits(p, 0.5)):
        np.testing.assert_allclose(q.rows.sum(axis=1), 1.0)
    assert np.all((top_k(p, 2).rows > 0).sum(axis=1) == 2)
    # strong alignment ⇒ higher acceptance than weak
    strong = aligned_pair(20, 1, "strong", seed=5).acceptance_by_state().mean()
    weak = aligned_pair(20, 1, "weak", seed=5).acceptance_by_state().mean()
    assert strong > 0.85 > weak
    assert perturbed_pair(4, 1, how="temperature", strength=1.0, seed=0).acceptance_by_state() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown perturbation"):
        perturbed_pair(4, 1, how="nope")


def test_ngram_estimate_recovers_the_source():
    src = dirichlet_source(3, 1, concentration=2.0, seed=6)
    est = ngram_source(src.sample(50000, seed=7), 3, 1, smoothing=0.0)
    np.testing.assert_allclose(est.table, src.table, atol=0.03)
    pair = ngram_pair(src, 500, draft_order=0, seed=8)
    assert pair.draft.order == 1 and np.allclose(pair.draft.table, pair.draft.table[0])
    with pytest.raises(DistributionError, match="token ids"):
        ngram_source([0, 1, 5], 3, 1)


def test_pair_validation():
    with pytest.raises(DistributionError, match="mismatched vocabularies"):
        MarkovPair(dirichlet_source(3, 0, seed=0), dirichlet_source(4, 0, seed=0))
    with pytest.raises(ValueError, match="lift"):
        MarkovPair(dirichlet_source(3, 0, seed=0), dirichlet_source(3, 1, seed=0))
    with pytest.raises(DistributionError, match="does not sum to 1"):
        pair_from_tables([0.5, 0.6], [0.5, 0.5])
    with pytest.raises(ValueError, match="has 9 states"):
        MarkovSource(np.full((3, 3), 1 / 3), 2)


def test_entropy_rate():
    iid = dirichlet_source(4, 0, seed=9)
    from spectheory.divergences import entropy
    assert iid.entropy_rate() == pytest.approx(float(entropy(iid.rows[0])))
    uniform = MarkovSource(np.full((3, 3), 1 / 3), 1)
    assert uniform.entropy_rate(base=3) == pytest.approx(1.0)


def test_stationary_of_a_slowly_absorbed_reducible_chain_is_exact():
    """State 0 leaks with probability 1e-7 per step into two closed classes ({1, 2} w.p. 0.3,
    the periodic pair {3, 4} w.p. 0.7): seen from 0 the long-run law is 0.3·π_{12} + 0.7·π_{34}
    exactly. (A capped power iteration stops after ~2^20 steps with most mass still in 0.)"""
    eps = 1e-7
    T = np.array([[1 - eps, 0.3 * eps, 0.0, 0.7 * eps, 0.0],
                  [0.0, 0.5, 0.5, 0.0, 0.0],
                  [0.0, 0.9, 0.1, 0.0, 0.0],
                  [0.0, 0.0, 0.0, 0.0, 1.0],
                  [0.0, 0.0, 0.0, 1.0, 0.0]])
    want = np.array([0.0, 0.3 * 0.9 / 1.4, 0.3 * 0.5 / 1.4, 0.35, 0.35])
    np.testing.assert_allclose(stationary_distribution(T, start=0), want, atol=1e-12)
    np.testing.assert_allclose(stationary_distribution(T, start=2), [0, 0.9 / 1.4, 0.5 / 1.4, 0, 0], atol=1e-12)
    np.testing.assert_allclose(stationary_distribution(T, start=4), [0, 0, 0, 0.5, 0.5], atol=1e-12)


def test_stationary_of_a_large_reducible_chain_is_exact_and_fast():
    """300 states: 100 transient states leaking (0.1% per step) into two closed classes of
    100. The result is stationary (πT = π to 1e-13), puts no mass on transient states and
    splits between the classes by the absorption probabilities (solved independently here
    as the limit of the transient block's geometric series); it takes well under a second of this
    process's CPU (CPU time, not wall time: another job on the machine does not move it)."""
    import time
    rng = np.random.default_rng(0)
    S = 300
    T = np.zeros((S, S))
    T[:100, :100] = 0.999 * rng.dirichlet(np.ones(100), 100)
    T[:100, 100:200] = 0.0004 * rng.dirichlet(np.ones(100), 100)
    T[:100, 200:] = 0.0006 * rng.dirichlet(np.ones(100), 100)
    T[100:200, 100:200] = rng.dirichlet(np.ones(100), 100)
    T[200:, 200:] = rng.dirichlet(np.ones(100), 100)
    t0 = time.process_time()
    pi = stationary_distribution(T, start=5)
    assert time.process_time() - t0 < 2.0
    np.testing.assert_allclose(pi @ T, pi, atol=1e-13)
    assert pi[:100].max() == 0.0
    h = np.linalg.solve(np.eye(100) - T[:100, :100], T[:100, 100:200].sum(axis=1))
    assert pi[100:200].sum() == pytest.approx(h[5], abs=1e-12)


def test_stationary_of_an_irreducible_chain_is_unique_whatever_the_start():
    T = dirichlet_source(3, 2, seed=4).transition_matrix()
    a, b = stationary_distribution(T, start=0), stationary_distribution(T, start=8)
    np.testing.assert_allclose(a, b, atol=1e-15)
    np.testing.assert_allclose(a @ T, a, atol=1e-14)
    assert a.min() > 0


def test_sequence_law_follows_the_row_map():
    """A source whose table is stored in permuted row order: p(x1, x2 | s) is the product of
    the rows the row map points to (written out by hand), and equals that of the same source
    stored in natural order."""
    natural = dirichlet_source(3, 1, seed=12)
    perm = np.array([2, 0, 1])                 # natural row r is stored at perm[r]
    rows = np.empty_like(natural.rows)
    rows[perm] = natural.rows
    shuffled = MarkovSource(rows, 1, perm)
    for s in range(3):
        two = shuffled.sequence_probs(2, s)
        for x1 in range(3):
            for x2 in range(3):
                want = rows[perm[s], x1] * rows[perm[x1], x2]   # next state after x1 is x1 (order 1)
                assert two[3 * x1 + x2] == pytest.approx(want, abs=1e-15)
        np.testing.assert_allclose(two, natural.sequence_probs(2, s), atol=1e-15)


def test_temperature_and_quantisation_do_what_they_say():
    """temperature(T): q ∝ p^(1/T) row-wise; quantize(step): within a row, log q differs
    between tokens by multiples of step."""
    p = dirichlet_source(5, 1, seed=13)
    for T in (0.5, 2.0, 3.0):
        want = p.rows ** (1 / T)
        np.testing.assert_allclose(temperature(p, T).rows, want / want.sum(axis=1, keepdims=True), rtol=1e-12)
    step = 0.7
    logq = np.log(quantize_logits(p, step).rows)
    k = (logq - logq[:, :1]) / step
    np.testing.assert_allclose(k, np.round(k), atol=1e-9)
    assert np.abs(np.log(p.rows) - logq - (np.log(p.rows) - logq).mean(axis=1, keepdims=True)).max() <= step


def test_mix_with_noise_weights():
    """q = (1 − ε) p + ε u: with ε = 0 the draft is p, and q − (1 − ε) p is ε times a distribution."""
    p = dirichlet_source(4, 1, seed=14)
    from spectheory.pairs import mix_with_noise
    np.testing.assert_allclose(mix_with_noise(p, 0.0, seed=1).rows, p.rows, atol=1e-15)
    u = (mix_with_noise(p, 0.3, seed=1).rows - 0.7 * p.rows) / 0.3
    assert u.min() >= -1e-12
    np.testing.assert_allclose(u.sum(axis=1), 1.0, atol=1e-12)
    assert np.abs(u - p.rows).max() > 0.05  # the noise is not p itself


def test_reducible_chain_absorption_is_seen_from_each_transient_start():
    """States 0, 1 transient, 2 and 3 absorbing: 0 → 1 or 2 (½ each), 1 → 3. Hand-computed
    long-run laws: from 0, (0, 0, ½, ½); from 1, (0, 0, 0, 1). Classes {2}, {3} closed."""
    from spectheory.markov import communicating_classes
    T = np.array([[0.0, 0.5, 0.5, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    labels, closed = communicating_classes(T)
    np.testing.assert_array_equal(closed[labels], [False, False, True, True])
    np.testing.assert_allclose(stationary_distribution(T, start=0), [0.0, 0.0, 0.5, 0.5], atol=1e-15)
    np.testing.assert_allclose(stationary_distribution(T, start=1), [0.0, 0.0, 0.0, 1.0], atol=1e-15)


def test_state_of_a_long_context_uses_its_most_recent_tokens():
    src = dirichlet_source(3, 2, seed=0)
    assert src.state_of_context([2, 0, 1]) == 0 * 3 + 1   # last two tokens (0, 1)
    assert src.state_of_context([1, 2, 2, 1]) == 2 * 3 + 1
    assert src.state_of_context([1]) == 1                  # left-padded with 0: (0, 1)


def test_ngram_counts_every_token_after_a_full_context():
    """Stream 0 0 1 0 1, order 1, no smoothing: transitions 0→0, 0→1, 1→0, 0→1 give rows
    (1/3, 2/3) after 0 and (1, 0) after 1."""
    src = ngram_source([0, 0, 1, 0, 1], 2, 1, smoothing=0.0)
    np.testing.assert_allclose(src.rows, [[1 / 3, 2 / 3], [1.0, 0.0]], rtol=1e-15)
