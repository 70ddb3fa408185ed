"""The Numba kernel against the plain-NumPy reference fed the same uniforms (identical
output, not just the same distribution), its emitted law against the exact engine on pairs
whose target and draft have different row maps and Markov orders (γ ≥ 2, several tokens),
seeded determinism and input validation."""
import numpy as np
import pytest

from spectheory import instances as inst
from spectheory.judge import stats
from spectheory._kernels.sd import _search
from spectheory.exact import sd as ex
from spectheory.montecarlo import sd as mc
from spectheory.pairs import aligned_pair, pair_from_tables, perturbed_pair, random_pair
from spectheory.rules.sd import BROKEN_NO_BONUS, BROKEN_RESIDUAL_P, BROKEN_SWAPPED_RATIO, STANDARD

PAIRS = {
    "iid-V4": lambda: random_pair(4, 0, seed=0),
    "markov1-V3": lambda: perturbed_pair(3, 1, how="mix", strength=0.4, seed=1),
    "markov2-V3": lambda: perturbed_pair(3, 2, how="temperature", strength=2.0, seed=2),
    "topk": lambda: perturbed_pair(5, 1, how="top_k", strength=2, seed=3),
    "disjoint": lambda: pair_from_tables([0.5, 0.5, 0.0], [0.0, 0.0, 1.0]),
    "equal": lambda: pair_from_tables([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]),
    "V1": lambda: pair_from_tables([1.0], [1.0]),
    "V200-shared-rows": lambda: aligned_pair(200, 1, "weak", seed=4, n_rows=7),
    # p and q with different row maps: one shared draft row; permuted draft rows; an order-2
    # target with a lifted order-1 n-gram draft
    "ngram0-one-draft-row": lambda: inst.get("markov1-V3-ngram0"),
    "permuted-draft-rows": lambda: inst.get("markov1-V4-permrows"),
    "order2-target-order1-draft": lambda: inst.get("markov2-V3-ngram1"),
}
#: pairs on which reading a table through the other model's row map changes the result
ROW_MAP_PAIRS = ("markov1-V3-ngram0", "markov1-V4-permrows", "markov2-V3-ngram1")
ALPHA = 1e-3
RULES = [STANDARD, BROKEN_RESIDUAL_P, BROKEN_SWAPPED_RATIO, BROKEN_NO_BONUS]


@pytest.mark.parametrize("name", PAIRS)
@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
@pytest.mark.parametrize("restart", [False, True])
def test_kernel_identical_to_numpy_reference(name, rule, restart):
    pair = PAIRS[name]()
    gamma = 3
    u = np.random.default_rng(42).random((3000, 2 * gamma + 1))
    a = mc.simulate_with_uniforms(pair, gamma, u, rule=rule, restart=restart)
    b = mc.simulate_numpy(pair, gamma, 3000, rule=rule, restart=restart, uniforms=u)
    np.testing.assert_array_equal(a.tau, b.tau)
    np.testing.assert_array_equal(a.n_emitted, b.n_emitted)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    assert a.final_state == b.final_state


def test_seeded_determinism_and_chunking():
    pair = PAIRS["markov1-V3"]()
    n = mc.CHUNK + 1234  # crosses a chunk boundary
    a = mc.simulate(pair, 2, n, seed=7, record_tokens=True, method="reference")
    b = mc.simulate(pair, 2, n, seed=7, record_tokens=True, method="reference")
    np.testing.assert_array_equal(a.tokens, b.tokens)
    c = mc.simulate(pair, 2, n, seed=8, record_tokens=True, method="reference")
    assert not np.array_equal(a.tokens, c.tokens)
    # the chunked run is the same stream as one kernel call on the same uniforms
    rng = np.random.default_rng(7)
    u = np.vstack([rng.random((min(mc.CHUNK, n - lo), 5)) for lo in range(0, n, mc.CHUNK)])
    d = mc.simulate_with_uniforms(pair, 2, u)
    np.testing.assert_array_equal(a.tokens, d.tokens)
    assert a.final_state == d.final_state


@pytest.mark.parametrize("method", ["fast", "reference"])
def test_state_counters_are_consistent_with_tau(method):
    pair = PAIRS["markov1-V3"]()
    r = mc.simulate(pair, 4, 20000, seed=1, count_states=True, method=method)
    assert r.accepts.sum() == r.tau.sum()
    assert r.attempts.sum() == np.minimum(r.tau + 1, 4).sum()


def test_zero_mass_draft_tokens_are_never_drafted():
    cdf = np.cumsum([0.0, 0.5, 0.0, 0.5, 0.0])
    for u in (0.0, 0.25, 0.5, 0.75, np.nextafter(1.0, 0.0)):
        assert _search(cdf, u * cdf[-1]) in (1, 3)
    # past-the-end by rounding falls back to the last positive-mass token
    assert _search(cdf, cdf[-1]) == 3
    pair = PAIRS["topk"]()
    r = mc.simulate(pair, 3, 20000, seed=2, record_tokens=True, restart=True)
    # with start state 0, the first drafted token lies in q's support; an accepted first
    # token (tau ≥ 1) must be one of those
    support = np.flatnonzero(pair.draft.conditional(0))
    assert np.isin(r.tokens[r.tau >= 1, 0], support).all()


def test_first_tokens_shape_and_determinism():
    pair = PAIRS["markov2-V3"]()
    a = mc.sample_first_tokens(pair, 2, 5, 1000, seed=3)
    b = mc.sample_first_tokens(pair, 2, 5, 1000, seed=3)
    assert a.shape == (1000, 5) and a.min() >= 0 and a.max() < 3
    np.testing.assert_array_equal(a, b)


def test_bad_arguments():
    pair = PAIRS["iid-V4"]()
    with pytest.raises(ValueError, match="gamma"):
        mc.simulate(pair, 0, 10)
    with pytest.raises(ValueError, match="start_state"):
        mc.simulate(pair, 2, 10, start_state=5)
    with pytest.raises(ValueError, match="uniforms must have shape"):
        mc.simulate_with_uniforms(pair, 2, np.zeros((4, 3)))
    with pytest.raises(TypeError, match="MarkovPair"):
        mc.prepare((pair.target, pair.draft))
    with pytest.raises(TypeError, match="seed"):
        mc.simulate(pair, 2, 10, seed="abc")


def _tv(a, b):
    return 0.5 * float(np.abs(np.asarray(a) - np.asarray(b)).sum())


@pytest.mark.parametrize("method", ["fast", "reference"])
@pytest.mark.parametrize("name", ROW_MAP_PAIRS)
def test_first_tokens_law_on_pairs_with_different_row_maps(name, method):
    """Chi-square GOF of the first N = 4 emitted tokens (V**4 sequences, pooled to ≥ 5
    expected) of 200,000 kernel runs with γ = 3 from the last state, against p^4; α = 1e-3;
    power 0.9 at Cohen's w ≤ 0.03 (asserted). Several iterations are needed for 4 tokens,
    so every drafted, accepted, corrected and bonus token is in the law. Control: the
    residual = norm(p) rule on the same pair, whose exact TV to p^4 is asserted ≥ 0.02,
    must be rejected by the same test."""
    pair = inst.get(name)
    gamma, N, n, start = 3, 4, 200_000, pair.n_states - 1
    target = pair.target.sequence_probs(N, start)
    weights = pair.V ** np.arange(N - 1, -1, -1)
    assert _tv(ex.first_tokens_distribution(pair, gamma, N, BROKEN_RESIDUAL_P, start), target) >= 0.02
    for rule, want in ((STANDARD, "pass"), (BROKEN_RESIDUAL_P, "fail")):
        toks = mc.sample_first_tokens(pair, gamma, N, n, rule=rule, seed=11, start_state=start, method=method)
        ev = stats.chisquare_gof(name, np.bincount(toks @ weights, minlength=pair.V ** N), target,
                                 alpha=ALPHA, tolerance_w=0.03)
        assert ev.outcome == want, (rule.name, ev)
        assert ev.detectable <= 0.03


def _block_codes(tokens, V):
    """One integer per emitted block: Σ_j (token_j + 1)·(V+1)^j (−1 padding contributes 0)."""
    t = np.asarray(tokens, dtype=np.int64) + 1
    return t @ ((V + 1) ** np.arange(t.shape[1], dtype=np.int64))


@pytest.mark.parametrize("method", ["fast", "reference"])
@pytest.mark.parametrize("name", ROW_MAP_PAIRS)
def test_block_law_from_every_start_state(name, method):
    """From every start state, 80,000 i.i.d. kernel iterations (γ = 3): chi-square of the
    emitted block as a whole (accepted drafts plus correction or bonus) against the exact
    engine's block distribution; α = 1e-3 / S (Bonferroni over the start states); power 0.9
    at w ≤ 0.05 (asserted). Control: the swapped-ratio rule must be rejected from at least
    one start state."""
    pair = inst.get(name)
    gamma, n = 3, 80_000
    a = ALPHA / pair.n_states
    rejected = []
    for s in range(pair.n_states):
        law = ex.block_distribution(pair, gamma, start_state=s)
        keys = np.array([list(k) + [-1] * (gamma + 1 - len(k)) for k in law])
        codes = _block_codes(keys, pair.V)
        order = np.argsort(codes)
        codes, probs = codes[order], np.array(list(law.values()))[order]
        for rule in (STANDARD, BROKEN_SWAPPED_RATIO):
            r = mc.simulate(pair, gamma, n, rule=rule, seed=100 + s, start_state=s, restart=True,
                            record_tokens=True, method=method)
            got = _block_codes(r.tokens, pair.V)
            pos = np.minimum(np.searchsorted(codes, got), len(codes) - 1)
            known = codes[pos] == got
            counts = np.append(np.bincount(pos[known], minlength=len(codes)), (~known).sum())
            ev = stats.chisquare_gof(f"{name} s={s}", counts, np.append(probs, 0.0), alpha=a, tolerance_w=0.05)
            if rule is STANDARD:
                assert ev.outcome == "pass", (s, ev)
                assert ev.detectable <= 0.05
            else:
                rejected.append(ev.outcome == "fail")
    assert any(rejected)
