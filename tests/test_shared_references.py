"""Independent references for the quantities the engines share (issue 27; docs/engine.md, "What the
engines share").

Where the exact engine, the Monte Carlo kernels, the closed forms and the real-logit replay read one
prepared table, their agreement says nothing about that table. Each test here pins one shared
quantity against a value computed by hand or by a few lines of plain NumPy written apart from the
helper. All tests are deterministic (no sampling).
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from spectheory.distributions import residual
from spectheory.pairs import pair_from_tables
from _ecsv import kernel_fuse_all

# --- the sampling core (every family's kernels) -------------------------------------------------


def test_draw_weights_by_hand():
    """draw_weights(w, V, u): the token x with W(<x) ≤ u·Σw < W(≤x), zero-weight tokens never drawn.
    w = (0, 2, 0, 1), Σw = 3: u·3 in [0, 2) → 1, in [2, 3) → 3; u = 2/3 sits on the boundary (→ 3)."""
    from spectheory._kernels.core import draw_weights
    w = np.array([0.0, 2.0, 0.0, 1.0])
    cases = {0.0: 1, 0.3: 1, 0.6: 1, 2.0 / 3.0: 3, 0.7: 3, 1.0 - 2 ** -53: 3}
    assert {u: draw_weights(w, 4, u) for u in cases} == cases
    # unnormalised weights: the same law as the normalised ones
    assert [draw_weights(5 * w, 4, u) for u in cases] == list(cases.values())


def test_cdf_search_by_hand():
    from spectheory._kernels.core import cdf_search
    cdf = np.cumsum([0.0, 0.5, 0.0, 0.5])        # (0, .5, .5, 1)
    assert [cdf_search(cdf, t) for t in (0.0, 0.49, 0.5, 0.99)] == [1, 1, 3, 3]
    assert cdf_search(cdf, 1.0) == 3                # past the end: the last token with mass


def test_alias_tables_sample_the_rows_law():
    """The law of an alias table, computed here in plain NumPy (P(x) = (prob[x] + Σ_{j: alias[j] = x}
    (1 − prob[j]))/V), equals the normalised row, zero-mass tokens included."""
    from spectheory._kernels.core import build_alias
    rows = np.array([[0.0, 2.0, 0.0, 1.0], [0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1], [0.0, 0.0, 0.0, 3.0]])
    prob, alias = build_alias(rows)
    V = rows.shape[1]
    for r in range(rows.shape[0]):
        law = np.zeros(V)
        for j in range(V):
            law[j] += prob[r, j] / V
            law[alias[r, j]] += (1.0 - prob[r, j]) / V
        assert law == pytest.approx(rows[r] / rows[r].sum(), abs=1e-12)
        assert (prob[r][rows[r] == 0] == 0).all()


def test_residual_by_hand():
    """norm(max(p − q, 0)) (Leviathan et al. 2023, Alg. 1); p where p = q (no mass)."""
    p = np.array([0.5, 0.3, 0.2])
    assert residual(p, np.array([0.2, 0.3, 0.5])) == pytest.approx([1.0, 0.0, 0.0])
    assert residual(p, np.array([0.4, 0.4, 0.2])) == pytest.approx([1.0, 0.0, 0.0])
    assert residual(p, np.array([0.1, 0.1, 0.8])) == pytest.approx([0.4 / 0.6, 0.2 / 0.6, 0.0])
    assert residual(p, p.copy()) == pytest.approx(p)


# --- multi-draft: K-SEQ's ρ and residual (exact engine, kernel tables, SpecBranch's kseq rule) -----


def test_kseq_rho_solves_its_equation_and_the_residual_by_hand():
    """SpecTr's K-SEQ (Sun et al. 2023): ρ ∈ [1, K] with 1 − (1 − β(ρ))^K = ρβ(ρ), β(ρ) = Σ min(q, p/ρ),
    checked by evaluating the equation in plain NumPy; residual norm(max(p − ρq, 0)) by hand."""
    from spectheory.closed_forms import multidraft as cf
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    for K in (2, 3, 5):
        rho = cf.kseq_rho(p, q, K)
        beta = np.minimum(q, p / rho).sum()
        assert 1.0 < rho <= K
        assert 1.0 - (1.0 - beta) ** K == pytest.approx(rho * beta, abs=1e-12)
    assert cf.kseq_rho(p, q, 1) == 1.0
    assert cf.kseq_residual(p, q, 2.0) == pytest.approx([0.1 / 0.1, 0.0, 0.0])   # max(p − 2q, 0) = (.1, 0, 0)
    assert cf.kseq_residual(p, q, 1.2) == pytest.approx(np.array([0.26, 0.0, 0.0]) / 0.26)
    assert cf.kseq_residual(p, p, 1.0) == pytest.approx(p)                       # no mass: p
    assert cf.kseq_residual(p, q, 2.5) == pytest.approx(p)                       # p − 2.5q ≤ 0 everywhere: p


def test_kseq_kernel_tables_solve_rho_for_the_drafts_alive():
    """The K-SEQ kernel's tables (SpecTr's draft-tree form): with n of K drafts alive, ρ solves
    1 − (1 − β(ρ))^n = ρβ(ρ) (evaluated here in plain NumPy), and the residual is norm(max(p − ρq, 0))."""
    from spectheory.montecarlo import multidraft as mc
    from spectheory.rules.multidraft import KSEQ
    pair = pair_from_tables([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    T = mc._tables(pair, 1, 3, KSEQ)
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    assert T.rho[0, 1] == 1.0
    for n in (2, 3):
        rho = T.rho[0, n]
        beta = np.minimum(q, p / rho).sum()
        assert 1.0 - (1.0 - beta) ** n == pytest.approx(rho * beta, abs=1e-12)
        w = np.maximum(p - rho * q, 0.0)
        assert T.res_w[0, n] == pytest.approx(w / w.sum())


# --- SpecBranch: draft confidence, branch count k, ε truncation --------------------------------------

#: i.i.d. V = 4, the draft's top-1 0.7 and the target's 0.4: at k_max = 4 the draft gives
#: k = max(1, ⌊4·0.3⌋) = 1 (the target's row would give ⌊4·0.6⌋ = 2); at ε = 0.5 the draft's
#: confidence 0.7 does not truncate (the target's 0.4 would).
SB_P, SB_Q = np.array([0.4, 0.3, 0.2, 0.1]), np.array([0.7, 0.1, 0.1, 0.1])


def _sb_pipe(**kw):
    from spectheory.rules import sb as R
    return R.Pipeline(3, c=2.0, **{"k_max": 4, "eps": 0.5, **kw})


@pytest.mark.parametrize("method", ["SB_NO_HRAD", "SPECBRANCH_UNIFORM"])
def test_sb_branch_count_and_truncation_read_the_drafts_own_top1(method):
    """k = max(1, ⌊k_max(1 − q(x_b))⌋) and the truncation q(x) < ε use the draft's top-1 probability
    (Shen et al., ICLR 2026, Sec. 4.1), in the exact engine's model and in the kernel's tables."""
    from spectheory.exact import sb as ex
    from spectheory.montecarlo import sb as mc
    from spectheory.rules import sb as R
    pair = pair_from_tables(SB_P, SB_Q)
    if method == "SB_NO_HRAD":
        meth, pipe = R.SB_NO_HRAD, _sb_pipe()
    else:
        meth, pipe = R.SPECBRANCH, _sb_pipe(policy_table=np.full((1, 3), 1.0 / 3.0))
    m = ex.model(pair, meth, pipe)
    assert m.conf == pytest.approx([0.7], abs=1e-15)
    assert m.kk.tolist() == [1] and m.trunc.tolist() == [False]
    T = mc.prepare(pair, meth, pipe)
    assert T.kk.tolist() == [1] and T.trunc.tolist() == [False]
    # the same pair at ε = 0.75 truncates (0.7 < 0.75), at k_max = 10 forks ⌊10·0.3⌋ = 3
    assert ex.model(pair, meth, _sb_pipe(eps=0.75, policy_table=pipe.policy_table)).trunc.tolist() == [True]
    assert ex.model(pair, meth, _sb_pipe(k_max=10, policy_table=pipe.policy_table)).kk.tolist() == [3]


def test_sb_branch_count_per_state_on_an_order1_pair():
    """Per state of the order-1 pair of the family's tests (V = 4), at k_max = 6 the draft's rows
    give k = (3, 2, 3, 1) (tests/_sb.py); recomputed here from the rows in plain Python."""
    from _sb import M4, PIPE
    from spectheory.exact import sb as ex
    from spectheory.rules import sb as R
    Q = M4.draft.table
    want = [max(1, math.floor(6 * (1.0 - max(row)) + 1e-12)) for row in Q.tolist()]
    assert want == [3, 2, 3, 1]
    m = ex.model(M4, R.SPECBRANCH, PIPE)
    assert m.kk.tolist() == want
    assert m.trunc.tolist() == [max(row) < PIPE.eps for row in Q.tolist()]


def test_sb_n_branches_edges():
    """Rounding guard and the strict inequality: 20·(1 − 0.9) is 2 (1.9999999999999996 in floats);
    confidence exactly ε does not truncate (the paper: 'below ε')."""
    from spectheory.exact import sb as ex
    from spectheory.rules import sb as R
    assert R.n_branches(0.9, 20) == 2 and R.n_branches(1.0, 4) == 1 and R.n_branches(0.0, 4) == 4
    assert R.n_branches(np.array([0.5, 0.74, 0.76]), 4).tolist() == [2, 1, 1]
    pair = pair_from_tables([0.2, 0.3, 0.5], [0.5, 0.25, 0.25])
    assert ex.model(pair, R.SB_NO_HRAD, _sb_pipe(eps=0.5)).trunc.tolist() == [False]


def test_sb_hrad_confidence_feature_is_the_drafts_top1():
    from spectheory.hrad import Features, features_of
    from _sb import M4
    X = features_of(M4, 3, np.arange(4), Features(0.0, use_state=False, use_conf=True, use_target=False),
                    np.random.default_rng(0))
    assert X[:, 0].tolist() == [max(r) for r in M4.draft.table.tolist()]


def test_sb_replay_trace_arrays_and_label_probabilities_by_hand():
    """The real-logit replay's per-position draft confidence, top-k survival and H-RAD label law."""
    from spectheory.validate import replay_sb as rs
    t = SimpleNamespace(stats={"beta": [0.9, 0.5, 0.8, 0.6]},
                        slice_q=np.array([[0.7, 0.1, 0.15, 0.05]] * 4), slice_p=np.array([[0.1, 0.5, 0.3, 0.1]] * 4))
    beta, conf, surv = rs._trace_arrays(t)
    assert conf.tolist() == [0.7] * 4
    # the draft's order is 0, 2, 1, 3: p-mass of its top-k = .1, .4, .9, 1.0
    assert surv[0] == pytest.approx([0.1, 0.4, 0.9, 1.0][: rs.K_MAX])
    pos, P = rs.hrad_label_probabilities([0.9, 0.5, 0.8, 0.6], gamma=3)
    # decisions at t = 1, 2 (T = 4, γ − 1 = 2 continuation tokens): all-reject 1 − β_t, all-accept β_t β_{t+1}
    assert pos.tolist() == [1, 2]
    assert P == pytest.approx(np.array([[0.5, 0.5 - 0.4, 0.4], [0.2, 0.8 - 0.48, 0.48]]))


# --- ECSV: the drafter's sampling law, the target's argmax, fusion ties ---------------------------


def test_ecsv_noisy_drafter_rows_by_hand():
    """NOISY: log q rounded to a 2-nat grid, then temperature 1.5. q = (.5, .3, .2): log q =
    (−.69, −1.20, −1.61) rounds to (0, −2, −2); /1.5 → (0, −4/3, −4/3); so (1, e, e)/(1 + 2e),
    e = exp(−4/3). Zero-mass tokens stay at 0."""
    from spectheory.rules import ecsv as R
    e = math.exp(-4.0 / 3.0)
    got = R.NOISY.rows(np.array([[0.5, 0.3, 0.2], [0.0, 0.5, 0.5]]))
    assert got[0] == pytest.approx(np.array([1.0, e, e]) / (1 + 2 * e), abs=1e-12)
    assert got[1] == pytest.approx([0.0, 0.5, 0.5], abs=1e-15)
    assert R.CLEAN.rows(np.array([[0.5, 0.3, 0.2]]))[0] == pytest.approx([0.5, 0.3, 0.2])
    # temperature alone: q^(1/T) normalised
    assert R.Drafter("t2", temperature=2.0).rows(np.array([[0.64, 0.36]]))[0] == pytest.approx([0.8 / 1.4, 0.6 / 1.4])


def test_ecsv_setup_tables_by_hand():
    """The per-row tables the exact engine and the kernel both read: the target's argmax (smallest
    id on ties), the log of its second largest value, the drafter's entropy (nats)."""
    from spectheory.rules import ecsv as R
    pair = pair_from_tables([0.4, 0.4, 0.2], [0.5, 0.3, 0.2])
    s = R.Setup(pair, R.ECSV_LITE, 2, 2)
    assert s.p_top.tolist() == [0]
    assert s.p_second_log[0] == pytest.approx(math.log(0.4))
    assert s.q_ent[0] == pytest.approx(-(0.5 * math.log(0.5) + 0.3 * math.log(0.3) + 0.2 * math.log(0.2)))
    s2 = R.Setup(pair_from_tables([0.2, 0.4, 0.4], [0.5, 0.3, 0.2]), R.ECSV_LITE, 2, 2)
    assert s2.p_top.tolist() == [1]


def _kernel_fuse(setup, s0):
    """The kernel's fusion and the exact engine's on every branch tuple (tests/_ecsv.py)."""
    tok, kernel, exact = kernel_fuse_all(setup, s0)
    return tok, kernel, exact


@pytest.mark.parametrize("method", ["VOTE_UNIF", "ECSV_LITE"])
def test_ecsv_fusion_tie_goes_to_the_smallest_token_by_hand(method):
    """p = q = (.4, .4, .2), B = 2, k = 1: branches (0, 1) and (1, 0) tie in votes and in q̄ → token 0
    (the smaller id); (1, 2) → 1 and (2, 0) → 0 by q̄ (.4 > .2); unanimous tuples keep their token.
    Exact engine and kernel alike."""
    from spectheory.rules import ecsv as R
    pair = pair_from_tables([0.4, 0.4, 0.2], [0.4, 0.4, 0.2])
    tok, got, want = _kernel_fuse(R.Setup(pair, getattr(R, method), 2, 1), 0)
    hand = {(0, 0): 0, (0, 1): 0, (0, 2): 0, (1, 0): 0, (1, 1): 1, (1, 2): 1, (2, 0): 0, (2, 1): 1, (2, 2): 2}
    for t, g, w in zip(tok, got, want):
        key = tuple(int(x) for x in t[:, 0])
        assert (int(w[0]), int(g[0])) == (hand[key], hand[key]), key


# --- SD: the rule's acceptance row (exact engine, fast and reference kernels) ---------------------


def test_sd_acceptance_row_and_residual_by_hand():
    """min(1, p/q) per token (1 where q = 0 and p > 0: never drafted), and norm(max(p − q, 0))."""
    from spectheory.rules.sd import STANDARD
    p, q = np.array([0.5, 0.3, 0.2, 0.0]), np.array([0.25, 0.6, 0.0, 0.15])
    acc = STANDARD.accept_probability(p, q)
    assert acc[:2] == pytest.approx([1.0, 0.5]) and acc[3] == 0.0
    assert STANDARD.residual_distribution(p, q) == pytest.approx([0.25 / 0.45, 0.0, 0.2 / 0.45, 0.0])


# --- SE: the ensemble r and the rule's tables (exact engine, kernel tables, real-logit replay) ------


def test_se_ensembles_by_hand():
    """WE (Eq. 4): λq + (1 − λ)p; CD (Eq. 5): softmax((l_p − μ l_q)/T), its T = 0 limit uniform over
    the tied maxima."""
    from spectheory.ensembles import contrastive, weighted, weighted_ensemble, contrastive_ensemble
    q, p = np.array([0.2, 0.8]), np.array([0.6, 0.4])
    assert weighted(q, p, 0.25) == pytest.approx([0.5, 0.5])
    assert weighted_ensemble(0.25)(np.stack([q, p])[:, None, :])[0] == pytest.approx([0.5, 0.5])
    lp, lq = np.log([0.5, 0.25, 0.25]), np.log([0.25, 0.25, 0.5])
    z = np.array([math.log(0.5) - 0.5 * math.log(0.25), math.log(0.25) - 0.5 * math.log(0.25),
                  math.log(0.25) - 0.5 * math.log(0.5)])
    assert contrastive(lp, lq, 0.5) == pytest.approx(np.exp(z) / np.exp(z).sum())
    assert contrastive(np.array([0.0, 0.0, -1.0]), np.zeros(3), 1.0, 0.0) == pytest.approx([0.5, 0.5, 0.0])
    assert contrastive(np.array([0.0, 1.0, 1.0, 0.5]), np.zeros(4), 2.0, 0.0) == pytest.approx([0.0, 0.5, 0.5, 0.0])
    # the registered CD ensemble reads (draft, target) logits in that order: r from l_p = members[1]
    cd = contrastive_ensemble(0.5)
    got = cd(np.stack([np.array([0.25, 0.25, 0.5]), np.array([0.5, 0.25, 0.25])])[:, None, :])[0]
    assert got == pytest.approx(np.exp(z) / np.exp(z).sum())


def test_se_rule_tables_by_hand():
    """min(1, r/q_k) and norm(max(r − q_k, 0)), falling back to r where r ≤ q_k everywhere."""
    from spectheory.rules.se import STANDARD
    r, qk = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.6, 0.2])
    assert STANDARD.accept_probability(r, qk, None) == pytest.approx([1.0, 0.5, 1.0])
    assert STANDARD.residual_distribution(r, qk, None) == pytest.approx([1.0, 0.0, 0.0])
    assert STANDARD.residual_distribution(r, r.copy(), None) == pytest.approx(r)
    # the broken 'residual against the other member' control: zero mass falls back to r, not q_k
    from spectheory.rules.se import BROKEN_RESIDUAL_MEMBER
    assert BROKEN_RESIDUAL_MEMBER.residual_distribution(r, qk, qk.copy()) == pytest.approx(r)


# --- ERSD / GSD: the tree value both the closed forms and the Monte Carlo read ----------------------


def test_tree_values_by_hand():
    """E[generated] = 1 + Σ_v Π_j a(i_j) (Kobus & Gündüz, Eq. 4) with a = (.5, .3, .2):
    sequence of 3: 1 + .5 + .25 + .125; batch of 2: 1 + .5 + .3; SpecInfer k = 4: (1), (1,1),
    (1,1,1), (1,1,2): 1 + .5 + .25 + .125 + .075."""
    from spectheory.trees import batch_tree, expected_generated, sequence_tree, specinfer_tree, zero_order
    f = zero_order([0.5, 0.3, 0.2])
    assert expected_generated(f, sequence_tree(3)) == pytest.approx(1.875)
    assert expected_generated(f, batch_tree(2)) == pytest.approx(1.8)
    assert expected_generated(f, specinfer_tree(4)) == pytest.approx(1.95)
    # the same through a plain function (no cached factors)
    assert expected_generated(lambda v: float(np.prod([[0.5, 0.3, 0.2][i - 1] for i in v])),
                              specinfer_tree(4)) == pytest.approx(1.95)


def test_sb_top_k_branch_tokens_break_ties_to_the_smaller_id():
    """Top-k branch tokens by draft probability, ties to the smaller id, in the exact engine
    (topk_tokens) and in the kernel's order table: q = (.3, .3, .4) → 2, 0, 1."""
    from spectheory.exact import sb as ex
    from spectheory.montecarlo import sb as mc
    from spectheory.rules import sb as R
    assert ex.topk_tokens(np.array([0.3, 0.3, 0.4]), 2).tolist() == [2, 0]
    pair = pair_from_tables([0.5, 0.3, 0.2], [0.3, 0.3, 0.4])
    T = mc.prepare(pair, R.SB_NO_HRAD, _sb_pipe(k_max=6, eps=0.1))
    assert T.order.tolist() == [[2, 0, 1]] and T.kk.tolist() == [3]
