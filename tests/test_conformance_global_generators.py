"""Draws that escape the routing come from the global generators, which a conformance run starts
at a state derived from its seed (spectheory.conformance.driver.run, sources.fixed_globals):
torch's, NumPy's, Python's and Numba's (np.random / random inside @njit, a generator of its own).
So a report is a function of its seed, not of what ran before in the process — under
`pytest -n 2` the TorchScript race fixture once read `law` (p = 0.00074) where alone it reads
`boundary` — and the caller's generator states are what they were after the run."""
import importlib.util
import json
import random
from pathlib import Path

import numpy as np
import pytest

from spectheory import conformance as sc

numba = pytest.importorskip("numba")
FIX = Path(__file__).parent / "conformance_fixtures"
RUN = dict(n=2000, gammas=(2,), instances=("markov1-V3-mix0.4",), controls=False, probes=False)


@numba.njit
def _njit_sd(p, q, draft):
    """Standard speculative sampling (Leviathan et al. 2023, Alg. 1) drawing with np.random
    inside @njit: Numba's own generator, which the checker can neither route nor see."""
    g = draft.shape[0]
    out = np.empty(g + 1, np.int64)
    for i in range(g):
        x = draft[i]
        out[i] = x
        if np.random.random() < min(1.0, p[i, x] / q[i, x]):
            continue
        r = np.maximum(p[i] - q[i], 0.0)
        out[i] = np.searchsorted(np.cumsum(r / r.sum()), np.random.random(), side="right")
        return out[:i + 1]
    out[g] = np.searchsorted(np.cumsum(p[g]), np.random.random(), side="right")
    return out


def njit_sd(p, q, draft, rng):
    """The block verifier around :func:`_njit_sd` (compiled before the run: see :func:`_compiled`)."""
    return [int(t) for t in _njit_sd(np.asarray(p, np.float64), np.asarray(q, np.float64), np.asarray(draft))]


def _compiled():
    """Compile the kernel outside the run: compiled lazily inside it, Numba would type the routed
    stand-in the checker puts at np.random.random and fail (a TypingError)."""
    _njit_sd(np.full((2, 2), 0.5), np.full((1, 2), 0.5), np.zeros(1, np.int64))
    return njit_sd


@numba.njit
def _burn_numba(k):
    s = 0.0
    for _ in range(k):
        s += np.random.random() + random.random()
    return s


def _torchscript_race():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("exponential_race_jit", FIX / "exponential_race_jit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.verify


def _burn_everything(k):
    """Move every global generator by an amount that depends on ``k`` (what earlier tests do)."""
    _burn_numba(k)
    np.random.random(k)
    for _ in range(k):
        random.random()
    torch = __import__("sys").modules.get("torch")
    if torch is not None:
        torch.rand(k)


def _records(report):
    """What the run recorded: every check's evidence (statistics, p-values, counts), the blocks'
    raw counts (runs, calls, uniforms needed) and the verdicts."""
    blocks = [{k: b.get(k) for k in ("label", "runs", "looks", "calls", "draws", "impossible_tokens")}
              for b in report["run"]["blocks"]]
    return json.loads(json.dumps({"claims": report["claims"], "blocks": blocks, "verdicts": report["verdicts"]},
                                 default=str))


@pytest.mark.parametrize("which", ["numba", "torchscript"])
def test_escaped_draws_are_a_function_of_the_seed_not_of_earlier_draws(which):
    """One process, one seed, two runs with a different amount drawn from every global generator
    before each: the same records (failed before Numba's and the runs' global generators were
    seeded: the raw call counts differed)."""
    if which == "numba":
        fn, opts = _compiled(), {}
    else:
        fn, opts = _torchscript_race(), {"framework": "torch"}
    reports = []
    for k in (1, 5000):
        _burn_everything(k)
        reports.append(sc.check_block_verifier(fn, seed=3, **opts, **RUN))
    a, b = (_records(r) for r in reports)
    assert a["blocks"] == b["blocks"]
    assert a == b
    assert a["blocks"][0]["runs"] == RUN["n"] and a["blocks"][0]["calls"] > RUN["n"]  # something was run
    if which == "torchscript":  # the draws did escape (to torch's global generator)
        assert any("torch's global generator" in w for w in reports[0]["warnings"])


def test_the_callers_generator_states_are_restored():
    """After a run, every global generator continues where the caller left it."""
    def draws():
        return (_burn_numba(3), np.random.random(), random.random())

    def seed_all():
        _seed_numba(7)
        np.random.seed(7)
        random.seed(7)

    fn = _compiled()
    seed_all()
    expected = draws()
    seed_all()
    sc.check_block_verifier(fn, seed=0, **RUN)
    assert draws() == expected


@numba.njit
def _seed_numba(s):
    np.random.seed(s)
    random.seed(s)
