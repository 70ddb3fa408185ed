"""Sample sizes from power statements (spectheory.validate.plan): a pilot run on the tiny random-weight pair,
the plan's arithmetic against n_needed by hand, per-loop prompt counts through run_experiment and
the CLI (``--family-n se=3,kseq=2``), and a resumed run that only appends what the plan adds."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from typer.testing import CliRunner  # noqa: E402

from spectheory.cli.main import app  # noqa: E402
from spectheory.validate.experiment import load_run, run_experiment  # noqa: E402
from spectheory.validate.plan import MARGIN, plan_run  # noqa: E402
from spectheory.validate.power import n_needed  # noqa: E402
from spectheory.validate.prompts import Prompt  # noqa: E402
from spectheory.validate.replay_loops import loop_tests  # noqa: E402

from test_validate_models import tiny_model  # noqa: E402

ALPHA = 1e-3


def _prompts(k=6):
    return [Prompt(f"p{i}", "code" if i % 2 else "chat", "", ()) for i in range(k)]


def _enc(p):
    return [1, 4, 10 + int(p.name[1:]), 11]


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    torch.set_num_threads(1)
    t, d = tiny_model(), tiny_model(seed=1, noise=0.06)
    ps = _prompts()
    path = tmp_path_factory.mktemp("pilot")
    run_experiment(path, t, d, ps, _enc, gammas=(2,), max_new_tokens=12, slice_k=4, progress=False, batch=4,
                   capture=[], families=["kseq", "ersd"],
                   family_prompts={"kseq": ps[:2], "ersd": ps[:4]},
                   control_prompts={"kseq": ps[:2], "sd": ps[:1]}, sd_prompts=ps[:2])
    return path, (t, d), ps


def test_per_loop_prompt_lists_reach_each_loop(pilot):
    path, _, _ = pilot
    run = load_run(path)
    assert len(run.families["kseq"]) == 2 and len(run.families["ersd"]) == 4
    assert len(run.families["kseq-control"]) == 2 and "ersd-control" not in run.families  # not asked for
    assert len(run.controls[2]) == 1


def test_plan_arithmetic_is_the_power_statement(pilot):
    path, _, _ = pilot
    run = load_run(path)
    plan = plan_run(run, ALPHA)
    rows = {(r.loop, r.test): r for r in plan.rows}
    _, prs = loop_tests("ersd", run.families["ersd"], ALPHA)
    pr = prs[0]
    r = rows[("ersd", pr.test)]
    assert r.role == "test" and r.prompts_had == 4 and r.n_had == pr.n_had
    need = n_needed(pr.var_per_trial, ALPHA, pr.tolerance, 0.9)
    assert r.n_needed == need
    assert r.prompts_needed == math.ceil(MARGIN * need / (pr.n_had / 4))
    assert r.per_set == math.ceil(r.prompts_needed / 2)          # two prompt sets (code, chat)
    assert plan.family_n["ersd"] == r.per_set
    # a larger margin never asks for fewer prompts; the command carries every loop's count
    assert plan_run(run, ALPHA, margin=2.0).family_n["ersd"] >= plan.family_n["ersd"]
    cmd = plan.command("OUT")
    assert f"ersd={plan.family_n['ersd']}" in cmd and f"kseq={plan.controls_n['kseq']}" in cmd


def test_controls_sized_by_effect_and_rejected_ones_need_nothing_more(pilot):
    path, _, _ = pilot
    plan = plan_run(load_run(path), ALPHA)
    ctl = [r for r in plan.rows if r.role == "control"]
    assert {r.loop for r in ctl} == {"sd-control", "kseq-control"}
    for r in ctl:
        if r.note.startswith("rejected in the pilot"):
            assert r.prompts_needed == r.prompts_had
        else:   # sized for at least the tolerance of the test
            assert r.effect >= 0.02 - 1e-12 and r.n_needed == n_needed(r.var_per_trial, ALPHA, r.effect, 0.9)


def test_resumed_run_appends_only_what_the_plan_adds(pilot, tmp_path):
    import shutil
    path, (t, d), ps = pilot
    new = tmp_path / "run"
    shutil.copytree(path, new)
    before = {f: f.stat().st_mtime_ns for f in new.rglob("*.npz")}
    run_experiment(new, t, d, ps, _enc, gammas=(2,), max_new_tokens=12, slice_k=4, progress=False, batch=4,
                   capture=[], families=["kseq"], family_prompts={"kseq": ps[:3]}, control_prompts={},
                   sd_prompts=ps[:2])
    run = load_run(new)
    assert len(run.families["kseq"]) == 3 and len(run.families["ersd"]) == 4
    assert all(f.stat().st_mtime_ns == m for f, m in before.items())   # nothing rewritten


def test_bad_per_loop_counts_are_refused(pilot):
    path, (t, d), ps = pilot
    with pytest.raises(ValueError, match="unknown loops"):
        run_experiment(path, t, d, ps, _enc, gammas=(2,), max_new_tokens=12, progress=False,
                       families=["kseq"], family_prompts={"nope": ps[:1]})
    with pytest.raises(ValueError, match="sub-list"):
        run_experiment(path, t, d, ps, _enc, gammas=(2,), max_new_tokens=12, progress=False,
                       families=["kseq"], family_prompts={"kseq": [Prompt("zz", "code", "", ())]})
    runner = CliRunner()
    for argv, msg in ((["--family-n", "nope=3"], "unknown loop"), (["--controls-n", "kseq=-1"], "≥ 0"),
                      (["--family-n", "kseq=x"], "name=number"), (["--family-n", "0"], "≥ 1")):
        res = runner.invoke(app, ["validate", *argv, "--out", str(path / "x")])
        assert res.exit_code == 2 and msg in res.output, (argv, res.output)


def test_plan_command_prints_the_table_and_the_command(pilot, tmp_path):
    path, _, _ = pilot
    res = CliRunner().invoke(app, ["validate", "plan", str(path), "--out", "NEW", "--json", str(tmp_path / "p.json")])
    assert res.exit_code == 0, res.output
    assert "spectheory validate --out NEW --family-n" in res.output and "| ersd |" in res.output
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["family_n"]["ersd"] >= 1 and data["power"] == 0.9 and np.isfinite(data["alpha"])
    res = CliRunner().invoke(app, ["validate", "plan", str(tmp_path / "missing")])
    assert res.exit_code == 2 and "run.json" in res.output


def test_control_row_marks_what_the_broken_rule_did():
    """The info row of a logits-mode negative control says whether the broken rule failed the test
    (``Evidence.control``), and copies the graded test's numbers and part."""
    from spectheory.judge.evidence import Evidence
    from spectheory.validate.power import control_row
    e = Evidence("logits", "broken loop", 0.9, 0.95, 0.93, 0.97, p_value=1e-9, n=500, outcome="fail", part="acc",
                 note="ctx")
    ok, missed = control_row(e, True, "the same loop"), control_row(e, False, "the same loop")
    assert ok.control == "rejected" and "fails, as it must" in ok.test and "p = 1e-09" in ok.test
    assert missed.control == "not rejected" and "DID NOT FAIL" in missed.test
    for row in (ok, missed):
        assert row.outcome == "info" and row.instance == "broken loop (must fail)" and row.part == "acc"
        assert (row.claimed, row.measured, row.n, row.note) == (0.9, 0.95, 500, "ctx")
