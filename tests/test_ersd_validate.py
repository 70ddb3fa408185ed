"""spectheory.validate.replay_ersd on synthetic logit traces (no torch): exact acceptance, bound, fitted
acceptance-index distribution and the tree it implies, as ``logits`` evidence."""
from __future__ import annotations

import numpy as np
import pytest

from spectheory.closed_forms import ersd as cf
from spectheory.distributions import softmax
from spectheory.validate import LogitTrace
from spectheory.validate.replay_ersd import evidence_ersd, race_indices, replay_ersd


def regime_trace(T=120, V=30, seed=0) -> LogitTrace:
    """Blocks of 20 positions alternating between a well-aligned and a poorly aligned draft."""
    rng = np.random.default_rng(seed)
    tl = rng.normal(0.0, 2.0, (T, V))
    noise = np.where((np.arange(T) // 20 % 2 == 0)[:, None], 0.2, 3.0)
    dl = tl + rng.normal(0.0, 1.0, (T, V)) * noise
    toks = np.array([rng.choice(V, p=row) for row in softmax(tl)])
    return LogitTrace(tl, dl, toks, name="regimes")


def test_race_indices_first_frequency_matches_formula():
    rng = np.random.default_rng(1)
    p, q = rng.dirichlet(np.ones(12)), rng.dirichlet(np.ones(12))
    idx = race_indices(p, q, 40000, rng)
    e = float(cf.ersd_first_acceptance(p, q))
    assert abs((idx == 1).mean() - e) < 4 * np.sqrt(e * (1 - e) / 40000)


def test_replay_evidence_regime_trace():
    rep = replay_ersd(regime_trace(), k=8, m=8, n_mc=300, seed=2)
    assert rep.a_fit.sum() == pytest.approx(1.0)
    assert np.all(rep.bound <= rep.exact + 1e-12) and np.all(rep.exact <= rep.one_minus_tv + 1e-12)
    ev = evidence_ersd(rep)
    assert {e.mode for es in ev.values() for e in es} == {"logits"}
    assert all(e.outcome == "pass" for e in ev["ersd.lemma3_1"])
    # acceptance comes in regimes along the text: the along-trace value exceeds the 0th-order one
    assert rep.measured > rep.predicted
    assert ev["zero_order.underestimates"][0].outcome in ("pass", "underpowered")


def test_replay_constant_trace_has_no_gain():
    rng = np.random.default_rng(3)
    zp, zq = rng.normal(0, 1.5, 20), rng.normal(0, 1.5, 20)
    tr = LogitTrace(np.tile(zp, (60, 1)), np.tile(zq, (60, 1)), np.zeros(60, dtype=np.int64))
    rep = replay_ersd(tr, k=6, m=6, n_mc=400, seed=4)
    # identical positions: the along-trace value equals the prediction up to MC noise
    assert abs(rep.measured - rep.predicted) < 0.05 * rep.predicted


def test_replay_input_checks():
    with pytest.raises(TypeError):
        replay_ersd("not a trace")
    with pytest.raises(ValueError):
        replay_ersd(regime_trace(T=30), k=0)


def test_trace_replay_enters_the_report(tmp_path, monkeypatch):
    """$SPECTHEORY_TRACE adds logits evidence to ersd.lemma3_1 (graded, not needed by controls):
    the command line replays the trace (``sims`` never imports ``validate``) and the runner
    grades it with the claim's own evidence."""
    from spectheory.sims.runner import run_claims
    from spectheory.cli import cmd_verify
    path = regime_trace(T=80, V=20, seed=5).save(tmp_path / "trace.npz")
    monkeypatch.setenv(cmd_verify.TRACE_ENV, str(path))
    assert cmd_verify.real_logits_evidence(None, 0.01, ["sd.lossless"]) == {}  # not replayed when not needed
    extra = cmd_verify.real_logits_evidence(None, 0.01, ["ersd.lemma3_1"])
    rep = run_claims("ersd.lemma3_1", quick=True, progress=False, extra_evidence=extra)
    c = rep["claims"][0]
    logits = [e for e in c["evidence"] if e["mode"] == "logits"]
    assert len(logits) == 3 and all(e["outcome"] == "pass" for e in logits)
    assert {e["part"] for e in logits} == {"formula", "lower", "upper"}  # each lands on its part
    assert c["verdict"] == "holds" and all(k["verdict"] == "fails" for k in c["controls"])
