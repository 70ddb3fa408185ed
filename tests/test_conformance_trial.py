"""The trial call (issue 18 item 3): shape, type and arity mistakes and a missing adapter option
stop the run with a usage error and a hint (exit code 2 on the command line); a probability/
logits mix-up is detected; a crash inside the sampler is reported with its file:line and
counted as a crash, not a p-value; a lossy sampler is never turned into a usage error."""
import json

import numpy as np
import pytest

from spectheory import conformance as sc
from spectheory.conformance.kinds import multidraft as md
from spectheory.conformance import check_multidraft_verifier

Usage = sc.ConformanceUsageError
QUICK = dict(n=200, instances=("iid-V1",), gammas=(1,), controls=False, probes=False)


def _softmax(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def three_args(p, q, draft):
    return [0]


def returns_none(p, q, draft, rng):
    sc.reference_verifier(p, q, draft, rng)


def returns_dict(p, q, draft, rng):
    return {"tokens": sc.reference_verifier(p, q, draft, rng)}


def returns_float(p, q, draft, rng):
    return float(sc.reference_verifier(p, q, draft, rng)[-1])


def returns_batch_row(p, q, draft, rng):
    return np.array([sc.reference_verifier(p, q, draft, rng)])


def indexes_batch(p, q, draft, rng):
    return [sc.reference_verifier(p[0], q[0], list(draft[0]), rng)]


def wants_torch(p, q, draft, rng):
    return sc.reference_verifier(p.double().softmax(-1).numpy(), q.double().softmax(-1).numpy(), draft.tolist(), rng)


def wants_logits(p, q, draft, rng):
    return sc.reference_verifier(_softmax(p), _softmax(q), list(draft), rng)


@pytest.mark.parametrize("fn,kwargs,problem,hint", [
    (three_args, {}, r"cannot be called as fn\(p, q, draft_tokens, rng\).*3 positional", "--kind step"),
    (returns_none, {}, "returned None", "return the emitted token ids"),
    (returns_dict, {}, r"returned a dict \(keys \['tokens'\]\)", "return the emitted token ids"),
    (returns_float, {}, r"returned shape \(\) \(a scalar float64", "return the emitted token ids"),
    (returns_batch_row, {}, "leading batch axis.*--batched", "return the emitted token ids"),
    (indexes_batch, {}, "TypeError", "--batched"),
    (wants_torch, {}, r"AttributeError.*double.*test_conformance_trial.py:\d+ in wants_torch", "--framework torch"),
    (wants_logits, {}, "point mass at token 5.*reads probabilities as logits", "--adapter logits"),
    (sc.reference_verifier, dict(adapter="logits"), "", "--adapter probs"),
])
def test_usage_mistakes_stop_with_a_hint(fn, kwargs, problem, hint):
    with pytest.raises(Usage) as info:
        sc.check_block_verifier(fn, **{**QUICK, **kwargs})
    err = info.value
    import re
    assert re.search(problem, err.problem), err.problem
    assert hint in err.hint, err.hint


def test_the_hint_says_what_the_function_receives():
    with pytest.raises(Usage) as info:
        sc.check_block_verifier(returns_none, **QUICK)
    assert "receives p: target probabilities of shape (2, 3)" in info.value.problem


def crash_on_token_zero(p, q, draft, rng):
    if 0 in list(draft):
        raise ZeroDivisionError("leftover debugging raise")
    return sc.reference_verifier(p, q, draft, rng)


def test_a_crash_is_reported_where_it_happened_and_counted_as_a_crash():
    r = sc.check_block_verifier(crash_on_token_zero, instances=("markov1-V3-mix0.4", "iid-V3-disjoint"), gammas=(1,),
                                n=400, controls=False, probes=False)
    [crash] = r["crashes"]
    assert crash["instance"] == "markov1-V3-mix0.4" and crash["kind"] == "exception"
    assert crash["location"].startswith(__file__) and crash["location"].endswith("in crash_on_token_zero")
    assert crash["exception"] == "ZeroDivisionError: leftover debugging raise" and "draft [0]" in crash["context"]
    rows = [e for c in r["claims"] for e in c["evidence"] if e["instance"].startswith("markov1")]
    assert rows and all(e["p_value"] is None and e["outcome"] == "fail" and "crashed" in e["test"] for e in rows)
    other = [e for c in r["claims"] for e in c["evidence"] if e["instance"].startswith("iid-V3-disjoint")]
    assert other and not any(e["outcome"] == "fail" for e in other)  # the other instance (drafts token 2) ran
    assert r["verdicts"]["lossless"]["verdict"] == "fails"
    assert "crashed on 1 instance×γ (ZeroDivisionError" in r["verdicts"]["lossless"]["summary"]


def test_a_lossy_sampler_is_not_a_usage_error():
    """The swapped ratio min(1, q/p) accepts a drafted token with p = 0, so it fails the
    point-mass trial case; under logits it passes that case by accident, but not the trial's
    first-token law test: no usage error, the checks report it."""
    swapped = sc.CONTROLS[1][1]
    r = sc.check_block_verifier(swapped, n=400, instances=("iid-V4-strong",), gammas=(1,), controls=False,
                                probes=False)
    assert r["run"]["trial"]["result"] == "support" and r["verdicts"]["lossless"]["verdict"] == "fails"


def test_cli_usage_error_exits_2_with_the_hint(tmp_path):
    from typer.testing import CliRunner

    from spectheory.cli.main import app
    mod = tmp_path / "mine.py"
    mod.write_text("import numpy as np\n"
                   "from spectheory.conformance import reference_verifier\n"
                   "def verify(p, q, draft, rng):\n"
                   "    return [reference_verifier(p[0], q[0], list(draft[0]), rng)]\n")
    out = [str(tmp_path / "r.json"), str(tmp_path / "r.md")]
    res = CliRunner().invoke(app, ["conformance", f"{mod}:verify", "--no-progress", "--json", out[0],
                                   "--markdown", out[1]])
    assert res.exit_code == 2
    assert "usage error:" in res.output and "hint: it runs correctly on the trial inputs with --batched" in res.output
    assert not (tmp_path / "r.json").exists()
    ok = CliRunner().invoke(app, ["conformance", f"{mod}:verify", "--batched", "--no-progress", "--n", "200",
                                  "--instances", "iid-V1", "--gammas", "1", "--json", out[0], "--markdown", out[1]])
    assert ok.exit_code == 0, ok.output


def test_cli_crash_exits_4_unless_report_only(tmp_path):
    """A crash on ordinary inputs is a lossless failure of kind crash: exit status 4 by default
    (issue 26: a failure is not 0), 0 with --report-only."""
    from typer.testing import CliRunner

    from spectheory.cli.main import app
    args = ["conformance", "tests/test_conformance_trial.py:crash_on_token_zero", "--no-progress", "--n", "300",
            "--instances", "markov1-V3-mix0.4", "--gammas", "1", "--no-controls", "--json", str(tmp_path / "r.json"),
            "--markdown", str(tmp_path / "r.md")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 4 and "crash on markov1-V3-mix0.4" in res.output, res.output
    assert "test_conformance_trial.py:" in res.output and res.output.lstrip().startswith("LOSSLESS: fails [crash]")
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["verdicts"]["lossless"]["severity"] == "crash"
    assert CliRunner().invoke(app, args + ["--report-only"]).exit_code == 0


# --- decoding steps -----------------------------------------------------------------------------

def step_arity(target_lm, draft_lm, gamma):
    return lambda ctx: [0]


def step_returns_none(target_lm, draft_lm, gamma, rng):
    return lambda ctx: None


def torch_step(target_lm, draft_lm, gamma, rng):
    """Written for torch modules (.logits); run with lm="callable" it fails."""
    import torch

    def step(context):
        ids = torch.tensor([context])
        p = target_lm(ids).logits[0, -1].double().softmax(-1).numpy()
        return [int(sc.inverse_cdf(p, rng.random()))]
    return step


@pytest.mark.parametrize("make_step,problem,hint", [
    (step_arity, r"cannot be called as make_step\(target_lm, draft_lm, gamma, rng\)", "--kind block"),
    (step_returns_none, "returned None", "return the emitted token ids"),
    (torch_step, "AttributeError", "--lm torch"),
])
def test_decoding_step_usage_mistakes(make_step, problem, hint):
    if make_step is torch_step:
        pytest.importorskip("torch")
    import re
    with pytest.raises(Usage) as info:
        sc.check_decoding_step(make_step, n=200, instances=("iid-V1",), gammas=(1,), controls=False)
    assert re.search(problem, info.value.problem), info.value.problem
    assert hint in info.value.hint, info.value.hint


# --- multi-draft and tree verifiers --------------------------------------------------------------

def test_multidraft_layout_mistakes():
    with pytest.raises(Usage) as info:
        check_multidraft_verifier(md.specinfer_verifier, tree=(2, 2), **QUICK)
    assert "fn(p, q, tokens, parents, rng)" in info.value.problem and "leave tree out" in info.value.hint
    with pytest.raises(Usage) as info:
        check_multidraft_verifier(md.specinfer_tree_verifier, K=2, **QUICK)
    assert "fn(p, q, drafts, rng)" in info.value.problem and "tree=(b1, b2, ...)" in info.value.hint
    with pytest.raises(Usage) as info:
        check_multidraft_verifier(lambda p, q, d, rng: [md.specinfer_verifier(p[0], q[0], d[0], rng)], K=2,
                                     **QUICK)
    assert "--batched" in info.value.hint
