"""Numba kernels of Kobus & Gündüz against the exact engines (the ersd family's claims; exact and MC must agree).

Each comparison is a stated test at level 1e-3 (fixed seeds), with the broken twin rejected by
the same test. Sample sizes are chosen so a deviation of 0.01 in a mean of tokens per iteration
(or Cohen's w = 0.05) is detected with power ≥ 0.9."""
from __future__ import annotations

import numba
import numpy as np
import pytest
from scipy import stats

from spectheory import trees as T
from spectheory.exact import ersd as ex
from spectheory.montecarlo import ersd as mc
from spectheory.pairs import perturbed_pair
from spectheory.rules import ersd as R

ALPHA = 1e-3
PAIR = perturbed_pair(3, 1, how="mix", strength=0.5, seed=3)
TREE = T.Tree(((1,), (2,), (1, 1), (1, 2), (2, 1), (1, 1, 1)))


def _z(mean, claimed, se):
    return 2 * stats.norm.sf(abs(mean - claimed) / se)


@pytest.mark.parametrize("rule", [R.GSD, R.ERSD, R.BROKEN_ERSD_INDEPENDENT, R.BROKEN_GSD_Q_NOT_UPDATED,
                                  R.BROKEN_ERSD_RESAMPLE])
def test_tree_tokens_match_exact(rule):
    """z-test, n = 200,000 iterations restarted from state 1 (se ≈ 0.002: detects 0.01 with power > 0.99).
    The broken rules too: a control must run in the kernel exactly as the exact engine defines it."""
    n = 200_000
    g = mc.simulate_tree(PAIR, rule, TREE, n, seed=11, start_state=1)
    exact = ex.expected_generated(PAIR, rule, TREE, 1)
    assert _z(g.mean(), exact, g.std(ddof=1) / np.sqrt(n)) > ALPHA


def test_broken_independent_is_rejected_against_ersd_value():
    n = 200_000
    g = mc.simulate_tree(PAIR, R.BROKEN_ERSD_INDEPENDENT, TREE, n, seed=11, start_state=1)
    assert _z(g.mean(), ex.expected_generated(PAIR, R.ERSD, TREE, 1), g.std(ddof=1) / np.sqrt(n)) < ALPHA


@pytest.mark.parametrize("rule,lossless", [(R.GSD, True), (R.ERSD, True), (R.BROKEN_ERSD_RESAMPLE, False),
                                           (R.BROKEN_GSD_Q_NOT_UPDATED, False)])
def test_first_tokens_chi_square(rule, lossless):
    """Chi-square on 64 cells of the first 3 tokens, n = 400,000 (w = 0.02 detected w.p. > 0.9)."""
    pair = perturbed_pair(4, 1, how="mix", strength=0.7, seed=16)
    tree = T.Tree(((1,), (2,), (3,), (1, 1), (1, 2), (1, 1, 1), (2, 1)))
    toks = mc.sample_first_tokens(pair, rule, tree, 3, 400_000, seed=5)
    idx = toks @ np.array([16, 4, 1])
    counts = np.bincount(idx, minlength=64)
    probs = pair.target.sequence_probs(3)
    ok = probs > 0
    assert counts[~ok].sum() == 0 or not lossless
    pv = stats.chisquare(counts[ok], probs[ok] * counts.sum()).pvalue
    assert (pv > ALPHA) == lossless


@pytest.mark.parametrize("rule", [R.GSD, R.ERSD])
def test_index_stream_fits_stationary_law(rule):
    """Chi-square of the acceptance indices along a text (batch of 8 independent streams,
    thinned to every 5th position to weaken dependence) against the exact stationary law."""
    idx, _ = mc.index_stream(PAIR, rule, 400_000, seed=3)
    x = idx[:, ::5].ravel()
    a = ex.stationary_index_law(PAIR, rule)
    counts = np.bincount(x - 1, minlength=a.size)
    ok = a > 1e-15
    assert counts[~ok].sum() == 0
    assert stats.chisquare(counts[ok], a[ok] / a[ok].sum() * x.size).pvalue > ALPHA


def test_tree_outcomes_from_stream_agree_with_kernel_tree():
    """Iterations started at every position of a text vs direct tree runs from the stationary
    law: both estimate the exact stationary E[generated] (z-tests)."""
    idx, _ = mc.index_stream(PAIR, R.ERSD, 200_000, seed=9, n_streams=4)
    g = mc.tree_outcomes_from_stream(idx, TREE).ravel()
    exact = ex.expected_generated(PAIR, R.ERSD, TREE, ex.stationary_start(PAIR))
    # overlapping windows are dependent: batch means over 400 blocks
    b = g[: g.size // 400 * 400].reshape(400, -1).mean(1)
    assert _z(b.mean(), exact, b.std(ddof=1) / np.sqrt(b.size)) > ALPHA


def test_tree_outcomes_from_stream_hand_computed():
    """Issue 21 item 5: the alignment itself, on hand-computed streams. Vertex (i_1..i_d) is
    accepted at start t iff idx[t..t+d−1] = (i_1..i_d); outcome = 1 + accepted vertices."""
    tree = T.Tree(((1,), (2,), (1, 1), (1, 2), (2, 1)))
    idx = np.array([[3, 1, 2, 1, 1, 3, 1],
                    [1, 1, 1, 2, 3, 2, 2]])
    # row 0: t0 3 → 1; t1 (1,2) → 3; t2 (2,1) → 3; t3 (1,1) → 3; t4 1 then 3 → 2
    # row 1: t0 (1,1) → 3; t1 (1,1) → 3; t2 (1,2) → 3; t3 2 then 3 → 2; t4 3 → 1
    np.testing.assert_array_equal(mc.tree_outcomes_from_stream(idx, tree), [[1, 3, 3, 3, 2], [3, 3, 3, 2, 1]])
    # a 3-chain: depth 3, so 4 starts: t0 3 → 1; t1 1, 2 → 2; t2 2 → 1; t3 1, 1, 3 → 3
    np.testing.assert_array_equal(mc.tree_outcomes_from_stream(idx[:1], T.sequence_tree(3)), [[1, 2, 1, 3]])
    # the batch tree reads one position per start: outcome 2 iff idx[t] ≤ 2
    np.testing.assert_array_equal(mc.tree_outcomes_from_stream(idx[:1], T.batch_tree(2)), [[1, 2, 2, 2, 2, 1]])


@pytest.mark.parametrize("rule", [R.GSD, R.ERSD])
def test_tree_outcomes_from_stream_conditional_on_the_start_state(rule):
    """The joint law of (context state at t, outcome of the iteration started at t), which a
    shift of the outcomes along the text changes while keeping their stationary mean: per state s
    the mean outcome over positions in state s against the exact E[generated] from s. Positions
    thinned to every 8th (windows of depth 3 do not overlap; given its start state an iteration
    is independent of the past), z-test per state at level 1e-3/3; with 200,000 positions the se
    is ≤ 0.02 while a one-position shift moves state 1's mean by 0.25 (to (P E)[1])."""
    idx, sts = mc.index_stream(PAIR, rule, 200_000, seed=9, n_streams=4)
    g = mc.tree_outcomes_from_stream(idx, TREE)
    states = sts[:, :g.shape[1]]
    for s in range(PAIR.n_states):
        x = g[:, ::8][states[:, ::8] == s]
        exact = ex.expected_generated(PAIR, rule, TREE, s)
        assert _z(x.mean(), exact, x.std(ddof=1) / np.sqrt(x.size)) > ALPHA / PAIR.n_states, s


def test_reproducible_and_thread_count_independent():
    a = mc.simulate_tree(PAIR, R.GSD, TREE, 5000, seed=7)
    b = mc.simulate_tree(PAIR, R.GSD, TREE, 5000, seed=7)
    np.testing.assert_array_equal(a, b)
    prev = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        c = mc.simulate_tree(PAIR, R.GSD, TREE, 5000, seed=7)
    finally:
        numba.set_num_threads(prev)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, mc.simulate_tree(PAIR, R.GSD, TREE, 5000, seed=8))


def test_wrapper_checks():
    with pytest.raises(ValueError):
        mc.simulate_tree(PAIR, R.GSD, TREE, 10, start_state=9)
    with pytest.raises(TypeError):
        mc.simulate_tree(PAIR, R.GSD, [(1,)], 10)
    with pytest.raises(ValueError):
        mc.index_stream(PAIR, R.GSD, 10, m=0)
    with pytest.raises(TypeError, match="GSDRule or an ERSDRule"):
        mc.simulate_tree(PAIR, "gsd", TREE, 10)
