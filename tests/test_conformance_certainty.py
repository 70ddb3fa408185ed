"""Issue 35: conformance that finds law bugs with certainty, not by chance.

* impossible outputs are proof: a clamp bug on a large sparse vocabulary fails in law at every
  seed, with the call that emits the impossible token again;
* severity from the triggering event's probability: a crash at u = 0.0 exactly is a boundary
  failure whether the statistical runs or the probes saw it;
* faithful forcing: each routed transform returns what torch's own CPU kernel returns for the same
  raw bits (torch's generator driven into chosen states);
* probes that hit their target: restricted-support zero-mass probes (NaN → token 0), zero-mass
  probes for trees, a decision made without a uniform graded on its output, a crash never a pass;
* compiled code found through modules, attributes, class attributes, containers and ctypes;
* one rerunnable call per distinct bug; ``assert_lossless`` never passes an inconclusive run.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from spectheory import conformance as sc
from spectheory.conformance.replay import load

FIX = Path(__file__).parent / "conformance_fixtures"
TORCH = dict(adapter="logits", dtype="float32", batched=True, framework="torch")
SPARSE = ("iid-V4096-sparse4",)


def _fx(name: str, fn: str = "verify"):
    return load(f"{FIX / name}:{fn}")


def _lossless(r):
    v = r["verdicts"]["lossless"]
    return v["verdict"], v["severity"]


# --- impossible outputs are proof ----------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_a_clamp_bug_fails_in_law_with_certainty_at_every_seed(seed):
    """clamp(p − q, min=1e-5) gives the 4,092 tokens with p = 0 mass ~0.04 in a correction: on
    the sparse V = 4096 instance the impossible-token check sees it at the first look (156 runs
    would do: P(no impossible token) < e^-40), whatever the seed; the finding is a proof with the
    call that emits an impossible token again."""
    pytest.importorskip("torch")
    target = f"{FIX / 'clamp_batched.py'}:verify"
    r = sc.check_block_verifier(load(target), instances=SPARSE, gammas=(3,), controls=False, probes=False, seed=seed,
                                name=target, **TORCH)
    assert _lossless(r) == ("fails", "law")
    [f] = r["verdicts"]["lossless"]["failures"]
    assert f["check"] == "impossible_tokens" and f["proof"] and f["event"] is None
    assert "with certainty" in r["verdicts"]["lossless"]["summary"]
    out = eval(f["call"], {"spectheory": __import__("spectheory")})  # noqa: S307  (the report's own call)
    p = np.zeros(4096)
    p[[1, 2, 3, 4]] = 1
    assert any(p[t] == 0 for t in out), out


def test_impossible_tokens_are_left_out_of_the_statistics():
    """A token of probability 0 is the impossible-token check's: the law checks leave it out (a
    statistic would blur a proof with a rare event), and say so."""
    from spectheory import instances as inst
    from spectheory.conformance import checks as C
    from spectheory.conformance.runs import Trace
    pair = inst.get("iid-V3-disjoint")
    em = np.array([[0, -1], [2, -1], [1, -1]] * 40)
    t = Trace("iid-V3-disjoint", 1, 3, 1, np.zeros(120, dtype=np.int64), np.ones(120, dtype=bool), em,
              np.ones(120, dtype=np.int64), np.full((120, 1), 2), em[:, :1].copy(), call_id=np.arange(1, 121))
    imp = C.impossible_tokens(t, pair)
    assert imp.outcome == "fail" and imp.measured == 40 and "call 2, position 0, token 2" in imp.note
    law = C.token_law_by_state(t, pair, 0.01)
    assert law.outcome != "fail" and "40 draw(s) of probability 0 left out" in law.note
    first = C.first_tokens(t, pair, 0.01)
    assert first.n == 80 and "40 run(s) with a token of probability 0 left out" in first.note


# --- severity from the event's probability ---------------------------------------------------------

@pytest.mark.parametrize("seed,seen_in_runs", [(6, True), (0, False)])
def test_a_crash_at_u_zero_is_a_boundary_failure_wherever_it_is_seen(seed, seen_in_runs):
    """u0_gumbel.py raises only when a uniform is 0.0 exactly (2^-24 per float32 draw, 4,096 per
    token on the sparse instance): at seed 6 the statistical runs meet one (call 104), at seed 0
    they do not and the u = 0 probe does. Both are boundary failures with that probability; the
    runs go on past the event (a fresh call), so no block ends in a crash."""
    pytest.importorskip("torch")
    target = f"{FIX / 'u0_gumbel.py'}:verify"
    r = sc.check_block_verifier(load(target), instances=SPARSE, gammas=(3,), controls=False, seed=seed, name=target,
                                **TORCH)
    assert _lossless(r) == ("fails", "boundary") and r["crashes"] == []
    # the block ran to its decision past the event (a fresh call): the impossible-token check holds with power
    assert next(c for c in r["claims"] if c["id"] == "conformance.impossible_tokens")["verdict"] == "holds"
    fails = r["verdicts"]["lossless"]["failures"]
    assert all(f["kind"] == "boundary" and f["probability"] == 2.0 ** -24 for f in fails)
    in_runs = [f for f in r["findings"] if f["what"] == "crash"]
    assert bool(in_runs) == seen_in_runs
    if seen_in_runs:
        assert "0.0 exactly" in in_runs[0]["event"] and in_runs[0]["call_line"]
    from spectheory.cli.cmd_conformance import exit_status
    assert exit_status(r["verdicts"]) == sc.EXIT_CODES["boundary"] == 3


def test_the_nudged_generator_moves_extremes_and_the_counting_one_counts_them():
    from spectheory.conformance.forced import CountingGenerator, NudgedGenerator
    arr = np.array([0.0, 0.5, 1 - 2.0 ** -24, 0.25], dtype=np.float32)
    c = CountingGenerator(np.random.default_rng(0))
    assert c._extreme(arr, 24) is arr and c.extremes == 2
    assert c._extreme(0.0, 53) == 0.0 and c._extreme(0.3, 53) == 0.3 and c.extremes == 3
    n = NudgedGenerator(np.random.default_rng(0))
    assert n._extreme(arr, 24).tolist() == [2.0 ** -24, 0.5, 1 - 2.0 ** -23, 0.25]
    assert n._extreme(0.0, 53) == 2.0 ** -53 and {w for w, _ in n.nudged} == {"zero", "max"}


# --- faithful forcing: the stand-ins against torch's own CPU kernels ---------------------------------

def _untemper(y: int) -> int:
    y ^= y >> 18
    y ^= (y << 15) & 0xefc60000
    res = y
    for _ in range(5):
        res = y ^ ((res << 7) & 0x9d2c5680)
    y = res & 0xffffffff
    res = y
    for _ in range(3):
        res = y ^ (res >> 11)
    return res & 0xffffffff


def _torch_next(torch, *outputs: int) -> None:
    """Torch's CPU generator (MT19937) set so that its next 32-bit outputs are ``outputs``."""
    st = torch.get_rng_state().numpy().copy()
    st[8:12] = np.frombuffer(struct.pack("<i", 624), np.uint8)     # left: no twist for 623 draws
    st[16:24] = np.frombuffer(struct.pack("<Q", 0), np.uint8)      # next word
    words = np.zeros(624, dtype=np.uint64)
    for i, x in enumerate(outputs):
        words[i] = _untemper(int(x))
    st[24:24 + 4992] = np.frombuffer(words.tobytes(), np.uint8)
    torch.set_rng_state(torch.from_numpy(st))


class _Given(np.random.Generator):
    """A generator whose next uniforms are given (what the stand-ins transform)."""

    def __init__(self, values):
        super().__init__(np.random.PCG64(0))
        self.values = values

    def random(self, size=None, dtype=np.float64, out=None):
        return np.asarray(self.values, dtype=dtype).reshape(size if size is not None else ())


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_routed_uniforms_are_torchs_own_values_for_the_same_bits(dtype):
    """torch.rand on CPU turns the low 24 bits k of a 32-bit draw into k·2^-24 (float32), rounded
    to nearest (float16, bfloat16) with 1.0 wrapping to 0: the stand-in returns the same value for
    the same k, extremes included (forced.TRANSFORMS)."""
    torch = pytest.importorskip("torch")
    from spectheory.conformance.forced import uniform_values
    saved = torch.get_rng_state()
    try:
        for k in (0, 1, 2 ** 23, 2 ** 24 - 1, 2 ** 24 - 2 ** 12, 2 ** 24 - 2 ** 12 - 1, 2 ** 24 - 2 ** 15,
                  2 ** 24 - 2 ** 11 - 2 ** 10, 12345):
            _torch_next(torch, k)
            theirs = torch.rand(1, dtype=getattr(torch, dtype)).float().item()
            ours = float(np.asarray(uniform_values(_Given([k * 2.0 ** -24]), (1,), dtype), dtype=np.float32)[0])
            assert ours == theirs, (dtype, k, ours, theirs)
    finally:
        torch.set_rng_state(saved)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_routed_exponentials_are_torchs_own_values_and_zero_only_at_two_to_minus_53(dtype):
    """Torch's CPU exponential_ draws a 53-bit float64 uniform u (two 32-bit draws) and returns
    −log1p(−u) cast to the dtype: exactly 0 when u = 0 (probability 2^-53: float32 included, not
    2^-24), as the stand-in, which reproduces each value."""
    torch = pytest.importorskip("torch")
    from spectheory.conformance.forced import exponential_values, extreme_probability
    saved = torch.get_rng_state()
    try:
        for k53 in (0, 1, 2 ** 29, 2 ** 52, 2 ** 53 - 1, 987654321987):
            _torch_next(torch, k53 >> 32, k53 & 0xffffffff)
            theirs = torch.empty(1, dtype=getattr(torch, dtype)).exponential_().double().item()
            ours = torch.as_tensor(exponential_values(_Given([k53 * 2.0 ** -53]), (1,), dtype)).to(
                getattr(torch, dtype)).double().item()
            assert ours == theirs, (dtype, k53, ours, theirs)
            if k53 == 0:
                assert theirs == 0.0  # in torch's domain, at probability 2^-53 per draw
    finally:
        torch.set_rng_state(saved)
    assert extreme_probability("zero", "float32", "exponential") == 2.0 ** -53


def test_an_exponential_race_is_not_charged_with_zero_keys_but_its_tiny_clamp_is_caught():
    """The exponential-race fixture (probs / exponential_, argmax): the runs' exponentials are 0
    with torch's probability 2^-53 (never in a run) and the forced u = 0 gives a race's keys the
    smallest positive value, not a tie of zeros: every probe but the masked zero-mass ones passes.
    Its residual clamped to the smallest float gives every token the same key when the residual has
    zero mass, token 0 with p = 0 included: the masked zero-mass probes catch it (boundary)."""
    pytest.importorskip("torch")
    r = sc.check_block_verifier(_fx("exponential_race.py"), framework="torch", n=1250,
                                instances=("iid-V3-disjoint", "iid-V1") + SPARSE, gammas=(1,), controls=False)
    rows = _support_rows(r)
    assert all(e["outcome"] == "pass" for n, e in rows.items() if "masked" not in n)
    assert any(e["outcome"] == "fail" for n, e in rows.items() if "masked" in n)
    assert _lossless(r) == ("fails", "boundary") and not r["findings"]
    assert all("zero mass" in f["event"] for f in r["verdicts"]["lossless"]["failures"])


# --- probes that hit their target ---------------------------------------------------------------

def _support_rows(r):
    return {e["instance"]: e for e in next(c for c in r["claims"] if c["id"] == "conformance.support_probes")["evidence"]}


def test_a_nan_residual_falling_back_to_token_0_fails_the_masked_zero_mass_probes_only():
    """nan_fallback.py's NaN residual falls back to token 0: on the zero-mass probes whose rows
    give every token mass the output is valid (the old probes' hole); on the rows with token 0
    masked it is an impossible token — a boundary failure, the event a zero-mass residual."""
    pytest.importorskip("torch")
    r = sc.check_block_verifier(_fx("nan_fallback.py"), instances=("iid-V1",), gammas=(1,), n=200, controls=False,
                                **TORCH)
    rows = _support_rows(r)
    masked = [e for n, e in rows.items() if "token 0 masked" in n]
    plain = [e for n, e in rows.items() if "zero-mass" in n and "masked" not in n]
    assert masked and all(e["outcome"] == "fail" and "emitted token 0 has p = 0" in e["note"] for e in masked)
    assert plain and all(e["outcome"] == "pass" for e in plain)
    assert _lossless(r) == ("fails", "boundary")
    f = r["verdicts"]["lossless"]["failures"][0]
    assert "zero mass" in f["event"] and f["probability"] < 1e-6


def test_tree_verifiers_get_zero_mass_probes():
    """A tree verifier's unguarded residual (NaN → argmax → token 0) fails the tree's masked
    zero-mass probes: every node carries the probe's token, every row the probe's rows (one child
    at the first depth: with two, this NumPy verifier accepts the second child through
    min(1, NaN) = 1, a valid output)."""
    r = sc.check_multidraft_verifier(_fx("tree_nan_fallback.py"), tree=(1, 2), dtype="float32", instances=("iid-V1",),
                                     n=200, controls=False)
    rows = _support_rows(r)
    assert any("masked" in n and e["outcome"] == "fail" for n, e in rows.items()), rows.keys()
    assert _lossless(r) == ("fails", "boundary")


def _rejects_zero_without_a_draw(p, q, draft, rng):
    """Alg. 1 that rejects a drafted token with p = 0 without drawing (no uniform can accept it)
    and accepts where p ≥ q without drawing."""
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        if p[i][x] <= 0:
            break
        if p[i][x] >= q[i][x] or rng.random() < p[i][x] / q[i][x]:
            out.append(x)
            continue
        break
    else:
        return out + [sc.inverse_cdf(p[len(draft)], rng.random())]
    i = len(out)
    r = np.maximum(np.asarray(p[i]) - np.asarray(q[i]), 0.0)
    return out + [sc.inverse_cdf(r if r.sum() > 0 else p[i], rng.random())]


def test_a_decision_made_without_a_uniform_is_graded_on_its_output():
    """Where p(x) = 0 the rejection needs no random value, nor the acceptance where p ≥ q: a
    sampler that makes them without a draw has its probes applied and graded (they pass), as the
    forced values decided every step that needed one (the correction's draw)."""
    r = sc.check_block_verifier(_rejects_zero_without_a_draw, instances=("iid-V1",), gammas=(1,), n=200,
                                controls=False)
    rows = _support_rows(r)
    for name in ("p=0 drafted token, u=0", "disjoint supports, u=0", "p≥q at the draft, u=1−ulp"):
        assert rows[name]["outcome"] == "pass", rows[name]["note"]


def _crash_at_u_zero(p, q, draft, rng):
    u = rng.random()
    if u == 0.0:
        raise ZeroDivisionError("log of a zero uniform")
    rng2 = np.random.default_rng(int(u * 2 ** 31))
    return sc.reference_verifier(p, q, draft, rng2)


def test_a_probe_that_crashed_is_never_a_pass_for_any_verdict():
    """A crash at u = 0 fails the probe's support row and its standard row (it read "pass" in the
    standard verdict before: a crash is not Alg. 1 either)."""
    from spectheory.conformance.kinds.block import BlockKind
    from spectheory.conformance.probes import run_probe
    kind = BlockKind(_crash_at_u_zero)
    probe = next(pr for pr in kind.probes(kind.sampler) if pr.name == "p=0 drafted token, u=0")
    support, standard, result = run_probe(kind, kind.sampler, probe)
    assert support.outcome == standard.outcome == "fail" and result["crash"]
    assert "ZeroDivisionError" in standard.note


# --- compiled code through modules and closures ------------------------------------------------------

@pytest.mark.parametrize("fn,where", [("verify", "attribute race"), ("bound", "attribute race")])
def test_torchscript_kept_as_a_module_attribute_is_named(fn, where):
    pytest.importorskip("torch")
    r = sc.check_block_verifier(_fx("compiled_module.py", fn), framework="torch", instances=("iid-V1",),
                                gammas=(1,), n=200, controls=False)
    assert r["verdicts"]["lossless"]["verdict"] == "inconclusive"
    w = " ".join(r["warnings"])
    assert "TorchScript (torch.jit.script/trace): _race (" + where in w, w
    assert all(e["outcome"] != "pass" for e in _support_rows(r).values() if "one-token" not in e["instance"])


def test_compiled_code_is_found_in_class_attributes_containers_ctypes_and_torch_compile(tmp_path):
    torch = pytest.importorskip("torch")
    import ctypes
    from spectheory.conformance.compiled import compiled_in

    def race(probs: torch.Tensor) -> int:
        return int(probs.argmax())

    scripted = torch.jit.script(race)

    class Holder:
        fn = scripted

        def verify(self, p, q, draft, rng):
            return [self.fn(p[-1])]

    class Deep:
        def __init__(self):
            self.parts = {"fns": [scripted]}

        def __call__(self, p, q, draft, rng):
            return [self.parts["fns"][0](p[-1])]

    libc_rand = ctypes.CDLL(None).rand

    def uses_libc(p, q, draft, rng, _rand=libc_rand):
        return [int(_rand()) % 3]

    assert any("class attribute Holder.fn" in f for f in compiled_in(Holder().verify))
    assert any("attribute parts['fns'][0]" in f for f in compiled_in(Deep()))
    assert any("ctypes" in f and "rand" in f for f in compiled_in(uses_libc))

    # torch.compile: a compiled function in a closure, a compiled module as an attribute (nothing is
    # compiled until called: finding them needs no compiler)
    compiled = torch.compile(race)

    def closes_over(p, q, draft, rng):
        return [compiled(p[-1])]

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.compile(torch.nn.Identity())

        def forward(self, p, q, draft, rng):
            return [int(self.inner(p[-1]).argmax())]

    assert any(f.startswith("torch.compile") for f in compiled_in(closes_over)), compiled_in(closes_over)
    assert any(f.startswith("torch.compile") and "inner" in f for f in compiled_in(Wrapper())), compiled_in(Wrapper())


class _Hidden:
    def __init__(self):
        self.streams = {"last": np.random.default_rng(99)}  # out of the routing's reach


_HIDDEN = _Hidden()


def _last_token_hidden(p, q, draft, rng):
    """Alg. 1 with the acceptance uniforms from ``rng`` and the correction/bonus from a hidden
    generator, unless its row has one possible token: the one-token probes are decided by the
    forced values, the others are not."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)

    def last(w):
        nz = np.flatnonzero(w > 0)
        return int(nz[0]) if nz.size == 1 else int(_HIDDEN.streams["last"].choice(len(w), p=w / w.sum()))
    for i, x in enumerate(draft):
        x = int(x)
        if rng.random() < min(1.0, p[i, x] / q[i, x]):
            continue
        r = np.maximum(p[i] - q[i], 0.0)
        return list(draft[:i]) + [last(r if r.sum() > 0 else p[i])]
    return list(draft) + [last(p[-1])]


def test_a_probe_claim_with_some_probes_not_applied_is_not_a_pass():
    """Some probes applied and passed, the others not applied (their last token came from a hidden
    generator): the probe claims are inconclusive, not holds, and so is lossless."""
    r = sc.check_block_verifier(_last_token_hidden, instances=("iid-V1",), gammas=(1,), n=200, controls=False)
    rows = list(_support_rows(r).values())
    assert any(e["outcome"] == "pass" for e in rows) and any(e["outcome"] == "info" for e in rows)
    claims = {c["id"]: c["verdict"] for c in r["claims"]}
    assert claims["conformance.support_probes"] == claims["conformance.standard_probes"] == "inconclusive", claims
    assert r["verdicts"]["lossless"]["verdict"] == "inconclusive"


# --- one rerunnable call per distinct bug; assertions --------------------------------------------------

def _two_bugs(p, q, draft, rng):
    """u ≤ ratio (accepts a p = 0 draft at u = 0) and an unguarded residual (crashes on NaN)."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    for i, x in enumerate(draft):
        x = int(x)
        if rng.random() <= p[i, x] / q[i, x]:
            continue
        r = np.maximum(p[i] - q[i], 0.0)
        return list(draft[:i]) + [int(rng.choice(len(r), p=r / r.sum()))]
    return list(draft) + [sc.inverse_cdf(p[-1], rng.random())]


def test_each_distinct_bug_has_its_own_rerunnable_call():
    """The u ≤ ratio bug fails two u = 0 probes and the unguarded residual the zero-mass ones: two
    bugs, two calls (the zero-mass crash had none of its own when a u = 0 probe failed first)."""
    r = sc.check_block_verifier(_two_bugs, dtype="float32", instances=("iid-V1",), gammas=(1,), n=200,
                                controls=False, name=f"{__file__}:_two_bugs")
    fails = r["verdicts"]["lossless"]["failures"]
    sigs = {f["signature"] for f in fails}
    assert len(fails) == len(sigs) == 2, sigs
    assert all(f["call"] and f["kind"] == "boundary" for f in fails)
    assert any("uniform 0" in s for s in sigs) and any("zero-mass" in s for s in sigs)
    assert {f.get("also", 0) for f in fails} >= {1}  # both u = 0 probes, the zero-mass cases: one bug each
    with pytest.raises(ValueError):  # the zero-mass call crashes again
        eval(next(f["call"] for f in fails if "zero-mass" in f["signature"]),  # noqa: S307
             {"spectheory": __import__("spectheory")})


def test_assert_lossless_never_passes_an_inconclusive_run():
    """A sampler whose uniforms come from a generator the checker cannot route: its probes are
    not applied, lossless is inconclusive, and the assertion raises saying so."""
    from spectheory.testing import assert_lossless
    with pytest.raises(AssertionError, match="LOSSLESS: inconclusive"):
        assert_lossless(_fx("hidden_generator.py"), instances=("iid-V1",), gammas=(1,), n=200, controls=False)


def test_a_ragged_sampler_reusing_its_decision_uniform_for_the_correction_fails_in_law():
    """The correction drawn by inverse CDF at the uniform that rejected the draft (u ≥ p(x)/q(x))
    is biased to the last tokens: the fast tier sees it in law (on markov1-V4-topk2, where the
    residual has several tokens after a likely acceptance, at 2,000 runs: p < 1e-5)."""
    pytest.importorskip("torch")
    r = sc.check_ragged_sampler(_fx("ragged_bugs.py", "reused_uniform"), framework="torch", n=2000,
                                instances=("markov1-V4-topk2",), controls=False, probes=False)
    assert _lossless(r) == ("fails", "law")


# --- the defaults, a law bug that drew an extreme, escaped draws made again --------------------------

def test_the_defaults_include_a_large_sparse_vocabulary_for_the_impossible_token_check():
    from spectheory.conformance.kinds.block import BlockKind, block_plan
    from spectheory.conformance.kinds.multidraft import MultiDraftKind
    from spectheory.conformance.kinds.ragged import RaggedKind
    from spectheory.conformance.checks import CHECKS, IMPOSSIBLE_ID
    for kind in (BlockKind, MultiDraftKind, RaggedKind):
        assert SPARSE[0] in kind.INSTANCES, kind
    plan = block_plan(CHECKS, BlockKind.INSTANCES, (1, 3))
    sparse = [b for b in plan if b.instance == SPARSE[0]]
    assert [(b.gamma, b.checks) for b in sparse] == [(3, (IMPOSSIBLE_ID,))]
    # a call on iid-V3-disjoint emits one token: no first_tokens there, at any γ; the α split the docs state
    # (18 lossless tests at 0.01/18, 50 standard at 0.01/50; iid-V1 and the exact checks take no share)
    from spectheory.conformance import driver, sequential
    disjoint = [b for b in plan if b.instance == "iid-V3-disjoint"]
    assert len(disjoint) == 2 and not any(b.runs("conformance.first_tokens") for b in disjoint)
    p = driver.Plan(CHECKS, plan, 0.01, sequential.design(10_000))
    assert p.n_tests == {"lossless": 18, "standard": 50}


def _always_impossible_with_many_uniforms(p, q, draft, rng):
    """A law bug (token 0, p = 0 on the sparse instance, every call) that also draws four million
    float32 uniforms a call, so exact zeros are drawn: the zeros are not its trigger."""
    rng.random(2 ** 22, dtype=np.float32)
    return [0]


def test_a_law_bug_that_also_drew_an_extreme_is_still_law():
    """The nudged replay of an impossible-token call still emits the impossible token: the extremes
    drawn in the run (about ten in 40 calls) did not trigger it, so the failure is law (a proof)."""
    from spectheory.conformance.kinds.block import BlockKind
    kind = BlockKind(_always_impossible_with_many_uniforms)
    runs = kind.runner(kind.sampler, kind.replay_block(SPARSE[0], 1), 5)
    runs.extend(40)
    runs.finalize()
    assert runs.rng.extremes > 0 and runs.impossible == runs.calls == 40
    assert len(runs.findings) == 3 and all(f["event"] is None for f in runs.findings), runs.findings


def _escaped_poisson(p, q, draft, rng):
    """Alg. 1, but when an unrouted draw from torch's global generator (torch.poisson) comes out 5 it
    accepts the drafted token whatever p says."""
    import torch
    if int(torch.poisson(torch.tensor(4.0))) == 5:
        return [int(draft[0])] + [sc.inverse_cdf(np.asarray(p)[1], rng.random())]
    return sc.reference_verifier(p, q, draft, rng)


def test_a_probe_whose_draws_escape_is_made_again_from_fixed_states():
    """Torch's generator at the fixed states of the probes gives poisson draws 3, 5, …: the first call
    of the u = 0 probe is valid, the second accepts the p = 0 token — found, in every report alike."""
    pytest.importorskip("torch")
    from spectheory.conformance.kinds.block import BlockKind
    from spectheory.conformance.probes import run_probe
    kind = BlockKind(_escaped_poisson)
    probe = next(pr for pr in kind.probes(kind.sampler) if pr.name == "p=0 drafted token, u=0")
    support, _, result = run_probe(kind, kind.sampler, probe)
    assert support.outcome == "fail" and "emitted token 0 has p = 0" in support.note
    assert "torch's global generator" in support.note  # not applied, and a violation all the same


# --- the judged bug classes at seeds 0–4, default settings (slow tier) ------------------------------

def _judged():
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from conformance_judged_seeds import JUDGED
    return JUDGED


@pytest.mark.slow
@pytest.mark.parametrize("case", _judged(), ids=[c[0] for c in _judged()])
def test_each_judged_bug_class_gets_the_same_verdict_and_kind_at_seeds_0_to_4(case):
    """Each fixture of a judged class through ``spectheory conformance`` with its defaults at seeds
    0–4: the same lossless verdict, the same kind (law / boundary / crash) and exit status at every
    seed (the fast tier runs one seed of each on fewer instances)."""
    pytest.importorskip("torch")
    from bench_conformance_cpu import run_one
    name, target, opts, lossless, severity, status = case
    for seed in range(5):
        row = run_one(target, [*opts, "--seed", str(seed)], report_only=False)
        assert (row.get("lossless"), row.get("severity"), row["exit"]) == (lossless, severity, status), (seed, row)
