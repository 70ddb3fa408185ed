"""The command line's loose ends a new user met (issue 28, item 5): every job kind in `sweep
--help`, a missing job parameter names the job's parameters, a sweep prints what it computed,
flags show no `<bool>` type, a YAML instances file is told the supported formats, and the README
counts and lists the families the catalog has."""
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spectheory.sims import jobs
from spectheory.sims import instances_file
from spectheory.sims.registry import load_all
from spectheory.sims.runner import family_of
from spectheory.cli.main import app

ROOT = Path(__file__).resolve().parents[1]


def _help(*args):
    res = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert res.exit_code == 0, res.output
    return res.output


def test_sweep_help_lists_every_registered_job_kind():
    kinds = jobs.kinds()
    assert {"sd.mc", "sd.exact", "ecsv.mc", "ecsv.exact", "sb.mc", "sb.exact", "se.mc"} <= set(kinds)
    text = _help("sweep")
    for kind, summary in kinds.items():
        assert kind in text, kind
        assert summary, f"job kind {kind} has no one-line docstring for `sweep --help`"


def test_missing_job_parameter_lists_the_required_and_optional_parameters(tmp_path):
    res = CliRunner().invoke(app, ["sweep", "sd.mc", "-g", "instance=iid-V4-random", "--out",
                                   str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2
    flat = " ".join(res.output.replace("│", " ").split())
    assert "missing parameter 'gamma'" in flat
    assert "required: gamma, n_iterations" in flat
    assert "optional:" in flat and "rule='standard'" in flat


def test_sweep_prints_a_summary_of_what_it_computed(tmp_path):
    out = tmp_path / "t.jsonl"
    res = CliRunner().invoke(app, ["sweep", "sd.exact", "-g", "instance=iid-V4-random", "-g", "gamma=1,2",
                                   "--out", str(out), "--workers", "1", "--no-progress"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert "sweep: 2 job(s) at 2 grid point(s)" in res.output
    assert "mean expected_tokens" in res.output
    for r in rows:  # each grid point's mean (one replicate: the value itself) is printed
        assert f"{r['expected_tokens']:.4g}" in res.output


@pytest.mark.parametrize("command", ["verify", "list", "show", "conformance", "sweep", "validate"])
def test_flags_show_no_bool_type(command):
    assert "<bool>" not in _help(command)


def test_yaml_instances_file_names_the_supported_formats(tmp_path):
    f = tmp_path / "pairs.yaml"
    f.write_text("pairs: []\n")
    with pytest.raises(instances_file.InstancesFileError, match="YAML is not a supported.*TOML.*JSON"):
        instances_file.read(f)


def test_readme_counts_and_lists_every_family():
    text = (ROOT / "README.md").read_text()
    families = sorted({family_of(c) for c in load_all().values()})
    counts = {int(n) for n in re.findall(r"(\d+) families", text)}
    words = {"six": 6, "seven": 7, "five": 5}
    counts |= {words[w.lower()] for w in re.findall(r"\b(six|seven|five) families", text, flags=re.I)}
    assert counts == {len(families)}, (counts, families)
    section = text.split("## Families", 1)[1].split("\n## ", 1)[0]
    for prefix in sorted({c.id.split(".")[0] for c in load_all().values()}):
        assert f"`{prefix}.*`" in section, f"README's Families section does not list {prefix}.*"
