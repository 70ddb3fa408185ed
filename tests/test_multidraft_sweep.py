"""Slow sweep over random pairs: GBV and K-SEQ lossless, every algorithm ≤ the LP optimum,
SpecTr-GBV ≤ Lemma 5.1's bound, GBV = the one-draft optimum."""
from __future__ import annotations

import pytest

from spectheory.closed_forms import multidraft as cf
from spectheory.closed_forms import optimum as opt
from spectheory.divergences import total_variation
from spectheory.exact import multidraft as ex
from spectheory.pairs import random_pair
from spectheory.rules import multidraft as R


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30))
def test_random_pairs(seed):
    for V, order in ((2, 0), (2, 1), (3, 1)):
        pair = random_pair(V, order, 0.6, seed=seed)
        ref = pair.target.sequence_probs(3)
        for g in (1, 2):
            assert total_variation(ex.first_tokens_distribution(pair, g, 1, 3, R.GBV), ref) < 1e-12
            assert total_variation(ex.first_tokens_distribution(pair, g, 3, 3, R.KSEQ), ref) < 1e-12
            tree = cf.block_tree(pair, g, 0)
            assert opt.lp_optimum(tree, 1) == pytest.approx(cf.gbv_optimum(tree), abs=1e-8)
            for K in (2, 3):
                lp = opt.lp_optimum(tree, K)
                assert ex.expected_tau(tree, K, R.SPECTR_GBV) <= cf.lemma51_bound(tree, K) + 1e-12
                assert ex.expected_tau(tree, K, R.KSEQ) <= lp + 1e-8
                assert cf.lemma51_bound(tree, K) <= lp + 1e-8
