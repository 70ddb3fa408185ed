"""The fast Monte Carlo path (alias tables, lazy drafting, in-kernel xoshiro256++ streams).

Three kinds of agreement with the reference (uniforms-in) kernel, which is itself bit-identical
to its NumPy twin (tests/test_sd_kernel.py):

* exact, where the layout allows: a pure-Python twin of the fast path that replays the same
  xoshiro256++ streams gives identical output; instances whose outcome does not depend on
  how a row is sampled (p = q, disjoint supports, V = 1) give the same τ under both methods;
* statistical: chi-square of the fast path's τ and first emitted tokens against the exact
  enumeration (the law the reference path is tested against), with a negative control: a
  fast path fed a wrong residual table / wrong acceptance table must be rejected by the
  same test;
* independent of the thread count (numba.set_num_threads 1 vs 2).
"""
import dataclasses

import numba
import numpy as np
import pytest
from numba import njit

from spectheory.judge import stats
from spectheory._kernels import sd as K
from spectheory._kernels.core import build_alias, next_u64
from spectheory.exact import sd as ex
from spectheory.montecarlo import sd as mc
from spectheory.pairs import aligned_pair, pair_from_tables, perturbed_pair, random_pair
from spectheory.rng import stream_states
from spectheory.rules.sd import BROKEN_NO_BONUS, BROKEN_RESIDUAL_P, BROKEN_SWAPPED_RATIO, STANDARD

ALPHA = 1e-3
M64 = (1 << 64) - 1


# --- a pure-Python twin of the fast path ------------------------------------------------------

def _rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


def py_next_u64(s):
    """xoshiro256++ (Blackman & Vigna 2019, reference C code), Python ints."""
    result = (_rotl((s[0] + s[3]) & M64, 23) + s[0]) & M64
    t = (s[1] << 17) & M64
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


def py_next_double(s):
    return float(py_next_u64(s) >> 11) * 2.0 ** -53


def py_alias(prob, alias, row, u):
    V = prob.shape[1]
    x = u * V
    j = min(int(x), V - 1)
    return j if x - j < prob[row, j] else int(alias[row, j])


def py_next_state(t, s, x):
    return (s * t.V + x) % t.S


def py_fast_iteration(t, st, s, gamma):
    out = []
    for i in range(gamma):
        x = py_alias(t.q_prob, t.q_alias, t.qrow[s], py_next_double(st))
        k = t.pqrow[s]
        a = t.accept[k, x]
        if a < 1.0 and py_next_double(st) >= a:
            y = py_alias(t.r_prob, t.r_alias, k, py_next_double(st))
            return out + [y], i, py_next_state(t, s, y)
        out.append(x)
        s = py_next_state(t, s, x)
    if t.bonus:
        y = py_alias(t.p_prob, t.p_alias, t.prow[s], py_next_double(st))
        return out + [y], gamma, py_next_state(t, s, y)
    return out, gamma, s


@njit
def _kernel_u64(st, n):
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = next_u64(st)
    return out


def test_xoshiro_matches_reference_and_known_answer():
    """Known answer of xoshiro256++ from state (1, 2, 3, 4): first output rotl(1 + 4, 23) + 1
    = 41943041; the kernel generator equals the Python transcription for 1,000 outputs."""
    s = [1, 2, 3, 4]
    assert py_next_u64(s) == 41943041
    st = np.array([1, 2, 3, 4], dtype=np.uint64)
    ref = [1, 2, 3, 4]
    got = _kernel_u64(st, 1000)
    assert [int(v) for v in got] == [py_next_u64(ref) for _ in range(1000)]
    assert [int(v) for v in st] == ref  # the state advanced in place


PAIRS = {
    "markov1-V3": lambda: perturbed_pair(3, 1, how="mix", strength=0.4, seed=1),
    "markov2-V3": lambda: perturbed_pair(3, 2, how="temperature", strength=2.0, seed=2),
    "topk": lambda: perturbed_pair(5, 1, how="top_k", strength=2, seed=3),
    "iid-V4": lambda: random_pair(4, 0, seed=0),
    "V60-shared-rows": lambda: aligned_pair(60, 1, "weak", seed=4, n_rows=7),
}


@pytest.mark.parametrize("name", PAIRS)
@pytest.mark.parametrize("rule", [STANDARD, BROKEN_SWAPPED_RATIO, BROKEN_NO_BONUS], ids=lambda r: r.name)
@pytest.mark.parametrize("restart", [False, True])
def test_fast_kernel_identical_to_python_twin(name, rule, restart):
    """Exact: the fast kernel's output (tokens, τ, final state, per-state counts) equals the
    pure-Python twin replaying the same xoshiro256++ streams (3 chains / stream blocks)."""
    pair = PAIRS[name]()
    gamma, n = 3, 700
    prep = mc.prepare(pair, rule)
    kw = dict(restart=True) if restart else dict(chains=3)
    old = mc.STREAM_BLOCK
    mc.STREAM_BLOCK = 256  # several streams with restart=True
    try:
        r = mc.simulate(pair, gamma, n, rule=rule, seed=5, record_tokens=True, count_states=True, **kw)
    finally:
        mc.STREAM_BLOCK = old
    bounds = np.r_[0:n:256, n] if restart else np.array([n * c // 3 for c in range(4)])
    states = [[int(w) for w in row] for row in stream_states(5, len(bounds) - 1)]
    t = prep.tables
    att = np.zeros(pair.n_states, dtype=np.int64)
    acc = np.zeros_like(att)
    s = 0
    for c in range(len(bounds) - 1):
        s = 0
        for it in range(bounds[c], bounds[c + 1]):
            if restart:
                s = 0
            s0 = s
            block, tau, s = py_fast_iteration(t, states[c], s, gamma)
            assert r.tau[it] == tau and r.n_emitted[it] == len(block), (c, it)
            assert list(r.tokens[it, :len(block)]) == block and (r.tokens[it, len(block):] == -1).all()
            for j in range(min(tau + 1, gamma)):  # states visited by the verification attempts
                att[s0] += 1
                acc[s0] += j < tau
                if j < tau:
                    s0 = py_next_state(t, s0, block[j])
    assert r.final_state == s
    np.testing.assert_array_equal(r.attempts, att)
    np.testing.assert_array_equal(r.accepts, acc)


@pytest.mark.parametrize("name,gamma,want_tau", [
    ("equal", 3, 3),      # p = q: every draft accepted
    ("disjoint", 3, 0),   # disjoint supports: first draft always rejected
    ("V1", 2, 2),         # one-token vocabulary
])
def test_fast_and_reference_agree_exactly_where_layout_does_not_matter(name, gamma, want_tau):
    pair = {"equal": lambda: pair_from_tables([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]),
            "disjoint": lambda: pair_from_tables([0.5, 0.5, 0.0], [0.0, 0.0, 1.0]),
            "V1": lambda: pair_from_tables([1.0], [1.0])}[name]()
    fast = mc.simulate(pair, gamma, 5000, seed=1, record_tokens=True)
    ref = mc.simulate(pair, gamma, 5000, seed=1, record_tokens=True, method="reference")
    np.testing.assert_array_equal(fast.tau, ref.tau)
    np.testing.assert_array_equal(fast.n_emitted, ref.n_emitted)
    assert (fast.tau == want_tau).all()
    if name == "disjoint":  # the correction comes from norm(p − q) = p: tokens 0 and 1 only
        assert set(np.unique(fast.tokens[:, 0])) == {0, 1}


def _broken_tables(pair, *, residual=None, accept=None):
    """A fast path fed wrong tables (the negative controls of the statistical tests)."""
    prep = mc.prepare(pair)
    t = prep.tables
    pairs_p = np.array([t.prow[np.flatnonzero(t.pqrow == k)[0]] for k in range(t.accept.shape[0])])
    pairs_q = np.array([t.qrow[np.flatnonzero(t.pqrow == k)[0]] for k in range(t.accept.shape[0])])
    P, Q = pair.target.rows[pairs_p], pair.draft.rows[pairs_q]
    if residual == "p":
        rp, ra = build_alias(P)
        t = t._replace(r_prob=rp, r_alias=ra)
    if accept == "swapped":
        t = t._replace(accept=BROKEN_SWAPPED_RATIO.accept_probability(P, Q))
    return dataclasses.replace(prep, tables=t)


def test_fast_first_tokens_match_target_law_and_reject_wrong_residual():
    """Chi-square GOF of the first 4 emitted tokens (81 sequences) from 300,000 runs of the
    fast path against p^4; α = 1e-3; detectable w ≈ 0.021 (asserted ≤ 0.025). Negative
    control: the same fast kernel fed residual tables of norm(p) instead of norm(max(p−q,0))
    (exact TV to p^4 is 0.03) must be rejected by the same test. The reference path runs the
    same test and must pass too (both paths agree with the exact law)."""
    pair = perturbed_pair(3, 1, how="mix", strength=0.6, seed=6)
    target = pair.target.sequence_probs(4)
    idx_w = 3 ** np.arange(3, -1, -1)
    cases = (("fast", None, "pass"), ("reference", None, "pass"),
             ("fast", _broken_tables(pair, residual="p"), "fail"))
    for method, prep, want in cases:
        toks = mc.sample_first_tokens(pair, 3, 4, 300_000, seed=2, method=method, prepared=prep)
        ev = stats.chisquare_gof("t", np.bincount(toks @ idx_w, minlength=81), target,
                                 alpha=ALPHA, tolerance_w=0.025)
        assert ev.outcome == want, (method, want, ev)
        assert ev.detectable <= 0.025


def test_fast_tau_law_matches_exact_and_rejects_wrong_acceptance():
    """Chi-square GOF of τ (4 cells) from 200,000 i.i.d. fast-path iterations against the
    exact enumeration; α = 1e-3; detectable w ≈ 0.011 (asserted ≤ 0.02). Negative control:
    the fast kernel fed acceptance tables min(1, q/p) must be rejected."""
    pair = perturbed_pair(3, 2, how="mix", strength=0.5, seed=5)
    exact = ex.tau_distribution(pair, 3)
    for prep, want in ((None, "pass"), (_broken_tables(pair, accept="swapped"), "fail")):
        r = mc.simulate(pair, 3, 200_000, seed=1, restart=True, prepared=prep)
        ev = stats.chisquare_gof("t", np.bincount(r.tau, minlength=4), exact, alpha=ALPHA, tolerance_w=0.02)
        assert ev.outcome == want, (want, ev)
        assert ev.detectable < 0.012


def test_results_do_not_depend_on_thread_count():
    pair = aligned_pair(20, 1, "weak", seed=3)
    runs = {}
    default = numba.get_num_threads()
    try:
        for th in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(th)
            runs[th] = (mc.simulate(pair, 4, 3 * mc.STREAM_BLOCK + 17, seed=9, restart=True, count_states=True),
                        mc.simulate(pair, 4, 50_000, seed=9, chains=5, record_tokens=True),
                        mc.sample_first_tokens(pair, 2, 5, 3 * mc.RUN_BLOCK + 5, seed=9))
    finally:
        numba.set_num_threads(default)
    first = runs[1]
    for th, (a, b, c) in runs.items():
        np.testing.assert_array_equal(a.tau, first[0].tau)
        np.testing.assert_array_equal(a.attempts, first[0].attempts)
        np.testing.assert_array_equal(b.tokens, first[1].tokens)
        assert b.final_state == first[1].final_state
        np.testing.assert_array_equal(c, first[2])


def test_per_state_counters_sum_over_every_group_of_streams(monkeypatch):
    """With count_states, the streams run in groups of COUNT_GROUP kernel calls (bounded counter
    memory); the counters must add up over all groups: 1,001 i.i.d. iterations in 11 streams of
    100, groups of 2 streams, give the counts of one 64-stream group exactly, and they agree
    with τ (attempts = Σ min(τ + 1, γ), accepts = Σ τ)."""
    pair = perturbed_pair(3, 1, how="mix", strength=0.4, seed=1)
    monkeypatch.setattr(mc, "STREAM_BLOCK", 100)
    one = mc.simulate(pair, 3, 1001, seed=4, restart=True, count_states=True)
    monkeypatch.setattr(mc, "COUNT_GROUP", 2)
    grouped = mc.simulate(pair, 3, 1001, seed=4, restart=True, count_states=True)
    np.testing.assert_array_equal(grouped.tau, one.tau)
    np.testing.assert_array_equal(grouped.attempts, one.attempts)
    np.testing.assert_array_equal(grouped.accepts, one.accepts)
    assert grouped.attempts.sum() == np.minimum(grouped.tau + 1, 3).sum()
    assert grouped.accepts.sum() == grouped.tau.sum()


def test_first_tokens_kernel_never_leaves_uninitialised_rows():
    """γ = 0 without a bonus token emits nothing: the reference kernel must set the run to −1
    and report it (the public API refuses γ = 0 before reaching the kernel)."""
    pair = random_pair(3, 0, seed=1)
    prep = mc.prepare(pair, BROKEN_NO_BONUS)
    out = np.full((4, 3), 12345, dtype=np.int64)
    u = np.random.default_rng(0).random((4, 3, 1))
    short = K.sd_first_tokens(prep.reference, u, 3, 0, 0, out)
    assert short == 4 and (out == -1).all()
    # and with γ ≥ 1 every run is complete
    toks = mc.sample_first_tokens(pair, 1, 6, 500, rule=BROKEN_NO_BONUS, seed=0, method="reference")
    assert toks.min() >= 0


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(gamma=0), ValueError, "gamma"),
    (dict(gamma=2.5), ValueError, "gamma"),
    (dict(gamma=True), TypeError, "gamma"),
    (dict(n_iterations=-1), ValueError, "n_iterations"),
    (dict(start_state=3), ValueError, "start_state"),
    (dict(start_state=-1), ValueError, "start_state"),
    (dict(chains=0), ValueError, "chains"),
    (dict(chains=2, restart=True), ValueError, "chains"),
    (dict(chains=20), ValueError, "chains"),
    (dict(method="slow"), ValueError, "method"),
    (dict(restart="yes"), TypeError, "restart"),
    (dict(count_states=1), TypeError, "count_states"),
    (dict(rule="standard"), TypeError, "SDRule"),
    (dict(seed="abc"), TypeError, "seed"),
    (dict(prepared=object()), TypeError, "prepared"),
])
def test_simulate_validates_every_argument(kwargs, err, match):
    pair = perturbed_pair(3, 1, seed=0)
    args = dict(gamma=2, n_iterations=10)
    args.update(kwargs)
    with pytest.raises(err, match=match):
        mc.simulate(pair, args.pop("gamma"), args.pop("n_iterations"), **args)


def test_other_entry_points_validate_arguments():
    pair = perturbed_pair(3, 1, seed=0)
    other = perturbed_pair(4, 1, seed=0)
    with pytest.raises(ValueError, match="prepared tables are for V=4"):
        mc.simulate(pair, 2, 10, prepared=mc.prepare(other))
    with pytest.raises(ValueError, match="n_tokens"):
        mc.sample_first_tokens(pair, 2, 0, 10)
    with pytest.raises(ValueError, match="n_runs"):
        mc.sample_first_tokens(pair, 2, 3, -5)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        mc.simulate_with_uniforms(pair, 1, np.full((4, 3), 1.5))
    with pytest.raises(ValueError, match="rows for n_iterations"):
        mc.simulate_numpy(pair, 1, 5, uniforms=np.zeros((4, 3)))
    with pytest.raises(TypeError, match="SDRule"):
        mc.prepare(pair, rule=None)
    assert mc.simulate(pair, 2, 0, seed=0).tau.shape == (0,)
