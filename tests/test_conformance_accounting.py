"""Issue 26: probes count only what they forced, failures carry their kind, every failure comes
with a call that reproduces it.

* a probe is applied only if the forced source gave a uniform per acceptance decision and one
  more value, nothing escaped, the runs saw no uniform reused across calls: a verifier that draws
  its acceptance uniforms once and reuses them gets no `pass` (under the old rule, any one
  forced draw applied the probe, and every probe passed);
* forced values stay in each transform's range: the keys of an exponential race get E > 0 at
  u = 0 (a correct Gumbel/exponential-race sampler must not fail on a tie independent draws
  never produce), one exponential alone keeps E = 0;
* compiled code that bypasses the routing is named (TorchScript, Numba);
* lossless failures are law / boundary / crash, with the effect size or the event's probability;
* each printed call (crash, probe, structure) reproduces the output it reports.
"""
import numpy as np
import pytest

import spectheory.conformance
from spectheory import conformance as sc
from spectheory.conformance.kinds import multidraft as md
from spectheory.conformance.compiled import compiled_in
from spectheory.conformance.forced import CountingGenerator, ForcedUniforms, smallest_uniform
from spectheory.conformance import check_multidraft_verifier

SMALL = dict(instances=("markov1-V3-mix0.4",), gammas=(2,), n=1000, controls=False)
_CACHE: list = []


def cached_uniform_sd(p, q, draft, rng):
    """Alg. 1 whose acceptance uniforms are drawn on the first call and reused on every later
    one (the residual and bonus drawn fresh by inverse CDF from rng.random)."""
    if not _CACHE:
        _CACHE.extend(rng.random(8).tolist())
    for i, x in enumerate(draft):
        if _CACHE[i] < min(1.0, p[i, x] / q[i, x]):
            continue
        r = np.maximum(p[i] - q[i], 0.0)
        r = r if r.sum() > 0 else p[i]
        return list(draft[:i]) + [sc.inverse_cdf(r, rng.random())]
    return list(draft) + [sc.inverse_cdf(p[-1], rng.random())]


def _probes(report, cid="conformance.support_probes"):
    return next(c for c in report["claims"] if c["id"] == cid)["evidence"]


def test_uniforms_reused_across_calls_never_pass_a_probe():
    _CACHE.clear()
    r = sc.check_block_verifier(cached_uniform_sd, **SMALL)
    rows = _probes(r) + _probes(r, "conformance.standard_probes")
    assert not any(e["outcome"] == "pass" for e in rows), [(e["instance"], e["outcome"]) for e in rows]
    assert any("uniforms reused across calls" in w for w in r["warnings"]), r["warnings"]
    assert r["verdicts"]["lossless"]["verdict"] != "holds"


def test_per_call_accounting_alone_refuses_a_probe_whose_decision_used_no_forced_uniform():
    """Without the runs (the probe call only): where p(x) < q(x) the rejection decision needs a
    uniform and the correction another value; the cached verifier draws one (the correction), so
    the probe is not applied. At p(x) = 0 no uniform is needed: graded on its output."""
    from spectheory.conformance.kinds.block import BlockKind
    from spectheory.conformance.probes import base_probes, run_probe
    _CACHE[:] = [0.3] * 8
    kind = BlockKind(cached_uniform_sd)
    zero_mass = next(p for p in kind.probes(kind.sampler) if "zero-mass" in p.name)  # 0 < p(x) < q(x)
    support, _, _ = run_probe(kind, kind.sampler, zero_mass)
    assert support.outcome == "info" and "needed 1 uniform" in support.note, support.note
    assert "it drew 1 uniform from the forced source" in support.note, support.note
    probe = base_probes()[0]  # p=0 drafted token, u=0: the rejection needs no uniform
    cached, _, _ = run_probe(kind, kind.sampler, probe)
    assert cached.outcome == "pass", cached.note
    ref = BlockKind(sc.reference_verifier)
    ok, _, _ = run_probe(ref, ref.sampler, probe)
    assert ok.outcome == "pass", ok.note
    assert "Targets the acceptance test u < p(x)/q(x)" in ok.note and "2^-53" in ok.note


def test_forced_values_respect_each_transform():
    f = ForcedUniforms("zero")
    with f.kind("exponential"):
        race = f.random(4)
        alone = f.random()
    assert (race == smallest_uniform()).all() and race.min() > 0 and alone == 0.0
    assert f.by_kind == {"uniform": 0, "exponential": 5, "categorical": 0} and f.decision_values() == 1
    f.choice(3, p=[0.0, 0.5, 0.5])
    assert f.by_kind["categorical"] == 1
    assert smallest_uniform(np.float32) == 2.0 ** -24
    g = np.random.default_rng(5)
    c = CountingGenerator(np.random.default_rng(5))
    assert c.random() == g.random() and c.choice(3) == g.choice(3)  # the same stream, counted
    assert c.by_kind == {"uniform": 1, "exponential": 0, "categorical": 1}


def test_compiled_code_is_named():
    numba = pytest.importorskip("numba")
    jitted = numba.njit(lambda: np.random.random())

    def uses_numba(p, q, draft, rng):
        return [int(jitted() * 0)]

    found = compiled_in(uses_numba)
    assert found and found[0].startswith("Numba"), found
    assert compiled_in(sc.reference_verifier) == []


def test_compiled_torchscript_is_named():
    pytest.importorskip("torch")
    from spectheory.conformance.replay import load
    found = compiled_in(load("tests/conformance_fixtures/exponential_race_jit.py:verify"))
    assert found == ["TorchScript (torch.jit.script/trace): _race (called by verify)"]


def le_verifier(p, q, draft, rng):
    """Alg. 1 with `u <= ratio`: lossless in law, accepts a p = 0 token when u = 0.0 exactly."""
    for i, x in enumerate(draft):
        if rng.random() <= min(1.0, p[i, x] / q[i, x]):
            continue
        r = np.maximum(p[i] - q[i], 0.0)
        r = r if r.sum() > 0 else p[i]
        return list(draft[:i]) + [sc.inverse_cdf(r, rng.random())]
    return list(draft) + [sc.inverse_cdf(p[-1], rng.random())]


def test_a_boundary_failure_says_so_with_the_events_probability_and_its_call_reproduces_it(monkeypatch):
    r = sc.check_block_verifier(le_verifier, instances=("markov1-V3-mix0.4",), gammas=(2,), controls=False)
    v = r["verdicts"]["lossless"]
    assert v["verdict"] == "fails" and v["severity"] == "boundary", v
    assert "lossless in law (first_tokens holds, token_law_by_state holds)" in v["summary"], v["summary"]
    assert "2^-53" in v["summary"]
    assert sc.verdict_lines(r)[0].startswith("LOSSLESS: fails [boundary] — ")
    probes = next(c for c in r["claims"] if c["id"] == "conformance.support_probes")
    cx = probes["counterexample"]
    assert cx["call"].startswith("spectheory.conformance.rerun('") and "test_conformance_accounting" in cx["call"] \
        and ":le_verifier'" in cx["call"] and "forced='zero'" in cx["call"]
    monkeypatch.chdir(__import__("pathlib").Path(__file__).resolve().parents[1])
    assert str(eval(cx["call"], {"spectheory": spectheory})) == cx["output"]  # noqa: S307


def test_a_crash_has_a_call_that_raises_it_again():
    r = sc.check_block_verifier(spectheory.conformance.replay.load("tests/conformance_fixtures/crash_token0.py:verify"),
                                name="tests/conformance_fixtures/crash_token0.py:verify", **SMALL)
    assert r["verdicts"]["lossless"]["severity"] == "crash"
    crash = r["crashes"][0]
    assert crash["inputs"]["draft"] and "rng_state" in crash["inputs"]
    with pytest.raises(AssertionError, match="token 0 should never be drafted"):
        eval(crash["call"], {"spectheory": spectheory})  # noqa: S307


def test_a_structure_failure_has_a_call_that_reproduces_the_path_off_the_drafts():
    r = check_multidraft_verifier(md.prefix_shifted, K=2, rule="specinfer", instances=("markov1-V3-mix0.4",),
                                  gammas=(2,), n=400, controls=False, probes=False)
    c = next(c for c in r["claims"] if c["id"] == "multidraft.structure")
    assert c["verdict"] == "fails"
    cx = c["counterexample"]
    out = eval(cx["call"], {"spectheory": spectheory})  # noqa: S307
    assert list(out) == cx["output"]
    drafts = cx["inputs"]["drafts"]
    assert tuple(out[:-1]) not in {tuple(d[:i]) for d in drafts for i in range(len(d) + 1)}


def test_the_law_failure_kind_carries_the_effect_size():
    from spectheory.conformance.references import CONTROLS
    fn = next(f for name, f, _ in CONTROLS if name == "bonus-from-row-γ−1")
    r = sc.check_block_verifier(fn, instances=("markov1-V3-mix0.4",), gammas=(2,), n=4000, controls=False,
                                probes=False)
    v = r["verdicts"]["lossless"]
    assert v["severity"] == "law"
    law = [f for f in v["failures"] if f["kind"] == "law"]
    assert law and all(f["empirical_tv"] > 0 and f["cohens_w"] > 0 for f in law), law


def shifted_prefix(p, q, draft, rng):
    """Alg. 1's decisions, but the accepted prefix reported one id off (a structure bug)."""
    out = sc.reference_verifier(p, q, draft, rng)
    V = np.asarray(p).shape[-1]
    return [(int(x) + 1) % V for x in out[:-1]] + [out[-1]]


def test_a_block_structure_failure_has_a_call_that_reproduces_it_by_replay_from_the_seed():
    r = sc.check_block_verifier(shifted_prefix, instances=("markov1-V3-mix0.4",), gammas=(2,), n=400,
                                controls=False, probes=False)
    c = next(c for c in r["claims"] if c["id"] == "conformance.tokens_per_call")
    assert c["verdict"] == "fails"
    cx = c["counterexample"]
    assert cx["inputs"]["draft"] and "rng_state" in cx["inputs"]
    out = eval(cx["call"], {"spectheory": spectheory})  # noqa: S307
    assert list(out) == cx["output"]
    tau = len(out) - 1
    assert list(out[:tau]) != cx["inputs"]["draft"][:tau] or out[tau] == cx["inputs"]["draft"][tau]
