"""The ECSV Numba kernel against the exact engine (seeded statistical tests).

Every test states its test, sample size n, level α and power: chi-square goodness of fit of
the first emitted tokens (or of the first fused draft) against the exact law, and two-sided
z-tests of long-run means (batch-means standard errors) against the exact finite-horizon
expectation. α = 1e-4 per test; the power line gives the smallest deviation each test
detects with probability 0.9 (Cohen's w for chi-square, in units of the mean for z-tests).
"""
from __future__ import annotations

import numba
import numpy as np
import pytest
from scipy import stats

from spectheory.exact import ecsv as ex
from spectheory.montecarlo import ecsv as mc
from spectheory.pairs import perturbed_pair, random_pair
from spectheory.rules import ecsv as R
from _ecsv import kernel_fuse_all

ALPHA = 1e-4
POWER = 0.9
MIX = perturbed_pair(3, 1, how="mix", strength=0.4, seed=12)
IID = random_pair(3, 0, seed=5)


def detectable_w(df: int, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """Smallest Cohen's w a chi-square test with df degrees of freedom and n draws detects
    with the given power (noncentral chi-square, λ = n w²)."""
    crit = stats.chi2.isf(alpha, df)
    lo, hi = 0.0, 1e4
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if stats.ncx2.sf(crit, df, mid) < power:
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(hi / n))


def chi2_p(counts, probs):
    return mc.chi2_pvalue(counts, probs)


N_FIRST = 60_000
METHODS = (R.SD_1, R.SD_MULTI, R.ORACLE_TOP1, R.VOTE_UNIF, R.ECSV_LITE, R.ecsv_spot(1), R.ECSV_SOFT,
           R.ECSV_BRANCHWISE, R.ECSV_LITE_RS, R.ECSV_LITE_RS_EXACT, R.MATCH_EMITS_DRAFT, R.RS_EXACT_RESIDUAL_P,
           R.SPOT_LEAST, R.ECSV_LITE.regime("greedy"))


def test_first_tokens_power_statement():
    # 27 cells (V = 3, N = 3), n = 60,000, α = 1e-4: detects w ≥ 0.036 with power 0.9
    assert detectable_w(26, N_FIRST) < 0.04


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
def test_first_tokens_match_exact_law(method):
    """Chi-square of the first 3 emitted tokens (27 cells) against the exact law of the same
    method — lossless or not; n = 60,000 runs, α = 1e-4, power 0.9 at w = 0.036."""
    setup = R.Setup(MIX, method, 3, 4 if method.R else 2)
    ft = mc.sample_first_tokens(setup, N_FIRST, 3, seed=11, start_state=1)
    exact = ex.first_tokens_distribution(setup, 3, 1)
    assert chi2_p(mc.sequence_counts(ft.tokens, 3), exact) > ALPHA


@pytest.mark.parametrize("method", (R.ECSV_LITE, R.ecsv_spot(1), R.ECSV_SOFT, R.ECSV_BRANCHWISE, R.VOTE_UNIF,
                                    R.SPOT_LEAST, R.INVERTED_WEIGHTS), ids=lambda m: m.name)
def test_fused_draft_law_matches_exact(method):
    """Chi-square of the first step's fused draft (V^d cells) against the exact fused law F;
    n = 60,000, α = 1e-4 (power 0.9 at w = 0.036 for d = 3, 27 cells)."""
    setup = R.Setup(MIX, method, 3, 3)
    ft = mc.sample_first_tokens(setup, N_FIRST, 1, seed=5, start_state=2)
    F = ex.step_law(setup, 2).fused
    assert chi2_p(mc.sequence_counts(ft.draft, 3), F) > ALPHA


def test_mc_sees_the_rs_reading_is_lossy():
    setup = R.Setup(MIX, R.ECSV_LITE_RS, 3, 2)
    ft = mc.sample_first_tokens(setup, N_FIRST, 3, seed=3)
    assert chi2_p(mc.sequence_counts(ft.tokens, 3), MIX.target.sequence_probs(3)) < 1e-12


N_STEPS = 160_000


@pytest.mark.parametrize("method", (R.SD_1, R.SD_MULTI, R.ORACLE_TOP1, R.ECSV_LITE, R.ecsv_spot(2),
                                    R.ECSV_LITE_RS, R.FORGET_SPOT), ids=lambda m: m.name)
@pytest.mark.parametrize("pair", (MIX, IID), ids=lambda p: p.name)
def test_stream_means_match_exact(method, pair):
    """Two-sided z-tests (α = 1e-4 each, batch-means se over 16 streams × 20 batches,
    n = 160,000 steps) of accepted length, verifier positions per output token and
    cross-entropy per token against the exact expectation over the same horizon. With se
    ≈ 0.002 on τ the power is 0.9 at a bias of ≈ 0.01 tokens."""
    setup = R.Setup(pair, method, 3, 3)
    res = mc.simulate(setup, N_STEPS, seed=21)
    est = res.estimates()
    exact = ex.horizon_means(setup, res.per)
    zc = stats.norm.isf(ALPHA / 2)
    for key in ("accepted_length", "vtpo_parallel", "vtpo_sequential", "ce_per_token", "cost_parallel_per_step"):
        e = est[key]
        if e.se == 0:
            assert e.value == pytest.approx(exact[key], abs=1e-12), key
            continue
        assert abs(e.value - exact[key]) / e.se < zc, (key, e.value, exact[key], e.se)
    assert est["accepted_length"].se < 0.01


def test_rs_exact_kernel_is_lossless_and_matches():
    setup = R.Setup(MIX, R.ECSV_LITE_RS_EXACT, 2, 3)
    ft = mc.sample_first_tokens(setup, N_FIRST, 3, seed=8)
    assert chi2_p(mc.sequence_counts(ft.tokens, 3), MIX.target.sequence_probs(3)) > ALPHA


def test_thread_count_does_not_change_results():
    setup = R.Setup(MIX, R.ecsv_spot(2), 3, 4)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a = mc.simulate(setup, 4000, seed=9)
        numba.set_num_threads(max(1, numba.config.NUMBA_NUM_THREADS))
        b = mc.simulate(setup, 4000, seed=9)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(a.tau, b.tau)
    np.testing.assert_array_equal(a.ce, b.ce)


def test_seed_reproducible_and_streams_independent():
    setup = R.Setup(MIX, R.ECSV_LITE, 3, 2)
    a = mc.sample_first_tokens(setup, 2000, 4, seed=1).tokens
    b = mc.sample_first_tokens(setup, 2000, 4, seed=1).tokens
    c = mc.sample_first_tokens(setup, 2000, 4, seed=2).tokens
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


def test_plugin_tv_null_level():
    """The plug-in TV's null level (exact binomial mean absolute deviation) matches the mean
    plug-in TV of multinomial draws from p (200 replicates; 5% tolerance)."""
    rng = np.random.default_rng(0)
    p = MIX.target.sequence_probs(2)
    n = 5000
    sims = [mc.plugin_tv(rng.multinomial(n, p), p) for _ in range(200)]
    assert np.mean(sims) == pytest.approx(mc.plugin_tv_null(p, n), rel=0.05)


def test_harness_and_falsification_rules():
    src = {"a": perturbed_pair(4, 1, concentration=0.3, how="mix", strength=0.1, seed=1),
           "b": perturbed_pair(4, 1, concentration=0.3, how="mix", strength=0.6, seed=2)}
    methods = (R.SD_1, R.VOTE_UNIF, R.ECSV_LITE)
    rows = mc.harness(src, methods, (2, 4), (2,), (R.CLEAN,), n_steps=8000, seed=3, tv_runs=2000)
    assert len(rows) == 2 * (1 + 2 * 2)
    assert all(r["tv_chi2_p"] > 1e-6 for r in rows)  # match reading and SD-1: lossless
    dec = mc.falsification(rows, variants=("ECSV-lite",))
    assert dec["rule1"]["n_configs"] == 2
    for c in dec["configs"]:
        # under the matching reading the output is exactly p for both: the cross-entropy to p
        # cannot improve, and the accepted length is far below SD-1's: rule 1 rejects
        assert c["n_ce_down"] == 0 and c["rule1"] == "rejected"
    # the exact harness gives the same numbers within the Monte Carlo error
    exact = ex.harness(src, methods, (2, 4), (2,), (R.CLEAN,))
    for r, e in zip(rows, exact):
        assert (r["method"], r["B"]) == (e["method"], e["B"])
        assert abs(r["accepted_length"].value - e["accepted_length"]) < 6 * r["accepted_length"].se + 0.01


def test_falsification_rule_logic():
    """Decision rules on a synthetic table: improving both metrics on 2 sources avoids the
    rejection; one metric alone does not; Vote-unif 'matches' unless ECSV beats it by > 1%."""
    E = mc.Estimate

    def row(src, meth, acc, ce, B=2):
        return {"source": src, "drafter": "clean", "B": B, "k": 2, "method": meth,
                "accepted_length": E(acc, 0.001, 1000, ""), "ce_per_token": E(ce, 0.001, 1000, ""),
                "vtpo_parallel": E(1.0, 0.0, 1000, "")}

    rows = []
    for src in ("a", "b", "c"):
        rows += [row(src, "SD-1", 1.0, 1.0), row(src, "Vote-unif", 1.2, 0.9)]
    rows += [row("a", "ECSV-lite", 1.5, 0.8), row("b", "ECSV-lite", 1.5, 0.8), row("c", "ECSV-lite", 1.5, 1.2)]
    dec = mc.falsification(rows, variants=("ECSV-lite",))
    c = dec["configs"][0]
    assert c["n_improves"] == 2 and c["rule1"] == "survives" and c["n_beats_vote"] == 3 and c["rule2"] == "not-revise"
    rows2 = [r for r in rows if r["method"] != "ECSV-lite"]
    rows2 += [row(s, "ECSV-lite", 1.5, 1.0) for s in ("a", "b", "c")]   # accepted length only
    c2 = mc.falsification(rows2, variants=("ECSV-lite",))["configs"][0]
    assert c2["n_improves"] == 0 and c2["reject"] and c2["n_accepted_up"] == 3
    assert c2["rule1"] == "undetermined"   # CE equal: neither better nor worse, so not definitively rejected
    rows4 = [r for r in rows if r["method"] != "ECSV-lite"]
    rows4 += [row(s, "ECSV-lite", 0.5, 1.0) for s in ("a", "b", "c")]    # accepted length worse
    c4 = mc.falsification(rows4, variants=("ECSV-lite",))["configs"][0]
    assert c4["rule1"] == "rejected" and c4["rule2"] == "revise"
    rows3 = [r for r in rows if r["method"] != "ECSV-lite"]
    rows3 += [row(s, "ECSV-lite", 1.205, 0.8) for s in ("a", "b", "c")]  # within 1% of the vote
    c3 = mc.falsification(rows3, variants=("ECSV-lite",))["configs"][0]
    assert c3["revise"] and c3["n_beats_vote"] == 0 and c3["rule2"] == "revise"


VARIED = random_pair(4, 1, concentration=0.3, seed=7)   # rows of very different entropies


def _kernel_fuse_all(setup, s0):
    """The kernel's fusion and the exact engine's on every branch tuple (tests/_ecsv.py)."""
    tok, kernel, exact = kernel_fuse_all(setup, s0)
    return kernel, exact


@pytest.mark.parametrize("method", (R.VOTE_UNIF, R.ECSV_LITE, R.ECSV_BRANCHWISE, R.ecsv_spot(1), R.ecsv_spot(2),
                                    R.ECSV_SOFT, R.replace(R.ECSV_SOFT, name="soft λ=4", lam=4.0),
                                    R.SPOT_LEAST, R.INVERTED_WEIGHTS), ids=lambda m: m.name)
@pytest.mark.parametrize("pair,B,k", [(VARIED, 3, 2), (VARIED, 2, 4), (MIX, 3, 3)], ids=("V4-B3k2", "V4-B2k4", "V3-B3k3"))
def test_kernel_fusion_equals_exact_on_every_tuple(method, pair, B, k):
    """Deterministic: the kernel's fusion equals the exact engine's on every branch tuple (a
    reliability-scale slip changes only a few tuples, too few for a statistical test)."""
    got, want = _kernel_fuse_all(R.Setup(pair, method, B, k), 1)
    bad = np.flatnonzero((got != want).any(axis=1))
    assert bad.size == 0, f"{bad.size} tuples differ, first {bad[:3]}"


def test_scale_slips_change_some_fusions():
    """The instance above is sensitive to the slips the mutants plant: agreement over B instead
    of B − 1, a branchwise sum instead of a mean, and the top-M candidates at λ = 4."""
    from dataclasses import replace
    def fused(m, B, k):
        s = R.Setup(VARIED, m, B, k)
        tok, st, _ = ex._enumerate(s, 0)
        return ex.fuse(s, tok, st, 0)[0]
    assert (fused(R.ECSV_LITE, 3, 2) != fused(replace(R.ECSV_LITE, alpha=(1.0, 2 / 3, 0.0, 0.0)), 3, 2)).any()
    assert (fused(R.ECSV_BRANCHWISE, 3, 2) != fused(replace(R.ECSV_BRANCHWISE, gamma=2.0), 3, 2)).any()
    soft = replace(R.ECSV_SOFT, lam=4.0)
    assert (fused(soft, 2, 4) != fused(replace(soft, top_m=0), 2, 4)).any()
