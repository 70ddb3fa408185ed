"""validate: logit traces, replay and evidence rows (CLAIMS sd.acceptance, sd.expected_tokens,
sd.walltime, evidence mode ``logits``) on synthetic logits; no torch needed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spectheory.closed_forms.sd import expected_tokens, walltime_improvement
from spectheory.distributions import DistributionError, softmax
from spectheory.divergences import overlap
from spectheory.rules.sd import BROKEN_SWAPPED_RATIO
from spectheory.judge.evidence import Evidence
from spectheory.validate import LogitTrace, capture_logits, compare, replay, trace_exact_tokens
from spectheory.validate.capture import FORMAT_VERSION

Z_CRIT_0001 = 3.2905267314919255  # two-sided normal critical value at level 0.001


def synthetic_trace(T=50, V=40, noise=1.0, seed=0, name="synthetic") -> LogitTrace:
    rng = np.random.default_rng(seed)
    tl = rng.normal(0.0, 2.0, (T, V))
    dl = tl + rng.normal(0.0, noise, (T, V))
    toks = np.array([rng.choice(V, p=row) for row in softmax(tl)])
    return LogitTrace(tl, dl, toks, name=name)


def constant_trace(T=30, V=25, seed=1) -> LogitTrace:
    rng = np.random.default_rng(seed)
    zp, zq = rng.normal(0, 1.5, V), rng.normal(0, 1.5, V)
    return LogitTrace(np.tile(zp, (T, 1)), np.tile(zq, (T, 1)), np.zeros(T, dtype=np.int64))


# --- LogitTrace ---------------------------------------------------------------------------

def test_npz_round_trip(tmp_path):
    tr = synthetic_trace(T=7, V=11)
    tl = tr.target_logits.astype(np.float32)
    tl[2, 3] = -np.inf  # masked token is allowed
    tr = LogitTrace(tl, tr.draft_logits, tr.tokens, name="rt", temperature=0.7)
    path = tr.save(tmp_path / "trace.bin")
    assert path == tmp_path / "trace.bin" and path.exists()  # no ".npz" appended
    back = LogitTrace.load(path)
    assert back.target_logits.dtype == np.float32
    np.testing.assert_array_equal(back.target_logits, tl)
    np.testing.assert_array_equal(back.draft_logits, tr.draft_logits)
    np.testing.assert_array_equal(back.tokens, tr.tokens)
    assert (back.name, back.temperature, back.T, back.V) == ("rt", 0.7, 7, 11)
    with np.load(path) as z:
        assert int(z["format_version"]) == FORMAT_VERSION


def test_load_rejects_unknown_format(tmp_path):
    tr = synthetic_trace(T=3, V=5)
    np.savez(tmp_path / "old.npz", format_version=99, target_logits=tr.target_logits,
             draft_logits=tr.draft_logits, tokens=tr.tokens, name="x", temperature=1.0)
    with pytest.raises(ValueError, match="format version 99"):
        LogitTrace.load(tmp_path / "old.npz")
    np.savez(tmp_path / "bare.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="format_version"):
        LogitTrace.load(tmp_path / "bare.npz")


def test_bad_inputs():
    tr = synthetic_trace(T=5, V=6)
    tl, dl, tok = tr.target_logits, tr.draft_logits, tr.tokens
    bad = tl.copy()
    bad[1, 2] = np.nan
    with pytest.raises(DistributionError, match="NaN"):
        LogitTrace(bad, dl, tok)
    bad = dl.copy()
    bad[0, 0] = np.inf
    with pytest.raises(DistributionError, match=r"\+inf"):
        LogitTrace(tl, bad, tok)
    bad = tl.copy()
    bad[3] = -np.inf
    with pytest.raises(DistributionError, match="every logit is -inf"):
        LogitTrace(bad, dl, tok)
    with pytest.raises(DistributionError, match="mismatched vocabularies"):
        LogitTrace(tl, dl[:, :-1], tok)
    with pytest.raises(DistributionError, match="mismatched lengths"):
        LogitTrace(tl, dl[:-1], tok)
    with pytest.raises(DistributionError, match="tokens must have shape"):
        LogitTrace(tl, dl, tok[:-1])
    with pytest.raises(DistributionError, match="tokens must lie"):
        LogitTrace(tl, dl, np.full(5, 6))
    with pytest.raises(DistributionError, match=r"\(T, V\)"):
        LogitTrace(tl[0], dl[0], tok[:1])
    with pytest.raises(ValueError, match="exceeds the trace length"):
        replay(tr, 6)
    with pytest.raises(ValueError, match="gamma"):
        replay(tr, 0)


# --- capture: only the lazy-import path is testable without weights ----------------------

def test_capture_without_torch_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"pip install 'spectheory\[validate\]'"):
        capture_logits(None, None, None, "Hello", 4)


def test_numpy_modules_do_not_import_torch():
    # (blocking torch with sys.modules['torch'] = None would break scipy.stats, which probes
    # sys.modules for array libraries; check instead that nothing pulled torch in)
    code = ("import sys, validate, spectheory.validate.replay, spectheory.validate.compare, spectheory.validate.capture\n"
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- replay -------------------------------------------------------------------------------

@pytest.mark.parametrize("gamma", [1, 2, 3, 5, 8])
def test_constant_alpha_trace_exact_equals_closed_form(gamma):
    tr = constant_trace()
    p, q = tr.probs()
    alpha = float(overlap(p[0], q[0]))
    assert 0.05 < alpha < 0.95
    rep = replay(tr, gamma, n_mc=10)
    np.testing.assert_allclose(rep.beta, alpha, rtol=0, atol=1e-15)
    closed = (1 - alpha ** (gamma + 1)) / (1 - alpha)
    np.testing.assert_allclose(rep.exact_tokens_by_start, closed, rtol=0, atol=1e-12)
    assert abs(rep.exact_tokens - closed) < 1e-12
    assert abs(rep.predicted_tokens - closed) < 1e-12
    assert rep.n_starts == tr.T - gamma + 1


def test_trace_exact_matches_direct_sum():
    beta = np.random.default_rng(3).uniform(0, 1, 17)
    gamma = 4
    e = trace_exact_tokens(beta, gamma)
    direct = [1 + sum(np.prod(beta[t:t + k]) for k in range(1, gamma + 1)) for t in range(17 - gamma + 1)]
    np.testing.assert_allclose(e, direct, rtol=1e-14)


def test_replay_beta_uses_temperature():
    tr = synthetic_trace(T=6, V=9)
    rep = replay(tr, 2, temperature=2.0, n_mc=5)
    np.testing.assert_allclose(rep.beta, overlap(softmax(tr.target_logits, 2.0), softmax(tr.draft_logits, 2.0)))
    assert rep.alpha_hat == pytest.approx(rep.beta.mean())


def test_mc_replay_agrees_with_claims():
    # T = 50 positions × n_mc = 2000 draws = 100,000 first-draft verifications; two-sided
    # z-test at level 0.001 with the exact null variance Σβ_t(1−β_t)/(T²·n_mc) (se ≈ 0.0015).
    # The same run gives 47 × 2000 = 94,000 full iterations (γ = 4) compared with trace-exact.
    tr = synthetic_trace(T=50, V=40, seed=7)
    rep = replay(tr, 4, n_mc=2000, seed=12345)
    assert rep.mc_attempts == 100_000 and rep.mc_iterations == 94_000
    assert rep.beta.std() > 0.02  # β really varies along this trace
    z_acc = (rep.mc_acceptance - rep.alpha_hat) / rep.mc_acceptance_se_null
    assert abs(z_acc) < Z_CRIT_0001, z_acc
    z_tok = (rep.mc_tokens - rep.exact_tokens) / rep.mc_tokens_se
    assert abs(z_tok) < Z_CRIT_0001, z_tok


def test_mc_replay_catches_swapped_ratio():
    # Negative control: accept w.p. min(1, q/p) changes the acceptance rate; same test, same n.
    tr = synthetic_trace(T=50, V=40, seed=7)
    rep = replay(tr, 4, n_mc=2000, seed=12345, rule=BROKEN_SWAPPED_RATIO)
    z = (rep.mc_acceptance - rep.alpha_hat) / rep.mc_acceptance_se_null
    assert abs(z) > Z_CRIT_0001, z


def test_replay_is_reproducible():
    tr = synthetic_trace(T=12, V=10)
    a, b = replay(tr, 3, n_mc=50, seed=5), replay(tr, 3, n_mc=50, seed=5)
    assert (a.mc_accepts, a.mc_tokens) == (b.mc_accepts, b.mc_tokens)


# --- compare ------------------------------------------------------------------------------

def test_compare_evidence():
    """The evidence drops into a report: z-test at α = 1e-3 on 40 × 500 = 20,000 first-draft
    verifications (se ≈ 0.003, detectable ≈ 0.014 at power 0.9, tolerance 0.01 → the check
    is honest about being underpowered or passes); the swapped-ratio control is rejected."""
    tr = synthetic_trace(T=40, V=30, seed=2, name="synth-40")
    ev = compare(tr, 3, 0.1, n_mc=500, seed=1)
    assert set(ev) == {"sd.acceptance", "sd.expected_tokens", "sd.walltime"}
    for items in ev.values():
        for e in items:
            assert isinstance(e, Evidence) and e.mode == "logits" and e.instance.startswith("synth-40")
            json.dumps(e.to_json())
    (acc,) = ev["sd.acceptance"]
    assert acc.n == 40 * 500 and acc.p_value > 0.001 and acc.outcome in ("pass", "underpowered")
    assert acc.ci_low < acc.measured < acc.ci_high
    beta = overlap(*tr.probs())
    assert acc.claimed == pytest.approx(beta.mean())
    info, mc = ev["sd.expected_tokens"]
    assert info.outcome == "info"
    assert info.claimed == pytest.approx(expected_tokens(beta.mean(), 3))
    assert info.measured == pytest.approx(trace_exact_tokens(beta, 3).mean())
    assert info.n == 38 and mc.p_value > 0.001
    (wt,) = ev["sd.walltime"]
    assert wt.claimed == pytest.approx(walltime_improvement(beta.mean(), 3, 0.1))
    assert wt.measured == pytest.approx(info.measured / 1.3)
    bad = compare(tr, 3, 0.1, n_mc=500, seed=1, rule=BROKEN_SWAPPED_RATIO)["sd.acceptance"][0]
    assert bad.outcome == "fail"
    with pytest.raises(ValueError, match="cost ratio"):
        compare(tr, 3, -1.0, n_mc=2)


def test_sdrun_conditional_law_of_tau():
    """E[τ+1 | drafts] and Var[τ | drafts] against the law P(τ = k) = Π_{j≤k} a_j (1 − a_{k+1})."""
    from spectheory.validate.specdec import SDRun
    rng = np.random.default_rng(4)
    a = rng.uniform(0, 1, (6, 3))
    a[0] = [1.0, 1.0, 1.0]
    a[1] = [0.0, 0.7, 0.2]
    nan = np.full((6, 3), np.nan)
    run = SDRun(3, np.zeros(6, dtype=np.int64), np.ones(6, dtype=np.int64), a, nan, nan, np.zeros(6),
                np.full(6, 4), np.zeros(6), np.zeros(6, dtype=np.int64))
    mean, var = run.conditional_tokens()
    for i in range(6):
        law = [np.prod(a[i, :k]) * (1 - a[i, k]) for k in range(3)] + [np.prod(a[i])]
        assert sum(law) == pytest.approx(1.0)
        ks = np.arange(4)
        assert mean[i] == pytest.approx(1 + ks @ law, abs=1e-14)
        assert var[i] == pytest.approx(ks ** 2 @ law - (ks @ law) ** 2, abs=1e-14)
    assert (mean[0], var[0], mean[1], var[1]) == (4.0, 0.0, 1.0, 0.0)


def test_replay_null_standard_error_is_the_binomial_one_on_a_constant_trace():
    """β_t = α at every position: the first-draft acceptance frequency over T·n_mc attempts has
    null standard error sqrt(α(1 − α)/(T·n_mc)) (hand formula, not the code's)."""
    tr = constant_trace()
    rep = replay(tr, 2, n_mc=40, seed=0)
    a = float(rep.beta_mc[0])
    assert rep.mc_attempts == tr.T * 40
    assert rep.mc_acceptance_se_null == pytest.approx(np.sqrt(a * (1 - a) / (tr.T * 40)), rel=1e-12)


def test_replay_draws_every_depth_of_the_first_iterations():
    """p = q (β = 1 everywhere): every drafted token is accepted, so every iteration, the ones
    starting at positions 0..γ−2 included, emits γ + 1 tokens and every first draft is accepted."""
    rng = np.random.default_rng(0)
    z = rng.normal(0.0, 1.0, (6, 7))
    rep = replay(LogitTrace(z, z.copy(), np.zeros(6, dtype=np.int64)), 3, n_mc=20, seed=1)
    assert rep.mc_accepts == rep.mc_attempts == 6 * 20
    assert rep.mc_tokens == 4.0 and rep.mc_iterations == 4 * 20


def test_summary_row_by_hand():
    """analysis.summarize on a hand-made run: γ = 2, β = ½ along the trace; one SD run with
    τ = (0, 1, 2, 2), draft calls 0.1 s, target calls scoring γ + 1 = 3 tokens 0.3 s (one
    2-token call 0.9 s), verifier 0.01 s, autoregressive probes 0.2 s."""
    from spectheory.validate.analysis import summarize
    from spectheory.validate.experiment import Run
    from spectheory.validate.trace import CompactTrace
    from spectheory.validate.specdec import SDRun
    n, g = 4, 2
    sd = SDRun(gamma=g, tau=np.array([0, 1, 2, 2]), emitted=np.array([1, 2, 3, 3]),
               accept_prob=np.full((n, g), 0.4), beta=np.full((n, g), 0.4), draft_call_s=np.full((n, g), 0.1),
               target_call_s=np.array([0.3, 0.3, 0.3, 0.9]), target_call_k=np.array([3, 3, 3, 2]),
               verify_s=np.full(n, 0.01), tokens=np.zeros(9, dtype=np.int64), ar_probe_s=np.full(n, 0.2),
               meta={"category": "code"})
    P = np.tile([0.75, 0.25], (8, 1))  # β = Σ min(p, q) = ½ at every position
    trace = CompactTrace.from_distributions(P, P[:, ::-1].copy(), np.zeros(8, dtype=np.int64), top_k=2,
                                            target_call_s=np.full(8, 0.2), draft_call_s=np.full(8, 0.1),
                                            meta={"category": "code"})
    assert trace.category == "code" and np.allclose(trace.beta, 0.5)
    run = Run(Path("by-hand"), {"gammas": [g]}, [trace], {g: [sd]})
    (row,) = summarize(run)
    closed = (1 - 0.5 ** 3) / 0.5
    assert row["tokens_closed_form"] == pytest.approx(closed, rel=1e-12)
    assert row["tokens_measured"] == pytest.approx(2.25, rel=1e-12)
    assert row["accept_first_measured"] == pytest.approx(0.75, rel=1e-12)
    assert row["c"] == pytest.approx(0.5, rel=1e-12) and row["t_target_verify"] == pytest.approx(0.3, rel=1e-12)
    assert row["speedup_paper"] == pytest.approx(closed / (g * 0.5 + 1), rel=1e-12)
    assert row["speedup_profile"] == pytest.approx(closed * 0.2 / (g * 0.1 + 0.3 + 0.01), rel=1e-12)


def test_compare_on_a_draft_identical_to_the_target():
    """p = q at every position (self-speculation): β = 1 up to rounding, every draft accepted.
    Σ min(p, q) may round a few ulps above 1; the evidence must still be computed (it was a
    NaN null standard error and a ValueError) and hold."""
    z = np.random.default_rng(0).normal(0.0, 1.0, (6, 7))
    tr = LogitTrace(z, z.copy(), np.zeros(6, dtype=np.int64))
    rep = replay(tr, 3, n_mc=20, seed=1)
    assert (rep.beta_mc <= 1.0).all() and 0.0 <= rep.mc_acceptance_se_null < 1e-8
    ev = compare(tr, 3, 0.5, n_mc=20)
    assert [e.outcome for e in ev["sd.acceptance"]] == ["pass"]
    assert [e.outcome for e in ev["sd.expected_tokens"] if e.outcome != "info"] == ["pass"]


def _nucleus_by_full_sort(p, top_p):
    """The top-p filter written out with one full stable sort per row (the reference)."""
    order = np.argsort(-p, axis=-1, kind="stable")
    ps = np.take_along_axis(p, order, axis=-1)
    keep = np.zeros(p.shape, dtype=bool)
    np.put_along_axis(keep, order, np.cumsum(ps, axis=-1) - ps < top_p, axis=-1)
    q = np.where(keep, p, 0.0)
    return q / q.sum(axis=-1, keepdims=True)


def test_top_p_matches_the_full_sort_bit_for_bit():
    """sampling_probs' top-p sorts only the candidates above the m-th largest probability
    (ties included); it must keep exactly the tokens the full stable sort keeps, at every
    top_p, on peaked rows (small nucleus), flat rows (fallback), ties and -inf logits."""
    from spectheory.validate.trace import sampling_probs
    rng = np.random.default_rng(2)
    for trial in range(60):
        V = int(rng.choice([3, 2000, 40_000]))
        z = rng.normal(0.0, float(rng.choice([0.5, 4.0, 12.0])), (2, V))
        if trial % 3 == 0:
            z = np.round(z)
        if trial % 4 == 0:
            z[:, rng.integers(0, V, V // 3)] = -np.inf
        base = sampling_probs(z, 1.0)
        # top_p exactly at a cumulative mass of the sorted row: the boundary case
        srt = np.sort(base[0])[::-1]
        for top_p in (0.3, 0.9, 0.99, 1.0, float(np.cumsum(srt)[min(5, V - 1)]), float(rng.random())):
            if not 0 < top_p <= 1:
                continue
            got = sampling_probs(z, 1.0, top_p=top_p)
            assert got.tobytes() == _nucleus_by_full_sort(base, top_p).tobytes(), (trial, V, top_p)
