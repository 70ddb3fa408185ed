"""The one-step ECSV verifier on explicit rows (spectheory.verifiers.ecsv): its fusion equals
the exact engine's on every enumerated branch tuple, and its verification has the exact
engine's law (seeded chi-square tests, stated n, α and power)."""
from __future__ import annotations

import numpy as np
import pytest

from spectheory.exact import ecsv as ex
from spectheory.montecarlo import ecsv as mc
from spectheory.pairs import perturbed_pair
from spectheory.rules import ecsv as R
from spectheory.verifiers import ecsv as vf

MIX = perturbed_pair(3, 1, how="mix", strength=0.4, seed=12)


def _p_of(pair, s0):
    def p(prefix):
        s = s0
        for t in prefix:
            s = (s * pair.V + t) % pair.n_states
        return pair.target.conditional(s)
    return p


@pytest.mark.parametrize("method", (R.VOTE_UNIF, R.ECSV_LITE, R.ecsv_spot(1), R.ECSV_SOFT, R.ECSV_BRANCHWISE,
                                    R.SPOT_LEAST, R.INVERTED_WEIGHTS), ids=lambda m: m.name)
@pytest.mark.parametrize("B,k", [(3, 2), (2, 4)])
def test_fusion_equals_exact_engine_on_every_tuple(method, B, k):
    setup = R.Setup(MIX, method, B, k)
    s0 = 1
    tok, st, _ = ex._enumerate(setup, s0)
    fused, _ = ex.fuse(setup, tok, st, s0)
    p = _p_of(MIX, s0)
    for i in range(tok.shape[0]):
        q = setup.q_rows[setup.q_ros[st[i, :, :setup.d]]]
        assert vf.fuse(tok[i], q, p, method=method).tokens == tuple(fused[i])


@pytest.mark.parametrize("method", (R.ECSV_LITE, R.ECSV_LITE_RS, R.ECSV_LITE.regime("greedy"), R.MATCH_EMITS_DRAFT),
                         ids=lambda m: m.name)
def test_step_law_matches_exact(method):
    """Chi-square of the emitted block (τ, tokens) of one step from fixed branches against
    the exact verification law of that fused draft; n = 20,000 steps, α = 1e-4; ≤ 13 cells:
    power 0.9 at Cohen's w ≈ 0.05."""
    setup = R.Setup(MIX, method, 3, 2)
    s0 = 0
    branches = np.array([[0, 1], [0, 2], [1, 1]])
    st = np.zeros((1, 3, 3), dtype=np.int64)
    for j in range(2):
        st[:, :, j + 1] = (st[:, :, j] * 3 + branches[None, :, j]) % 3
    x, qbar = ex.fuse(setup, branches[None], st, s0)
    acc = ex._Acc(3, 2)
    ex._single_path(setup, s0, x, np.ones(1), qbar, acc, method.verify)
    blocks, _, _ = ex._blocks(setup, s0, acc)
    keys = [b.tokens for b in blocks]
    probs = np.array([b.prob for b in blocks])
    q = setup.q_rows[setup.q_ros[st[0, :, :2]]]
    rng = np.random.default_rng(5)
    counts = np.zeros(len(keys))
    for _ in range(20_000):
        v = vf.ecsv_step(branches, q, _p_of(MIX, s0), method=method, seed=rng)
        counts[keys.index(v.emitted)] += 1
        assert v.positions_parallel == 3 and v.positions_sequential == v.tau + 1
    assert mc.chi2_pvalue(counts, probs) > 1e-4


def test_spot_check_asks_the_verifier_once_per_checked_position():
    calls = []

    def p(prefix):
        calls.append(prefix)
        return MIX.target.conditional(0)

    branches = np.array([[0, 1, 2], [1, 1, 0], [2, 1, 1]])
    q = np.full((3, 3, 3), 1 / 3)
    f = vf.fuse(branches, q, p, method=R.ecsv_spot(1))
    assert f.spot == (0,) and calls == [()]        # position 1 disagrees most, position 2 agrees
    v = vf.ecsv_step(branches, q, p, method=R.ecsv_spot(2), seed=0)
    assert len(v.fused.spot) == 2 and v.positions_parallel == 2 + 3 + 1


def test_refuses_what_it_cannot_do():
    branches = np.array([[0, 1]])
    q = np.full((1, 2, 3), 1 / 3)
    with pytest.raises(ValueError, match="proposal law"):
        vf.ecsv_step(branches, q, _p_of(MIX, 0), method=R.ECSV_LITE_RS_EXACT)
    with pytest.raises(ValueError, match="fuses branches"):
        vf.ecsv_step(branches, q, _p_of(MIX, 0), method=R.SD_1)
    with pytest.raises(ValueError, match="give the verifier rows"):
        vf.fuse(np.array([[0, 1], [1, 0]]), np.full((2, 2, 3), 1 / 3), method=R.ecsv_spot(1))
