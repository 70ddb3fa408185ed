"""Speculative Ensemble (seed 002): ensemble functions, exact engines, closed forms and the
renewal–reward dynamic program, with a hand-worked example and the broken rules rejected."""
from __future__ import annotations

import numpy as np
import pytest

from spectheory.closed_forms import se as cf
from spectheory.distributions import DistributionError
from spectheory.divergences import total_variation
from spectheory.ensembles import (Ensemble, contrastive, contrastive_ensemble, ensemble_source, weighted,
                                  weighted_ensemble, weighted_n, weighted_n_ensemble)
from spectheory.exact import se as ex
from spectheory.pairs import dirichlet_source, pair_from_tables, perturbed_pair, random_pair
from spectheory.rules import se as R
from spectheory.verifiers.se import ensemble_verify

# --- ensemble functions ---------------------------------------------------------------------------


def test_weighted_and_n_model():
    q, p = np.array([0.8, 0.2]), np.array([0.2, 0.8])
    assert np.allclose(weighted(q, p, 0.25), [0.35, 0.65])
    assert np.allclose(weighted_n([q, p, [0.5, 0.5]], [0.5, 0.25, 0.25]), [0.575, 0.425])
    with pytest.raises(ValueError):
        weighted(q, p, 1.5)
    with pytest.raises(ValueError):
        weighted_n([q, p], [0.5, 0.6])
    with pytest.raises(DistributionError):
        weighted(q, [0.5, 0.4], 0.5)


def test_contrastive_temperature_and_argmax_limit():
    lp, lq = np.log([0.5, 0.3, 0.2]), np.log([0.6, 0.2, 0.2])
    z = lp - 0.5 * lq
    assert np.allclose(contrastive(lp, lq, 0.5), np.exp(z) / np.exp(z).sum())
    assert np.allclose(contrastive(lp, lq, 0.5, 2.0), np.exp(z / 2) / np.exp(z / 2).sum())
    assert np.allclose(contrastive(lp, lq, 0.5, 0.0), [0.0, 1.0, 0.0])           # argmax of z
    assert np.allclose(contrastive([1.0, 1.0, 0.0], [0.0, 0.0, 0.0], 1.0, 0.0), [0.5, 0.5, 0.0])  # ties
    assert np.allclose(contrastive(lp, lq, 0.5, 1e-4), contrastive(lp, lq, 0.5, 0.0), atol=1e-12)
    with pytest.raises(DistributionError, match="full support"):
        contrastive([0.0, 0.0], [0.0, -np.inf], 0.5)
    with pytest.raises(ValueError):
        contrastive(lp, lq, -0.1)


def test_ensemble_objects_take_members_in_paper_order():
    """The Ensemble objects receive members stacked (q, p) (proposal first): CD is
    softmax(log p − μ log q), never the letters swapped; the n-model weights follow the
    member order. Exact values on an asymmetric pair."""
    q, p = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
    z = np.log(p) - 0.5 * np.log(q)
    want = np.exp(z) / np.exp(z).sum()
    got = contrastive_ensemble(0.5)(np.stack([q, p]))
    assert np.allclose(got, want, rtol=0, atol=1e-14)
    z2 = (np.log(p) - 0.5 * np.log(q)) / 2.0
    assert np.allclose(contrastive_ensemble(0.5, 2.0)(np.stack([q, p])), np.exp(z2) / np.exp(z2).sum(),
                       rtol=0, atol=1e-14)
    u = np.array([1 / 3, 1 / 3, 1 / 3])
    assert np.allclose(weighted_n_ensemble([0.5, 0.3, 0.2])(np.stack([q, p, u])), 0.5 * q + 0.3 * p + 0.2 * u,
                       rtol=0, atol=1e-14)
    assert np.allclose(weighted_ensemble(0.25)(np.stack([q, p])), 0.25 * q + 0.75 * p, rtol=0, atol=1e-14)


def test_user_ensemble_is_validated():
    bad = Ensemble.from_function(lambda m: m[0] * 2.0, name="doubling")
    with pytest.raises(DistributionError, match="doubling"):
        bad(np.array([[0.5, 0.5], [0.1, 0.9]]))
    geo = Ensemble.from_function(lambda l: np.exp(l.mean(0)) / np.exp(l.mean(0)).sum(), level="logits")
    out = geo(np.array([[0.25, 0.75], [0.75, 0.25]]))
    assert np.allclose(out, [0.5, 0.5])
    with pytest.raises(ValueError):
        weighted_ensemble(0.5)(np.ones((3, 2)) / 2)  # three members to a two-member ensemble


def test_ensemble_source_is_markov_with_r_rows():
    pair = perturbed_pair(3, 1, how="mix", strength=0.4, seed=12)
    src = ensemble_source([pair.draft, pair.target], weighted_ensemble(0.3))
    assert np.allclose(src.table, 0.3 * pair.draft.table + 0.7 * pair.target.table)
    lifted = ensemble_source([dirichlet_source(3, 0, seed=1), pair.target], weighted_ensemble(0.5))
    assert lifted.order == 1 and lifted.n_states == 3


# --- hand-worked example --------------------------------------------------------------------------

def _two_point(lam=0.5):
    pair = pair_from_tables([0.2, 0.8], [0.8, 0.2])      # p target, q draft
    return ex.SEModels.build([pair.draft, pair.target], weighted_ensemble(lam), "two-point")


def test_hand_worked_two_point():
    """q = (0.8, 0.2), p = (0.2, 0.8), λ = ½: r = (½, ½), α = 1 − ½(0.3 + 0.3) = 0.7 for
    either proposer. Sec. 3.2 with γ = 2 emits 1 + α = 1.7 tokens per cycle; at c = ½ the
    speedup is 1.7·1.5/2 = 1.275. Alg. 1 with γq = γp = 1: configurations A, B, Q in
    proportion (1 − α²) : α : α², tokens 1 each, costs 1.5, 0.5, 1 → speedup
    (1 + α)·1.5/(1.5 + 0.5α − 0.5α²) = 2.55/1.605; Thm 3.6 claims 1.5/(1.5 − 0.35)."""
    M = _two_point()
    assert np.allclose(M.r, [[0.5, 0.5]])
    assert np.allclose(M.acceptance(0), 0.7) and np.allclose(M.acceptance(1), 0.7)
    eng = ex.Engine(M, ex.Algorithm("sbe", (2, 1)))
    assert ex.expected_step_tokens(eng) == pytest.approx(1.7, abs=1e-14)
    assert ex.long_run(eng, [0.5, 1.0]).speedup == pytest.approx(1.275, abs=1e-14)
    assert cf.thm3_1_speedup(0.7, 2, 0.5) == pytest.approx(1.275, abs=1e-14)
    alt = ex.long_run(ex.Engine(M, ex.Algorithm("alt", (1, 1))), [0.5, 1.0])
    assert alt.speedup == pytest.approx(2.55 / 1.605, abs=1e-12)
    assert cf.alternating_speedup_iid(0.7, 0.7, 1, 1, 0.5) == pytest.approx(2.55 / 1.605, abs=1e-14)
    assert cf.thm3_6_speedup(0.7, 1, 1, 0.5) == pytest.approx(1.5 / 1.15, abs=1e-14)
    # calls per step: A (q once, p once) etc.; tokens per step exactly 1
    assert alt.tokens_per_step == pytest.approx(1.0, abs=1e-14)


# --- losslessness of every algorithm, and the controls --------------------------------------------

PAIR = perturbed_pair(3, 1, how="mix", strength=0.4, seed=12)
CD = ex.SEModels.build([PAIR.draft, PAIR.target], contrastive_ensemble(0.5), "cd")
WE = ex.SEModels.build([PAIR.draft, PAIR.target], weighted_ensemble(0.3), "we")
THREE = ex.SEModels.build([PAIR.draft, PAIR.target, dirichlet_source(3, 1, 1.0, seed=5)],
                          weighted_n_ensemble([0.2, 0.5, 0.3]), "three")
ALGS2 = [ex.Algorithm("sbe", (2, 1)), ex.Algorithm("alt", (2, 1)), ex.Algorithm("alt", (1, 2), first=1),
         ex.Algorithm("alt", (3, 2)), ex.Algorithm("nse", (2, 2)), ex.Algorithm("nse", (1, 2), after_reject="text")]


def _tv(M, alg, rule, N=3):
    d = ex.first_tokens_distribution(ex.Engine(M, alg, rule), N)
    assert d.sum() == pytest.approx(1.0, abs=1e-12)
    return float(total_variation(d, M.r_source.sequence_probs(N)))


@pytest.mark.parametrize("alg", ALGS2, ids=lambda a: f"{a.kind}{a.gammas}f{a.first}{a.after_reject[0]}")
def test_two_model_algorithms_are_lossless(alg):
    for M in (CD, WE):
        assert _tv(M, alg, R.STANDARD) < 1e-12


@pytest.mark.parametrize("alg", [ex.Algorithm("nse", (2, 1, 1)), ex.Algorithm("nse", (1, 2, 1), after_reject="text"),
                                 ex.Algorithm("nse", (1, 1, 2), first=2)])
def test_three_model_algorithm_2_is_lossless_and_controls_are_not(alg):
    assert _tv(THREE, alg, R.STANDARD) < 1e-12
    assert _tv(THREE, alg, R.BROKEN_RESIDUAL_MEMBER) > 1e-3
    assert _tv(THREE, alg, R.BROKEN_VERIFY_MEMBER) > 1e-3


def test_broken_rules_are_caught_exactly():
    alt = ex.Algorithm("alt", (2, 1))
    assert _tv(CD, alt, R.BROKEN_RESIDUAL_MEMBER) > 1e-2
    assert _tv(CD, alt, R.BROKEN_BONUS_UNCHECKED) > 1e-2
    assert _tv(CD, ex.Algorithm("sbe", (2, 1)), R.BROKEN_BONUS_UNCHECKED) > 1e-2
    # for two-model WE the wrong-member residual is the right one: r − q = (1−λ)(p − q)
    assert _tv(WE, alt, R.BROKEN_RESIDUAL_MEMBER) < 1e-12


def test_alg2_two_models_prose_reading_equals_alg1():
    for g in ((1, 1), (2, 1), (3, 2)):
        a = ex.long_run(ex.Engine(CD, ex.Algorithm("alt", g)), [0.3, 1.0]).speedup
        b = ex.long_run(ex.Engine(CD, ex.Algorithm("nse", g, after_reject="text")), [0.3, 1.0]).speedup
        assert a == pytest.approx(b, abs=1e-12)
    # the literal pseudocode differs (after a rejection the scorer keeps proposing)
    a = ex.long_run(ex.Engine(CD, ex.Algorithm("alt", (2, 1))), [0.3, 1.0]).speedup
    b = ex.long_run(ex.Engine(CD, ex.Algorithm("nse", (2, 1))), [0.3, 1.0]).speedup
    assert abs(a - b) > 1e-4


# --- the renewal–reward DP against the enumerated process -----------------------------------------

@pytest.mark.parametrize("M", [CD, WE, ex.SEModels.build(
    [perturbed_pair(2, 2, how="mix", strength=0.6, seed=2).draft, perturbed_pair(2, 2, how="mix", strength=0.6,
                                                                                  seed=2).target],
    weighted_ensemble(0.2), "order2")], ids=["cd", "we", "order2"])
def test_long_run_chain_equals_enumeration(M):
    for kind in ("sbe", "alt"):
        for g in ((1, 1), (2, 1), (3, 2)):
            for first in (0, 1):
                for rule in (R.STANDARD, R.BROKEN_BONUS_UNCHECKED, R.BROKEN_DROP_CORRECTION):
                    e = ex.long_run(ex.Engine(M, ex.Algorithm(kind, g, first=first), rule), [0.3, 1.0])
                    d = cf.long_run_chain(M.tables, M.r, g, [0.3, 1.0], kind=kind, first=first, rule=rule)
                    assert e.speedup == pytest.approx(d["speedup"], abs=1e-10)


def test_alternating_closed_form_equals_process_with_unequal_alphas():
    pair = random_pair(4, 0, 1.0, seed=11)
    M = ex.SEModels.build([pair.draft, pair.target], contrastive_ensemble(0.4), "cd-iid")
    aq, ap = float(M.acceptance(0)[0]), float(M.acceptance(1)[0])
    assert abs(aq - ap) > 1e-3
    for g in ((1, 1), (2, 1), (1, 3), (3, 2)):
        for c in (0.0, 0.2, 1.0, 3.0):
            x = ex.long_run(ex.Engine(M, ex.Algorithm("alt", g)), [c, 1.0]).speedup
            assert cf.alternating_speedup_iid(aq, ap, *g, c) == pytest.approx(x, abs=1e-12)


def test_thm3_6_formula_versus_process():
    """The finding: Thm 3.6's one-cycle formula is not the long-run speedup, except at
    c = 1 with γq = γp = 1, where both equal 2/(2 − α)."""
    for a in (0.2, 0.5, 0.9):
        assert cf.thm3_6_speedup(a, 1, 1, 1.0) == pytest.approx(cf.alternating_speedup_iid(a, a, 1, 1, 1.0), abs=1e-14)
        assert abs(cf.thm3_6_speedup(a, 1, 1, 0.5) - cf.alternating_speedup_iid(a, a, 1, 1, 0.5)) > 1e-3
        assert abs(cf.thm3_6_speedup(a, 3, 1, 0.2) - cf.alternating_speedup_iid(a, a, 3, 1, 0.2)) > 1e-3


def test_closed_forms_match_sec32_enumeration_iid():
    pair = random_pair(4, 0, 1.0, seed=11)
    M = ex.SEModels.build([pair.draft, pair.target], contrastive_ensemble(0.5), "cd-iid")
    a = float(M.acceptance(0)[0])
    assert a == pytest.approx(float(cf.acceptance(M.tables[0, 0], M.r[0])), abs=1e-15)
    for g in (1, 2, 3, 4):
        eng = ex.Engine(M, ex.Algorithm("sbe", (g, 1)))
        assert ex.expected_step_tokens(eng) == pytest.approx(float(cf.expected_tokens(a, g)), abs=1e-12)
        bad = ex.Engine(M, ex.Algorithm("sbe", (g, 1)), R.BROKEN_BONUS_UNCHECKED)
        assert ex.expected_step_tokens(bad) == pytest.approx(float(cf.expected_tokens(a, g)) + a ** g, abs=1e-12)


def test_input_validation():
    with pytest.raises(ValueError):
        ex.Algorithm("sbe", (1, 1, 1))
    with pytest.raises(ValueError):
        ex.Algorithm("alt", (0, 1))
    with pytest.raises(ValueError):
        ex.Algorithm("nse", (1, 1), after_reject="sometimes")
    with pytest.raises(ValueError):
        ex.Engine(THREE, ex.Algorithm("alt", (1, 1)))
    with pytest.raises(ValueError):
        ex.Engine(THREE, ex.Algorithm("nse", (1, 1, 1)), R.BROKEN_BONUS_UNCHECKED)
    with pytest.raises(ValueError):
        ex.long_run(ex.Engine(CD, ex.Algorithm("alt", (1, 1))), [1.0])
    with pytest.raises(ValueError):
        cf.thm3_6_speedup(1.2, 1, 1, 0.5)
    with pytest.raises(ValueError):
        cf.thm3_1_speedup(0.5, 0, 0.5)


# --- one verification on explicit distributions -----------------------------------------------------

def test_ensemble_verify_acceptance_frequency_and_errors():
    q, p = np.array([0.8, 0.2]), np.array([0.2, 0.8])
    members = np.stack([q[None], p[None]])            # (2, γ=1, V=2)
    ens = weighted_ensemble(0.5)
    rng = np.random.default_rng(0)
    n = 6_000
    acc = sum(ensemble_verify(members, 0, [int(rng.random() < 0.2)], ens, seed=rng).tau for _ in range(n))
    # α = 0.7; 5-sigma band of a Binomial(6000, 0.7) frequency is ±0.03
    assert abs(acc / n - 0.7) < 5 * np.sqrt(0.21 / n)
    v = ensemble_verify(members, 0, [0], ens, seed=1)
    assert v.alpha == pytest.approx((0.7,))
    with pytest.raises(DistributionError):
        ensemble_verify(members, 0, [2], ens)
    with pytest.raises(DistributionError):
        ensemble_verify(members, 0, [0, 1], ens)
    with pytest.raises(DistributionError, match="zero mass"):
        ensemble_verify(np.stack([[[1.0, 0.0]], [[0.5, 0.5]]]), 0, [1], ens)


def test_closed_forms_literal_values():
    """The printed formulas evaluated by hand."""
    assert cf.thm3_1_speedup(0.5, 3, 0.2) == pytest.approx(1.75 * 1.2 / 1.6, abs=1e-14)
    assert cf.thm3_6_speedup(0.5, 2, 1, 0.5) == pytest.approx(2.25 / 1.75, abs=1e-14)
    assert cf.cor3_4_threshold(0.25) == pytest.approx(0.2)
    assert cf.cor3_3_bound(0.3) == pytest.approx(0.7)
    assert float(cf.expected_tokens(1.0, 4)) == 4.0


def test_sec32_is_sd_without_bonus_on_the_ensemble_source():
    """Sec. 3.2 on (q, p) = standard SD with target r (a Markov source) and no bonus: the sd
    exact engine and the se engine give the same first-N law and tokens per cycle."""
    from spectheory.exact import sd as exact_sd
    from spectheory.markov import MarkovPair
    from spectheory.rules.sd import BROKEN_NO_BONUS
    pair = MarkovPair(CD.r_source, PAIR.draft, "r-vs-q")
    for g in (1, 2, 3):
        a = exact_sd.first_tokens_distribution(pair, g, 3, BROKEN_NO_BONUS)
        b = ex.first_tokens_distribution(ex.Engine(CD, ex.Algorithm("sbe", (g, 1))), 3)
        assert np.abs(a - b).max() < 1e-14
        for s in range(CD.S):
            assert exact_sd.expected_tokens(pair, g, BROKEN_NO_BONUS, s) == pytest.approx(
                ex.expected_step_tokens(ex.Engine(CD, ex.Algorithm("sbe", (g, 1))), (s, -1, -1)), abs=1e-13)


def test_cost_report_three_numbers():
    costs = [0.3, 1.0]
    lr = ex.long_run(ex.Engine(CD, ex.Algorithm("alt", (2, 1))), costs)
    rep = cf.cost_report(lr.throughput, CD.tables, CD.r, CD.order, costs, sd_gamma=2)
    assert rep["vanilla"] == pytest.approx(1 / 1.3)
    assert rep["speedup_se"] == pytest.approx(lr.speedup, abs=1e-12)
    assert rep["sd_proposer"] == 0
    sd = cf.sd_on_ensemble_chain(CD.r_source, PAIR.draft, 2, 0.3, 1.3)
    assert rep["speedup_sd"] == pytest.approx(sd["speedup"], abs=1e-12)
    assert rep["se_over_sd"] == pytest.approx(lr.throughput / sd["throughput"], abs=1e-12)
    three = cf.cost_report(1.0, THREE.tables, THREE.r, THREE.order, [1.0, 0.5, 2.0])
    assert three["sd_proposer"] == 1


def test_sd_on_ensemble_is_sd_with_the_ensemble_as_target():
    """SD on the ensemble = standard SD with r the target and q the draft (bonus from r): its
    long-run tokens per iteration rebuilt independently from the SD exact engine's blocks
    (iteration-start chain, stationary law, Σν·E[tokens]); the cost model γ·t_q + Σ t_k. The
    letters swapped (q as target) give another value on this Markov pair."""
    from spectheory.exact import sd as exact_sd
    from spectheory.markov import MarkovPair, stationary_distribution

    def long_run(target, draft, g):
        pair = MarkovPair(target, draft, "check")
        S = pair.n_states
        P, e = np.zeros((S, S)), np.zeros(S)
        for s in range(S):
            for b in exact_sd.iteration_blocks(pair, g, start_state=s):
                P[s, b.end_state] += b.prob
                e[s] += b.prob * len(b.tokens)
        return float(stationary_distribution(P) @ e)

    for g in (1, 3):
        tok = long_run(CD.r_source, PAIR.draft, g)
        got = cf.sd_on_ensemble_chain(CD.r_source, PAIR.draft, g, 0.3, 1.3)
        assert got["tokens_per_step"] == pytest.approx(tok, abs=1e-12)
        assert got["time_per_step"] == pytest.approx(g * 0.3 + 1.3, abs=1e-15)
        assert got["speedup"] == pytest.approx(tok / (g * 0.3 + 1.3) * 1.3, abs=1e-12)
        assert abs(long_run(PAIR.draft, CD.r_source, g) - tok) > 1e-3
