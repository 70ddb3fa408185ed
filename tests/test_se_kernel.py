"""Speculative Ensemble Numba kernel against the exact engines (seed 002).

Statistical tests (seeded): chi-square goodness of fit of the kernel's first emitted tokens
to the exact law of the same algorithm (27 cells, n = 100,000 runs, level 1e-4: a
Cohen's w ≈ 0.025 deviation is detected with probability 0.9), and z-tests of the long-run
speedup against the renewal–reward value (64 streams × 20,000 tokens, level 1e-4, standard
error ≈ 5e-4, so a 0.3% deviation is caught with probability 0.9). The same tests reject the
broken rules (negative controls).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from spectheory.closed_forms import se as cf
from spectheory.ensembles import contrastive_ensemble, weighted_n_ensemble
from spectheory.exact import se as ex
from spectheory.montecarlo import se as mc
from spectheory.pairs import dirichlet_source, perturbed_pair
from spectheory.rules import se as R

PAIR = perturbed_pair(3, 1, how="mix", strength=0.4, seed=12)
CD = ex.SEModels.build([PAIR.draft, PAIR.target], contrastive_ensemble(0.5), "cd")
THREE = ex.SEModels.build([PAIR.draft, PAIR.target, dirichlet_source(3, 1, 1.0, seed=5)],
                          weighted_n_ensemble([0.2, 0.5, 0.3]), "three")
LEVEL = 1e-4
N_RUNS = 100_000


def _chisq_p(M, alg, rule_kernel, law):
    toks = mc.sample_first_tokens(M, alg, 3, N_RUNS, rule=rule_kernel, seed=7)
    counts = np.bincount(toks @ np.array([9, 3, 1]), minlength=27)
    return stats.chisquare(counts, law * N_RUNS).pvalue


CASES = [(CD, ex.Algorithm("sbe", (2, 1))), (CD, ex.Algorithm("alt", (2, 1))),
         (CD, ex.Algorithm("alt", (1, 2), first=1)), (THREE, ex.Algorithm("nse", (2, 1, 1))),
         (THREE, ex.Algorithm("nse", (1, 2, 1), after_reject="text"))]


@pytest.mark.parametrize("M,alg", CASES, ids=lambda x: getattr(x, "kind", getattr(x, "name", "")))
def test_kernel_first_tokens_follow_the_exact_law(M, alg):
    law = ex.first_tokens_distribution(ex.Engine(M, alg), 3)
    assert np.abs(law - M.r_source.sequence_probs(3)).max() < 1e-12
    assert _chisq_p(M, alg, R.STANDARD, law) > LEVEL
    # negative control: the kernel with the wrong-member residual against the correct law
    assert _chisq_p(M, alg, R.BROKEN_RESIDUAL_MEMBER, law) < LEVEL


def test_kernel_broken_rule_matches_exact_broken_law():
    """The kernel implements the broken rules exactly as the engine does (controls are real)."""
    alg = ex.Algorithm("alt", (2, 1))
    for rule in (R.BROKEN_BONUS_UNCHECKED, R.BROKEN_VERIFY_MEMBER):
        law = ex.first_tokens_distribution(ex.Engine(CD, alg, rule), 3)
        assert _chisq_p(CD, alg, rule, law) > LEVEL
        assert _chisq_p(CD, alg, R.STANDARD, law) < LEVEL


@pytest.mark.parametrize("kind,g", [("sbe", (3, 1)), ("alt", (2, 1)), ("alt", (1, 1))])
def test_kernel_long_run_speedup_equals_renewal_reward(kind, g):
    costs = [0.3, 1.0]
    exact = cf.long_run_chain(CD.tables, CD.r, g, costs, kind=kind)["speedup"]
    res = mc.simulate_streams(CD, ex.Algorithm(kind, g), 64, 20_000, seed=3)
    sp = res.speedup(costs)
    se = sp.std(ddof=1) / np.sqrt(sp.size)
    z = (sp.mean() - exact) / se
    assert abs(z) < stats.norm.ppf(1 - LEVEL / 2)
    assert se < 2e-3
    bad = mc.simulate_streams(CD, ex.Algorithm(kind, g), 64, 20_000, seed=3, rule=R.BROKEN_DROP_CORRECTION)
    zb = (bad.speedup(costs).mean() - exact) / se
    assert abs(zb) > stats.norm.ppf(1 - LEVEL / 2)


def test_kernel_counts_calls_per_member():
    """Sec. 3.2 with γ = 3: per Score call exactly 3 calls of q and 1 of p."""
    res = mc.simulate_streams(CD, ex.Algorithm("sbe", (3, 1)), 4, 5_000, seed=1)
    assert np.array_equal(res.calls[:, 0], 3 * res.scores)
    assert np.array_equal(res.calls[:, 1], res.scores)
    assert (res.tokens >= 5_000).all()
    # Alg. 2 with three members: every member is called
    r3 = mc.simulate_streams(THREE, ex.Algorithm("nse", (1, 1, 1)), 4, 5_000, seed=1)
    assert (r3.calls > 0).all()


def test_kernel_is_seeded_and_validates():
    alg = ex.Algorithm("alt", (2, 1))
    a = mc.sample_first_tokens(CD, alg, 4, 1000, seed=5)
    b = mc.sample_first_tokens(CD, alg, 4, 1000, seed=5)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, mc.sample_first_tokens(CD, alg, 4, 1000, seed=6))
    with pytest.raises(ValueError):
        mc.sample_first_tokens(CD, alg, 0, 10)
    with pytest.raises(ValueError):
        mc.simulate_streams(CD, alg, 4, 100, start_state=3)
    with pytest.raises(ValueError):
        mc.prepare(THREE, alg)
    with pytest.raises(TypeError):
        mc.prepare(PAIR, alg)


def test_stream_cost_report():
    res = mc.simulate_streams(CD, ex.Algorithm("alt", (2, 1)), 16, 20_000, seed=4)
    rep = res.cost_report(CD, [0.3, 1.0], sd_gamma=3)
    exact = cf.long_run_chain(CD.tables, CD.r, (2, 1), [0.3, 1.0], kind="alt")["speedup"]
    assert rep["speedup_se"] == pytest.approx(exact, rel=0.01)
    assert set(rep) >= {"vanilla", "sd_on_ensemble", "se", "speedup_sd", "speedup_se", "se_over_sd"}


def test_kernel_matches_chain_dp_at_V50():
    """Markov V = 50 (state-dependent α): the kernel's long-run speedup of Alg. 1 (γ = (5, 1))
    against the exact chain DP; z-test at level 1e-4 with 32 streams × 20,000 tokens."""
    from spectheory.pairs import aligned_pair
    pair = aligned_pair(50, 1, "weak", seed=32)
    M = ex.SEModels.build([pair.draft, pair.target], contrastive_ensemble(0.3), "V50")
    exact = cf.long_run_chain(M.tables, M.r, (5, 1), [0.15, 1.0], kind="alt")["speedup"]
    sp = mc.simulate_streams(M, ex.Algorithm("alt", (5, 1)), 32, 20_000, seed=9).speedup([0.15, 1.0])
    z = (sp.mean() - exact) / (sp.std(ddof=1) / np.sqrt(sp.size))
    assert abs(z) < stats.norm.ppf(1 - LEVEL / 2)


# the reading that a swapped/ignored switch would silently run instead (power check below)
_OTHER_READING = {"pseudocode": "text", "text": "pseudocode"}


@pytest.mark.parametrize("M,alg", [
    (THREE, ex.Algorithm("nse", (2, 1, 1))),
    (THREE, ex.Algorithm("nse", (1, 2, 1), after_reject="text")),
    (CD, ex.Algorithm("alt", (1, 2), first=1)),
    (CD, ex.Algorithm("sbe", (1, 3), first=1)),
], ids=["nse211-pseudocode", "nse121-text", "alt12-first1", "sbe13-first1"])
def test_kernel_calls_per_token_of_each_member_equal_renewal_reward(M, alg):
    """Each member's calls per emitted token in the kernel against the exact renewal–reward
    value (engine's invocations per step / tokens per step). Catches what the first-token law
    (always r^N) and a two-member speedup cannot: Alg. 2's scorer chosen among tied shortest
    caches (argmin: the first), its two readings after a rejection, the default proposer
    ``first``. z-test per member, 32 streams × 20,000 tokens, level 1e-4 (se ≈ 1e-3 per
    member, so a shift of 0.005 calls/token is caught with power > 0.9); the alternative
    reading's exact value must lie > 6 se away (the test has the power to tell them apart)."""
    lr = ex.long_run(ex.Engine(M, alg), np.ones(M.n))
    exact = lr.invocations_per_step / lr.tokens_per_step
    res = mc.simulate_streams(M, alg, 32, 20_000, seed=21)
    per = res.calls / res.tokens[:, None]
    se = per.std(axis=0, ddof=1) / np.sqrt(per.shape[0])
    z = (per.mean(axis=0) - exact) / se
    crit = stats.norm.ppf(1 - LEVEL / 2)
    assert (np.abs(z) < crit).all(), (z, exact, per.mean(axis=0))
    assert (se < 2e-3).all()
    if alg.kind == "nse":
        other = ex.Algorithm("nse", alg.gammas, after_reject=_OTHER_READING[alg.after_reject])
    else:
        other = ex.Algorithm(alg.kind, alg.gammas, first=1 - alg.first)
    lo = ex.long_run(ex.Engine(M, other), np.ones(M.n))
    assert np.abs(lo.invocations_per_step / lo.tokens_per_step - exact).max() > 6 * se.max()


def test_kernel_acceptance_counters_per_proposer():
    """Attempts and acceptances are counted for the member that proposed the token (not the
    scorer): on an i.i.d. pair every q_k-proposed token is accepted w.p. α_k = Σ min(q_k, r)
    (Eq. 7), whatever the state. Alg. 1 γ = (2, 2) so both members propose; z-test per member
    (binomial se under the claim), 16 streams × 20,000 tokens (> 5,000 attempts each: se < 0.006,
    while α_q ≈ 0.14 and α_p ≈ 0.80, so counting one member's attempts or acceptances for the other
    is off by > 50 se), level 1e-4."""
    from spectheory.pairs import random_pair
    pair = random_pair(4, 0, 1.0, seed=11)
    M = ex.SEModels.build([pair.draft, pair.target], contrastive_ensemble(0.4), "cd-iid")
    res = mc.simulate_streams(M, ex.Algorithm("alt", (2, 2)), 16, 20_000, seed=8)
    crit = stats.norm.ppf(1 - LEVEL / 2)
    alphas = [float(M.acceptance(k)[0]) for k in range(2)]
    assert abs(alphas[0] - alphas[1]) > 0.05
    for k, a in enumerate(alphas):
        att, acc = int(res.attempts[:, k].sum()), int(res.accepts[:, k].sum())
        assert att > 5_000
        assert abs(acc / att - a) / np.sqrt(a * (1 - a) / att) < crit
