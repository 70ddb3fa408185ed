"""Monte Carlo kernels of the multi-draft family agree with the exact engine; controls differ."""
from __future__ import annotations

import numba
import numpy as np
import pytest
from scipy import stats

from sims import instances as inst
from sims.claims import multidraft as claims  # noqa: F401  (registration must succeed)
from spectheory.closed_forms import multidraft as cf
from spectheory.exact import multidraft as ex
from spectheory.montecarlo import multidraft as mc
from spectheory.rules import multidraft as R

N = 120_000
ALPHA = 1e-4


def _chi2_p(counts, probs):
    keep = probs > 0
    assert counts[~keep].sum() == 0
    return stats.chisquare(counts[keep], probs[keep] * counts.sum()).pvalue


@pytest.mark.parametrize("rule,K", [(R.SPECTR_GBV, 2), (R.GBV, 1), (R.KSEQ, 3), (R.BROKEN_NO_MODIFY, 2)])
def test_first_tokens_match_exact_law(rule, K):
    pair = inst.get("markov1-V3-mix0.4")
    res = mc.simulate(pair, 2, K, N, 3, rule=rule, seed=7)
    exact = ex.first_tokens_distribution(pair, 2, K, 3, rule)
    assert _chi2_p(mc.sequence_counts(res.tokens, 3), exact) > ALPHA


def test_tau_and_accepted_block_match_exact():
    pair = inst.get("iid-V4-random")
    tree = cf.block_tree(pair, 2, 0)
    res = mc.simulate(pair, 2, 3, N, 1, seed=3)
    law = ex.spectr_gbv_accept_law(tree, 3)
    keys = sorted(law)
    probs = np.array([law[k] for k in keys])
    idx = {k: i for i, k in enumerate(keys)}
    counts = np.bincount([idx[(int(t), int(c))] for t, c in zip(res.tau, res.tcode)], minlength=len(keys))
    assert _chi2_p(counts, probs) > ALPHA


def test_mc_sees_the_lossless_failure():
    """The kernel reproduces the exact engine's finding (Alg. 1 is lossy at K = 3)."""
    pair = inst.get("markov1-V3-mix0.4")
    res = mc.simulate(pair, 1, 3, N, 2, seed=5)
    assert _chi2_p(mc.sequence_counts(res.tokens, 3), pair.target.sequence_probs(2)) < 1e-12


def test_thread_count_does_not_change_results():
    pair = inst.get("markov1-V3-mix0.4")
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a = mc.simulate(pair, 2, 2, 5000, 3, seed=11).tokens
        numba.set_num_threads(max(1, numba.config.NUMBA_NUM_THREADS))
        b = mc.simulate(pair, 2, 2, 5000, 3, seed=11).tokens
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(a, b)


def test_simulate_rejects_bad_arguments():
    pair = inst.get("markov1-V3-mix0.4")
    with pytest.raises(ValueError):
        mc.simulate(pair, 0, 2, 10)
    with pytest.raises(ValueError):
        mc.simulate(pair, 2, 0, 10)
    with pytest.raises(TypeError):
        mc.simulate("pair", 2, 2, 10)
    with pytest.raises(ValueError):
        mc.simulate(inst.get("markov1-V50-weak"), 4, 2, 10)  # block tree too large


@pytest.mark.parametrize("rule,K,g", [(R.KSEQ, 3, 3), (R.SPECTR_GBV, 3, 3)])
def test_tau_law_matches_exact(rule, K, g):
    """Catches a wrong number of surviving drafts (K-SEQ) that losslessness alone cannot see."""
    pair = inst.get("markov1-V3-mix0.4")
    res = mc.simulate(pair, g, K, N, 1, rule=rule, seed=13)
    exact = ex.tau_distribution(cf.block_tree(pair, g, 0), K, rule)
    assert _chi2_p(np.bincount(res.tau, minlength=g + 1), exact) > ALPHA
