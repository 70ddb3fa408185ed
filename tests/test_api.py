"""The Python API (issue 28, item 1): `verify(...)` returns a Report whose claims carry verdicts,
parts, evidence, counterexamples with their calls and controls as attributes; it renders in
Jupyter, draws a claim's plot, writes every format, reads back; `python -m spectheory` runs the CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest

from spectheory.cli import Report, load_report, verify

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sd_report():
    return verify("sd.acceptance,sd.expected_tokens", quick=True)


def test_verify_returns_claims_with_their_fields_as_attributes(sd_report):
    assert isinstance(sd_report, Report) and len(sd_report) == 2
    assert sd_report.verdicts == {"sd.acceptance": "holds", "sd.expected_tokens": "holds"}
    c = sd_report["sd.acceptance"]
    assert c.id == "sd.acceptance" and c.verdict == "holds"
    assert "Σ_x min(p(x), q(x))" in c.statement
    assert "Leviathan" in c.paper
    assert {e["mode"] for e in c.evidence} == {"exact", "mc"}
    assert len(c.evidence.where(mode="mc")) == len([e for e in c.raw["evidence"] if e["mode"] == "mc"])
    assert all(ctl["verdict"] == "fails" for ctl in c.controls)
    assert [p["id"] for p in sd_report["sd.expected_tokens"].parts] == ["iid", "chain", "formula-on-markov"]
    assert c.counterexample is None
    with pytest.raises(ValueError, match="no counterexample"):
        c.recompute()
    with pytest.raises(KeyError, match="did you mean 'sd.acceptance'"):
        sd_report["sd.acceptence"]
    assert "claims: 2 hold" in sd_report.summary()


def test_the_report_renders_in_jupyter_and_draws_a_claims_plot(sd_report):
    html = sd_report._repr_html_()
    assert html.count("<tr>") == 3 and "sd.expected_tokens" in html
    assert "<table>" in sd_report["sd.acceptance"]._repr_html_()
    matplotlib.use("Agg")
    fig = sd_report.plot("sd.expected_tokens")
    assert isinstance(fig, matplotlib.figure.Figure) and fig.axes
    assert fig.caption


def test_write_and_read_back(sd_report, tmp_path):
    out = sd_report.write(tmp_path / "r", html=False)
    assert {k: p.name for k, p in out.items()} == {"json": "r.json", "md": "r.md", "evidence": "r-evidence.md"}
    back = load_report(out["json"])
    assert back.verdicts == sd_report.verdicts
    assert json.loads(out["json"].read_text())["schema"] == sd_report.data["schema"]
    with pytest.raises(ValueError, match="cannot read a report"):
        load_report(tmp_path / "missing.json")


def test_a_failing_claims_counterexample_recomputes_through_the_api():
    rep = verify("sb.thm1", quick=True)
    c = rep["sb.thm1"]
    for cex in c.counterexamples:
        claimed, measured = c.recompute(c.counterexamples.index(cex))[:2]
        assert (claimed, measured) == pytest.approx((cex["claimed"], cex["measured"]), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(claims=["sd.*"]), TypeError, "claims must be a string"),
    (dict(claims="sd.nope"), ValueError, "no registered claim matches"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(alpha=1.5), ValueError, "alpha"),
    (dict(with_builtin=True), ValueError, "with_builtin goes with claims_from"),
    (dict(logits="/nonexistent"), ValueError, "not a `spectheory validate` run directory"),
])
def test_bad_input_is_refused_before_anything_runs(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        verify(**{"claims": "sd.acceptance", "quick": True, **kwargs})


def test_python_dash_m_spectheory_runs_the_command_line():
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-m", "spectheory", "--version"], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=120)
    assert res.returncode == 0 and res.stdout.startswith("spectheory "), res.stderr
