"""Exact engine of ECSV (spectheory.exact.ecsv): laws sum to one, the lossless readings are
lossless and the rejection-sampling reading is not, SD-1 equals standard speculative
sampling's own engine, hand-worked fusions, tie-breaks, budget accounting, and the
prefix-length identity."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from spectheory.closed_forms import ecsv as cf
from spectheory.exact import ecsv as ex
from spectheory.exact import sd as exact_sd
from spectheory.pairs import pair_from_tables, perturbed_pair, random_pair, top_k
from spectheory.markov import MarkovPair
from spectheory.rules import ecsv as R

MIX = perturbed_pair(3, 1, how="mix", strength=0.4, seed=12)           # order 1, V = 3
IID = random_pair(3, 0, seed=5)                                        # order 0
V2 = perturbed_pair(2, 1, how="mix", strength=0.6, seed=3)             # order 1, V = 2
EQUAL = pair_from_tables([0.5, 0.3, 0.2], [0.5, 0.3, 0.2])             # p = q
TOPK = MarkovPair(MIX.target, top_k(MIX.target, 2), "topk2")            # draft with zeros

LOSSLESS = (R.SD_1, R.SD_MULTI, R.VOTE_UNIF, R.ORACLE_TOP1, R.ECSV_LITE, R.ecsv_spot(1), R.ECSV_SOFT,
            R.ECSV_BRANCHWISE, R.ECSV_LITE_RS_EXACT, R.SPOT_LEAST, R.INVERTED_WEIGHTS, R.IGNORE_RELIABILITY)
LOSSY = (R.ECSV_LITE_RS, R.MATCH_EMITS_DRAFT, R.RS_EXACT_RESIDUAL_P, R.SD_1_NO_RESIDUAL,
         R.VOTE_UNIF.with_verify("rs"), R.ECSV_SOFT.with_verify("rs"))


@pytest.mark.parametrize("pair", [MIX, V2, TOPK], ids=lambda p: p.name)
@pytest.mark.parametrize("method", LOSSLESS + LOSSY, ids=lambda m: m.name)
def test_step_law_is_a_distribution(pair, method):
    for s in range(pair.n_states):
        law = ex.step_law(R.Setup(pair, method, 3, 2), s)
        assert abs(sum(b.prob for b in law.blocks) - 1.0) < 1e-12
        assert abs(law.tau.sum() - 1.0) < 1e-12
        assert all(len(b.tokens) == b.tau + 1 for b in law.blocks)
        if law.fused is not None:
            assert abs(law.fused.sum() - 1.0) < 1e-12


@pytest.mark.parametrize("pair", [MIX, IID, V2, TOPK, EQUAL], ids=lambda p: p.name)
@pytest.mark.parametrize("method", LOSSLESS, ids=lambda m: m.name)
def test_lossless_readings_emit_p(pair, method):
    """Matching the verifier's own sample, token-tree matching, SD-1 and rejection sampling
    against the enumerated proposal law are exactly lossless (TV ≤ 1e-12, first 3 tokens)."""
    for B, k in ((2, 2), (3, 1)):
        setup = R.Setup(pair, method, B, k)
        for s in range(min(pair.n_states, 2)):
            assert ex.tv_to_target(setup, 3, s) < 1e-12, (method.name, B, k, s)


@pytest.mark.parametrize("method", LOSSY, ids=lambda m: m.name)
def test_lossy_readings_are_measurably_off(method):
    assert ex.tv_to_target(R.Setup(MIX, method, 3, 2), 3) > 0.01


def test_rs_reading_measured_distance():
    """The 'standard final check with the fused tokens' reading: measured, not assumed."""
    tv = ex.tv_to_target(R.Setup(MIX, R.ECSV_LITE_RS, 3, 2), 3)
    assert tv == pytest.approx(0.0848, abs=5e-4)
    # it is mode-seeking: lower cross-entropy to p than any lossless method
    lr = ex.long_run(R.Setup(MIX, R.ECSV_LITE_RS, 3, 2))
    assert lr["ce_per_token"] < MIX.target.entropy_rate() - 0.02


def test_greedy_regime_emits_the_greedy_path():
    for m in (R.SD_1, R.SD_MULTI, R.ECSV_LITE, R.ORACLE_TOP1):
        setup = R.Setup(MIX, m.regime("greedy"), 3, 2)
        d = ex.first_tokens_distribution(setup, 3, 0)
        s, code = 0, 0
        for _ in range(3):
            t = int(np.argmax(MIX.target.conditional(s)))
            code = code * 3 + t
            s = (s * 3 + t) % 3
        assert d[code] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("pair", [MIX, IID, V2], ids=lambda p: p.name)
def test_sd1_equals_standard_speculative_sampling(pair):
    """ECSV's SD-1 is Leviathan et al.'s algorithm: same τ law and E[tokens] as spectheory.exact.sd."""
    for k in (1, 2, 3):
        for s in range(pair.n_states):
            law = ex.step_law(R.Setup(pair, R.SD_1, 4, k), s)
            np.testing.assert_allclose(law.tau, exact_sd.tau_distribution(pair, k, start_state=s), atol=1e-12)
            assert law.tokens == pytest.approx(exact_sd.expected_tokens(pair, k, start_state=s), abs=1e-12)


def test_one_branch_methods_coincide():
    """With B = 1 there is nothing to vote on: Vote-unif, ECSV-lite, SD-multi and Oracle-Top1
    verify the one branch by matching and have the same step law."""
    laws = [ex.step_law(R.Setup(MIX, m, 1, 3), 1) for m in (R.VOTE_UNIF, R.ECSV_LITE, R.SD_MULTI, R.ORACLE_TOP1)]
    for lw in laws[1:]:
        np.testing.assert_allclose(lw.tau, laws[0].tau, atol=1e-12)


def test_lossless_cross_entropy_is_the_entropy_rate():
    for m in (R.SD_1, R.ECSV_LITE, R.SD_MULTI, R.ecsv_spot(1)):
        lr = ex.long_run(R.Setup(MIX, m, 3, 2))
        assert lr["ce_per_token"] == pytest.approx(MIX.target.entropy_rate(), abs=1e-12)


def _tuple_law(setup, branches):
    """Fuse one explicit branch tuple through the exact engine."""
    tok = np.array([branches], dtype=np.int64)
    st = np.empty((1, tok.shape[1], tok.shape[2] + 1), dtype=np.int64)
    st[:, :, 0] = 0
    for j in range(tok.shape[2]):
        st[:, :, j + 1] = (st[:, :, j] * setup.V + tok[:, :, j]) % setup.S
    return ex.fuse(setup, tok, st, 0)[0][0]


def test_fusion_hand_worked():
    """Order 0, V = 3: every branch row is q. Plurality wins; a 1–1–1 split is broken by q̄ = q
    (largest q), then the smallest id; the soft vote can overturn a 2-vs-1 majority."""
    q = np.array([0.2, 0.5, 0.3])
    pair = pair_from_tables([0.6, 0.3, 0.1], q)
    vote = R.Setup(pair, R.VOTE_UNIF, 3, 1)
    assert _tuple_law(vote, [[0], [0], [2]]).tolist() == [0]
    assert _tuple_law(vote, [[0], [1], [2]]).tolist() == [1]     # tie → larger q̄
    flat = R.Setup(pair_from_tables([0.6, 0.3, 0.1], [0.4, 0.2, 0.4]), R.VOTE_UNIF, 3, 1)
    assert _tuple_law(flat, [[0], [1], [2]]).tolist() == [0]     # tie in q̄ too → smaller id
    no_ties = R.Setup(pair, replace(R.VOTE_UNIF, name="no-ties", ties="none"), 3, 1)
    assert _tuple_law(no_ties, [[2], [1], [0]]).tolist() == [0]
    # the soft vote with λ = 0.5 and q = (0.05, 0.9, 0.05): 2 votes on 0 lose to 1 vote on 1
    peaked = pair_from_tables([0.6, 0.3, 0.1], [0.05, 0.9, 0.05])
    soft = R.Setup(peaked, replace(R.ECSV_SOFT, weights="uniform"), 3, 1)
    assert _tuple_law(soft, [[0], [0], [1]]).tolist() == [1]
    hard = R.Setup(peaked, R.VOTE_UNIF, 3, 1)
    assert _tuple_law(hard, [[0], [0], [1]]).tolist() == [0]


def test_reliability_weights_hand_worked():
    """Order 1, ECSV-lite positionwise: at position 2 the branches sit in different states,
    so the lower-entropy branch outweighs a disagreeing one: w = exp(−H + agreement)."""
    p = np.array([[0.6, 0.4], [0.5, 0.5]])
    q = np.array([[0.5, 0.5], [0.95, 0.05]])  # state 1 is confident, state 0 is not
    pair = pair_from_tables(p, q, order=1)
    setup = R.Setup(pair, R.ECSV_LITE, 2, 2)
    # branch 0 = (0, 1) sits in state 0 at position 2; branch 1 = (1, 0) sits in state 1
    fused = _tuple_law(setup, [[0, 1], [1, 0]])
    H = [-(0.5 * np.log(0.5)) * 2, -(0.95 * np.log(0.95) + 0.05 * np.log(0.05))]
    assert H[1] < H[0]
    assert fused.tolist()[1] == 0  # branch 1's token wins position 2
    assert _tuple_law(R.Setup(pair, R.VOTE_UNIF, 2, 2), [[0, 1], [1, 0]]).tolist()[1] == 0  # q̄ tie-break
    inv = _tuple_law(R.Setup(pair, R.INVERTED_WEIGHTS, 2, 2), [[0, 1], [1, 0]])
    assert inv.tolist()[1] == 1  # γ < 0: the uncertain branch wins


def test_spot_check_changes_the_fused_token():
    """A spot check at the disagreeing position makes the verifier's top token win
    (α4 = 1, c = log p(t̂) − log p(second))."""
    p = np.array([0.1, 0.7, 0.2])
    q = np.array([0.45, 0.1, 0.45])
    pair = pair_from_tables(p, q)
    lite = R.Setup(pair, R.ECSV_LITE, 3, 2)
    spot = R.Setup(pair, R.ecsv_spot(1), 3, 2)
    assert (spot.R_used, spot.d) == (1, 1)
    assert _tuple_law(lite, [[0, 0], [1, 0], [2, 0]]).tolist()[0] == 0   # 3-way tie → q̄ → 0
    assert _tuple_law(spot, [[0], [1], [2]]).tolist() == [1]             # the spot row picks 1


@pytest.mark.parametrize("R_, k, plan", [(1, 2, (1, 1)), (4, 2, (1, 1)), (2, 4, (2, 2)), (4, 4, (2, 2)),
                                          (3, 8, (3, 5)), (4, 8, (4, 4)), (0, 8, (0, 8))])
def test_budget_plan(R_, k, plan):
    m = R.ecsv_spot(R_) if R_ else R.ECSV_LITE
    assert m.plan(k) == plan == cf.budget_plan(R_, k)
    assert sum(plan) + 1 == k + 1


def test_costs_per_step():
    for m, per_step in ((R.SD_1, 3), (R.ECSV_LITE, 3), (R.ecsv_spot(1), 3), (R.FORGET_SPOT, 4)):
        law = ex.step_law(R.Setup(MIX, m, 3, 2), 0)
        assert law.cost_parallel == pytest.approx(per_step)
        assert law.cost_sequential == pytest.approx(law.tokens + R.Setup(MIX, m, 3, 2).R_used)
    # SD-1's sequential accounting is one verifier position per output token
    lr = ex.long_run(R.Setup(MIX, R.SD_1, 3, 2))
    assert lr["vtpo_sequential"] == pytest.approx(1.0, abs=1e-12)
    # a token tree costs its distinct prefixes: B identical branches cost a single path
    same = pair_from_tables([0.5, 0.5], [1.0, 0.0])
    assert ex.step_law(R.Setup(same, R.SD_MULTI, 4, 3), 0).cost_parallel == pytest.approx(4.0)


@pytest.mark.parametrize("method", (R.SD_1, R.ECSV_LITE, R.ECSV_LITE_RS, R.ECSV_BRANCHWISE, R.SD_MULTI),
                         ids=lambda m: m.name)
def test_prefix_length_chain_rule_is_exact(method):
    """E[τ] = Σ_j Π_{i≤j} a_i with a_i = P(match i | matches before): the chain rule, exact on
    Markov sources too."""
    for pair in (MIX, IID):
        law = ex.step_law(R.Setup(pair, method, 3, 3), 0)
        a = np.nan_to_num(law.match_conditional())
        assert float(cf.prefix_length(a)) == pytest.approx(law.accepted, abs=1e-12)


def test_prefix_length_with_marginals():
    """With marginal a_i the formula is exact when positions are independent (order-0 source,
    positionwise fusion) and off on a Markov source."""
    law = ex.step_law(R.Setup(IID, R.ECSV_LITE, 3, 3), 0)
    assert float(cf.prefix_length(law.match_marginal)) == pytest.approx(law.accepted, abs=1e-12)
    law = ex.step_law(R.Setup(MIX, R.ECSV_LITE, 3, 3), 0)
    assert abs(float(cf.prefix_length(law.match_marginal)) - law.accepted) > 1e-3


def test_horizon_means_converge_to_long_run():
    setup = R.Setup(MIX, R.ECSV_LITE, 2, 2)
    lr, hm = ex.long_run(setup), ex.horizon_means(setup, 100_000)
    for key in lr:
        assert hm[key] == pytest.approx(lr[key], rel=1e-4)


def test_exact_harness_rows():
    rows = ex.harness({"mix": MIX}, (R.SD_1, R.ECSV_LITE), (2, 3), (2,), (R.CLEAN,))
    assert [(r["method"], r["B"]) for r in rows] == [("SD-1", 2), ("ECSV-lite", 2), ("ECSV-lite", 3)]
    assert all(r["tv"] < 1e-12 for r in rows)
    rs = ex.harness({"mix": MIX}, (R.ECSV_LITE,), (3,), (2,), (R.CLEAN,), reading="rs")
    assert rs[0]["tv"] > 0.05 and rs[0]["verify"] == "rs"


def test_refuses_large_enumerations():
    with pytest.raises(ValueError, match="too many to enumerate"):
        ex.step_law(R.Setup(MIX, R.ECSV_LITE, 8, 8), 0)


def test_drafter_sampling_law():
    q = np.array([[0.5, 0.3, 0.15, 0.05]])
    np.testing.assert_allclose(R.CLEAN.rows(q), q)
    hot = R.Drafter("hot", temperature=2.0).rows(q)
    np.testing.assert_allclose(hot, np.sqrt(q) / np.sqrt(q).sum())
    # nucleus 0.75: 0.5 and 0.3 are kept (mass before them 0 and 0.5 < 0.75); 0.15 has 0.8 before it
    np.testing.assert_allclose(R.Drafter("p", top_p=0.75).rows(q), [[0.625, 0.375, 0.0, 0.0]])
    quant = R.Drafter("q", quantize_step=1.0).rows(q)
    z = np.round(np.log(q)) - np.round(np.log(q)).max()
    np.testing.assert_allclose(quant, np.exp(z) / np.exp(z).sum())
    # the noisy drafter overlaps p less than the clean one on every harness source
    from spectheory.divergences import overlap
    from spectheory.montecarlo import ecsv as mc
    for pair in mc.default_sources().values():
        clean = overlap(pair.target.rows, R.CLEAN.rows(pair.draft.rows)).mean()
        noisy = overlap(pair.target.rows, R.NOISY.rows(pair.draft.rows)).mean()
        assert noisy < clean - 0.02
