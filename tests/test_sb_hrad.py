"""H-RAD in simulation: labels, the classifier (held-out accuracy against the majority rate and
a shuffled-label control), the policy table it induces, and that an H-RAD pipeline keeps p.

Statistics: label counts per state against the exact label law, Pearson χ² at α = 1e-4
(15,000 decision points); decision frequencies under the feature noise against the
integrated policy table, χ² at α = 1e-4 (20,000 draws per state)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from _sb import M4
from spectheory import hrad
from spectheory.exact import sb as ex
from spectheory.pairs import bimodal_pair
from spectheory.rules import sb as R

WEAK = bimodal_pair(6, 1, hard_fraction=0.6, hard_strength=0.9, seed=2)


def test_label_probabilities_match_sampled_labels():
    data = hrad.sample_dataset(M4, 4, 300, 50, hrad.Features(), seed=1)
    lab = hrad.label_probabilities(M4, 4)
    for s in range(M4.n_states):
        cnt = np.bincount(data.y[data.state == s], minlength=3)
        keep = lab[s] > 0
        assert stats.chisquare(cnt[keep], lab[s, keep] * cnt.sum()).pvalue > 1e-4


def test_labels_degenerate_for_gamma_one():
    assert (hrad.label_probabilities(M4, 1)[:, 2] == 1).all()
    assert (hrad.target_signal(M4, 1) == 1).all()


def test_informative_features_beat_the_majority_rate_and_shuffled_labels_do_not():
    res = hrad.train(WEAK, 4, hrad.Features(sigma=0.05), n_prompts=300, seed=3)
    assert res.accuracy > res.majority_rate + 0.05
    assert res.accuracy <= res.bayes_state_accuracy + 0.03      # no context feature beats the state's Bayes rule
    assert res.confusion.sum() == res.n_test and res.confusion.shape == (3, 3)
    sh = hrad.train(WEAK, 4, hrad.Features(sigma=0.05), n_prompts=300, seed=3, shuffle_labels=True)
    assert sh.accuracy < res.accuracy - 0.03
    assert sh.accuracy <= sh.majority_rate + 0.03


def test_uninformative_target_feature_loses_accuracy():
    sharp = hrad.train(WEAK, 4, hrad.Features(sigma=0.02, use_conf=False), n_prompts=300, seed=4)
    blind = hrad.train(WEAK, 4, hrad.Features(sigma=50.0, use_conf=False), n_prompts=300, seed=4)
    assert sharp.accuracy > blind.accuracy + 0.03


def test_policy_table_is_the_decision_law_under_feature_noise():
    feats = hrad.Features(sigma=0.2)
    res = hrad.train(WEAK, 4, feats, n_prompts=200, seed=5)
    rng = np.random.default_rng(6)
    for s in range(WEAK.n_states):
        X = hrad.features_of(WEAK, 4, np.full(20_000, s), feats, rng)
        cnt = np.bincount(res.clf.predict(X), minlength=3)
        pt = res.policy[s]
        keep = pt > 1e-12
        assert cnt[~keep].sum() <= 2
        if keep.sum() > 1:
            assert stats.chisquare(cnt[keep], pt[keep] * cnt[keep].sum() / pt[keep].sum()).pvalue > 1e-4


def test_sigma_zero_policy_is_deterministic_and_rows_sum_to_one():
    res = hrad.train(WEAK, 4, hrad.Features(sigma=0.0), n_prompts=100, seed=7)
    assert np.allclose(res.policy.sum(axis=1), 1) and set(np.unique(res.policy)) <= {0.0, 1.0}


def test_an_hrad_pipeline_keeps_p():
    res = hrad.train(M4, 3, hrad.Features(sigma=0.3), n_prompts=100, seed=8)
    pipe = R.Pipeline(3, c=2.5, k_max=6, eps=0.45, policy_table=res.policy)
    assert ex.first_tokens_tv(M4, R.SPECBRANCH, pipe, 4)[0] < 1e-12


@pytest.mark.parametrize("bad", [dict(sigma=-1.0), dict(use_state=False, use_conf=False, use_target=False)])
def test_bad_features(bad):
    with pytest.raises(ValueError):
        hrad.Features(**bad)
