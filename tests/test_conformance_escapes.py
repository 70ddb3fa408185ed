"""Escape detection per kind of random source (issue 27 item 3; docs/conformance.md, "Random
sources: routed or flagged").

Two layers. (1) Unit: inside ``RandomSources.active`` with a forced source, every function the
docs say is routed draws from the forced source and leaves no escape; every draw the docs say is
detected (a function the checker does not route, a generator it cannot reach) leaves an escape
naming its source. (2) End to end: a block verifier with the ``u ≤ ratio`` boundary bug whose
accept/reject uniform comes from one unrouted source (the correction through a routed one) is
never certified: no probe passes, lossless is not ``holds``, and the report warns.
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from spectheory import conformance as sc
from spectheory.conformance.forced import ForcedUniforms
from spectheory.conformance.sources import RandomSources

torch = pytest.importorskip("torch")

PROBES = dict(instances=(), controls=False)
PY = "Python's random module"
NP = "NumPy's global generator (np.random.*)"
TORCH = "torch's global generator"


def _block(call, *, scan=False, normal=False):
    """Run ``call`` in one routed block; (escapes, draws from the checker's source). The source is
    forced uniforms (which count their draws), or for normal draws, which forced uniforms do not
    supply, the run's Generator (a draw = its state moved)."""
    src = RandomSources(call)
    src.current = np.random.default_rng(0) if normal else ForcedUniforms("zero")
    if scan:
        src.scan()
    before = src.current.bit_generator.state if normal else None
    with src.active("b"):
        call()
    draws = int(src.current.bit_generator.state != before) if normal else src.current.draws
    return src.escaped_in("b"), draws


# --- routed: every function the docs list draws from the checker's source --------------------------

ROUTED = {
    "torch.rand": lambda: torch.rand(2), "torch.rand_like": lambda: torch.rand_like(torch.zeros(2)),
    "torch.randn": lambda: torch.randn(2), "torch.randn_like": lambda: torch.randn_like(torch.zeros(2)),
    "torch.randint": lambda: torch.randint(0, 5, (2,)),
    "torch.multinomial": lambda: torch.multinomial(torch.tensor([0.5, 0.5]), 1),
    "torch.bernoulli": lambda: torch.bernoulli(torch.full((2,), 0.5)),
    "Tensor.uniform_": lambda: torch.empty(2).uniform_(), "Tensor.exponential_": lambda: torch.empty(2).exponential_(),
    "Tensor.bernoulli_": lambda: torch.empty(2).bernoulli_(0.5), "Tensor.random_": lambda: torch.empty(2).random_(0, 5),
    "Tensor.normal_": lambda: torch.empty(2).normal_(),
    "Tensor.multinomial": lambda: torch.tensor([0.5, 0.5]).multinomial(1),
    "torch.rand(generator=g)": lambda: torch.rand(2, generator=torch.Generator().manual_seed(1)),
    "np.random.random": lambda: np.random.random(), "np.random.rand": lambda: np.random.rand(2),
    "np.random.uniform": lambda: np.random.uniform(), "np.random.choice": lambda: np.random.choice(3),
    "np.random.randint": lambda: np.random.randint(0, 5), "np.random.exponential": lambda: np.random.exponential(),
    "np.random.standard_normal": lambda: np.random.standard_normal(),
    "np.random.random_sample": lambda: np.random.random_sample(),
    "np.random.default_rng()": lambda: np.random.default_rng().random(),
    "random.random": lambda: random.random(), "random.uniform": lambda: random.uniform(0, 1),
    "random.choice": lambda: random.choice([1, 2]), "random.choices": lambda: random.choices([1, 2]),
    "random.randint": lambda: random.randint(0, 5), "random.randrange": lambda: random.randrange(5),
    "random.expovariate": lambda: random.expovariate(1.0), "random.gauss": lambda: random.gauss(),
}


@pytest.mark.parametrize("name", list(ROUTED))
def test_each_routed_function_draws_from_the_checkers_source(name):
    normal = any(k in name for k in ("randn", "normal", "gauss"))
    escapes, draws = _block(ROUTED[name], normal=normal)
    assert escapes == [] and draws > 0, (escapes, draws)


MOD_NP_GEN = np.random.default_rng(5)
MOD_NP_RS = np.random.RandomState(5)
MOD_PY_RANDOM = random.Random(5)


def uses_module_generators():
    return MOD_NP_GEN.random() + MOD_NP_RS.random_sample() + MOD_PY_RANDOM.random()


def test_generators_in_the_samplers_module_are_swapped_for_routed_stand_ins():
    escapes, draws = _block(uses_module_generators)
    assert escapes == [] and draws == 3


# --- detected: a draw the checker does not route leaves an escape naming its source ----------------

class _Box:
    def __init__(self):
        self.inner = {"np": np.random.default_rng(7), "rs": np.random.RandomState(7), "py": random.Random(7)}


BOX = _Box()

ESCAPING = {
    # torch's global generator through functions and tensor methods the checker does not route
    "torch.poisson": (lambda: torch.poisson(torch.ones(2)), TORCH),
    "torch.randperm": (lambda: torch.randperm(4), TORCH),
    "torch.normal(mean, std)": (lambda: torch.normal(torch.zeros(2), torch.ones(2)), TORCH),
    "Tensor.cauchy_": (lambda: torch.empty(2).cauchy_(), TORCH),
    "Tensor.geometric_": (lambda: torch.empty(2).geometric_(0.5), TORCH),
    "Tensor.log_normal_": (lambda: torch.empty(2).log_normal_(), TORCH),
    # NumPy's global generator through functions the checker does not route
    "np.random.beta": (lambda: np.random.beta(1.0, 1.0), NP),
    "np.random.poisson": (lambda: np.random.poisson(1.0), NP),
    "np.random.bytes": (lambda: np.random.bytes(4), NP),
    "np.random.mtrand._rand": (lambda: np.random.mtrand._rand.random_sample(), NP),
    # Python's global generator through functions the checker does not route
    "random.getrandbits": (lambda: random.getrandbits(53), PY),
    "random.betavariate": (lambda: random.betavariate(1.0, 1.0), PY),
    "random.shuffle": (lambda: random.shuffle([1, 2, 3, 4]), PY),
    "random.sample": (lambda: random.sample(range(10), 3), PY),
    "random.triangular": (lambda: random.triangular(), PY),
}


@pytest.mark.parametrize("name", list(ESCAPING))
def test_each_unrouted_global_draw_is_an_escape_naming_its_source(name):
    call, source = ESCAPING[name]
    escapes, _ = _block(call)
    assert escapes == [source]


@pytest.mark.parametrize("kind", ["np", "rs", "py"])
def test_a_generator_kept_out_of_reach_is_found_by_the_scan(kind):
    """NumPy Generator, RandomState and random.Random two levels deep in an object: not routable,
    found alive by the garbage-collector scan, their draws are escapes."""
    call = {"np": lambda: BOX.inner["np"].random(), "rs": lambda: BOX.inner["rs"].random_sample(),
            "py": lambda: BOX.inner["py"].random()}[kind]  # no closure variable: routing cannot reach it
    escapes, _ = _block(call, scan=True)
    assert len(escapes) == 1 and "cannot route" in escapes[0]


def test_a_generator_the_sampler_seeds_itself_is_an_escape():
    escapes, _ = _block(lambda: np.random.default_rng(99).random())
    assert escapes == ["a generator the sampler seeded itself (default_rng(99))"]


def uses_module_python_random_bits():
    return MOD_PY_RANDOM.getrandbits(53)


def test_a_module_random_Random_drawing_raw_bits_is_not_silent():
    """random.Random in the sampler's module is swapped for a routed stand-in; its getrandbits (and
    what builds on it: shuffle, sample, randbytes) does not go through the checker's source, so it
    must be an escape."""
    escapes, _ = _block(uses_module_python_random_bits)
    assert len(escapes) == 1 and "getrandbits" in escapes[0]


# --- end to end: the u ≤ ratio bug with its uniform from each unrouted source ------------------------

def _np_sd_le(p, q, d, uniform):
    """Standard SD with the `u ≤ ratio` bug; the correction through np.random.choice (routed)."""
    p = np.asarray(p, float)
    q = np.asarray(q, float)
    for i, x in enumerate(d):
        x = int(x)
        if uniform() <= min(1.0, p[i, x] / q[i, x]):
            continue
        r = np.maximum(p[i] - q[i], 0)
        r = r / r.sum() if r.sum() > 0 else p[i]
        return [int(t) for t in d[:i]] + [int(np.random.choice(len(r), p=r))]
    return [int(t) for t in d] + [int(np.random.choice(p.shape[1], p=p[-1]))]


UNIFORMS = {
    "random.getrandbits": (lambda: random.getrandbits(53) * 2.0 ** -53, PY),
    "random.betavariate": (lambda: random.betavariate(1.0, 1.0), PY),
    "np.random.beta": (lambda: float(np.random.beta(1.0, 1.0)), NP),
    # the Cauchy CDF 1/2 + atan(c)/π: 0 only for |c| > 1e16 (probability ~1e-17), so the forced-free
    # trial call never sees u = 0 (a normal CDF of a Cauchy draw underflows to 0 about 1% of the time)
    "Tensor.cauchy_": (lambda: 0.5 + math.atan(float(torch.empty((), dtype=torch.float64).cauchy_())) / math.pi,
                       TORCH),
    "module random.Random.getrandbits": (lambda: MOD_PY_RANDOM.getrandbits(53) * 2.0 ** -53, "getrandbits"),
}


@pytest.mark.parametrize("name", list(UNIFORMS))
def test_a_boundary_bug_behind_an_unrouted_source_is_never_certified(name):
    uniform, source = UNIFORMS[name]

    def sampler(p, q, d, rng):
        return _np_sd_le(p, q, d, uniform)

    r = sc.check_block_verifier(sampler, **PROBES)
    for cid in ("support_probes", "standard_probes"):
        rows = next(c for c in r["claims"] if c["id"] == f"conformance.{cid}")["evidence"]
        assert not any(e["outcome"] == "pass" for e in rows), cid
    assert r["verdicts"]["lossless"]["verdict"] != "holds"
    assert len(r["warnings"]) == 1 and "not reproducible from --seed" in r["warnings"][0]
    assert source in r["warnings"][0]
