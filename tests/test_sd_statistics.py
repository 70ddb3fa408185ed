"""Exact-vs-Monte-Carlo agreement for standard speculative sampling, with negative controls.

Every test states: the test statistic, the sample size n, the error rate α (per test) and
the power: the smallest deviation caught with probability 0.9 (``detectable``), asserted to
be below the deviation that matters. Seeds are fixed, so each run is the same draw. The
same comparison is run on a broken verifier and must reject it.
"""
import numpy as np
import pytest

from spectheory.judge import stats
from spectheory.closed_forms import sd as cf
from spectheory.exact import sd as ex
from spectheory.montecarlo import sd as mc
from spectheory.pairs import aligned_pair, perturbed_pair, random_pair
from spectheory.rules.sd import BROKEN_NO_BONUS, BROKEN_RESIDUAL_P, BROKEN_SWAPPED_RATIO, STANDARD

ALPHA = 1e-3


def _tau_counts(pair, gamma, n, rule, seed):
    r = mc.simulate(pair, gamma, n, rule=rule, seed=seed, restart=True)
    return np.bincount(r.tau, minlength=gamma + 1)


def test_tau_distribution_mc_matches_exact_markov():
    """Chi-square GOF of τ (γ+1 = 4 cells) from 200,000 i.i.d. iterations (start state 0)
    against the exact enumeration; α = 1e-3; power 0.9 at Cohen's w ≈ 0.011 (asserted ≤ 0.02).
    Control: the swapped-ratio verifier, same test, must be rejected."""
    pair = perturbed_pair(3, 2, how="mix", strength=0.5, seed=5)
    exact = ex.tau_distribution(pair, 3)
    ev = stats.chisquare_gof("t", _tau_counts(pair, 3, 200_000, STANDARD, 1), exact, alpha=ALPHA, tolerance_w=0.02)
    assert ev.outcome == "pass", ev
    assert ev.detectable < 0.012
    bad = stats.chisquare_gof("t", _tau_counts(pair, 3, 200_000, BROKEN_SWAPPED_RATIO, 1), exact,
                              alpha=ALPHA, tolerance_w=0.02)
    assert bad.outcome == "fail", bad


def test_first_tokens_mc_match_target_law():
    """Chi-square GOF of the first 4 emitted tokens (81 sequences, pooled to ≥ 5 expected)
    from 300,000 runs against p^4; α = 1e-3; detectable w ≈ 0.021 (asserted ≤ 0.025).
    Control: residual = norm(p) must be rejected (its exact TV to p^4 is 0.03)."""
    pair = perturbed_pair(3, 1, how="mix", strength=0.6, seed=6)
    target = pair.target.sequence_probs(4)
    idx_w = 3 ** np.arange(3, -1, -1)
    assert 0.5 * np.abs(ex.first_tokens_distribution(pair, 3, 4, BROKEN_RESIDUAL_P) - target).sum() > 0.02
    for rule, want in ((STANDARD, "pass"), (BROKEN_RESIDUAL_P, "fail")):
        toks = mc.sample_first_tokens(pair, 3, 4, 300_000, rule=rule, seed=2)
        counts = np.bincount(toks @ idx_w, minlength=81)
        ev = stats.chisquare_gof("t", counts, target, alpha=ALPHA, tolerance_w=0.025)
        assert ev.outcome == want, (rule.name, ev)
        assert ev.detectable <= 0.025


def test_per_state_acceptance_mc_matches_beta():
    """Per-state binomial chi-square over 50 states, 300,000 iterations of a stream with
    γ = 4 (~1.3M attempts); α = 1e-3; detectable uniform shift of β(s) ≈ 0.004 (asserted ≤
    0.01). Control: swapped acceptance ratio must be rejected."""
    pair = aligned_pair(50, 1, "weak", seed=9)
    beta = pair.acceptance_by_state()
    for rule, want in ((STANDARD, "pass"), (BROKEN_SWAPPED_RATIO, "fail")):
        r = mc.simulate(pair, 4, 300_000, rule=rule, seed=3, count_states=True)
        ev = stats.per_state_binomial("t", r.attempts, r.accepts, beta, alpha=ALPHA, tolerance=0.01)
        assert ev.outcome == want, (rule.name, ev)
        if rule is STANDARD:  # the power statement of the run that passed, not the control's
            assert ev.detectable < 0.01


def test_long_run_block_efficiency_batch_means():
    """Long-run tokens per iteration of one continuing stream (2,000,000 iterations) against
    the chain DP (stationary law of iteration start states). Iterations are dependent, so the
    z-test uses 200 batch means of 10,000 iterations; α = 1e-3; detectable ≈ 0.006 tokens
    (asserted ≤ 0.02). Control: the no-bonus verifier must be rejected."""
    pair = perturbed_pair(4, 1, how="mix", strength=0.6, seed=10)
    claimed = cf.long_run_block_efficiency(pair, 3)
    for rule, want in ((STANDARD, "pass"), (BROKEN_NO_BONUS, "fail")):
        r = mc.simulate(pair, 3, 2_000_000, rule=rule, seed=4)
        batches = r.n_emitted.reshape(200, -1).mean(axis=1)
        ev = stats.z_test_mean("t", claimed, batches, alpha=ALPHA, tolerance=0.02)
        assert ev.outcome == want, (rule.name, ev)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_sweep_random_instances(seed):
    """Slow sweep: 12 random instances (V ∈ 2..5, order 0..2, γ ∈ 1..4). Per instance:
    chi-square of τ against enumeration (n = 400,000, α = 1e-3 / 12 Bonferroni over the
    sweep), and the swapped-ratio control rejected on the same instance unless it is
    exactly correct there (p = q). Power: w ≤ 0.01 at 0.9."""
    rng = np.random.default_rng(seed)
    V, order, gamma = int(rng.integers(2, 6)), int(rng.integers(0, 3)), int(rng.integers(1, 5))
    if V ** order > 27:
        order = 1
    pair = perturbed_pair(V, order, how="mix", strength=float(rng.uniform(0.2, 0.9)), seed=seed)
    exact = ex.tau_distribution(pair, gamma)
    a = ALPHA / 12
    ev = stats.chisquare_gof("t", _tau_counts(pair, gamma, 400_000, STANDARD, seed), exact, alpha=a, tolerance_w=0.02)
    assert ev.outcome == "pass", ev
    assert ev.detectable <= 0.01
    toks_exact = ex.first_tokens_distribution(pair, gamma, 3, BROKEN_SWAPPED_RATIO)
    if 0.5 * np.abs(toks_exact - pair.target.sequence_probs(3)).sum() > 0.01:
        idx_w = V ** np.arange(2, -1, -1)
        toks = mc.sample_first_tokens(pair, gamma, 3, 400_000, rule=BROKEN_SWAPPED_RATIO, seed=seed)
        bad = stats.chisquare_gof("t", np.bincount(toks @ idx_w, minlength=V ** 3),
                                  pair.target.sequence_probs(3), alpha=a, tolerance_w=0.02)
        assert bad.outcome == "fail", bad


def test_exact_and_mc_agree_on_expected_tokens_iid():
    """z-test of mean tokens per iteration, 500,000 i.i.d. iterations, α = 1e-3, detectable
    ≈ 0.008 tokens (asserted ≤ 0.02), against (1 − α^{γ+1})/(1 − α)."""
    pair = random_pair(5, 0, seed=12)
    a = float(pair.acceptance_by_state()[0])
    r = mc.simulate(pair, 4, 500_000, seed=5)
    ev = stats.z_test_mean("t", cf.expected_tokens(a, 4), r.n_emitted, alpha=ALPHA, tolerance=0.02)
    assert ev.outcome == "pass", ev
