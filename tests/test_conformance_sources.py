"""Every random source a sampler draws from is routed through the checker's source or flagged
(spectheory.conformance.sources): the adversarial samplers of issue 18 — accept/reject uniform
from Tensor.uniform_, Tensor.exponential_, random.random or np.random.random while one
multinomial goes through the routed source, one of them with the `u ≤ ratio` bug — and samplers
whose draws cannot be routed. No probe holds unless its forced value reached the sampler."""
import random

import numpy as np
import pytest

from spectheory import conformance as sc
from spectheory.conformance.forced import ForcedUniforms
from spectheory.conformance.sources import RandomSources

torch = pytest.importorskip("torch")

PROBES = dict(instances=(), controls=False)


def _probe_rows(report, cid="support_probes"):
    return {e["instance"]: e for e in next(c for c in report["claims"] if c["id"] == f"conformance.{cid}")["evidence"]}


def _torch_sd(p_logits, q_logits, draft, rng, *, uniform, strict=True):
    """Standard SD on batched torch logits; the accept/reject uniform from ``uniform()``, the
    correction and bonus from torch.multinomial (a source the checker routes)."""
    p = p_logits[0].double().softmax(-1)
    q = q_logits[0].double().softmax(-1)
    d = draft[0]
    for i in range(d.shape[0]):
        x = int(d[i])
        ratio = min(1.0, float(p[i, x] / q[i, x]))
        u = float(uniform())
        if (u < ratio) if strict else (u <= ratio):
            continue
        r = torch.clamp(p[i] - q[i], min=0)
        r = r if r.sum() > 0 else p[i]
        return torch.cat([d[:i], torch.multinomial(r / r.sum(), 1)])
    return torch.cat([d, torch.multinomial(p[-1], 1)])


def tensor_uniform_(p, q, d, rng):
    return _torch_sd(p, q, d, rng, uniform=lambda: torch.empty(()).uniform_())


def tensor_uniform_le(p, q, d, rng):
    """The `u ≤ ratio` bug, its uniform from Tensor.uniform_."""
    return _torch_sd(p, q, d, rng, uniform=lambda: torch.empty(()).uniform_(), strict=False)


def tensor_exponential_le(p, q, d, rng):
    """u = 1 − exp(−E), E from Tensor.exponential_; `u ≤ ratio`."""
    return _torch_sd(p, q, d, rng, uniform=lambda: -torch.expm1(-torch.empty(()).exponential_()), strict=False)


def python_random_le(p, q, d, rng):
    return _torch_sd(p, q, d, rng, uniform=random.random, strict=False)


def numpy_global_le(p, q, d, rng):
    return _torch_sd(p, q, d, rng, uniform=np.random.random, strict=False)


TORCH = dict(adapter="logits", dtype="float32", batched=True, framework="torch")


@pytest.mark.parametrize("sampler", [tensor_uniform_le, tensor_exponential_le, python_random_le, numpy_global_le])
def test_routed_sources_reach_the_sampler_and_the_u_le_ratio_bug_is_caught(sampler):
    """The accept/reject uniform comes from Tensor.uniform_ / exponential_ / random.random /
    np.random.random (routed), the correction from torch.multinomial (routed): the forced u = 0
    reaches the acceptance test, so `u ≤ ratio` accepts the p = 0 token and the probe fails."""
    r = sc.check_block_verifier(sampler, **TORCH, **PROBES)
    rows = _probe_rows(r)
    assert rows["p=0 drafted token, u=0"]["outcome"] == "fail"
    assert "emitted token 0 has p = 0" in rows["p=0 drafted token, u=0"]["note"]
    assert r["verdicts"]["lossless"]["verdict"] == "fails" and r["warnings"] == []


def test_routed_correct_sampler_holds_and_reports_the_tie():
    r = sc.check_block_verifier(tensor_uniform_, **TORCH, **PROBES)
    rows = _probe_rows(r)
    assert {e["outcome"] for e in rows.values()} == {"pass"}
    assert "tie rejected" in rows["exact ratio tie u=p/q=0.5"]["note"]  # the forced 0.5 reached u < 0.5


class _Hidden:
    def __init__(self):
        self.box = [np.random.default_rng(1), random.Random(2), torch.Generator().manual_seed(3)]


HIDDEN = _Hidden()


def hidden_numpy_le(p, q, d, rng):
    """The uniform from a generator two levels deep (not routable): an escaped draw."""
    return _torch_sd(p, q, d, rng, uniform=lambda: HIDDEN.box[0].random(), strict=False)


def hidden_python_le(p, q, d, rng):
    return _torch_sd(p, q, d, rng, uniform=lambda: HIDDEN.box[1].random(), strict=False)


def torch_global_direct_le(p, q, d, rng):
    """torch's global generator through a function the checker does not route (poisson)."""
    return _torch_sd(p, q, d, rng, uniform=lambda: 1 - torch.exp(-torch.poisson(torch.ones(())) - 0.5), strict=False)


def numpy_legacy_direct_le(p, q, d, rng):
    """NumPy's global RandomState called directly (np.random.mtrand._rand): escaped."""
    return _torch_sd(p, q, d, rng, uniform=lambda: np.random.mtrand._rand.random_sample(), strict=False)


@pytest.mark.parametrize("sampler,source", [
    (hidden_numpy_le, "numpy"), (hidden_python_le, "python"), (torch_global_direct_le, "torch's global generator"),
    (numpy_legacy_direct_le, "NumPy's global generator")])
def test_escaped_uniform_never_passes_a_probe(sampler, source):
    """One multinomial goes through the routed source (draws from the forced source > 0), the
    accept/reject uniform escapes: the generators' states change around the call, so every
    probe without a violation is `not applied` (info), none passes, the probes claims are not
    `holds`, and the report warns that the statistics are not reproducible from the seed."""
    r = sc.check_block_verifier(sampler, **TORCH, **PROBES)
    for cid in ("support_probes", "standard_probes"):
        rows = _probe_rows(r, cid)
        assert not any(e["outcome"] == "pass" for e in rows.values()), cid
        assert all(e["outcome"] == "info" and "not applied" in e["note"] or e["outcome"] == "fail"
                   for e in rows.values())
    assert r["verdicts"]["lossless"]["verdict"] != "holds"
    [w] = r["warnings"]
    assert "not reproducible from --seed" in w
    if source in ("torch's global generator", "NumPy's global generator"):
        assert source in w


def test_hidden_generator_is_detected_in_the_statistical_runs_too():
    """Escapes are detected around every block of calls of the statistical runs as well."""
    r = sc.check_block_verifier(hidden_numpy_le, **TORCH, n=200, instances=("iid-V1",), gammas=(1,),
                                controls=False, probes=False)
    assert r["warnings"] and "iid-V1 γ=1" in r["warnings"][0]


def _np_sd(p, q, d, rng, uniform, pick):
    p = np.asarray(p, float)
    q = np.asarray(q, float)
    for i, x in enumerate(d):
        x = int(x)
        if uniform() < min(1.0, p[i, x] / q[i, x]):
            continue
        r = np.maximum(p[i] - q[i], 0)
        r = r / r.sum() if r.sum() > 0 else p[i]
        return [int(t) for t in d[:i]] + [int(pick(r))]
    return [int(t) for t in d] + [int(pick(p[-1]))]


MODULE_RNG = np.random.default_rng(0)


def module_generator(p, q, d, rng):
    """A module-level Generator (swapped for a routed stand-in during the calls)."""
    return _np_sd(p, q, d, rng, MODULE_RNG.random, lambda r: MODULE_RNG.choice(len(r), p=r))


def default_rng_each_call(p, q, d, rng):
    g = np.random.default_rng()  # unseeded: the checker hands out its current source
    return _np_sd(p, q, d, rng, g.random, lambda r: g.choice(len(r), p=r))


def seeded_each_call(p, q, d, rng):
    g = np.random.default_rng(1234)  # the sampler's own seed: reproducible, but never forced
    return _np_sd(p, q, d, rng, g.random, lambda r: g.choice(len(r), p=r))


def global_numpy_and_python(p, q, d, rng):
    return _np_sd(p, q, d, rng, random.random, lambda r: np.random.choice(len(r), p=r))


@pytest.mark.parametrize("sampler", [module_generator, default_rng_each_call, global_numpy_and_python])
def test_routable_sources_hold_and_are_reproducible(sampler):
    """Module-level generators, unseeded default_rng() and the global functions are routed:
    the probes apply and hold, no warning, and two runs with one seed give one report."""
    r1 = sc.check_block_verifier(sampler, n=400, instances=("markov1-V3-mix0.4",), gammas=(2,), controls=False)
    r2 = sc.check_block_verifier(sampler, n=400, instances=("markov1-V3-mix0.4",), gammas=(2,), controls=False)
    assert r1["warnings"] == []
    assert {e["outcome"] for e in _probe_rows(r1).values()} == {"pass"}
    m1 = [e["measured"] for c in r1["claims"] for e in c["evidence"]]
    assert m1 == [e["measured"] for c in r2["claims"] for e in c["evidence"]]


def test_a_generator_seeded_by_the_sampler_is_flagged():
    r = sc.check_block_verifier(seeded_each_call, **PROBES)
    assert all(e["outcome"] in ("info", "fail") for e in _probe_rows(r).values())
    assert r["warnings"] and "default_rng(1234)" in r["warnings"][0]


def test_routing_is_undone_after_the_block():
    """Every patched function and swapped name is restored, also when the sampler raises."""
    before = (np.random.random, np.random.default_rng, random.random, torch.rand, torch.Tensor.uniform_,
              MODULE_RNG)
    src = RandomSources(module_generator)
    src.current = ForcedUniforms("zero")
    with pytest.raises(RuntimeError):
        with src.active("x"):
            assert np.random.random() == 0.0 and random.random() == 0.0 and float(torch.rand(())) == 0.0
            assert float(torch.empty(2).uniform_()[0]) == 0.0
            assert globals()["MODULE_RNG"] is not before[-1]
            raise RuntimeError("inside")
    after = (np.random.random, np.random.default_rng, random.random, torch.rand, torch.Tensor.uniform_,
             globals()["MODULE_RNG"])
    assert all(a is b for a, b in zip(before, after))
    assert "uniform_" not in torch.Tensor.__dict__
    assert src.current.draws == 5  # one each from np.random, random, torch.rand; two from uniform_


def test_forced_exponential_and_routed_torch_draws():
    src = RandomSources()
    src.current = ForcedUniforms("max")
    with src.active("x"):
        e = torch.empty(3).exponential_()
        b = torch.bernoulli(torch.full((2,), 0.5))
        m = torch.multinomial(torch.tensor([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]]), 1)
        k = torch.randint(0, 10, (2,))
    # torch's CPU exponential_ draws a 53-bit float64 uniform whatever the tensor's dtype (forced.TRANSFORMS)
    assert torch.allclose(e, torch.full((3,), float(-np.log1p(-(1 - 2.0 ** -53)))))
    assert b.tolist() == [0.0, 0.0] and m.flatten().tolist() == [1, 2] and k.tolist() == [9, 9]
    assert src.escapes == []
