"""The explicit-distribution SpecTr-GBV verifier agrees with the exact engine; replay on a trace."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from spectheory import instances as inst
from spectheory.closed_forms import multidraft as cf
from spectheory.closed_forms.optimum import gamma1_optimum_fast
from spectheory.distributions import DistributionError
from spectheory.exact import multidraft as ex
from spectheory.verifiers.multidraft import block_h, spectr_gbv_verify
from tests.test_validate import synthetic_trace
from spectheory.validate.capture import LogitTrace
from spectheory.validate.replay_multidraft import replay_multidraft


def _rows(tree, code, g):
    V = tree.V
    p = np.stack([tree.condP[i][code // V ** (g - i)] for i in range(g + 1)])
    q = np.stack([tree.condQ[i][code // V ** (g - i)] for i in range(g)])
    return p, q


def test_verifier_h_matches_tables():
    tree = cf.block_tree(inst.get("markov1-V3-mix0.4"), 2, 0)
    h = cf.h_tables(tree, 3)
    for code in range(9):
        p, q = _rows(tree, code, 2)
        x = np.array([[code // 3, code % 3]])
        hv, _, _ = block_h(p[None], q[None], x, 3)
        assert hv[0, 0] == pytest.approx(h[1][code // 3], abs=1e-14)
        assert hv[0, 1] == pytest.approx(h[2][code], abs=1e-14)


def test_verifier_law_matches_exact_engine():
    tree = cf.block_tree(inst.get("iid-V4-random"), 2, 0)
    K, n = 2, 6000
    rng = np.random.default_rng(0)
    law = ex.spectr_gbv_accept_law(tree, K)
    counts: dict = {}
    for _ in range(n):
        codes = rng.choice(16, size=K, p=tree.Q[2])
        rows = [_rows(tree, c, 2) for c in codes]
        p = np.stack([r[0] for r in rows])
        q = np.stack([r[1] for r in rows])
        x = np.array([[c // 4, c % 4] for c in codes])
        v = spectr_gbv_verify(p, q, x, seed=rng)
        tc = 0
        for t in v.tokens[:v.tau]:
            tc = tc * 4 + t
        counts[(v.tau, tc)] = counts.get((v.tau, tc), 0) + 1
    keys = sorted(law)
    assert set(counts) <= set(keys)
    obs = np.array([counts.get(k, 0) for k in keys])
    exp = np.array([law[k] for k in keys]) * n
    big = exp >= 5
    stat = (((obs - exp) ** 2 / exp)[big]).sum() + (obs[~big].sum() - exp[~big].sum()) ** 2 / max(exp[~big].sum(), 1e-9)
    assert stats.chi2.sf(stat, big.sum()) > 1e-4


def test_verifier_errors():
    p = np.full((2, 3, 3), 1 / 3)
    q = np.full((2, 2, 3), 1 / 3)
    with pytest.raises(DistributionError):
        spectr_gbv_verify(p, q[:, :1], np.zeros((2, 2), dtype=int))
    with pytest.raises(DistributionError):
        spectr_gbv_verify(p, q, np.full((2, 2), 5))
    q0 = np.tile([0.0, 0.5, 0.5], (2, 2, 1))  # token 0 cannot have been drafted
    with pytest.raises(DistributionError):
        spectr_gbv_verify(p, q0, np.zeros((2, 2), dtype=int))


def test_replay_on_trace():
    tr = synthetic_trace(T=30, V=20)
    rep = replay_multidraft(tr, 3, 3)
    s = rep.summary()
    assert np.all((rep.h_gbv >= 0) & (rep.h_gbv <= 1)) and np.all((rep.h_sgbv >= 0) & (rep.h_sgbv <= 1))
    # γ = 1: optimum ≥ Lemma 5.1's bound ≥ 0 and ≥ K-SEQ, all ≤ 1
    assert np.all(rep.opt1 >= rep.bound1 - 1e-12) and np.all(rep.opt1 >= rep.kseq1 - 1e-12)
    assert np.all(rep.opt1 <= 1 + 1e-12)
    assert s["gamma1_gap_optimum_minus_bound"] >= 0
    p, q = tr.probs()
    assert rep.opt1[0] == pytest.approx(gamma1_optimum_fast(p[0], q[0], 3))
    with pytest.raises(ValueError):
        replay_multidraft(tr, 30, 2)


def test_replay_equal_models_gives_full_acceptance():
    z = np.random.default_rng(0).normal(size=(10, 8))
    tr = LogitTrace(z, z.copy(), np.zeros(10, dtype=np.int64))
    rep = replay_multidraft(tr, 2, 2)
    np.testing.assert_allclose(rep.opt1, 1.0)
    np.testing.assert_allclose(rep.bound1, 1.0)


def test_verifier_emitted_block_law_matches_exact_engine():
    """The full outcome (τ, accepted block, correction/bonus token y) of the verifier on K = 3
    drafts of a Markov pair (rows differ along each draft's path) against the exact engine's
    iteration outcomes: the correction must come from the accepting draft's rows and joints
    (Eq. 4 at its prefix), the bonus from p after the full block. Chi-square (cells of expected
    count < 5 pooled), n = 12,000 calls, level 1e-4."""
    pair = inst.get("markov1-V3-mix0.4")
    V, g, K, n = 3, 2, 3, 12_000
    tree = cf.block_tree(pair, g, 0)
    w = V ** np.arange(g, -1, -1)
    law = np.zeros((g + 1) * V ** (g + 1))
    for o in ex.iteration_outcomes(tree, K):
        law[o.tau * V ** (g + 1) + int(np.dot(o.t + (o.y,), w[:o.tau + 1]))] += o.prob
    rng = np.random.default_rng(3)
    counts = np.zeros_like(law)
    for _ in range(n):
        codes = rng.choice(V ** g, size=K, p=tree.Q[g])
        rows = [_rows(tree, c, g) for c in codes]
        x = np.array([[c // V, c % V] for c in codes])
        v = spectr_gbv_verify(np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows]), x, seed=rng)
        counts[v.tau * V ** (g + 1) + int(np.dot(v.tokens, w[:v.tau + 1]))] += 1
    assert counts[law == 0].sum() == 0
    keep = law > 0
    obs, exp = counts[keep], law[keep] * n
    small = exp < 5
    obs = np.r_[obs[~small], obs[small].sum()]
    exp = np.r_[exp[~small], exp[small].sum()]
    assert stats.chisquare(obs, exp).pvalue > 1e-4
