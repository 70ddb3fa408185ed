"""Independent implementations (tests/conformance_fixtures/, written as users write them, none
importing spectheory) run through `spectheory conformance` as a user would: each gets the
right lossless verdict (and standard / rule verdict), no probe holds unless its forced value
reached the sampler, and each usage mistake ends in exit status 2 with a hint."""
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

FIX = Path(__file__).parent / "conformance_fixtures"
TORCH = ["--adapter", "logits", "--dtype", "float32", "--batched", "--framework", "torch"]
#: small enough for the fast tier, powered for every verdict below (α = 0.01 per verdict)
SMALL = ["--n", "8000", "--gammas", "2", "--no-controls"]
INSTANCES = ["--instances", "markov1-V3-mix0.4,iid-V3-disjoint,iid-V1"]
TORCH_SMALL = ["--instances", "markov1-V3-mix0.4,iid-V1"]  # torch calls are slow: one Markov instance

CASES = [
    # (file:function, options, lossless, standard, text in the output, exit status with --strict)
    ("pure_python_sd.py:verify", [], "holds", "holds", None, 0),
    ("numpy_batched_logits.py:verify", ["--adapter", "logits", "--dtype", "float32", "--batched"], "holds", "holds",
     None, 0),
    ("torch_sd.py:verify", TORCH + TORCH_SMALL, "holds", "holds", None, 0),
    ("python_random_sd.py:verify", [], "holds", "holds", None, 0),
    ("nonstandard_lossless.py:verify", [], "holds", "fails", None, 0),
    ("typical_acceptance.py:verify", [], "fails", "fails", "[law]", 1),
    ("escaped_uniform_le.py:verify", TORCH + ["--instances", "iid-V1"], "fails", "fails", "emitted token 0 has p = 0",
     3),
    ("hidden_generator.py:verify", [], "inconclusive", "inconclusive", "not reproducible from --seed", 1),
    ("bonus_wrong_row.py:verify", [], "fails", "fails", "[law]", 1),
    ("crash_token0.py:verify", [], "fails", "fails", "crash_token0.py:9 in verify", 4),
    # a crash at a probe is never a pass, for the standard verdict either (issue 35)
    ("unguarded_residual.py:verify", ["--dtype", "float32"], "fails", "fails", "zero-mass residual", 3),
    # issue 26: an exponential race must not fail on a forced tie of zero keys (it passes the u = 0 probes); issue
    # 35: its residual clamped to the smallest float gives every token the same key when the residual has zero
    # mass, so the probes whose rows mask token 0 catch it emitting token 0 (boundary); under TorchScript too
    # (the escaped draws come from torch's generator at fixed states, the call made again), with the cause named
    ("exponential_race.py:verify", ["--framework", "torch"] + TORCH_SMALL, "fails", "holds", "token 0 masked", 3),
    ("exponential_race_jit.py:verify", ["--framework", "torch"] + TORCH_SMALL, "fails", "inconclusive",
     "TorchScript (torch.jit.script/trace): _race (called by verify)", 3),
    # issue 35: the judged classes — a clamp (law, with certainty on the sparse vocabulary), a crash at u = 0.0
    # exactly (boundary), a NaN residual falling back to token 0 (boundary), TorchScript kept as a module attribute
    ("clamp_batched.py:verify", TORCH + ["--instances", "iid-V4096-sparse4,iid-V1"], "fails", "holds",
     "with certainty", 1),
    ("u0_gumbel.py:verify", TORCH + ["--instances", "iid-V1"], "fails", "fails", "0.0 exactly", 3),
    ("nan_fallback.py:verify", TORCH + ["--instances", "iid-V1"], "fails", "holds", "token 0 masked", 3),
    ("compiled_module.py:verify", ["--framework", "torch", "--instances", "iid-V1"], "inconclusive", "inconclusive",
     "TorchScript (torch.jit.script/trace): _race (attribute race)", 1),
]

MULTI = ["--n", "8000", "--gammas", "2", "--no-controls"]
MULTI_CASES = [
    ("multidraft_specinfer_numpy.py:verify", ["--kind", "multidraft", "--K", "3", "--rule", "specinfer"], "holds",
     "holds"),
    ("tree_specinfer_torch.py:verify", ["--kind", "multidraft", "--tree", "2,2", "--rule", "specinfer",
                                        "--framework", "torch", "--instances", "markov1-V3-mix0.4"], "holds", "holds"),
    ("kseq_rho_one.py:verify", ["--kind", "multidraft", "--K", "3", "--rule", "kseq"], "fails", "fails"),
    # issue 26: acceptance uniforms drawn once and reused on every call: fails in law, and no probe reads pass
    ("cached_uniform_tree.py:verify", ["--kind", "multidraft", "--tree", "2,2", "--rule", "specinfer",
                                       "--framework", "torch", "--instances", "markov1-V3-mix0.4"], "fails", "fails"),
]

USAGE = [
    ("usage_mistakes.py:batched", [], "--batched"),
    ("usage_mistakes.py:logits", [], "--adapter logits"),
    ("usage_mistakes.py:torch_only", [], "--framework torch"),
    ("usage_mistakes.py:with_count", [], "a pair"),
    ("usage_mistakes.py:no_rng", [], "cannot be called as fn(p, q, draft_tokens, rng)"),
    ("usage_mistakes.py:prints", [], "returned None"),
    ("torch_sd.py:verify", ["--adapter", "logits", "--dtype", "float32", "--batched"], "--framework torch"),
    ("multidraft_specinfer_numpy.py:verify", ["--kind", "multidraft", "--tree", "2,2"], "leave tree out"),
    # issue 26: swapped arguments, told apart by shape, and code that never completes a call
    ("usage_mistakes.py:draft_first", [], "when called as fn(draft_tokens, p, q, rng)"),
    ("usage_mistakes.py:q_before_p", [], "lambda p, q, draft_tokens, rng: fn(q, p, draft_tokens, rng)"),
    ("usage_mistakes.py:never_runs", [], "spectheory calls fn(p, q, draft_tokens, rng)"),
]


def _run(tmp_path, target, opts):
    from typer.testing import CliRunner

    from spectheory.cli.main import app
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["conformance", str(FIX / target.split(":")[0]) + ":" + target.split(":")[1],
                                   *opts, "--no-progress", "--json", str(out), "--markdown", str(tmp_path / "r.md")])
    return res, (json.loads(out.read_text()) if out.exists() else None)


@pytest.mark.parametrize("target,opts,lossless,standard,text,status", CASES, ids=[c[0] for c in CASES])
def test_block_fixture_gets_the_right_verdicts(tmp_path, target, opts, lossless, standard, text, status):
    res, rep = _run(tmp_path, target, opts + SMALL + ([] if "--instances" in opts else INSTANCES) + ["--strict"])
    assert res.exit_code == status, res.output
    assert res.output.lstrip().startswith(f"LOSSLESS: {lossless}"), res.output[:400]
    assert rep["verdicts"]["lossless"]["verdict"] == lossless
    assert rep["verdicts"]["standard"]["verdict"] == standard, rep["verdicts"]
    if text:
        assert text in res.output or text in json.dumps(rep), text
    for c in rep["claims"]:  # a probe passes only where its forced value reached the sampler
        if c["id"].endswith("probes") and rep["warnings"]:
            assert not any(e["outcome"] == "pass" for e in c["evidence"]), c["id"]


@pytest.mark.parametrize("target,opts,lossless,rule", MULTI_CASES, ids=[c[0] for c in MULTI_CASES])
def test_multidraft_fixture_gets_the_right_verdicts(tmp_path, target, opts, lossless, rule):
    res, rep = _run(tmp_path, target, opts + MULTI + ([] if "--instances" in opts else
                                                       ["--instances", "markov1-V3-mix0.4,iid-V3-disjoint"]))
    assert res.exit_code == (0 if lossless == "holds" else 1), res.output
    assert (rep["verdicts"]["lossless"]["verdict"], rep["verdicts"]["standard"]["verdict"]) == (lossless, rule), \
        rep["verdicts"]
    if lossless == "fails":
        assert rep["verdicts"]["lossless"]["severity"] == "law"
    if rep["warnings"]:  # a probe passes only where its forced values decided the step
        probes = next(c for c in rep["claims"] if c["id"].endswith("support_probes"))
        assert not any(e["outcome"] == "pass" for e in probes["evidence"]), probes["evidence"]


@pytest.mark.parametrize("target,opts,hint", USAGE, ids=[f"{c[0]} {' '.join(c[1])}" for c in USAGE])
def test_usage_mistake_exits_2_with_a_hint(tmp_path, target, opts, hint):
    res, rep = _run(tmp_path, target, opts + ["--n", "200"])
    assert res.exit_code == 2, res.output
    assert res.output.startswith("usage error: ") and hint in res.output, res.output
    assert rep is None  # nothing written
