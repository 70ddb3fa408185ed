"""Family replays on compact traces (``logits_evidence(run, alpha)`` of validate/replay_se.py,
replay_ersd.py, replay_multidraft.py).

Two kinds of test:

* on the two measured real runs shipped in data/runs (Qwen2.5-Coder 1.5B target / 0.5B draft,
  T = 1 and greedy): the evidence has the right shape and mode, nothing graded fails, and
  the quantities that are functions of the stored statistics agree exactly with a direct
  computation from those statistics; the SE acceptance test rejects the verify-against-member
  control on real logits;
* on a synthetic compact trace built from full distributions (top-k < V, heavy leftovers): the
  rigorous brackets from slice + leftover contain the true values computed on the full pair.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spectheory.closed_forms import multidraft as cf
from spectheory.closed_forms.ersd import ersd_first_acceptance_sorted
from spectheory.closed_forms.optimum import gamma1_optimum_fast
from spectheory.divergences import harmonic_mean_term
from spectheory.rules.se import BROKEN_VERIFY_MEMBER
from spectheory.validate import replay_ersd, replay_multidraft, replay_se
from spectheory.validate.evidence import family_modules, logits_evidence
from spectheory.validate.experiment import Run, load_run
from spectheory.validate.lumping import pooled
from spectheory.validate.trace import CompactTrace

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
FAMILY_CLAIMS = {"se.acceptance", "se.thm3_2", "se.thm3_1", "ersd.lemma3_1", "zero_order.underestimates",
                 "gbv.optimal", "spectr_gbv.upper_bound", "spectr_gbv.attains"}


@pytest.fixture(scope="module", params=["qwen2.5-coder-T1", "qwen2.5-coder-T0"])
def real(request):
    d = RUNS / request.param
    if not (d / "run.json").exists():
        pytest.skip(f"{d} not shipped")
    run = load_run(d)
    return run, logits_evidence(run, alpha=1e-4)


def test_family_modules_are_discovered():
    names = {m.__name__ for m in family_modules()}
    assert {"spectheory.validate.replay_se", "spectheory.validate.replay_ersd", "spectheory.validate.replay_multidraft"} <= names


def test_real_run_evidence_shape(real):
    run, ev = real
    assert FAMILY_CLAIMS <= set(ev), FAMILY_CLAIMS - set(ev)
    assert {"sd.acceptance", "sd.expected_tokens"} <= set(ev)      # SD evidence still there
    for cid in FAMILY_CLAIMS:
        for e in ev[cid]:
            assert e.mode == "logits"
            assert e.outcome in ("pass", "info", "underpowered"), (cid, e.instance, e.outcome, e.note)
    graded = [e for cid in ("se.acceptance", "se.thm3_2", "ersd.lemma3_1", "gbv.optimal") for e in ev[cid]
              if e.outcome != "info"]
    assert len(graded) >= 8 and all(e.outcome == "pass" for e in graded)


def test_real_run_exact_agreement_with_stored_statistics(real):
    run, ev = real
    st = {k: np.concatenate([t.stats[k] for t in run.traces]) for k in ("beta", "beta_slice", "p_rest", "q_rest")}
    beta_lumped = st["beta_slice"] + np.minimum(st["p_rest"], st["q_rest"])
    for lam in replay_se.DEFAULT_LAMBDAS:
        row = next(e for e in ev["se.acceptance"] if e.instance == f"WE λ={lam:g} exact vs lumped")
        # exact α̂ = mean(λ + (1−λ)β) (q − r = (1−λ)(q − p)); lumped α̃ = λ + (1−λ)β̃
        assert abs(row.claimed - np.mean(lam + (1 - lam) * st["beta"])) <= 1e-6
        assert abs(row.measured - np.mean(lam + (1 - lam) * beta_lumped)) <= 1e-6
        assert row.measured >= row.claimed - 1e-7                     # lumping only adds overlap
    opt = next(e for e in ev["gbv.optimal"] if e.instance.startswith("γ=1 K=1"))
    assert abs(opt.claimed - beta_lumped.mean()) <= 1e-6
    pool = pooled(run)
    br = replay_ersd.ersd_brackets(pool.slice_p, pool.slice_q, st["p_rest"], st["q_rest"], st["beta"],
                                   st["beta_slice"])
    assert np.all(br["exact_lo"] <= br["exact_hi"] + 1e-12) and np.all(br["exact_hi"] <= st["beta"] + 1e-6)
    if run.config["temperature"] == 0:      # one-hot pairs: ERSD accepts iff the argmaxes agree, = β
        assert np.allclose(br["exact_lo"], st["beta"]) and np.allclose(br["exact_hi"], st["beta"])


def test_real_run_se_control_fails():
    d = RUNS / "qwen2.5-coder-T1"
    if not (d / "run.json").exists():
        pytest.skip("run not shipped")
    ev = replay_se.logits_evidence(load_run(d), alpha=1e-4, rule=BROKEN_VERIFY_MEMBER)
    assert any(e.outcome == "fail" for e in ev["se.acceptance"])


def test_real_run_thm3_2_and_ecsv_drafting_controls_are_rejected():
    """The logits-mode negative controls of se.thm3_2 (α_t from the slice alone, at the least-slack λ)
    and ecsv.majority (the first branch instead of the plurality) on the T = 1 run: each is rejected,
    and each names the broken rule; at T = 0 the slice holds all the mass, so the leftover bug has no
    effect there and no thm3_2 control is reported."""
    from spectheory.validate import replay_ecsv
    d = RUNS / "qwen2.5-coder-T1"
    if not (d / "run.json").exists():
        pytest.skip("run not shipped")
    run = load_run(d)
    se = replay_se.logits_evidence(run, alpha=1e-4)
    (ctl,) = [e for e in se["se.thm3_2"] if e.control]
    assert ctl.control == "rejected" and "leftover dropped" in ctl.instance and ctl.measured < ctl.claimed
    subject = next(e for e in se["se.thm3_2"] if e.instance == ctl.instance.replace(", leftover dropped (must fail)", ""))
    assert subject.outcome == "pass" and subject.claimed == ctl.claimed
    slack = {e.claimed: e.measured - e.claimed for e in se["se.thm3_2"]
             if e.instance.endswith("(every position, exact)")}
    assert ctl.claimed == min(slack, key=slack.get)           # the λ where the subject is tightest
    ec = replay_ecsv.logits_evidence(run, alpha=1e-4, Bs=(2,), ks=(2,), n_mc=8)
    ctls = [e for e in ec["ecsv.majority"] if e.control]
    assert len(ctls) == 2 and all(e.control == "rejected" and "first-branch" in e.instance for e in ctls)
    t0 = RUNS / "qwen2.5-coder-T0"
    if (t0 / "run.json").exists():
        assert not [e for e in replay_se.logits_evidence(load_run(t0), alpha=1e-4)["se.thm3_2"] if e.control]


def _synthetic_run(T=12, V=60, k=8, seed=3) -> tuple[Run, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lp = rng.normal(0, 1.0, (T, V))
    lq = lp + rng.normal(0, 1.0, (T, V))
    p = np.exp(lp) / np.exp(lp).sum(1, keepdims=True)
    q = np.exp(lq) / np.exp(lq).sum(1, keepdims=True)
    tok = np.array([rng.choice(V, p=p[t]) for t in range(T)])
    tr = CompactTrace.from_distributions(p, q, tok, top_k=k, meta=dict(name="syn", category="code", temperature=1.0))
    run = Run(Path("synthetic"), {"temperature": 1.0, "top_k": None, "top_p": None, "gammas": [2]}, [tr], {})
    return run, p, q


def test_brackets_contain_the_full_distribution_values():
    run, p, q = _synthetic_run()
    pool = pooled(run)
    st = pool.stats
    assert st["p_rest"].min() > 0.3                                  # heavy leftovers: a real test of the brackets
    br = replay_ersd.ersd_brackets(pool.slice_p, pool.slice_q, st["p_rest"], st["q_rest"], st["beta"],
                                   st["beta_slice"])
    e_true = ersd_first_acceptance_sorted(p, q)
    h_true = harmonic_mean_term(p, q)
    tol = 1e-6
    assert np.all(br["exact_lo"] <= e_true + tol) and np.all(e_true <= br["exact_hi"] + tol)
    assert np.all(br["bound_lo"] <= h_true + tol) and np.all(h_true <= br["bound_hi"] + tol)
    for K in (1, 2, 4):
        g1 = replay_multidraft.gamma1_brackets(pool.P, pool.Q, pool.slice_p, pool.slice_q, st, K)
        opt = np.array([gamma1_optimum_fast(p[t], q[t], K) for t in range(p.shape[0])])
        bnd = cf.A(p, q, K).sum(axis=1)
        assert np.all(g1["optimum_lo"] <= opt + tol) and np.all(opt <= g1["optimum_hi"] + tol)
        assert np.all(g1["bound_lo"] <= bnd + tol) and np.all(bnd <= g1["bound_hi"] + tol)
    # SE weighted ensemble: the exact α̂ from slice + stored leftover equals the full computation
    ev = replay_se.logits_evidence(run, alpha=1e-3, n_mc=50)
    for lam in replay_se.DEFAULT_LAMBDAS:
        r = lam * q + (1 - lam) * p
        row = next(e for e in ev["se.acceptance"] if e.instance == f"WE λ={lam:g} exact vs lumped")
        assert abs(row.claimed - np.minimum(q, r).sum(1).mean()) <= 1e-6


def test_brackets_are_sharp_when_leftover_supports_are_disjoint():
    """Leftover of p on tokens where q = 0 and of q where p = 0: every leftover term of E vanishes
    and Σ_rest max(p_y q_x, q_y p_x) = p_rest q_x + q_rest p_x, so E equals its lower bracket;
    q-only leftover tokens let the K-draft optimum fall well below the lumped one."""
    rng = np.random.default_rng(5)
    T, k, n_rest, V = 6, 8, 100, 8 + 200
    p, q = np.zeros((T, V)), np.zeros((T, V))
    for t in range(T):
        head_p, head_q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        mp, mq = rng.uniform(0.2, 0.45, 2)
        p[t, :k], q[t, :k] = (1 - mp) * head_p, (1 - mq) * head_q
        p[t, k:k + n_rest] = mp * rng.dirichlet(np.ones(n_rest))
        q[t, k + n_rest:] = mq * rng.dirichlet(np.ones(n_rest))
    tok = p.argmax(axis=1)
    tr = CompactTrace.from_distributions(p, q, tok, top_k=k, meta=dict(name="disjoint", temperature=1.0))
    run = Run(Path("synthetic"), {"temperature": 1.0, "gammas": [2]}, [tr], {})
    pool = pooled(run)
    assert np.allclose(tr.slice_ids.min(), 0) and tr.slice_ids.max() == k - 1    # the slice is the shared head
    st = pool.stats
    br = replay_ersd.ersd_brackets(pool.slice_p, pool.slice_q, st["p_rest"], st["q_rest"], st["beta"],
                                   st["beta_slice"])
    e_true = ersd_first_acceptance_sorted(p, q)
    assert np.allclose(br["exact_lo"], e_true, atol=1e-6)
    assert np.all(e_true <= br["exact_hi"] + 1e-6)
    for K in (2, 4):
        g1 = replay_multidraft.gamma1_brackets(pool.P, pool.Q, pool.slice_p, pool.slice_q, st, K)
        opt = np.array([gamma1_optimum_fast(p[t], q[t], K) for t in range(T)])
        assert np.all(g1["optimum_lo"] <= opt + 1e-6) and np.all(opt <= g1["optimum_hi"] + 1e-6)
        assert np.any(opt < g1["optimum_hi"] - st["q_rest"] - 1e-3)     # the factor K in the bracket is needed


def test_verify_logits_evidence_survives_parallel_jobs():
    """`verify --logits` adds the same logits evidence whether checks run serially or in worker
    processes (a parallel run once dropped it)."""
    from spectheory.sims.runner import run_claims
    from spectheory.cli.cmd_verify import real_logits_evidence
    run_dir = Path(__file__).resolve().parents[1] / "data" / "runs" / "qwen2.5-coder-T1"
    kw = dict(quick=True, seed=0, progress=False, extra_evidence=real_logits_evidence(run_dir, 0.01),
              extra_source=str(run_dir))
    serial = run_claims("sd.acceptance,se.acceptance", **kw)
    parallel = run_claims("sd.acceptance,se.acceptance", jobs=2, **kw)  # two families: two workers
    logits_rows = lambda r: [e for c in r["claims"] for e in c["evidence"] if e["mode"] == "logits"]
    assert logits_rows(serial), "no logits evidence"
    assert logits_rows(parallel) == logits_rows(serial)


def test_bernoulli_mean_se_by_hand_and_clipped():
    """se of a pooled frequency, by hand: T = 2 positions, 4 draws each, p = (0.5, 0.9):
    sqrt((0.25 + 0.09)/4)/2. A probability a few ulps above 1 (β of p = q in floats) counts as 1."""
    from spectheory.judge import stats
    assert stats.bernoulli_mean_se([0.5, 0.9], 4) == pytest.approx(np.sqrt(0.34 / 4) / 2, rel=1e-15)
    assert stats.bernoulli_mean_se([1.0 + 4e-16, 1.0], 10) == 0.0
    with pytest.raises(ValueError, match="n_each"):
        stats.bernoulli_mean_se([0.5], 0)


def test_family_replays_on_a_draft_identical_to_the_target():
    """p = q at every position (self-speculation): SE and ERSD replays give finite evidence and
    hold (their null se was sqrt of a sum that rounding can make negative: seed 1 gives
    Σ E(1 − E) = −1.1e-16 for ERSD's exact acceptance E)."""
    z = np.random.default_rng(1).normal(0.0, 1.0, (6, 7))
    from spectheory.validate import LogitTrace
    tr = LogitTrace(z, z.copy(), np.zeros(6, dtype=np.int64))
    rse = replay_se.replay_se(tr, lambdas=(0.5,), mus=(), gamma=2, n_mc=50, seed=0)
    for ev in replay_se.evidence(rse).values():
        assert all(np.isfinite(e.measured) and e.outcome in ("pass", "info") for e in ev), ev
    rer = replay_ersd.replay_ersd(tr, k=4, m=4, n_mc=50, seed=0)
    assert np.isfinite(rer.exact).all()
    ev = replay_ersd.evidence_ersd(rer)["ersd.lemma3_1"]
    assert all(e.outcome in ("pass", "info") for e in ev), ev
