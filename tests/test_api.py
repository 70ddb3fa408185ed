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


# --- a Report a notebook user can lean on ------------------------------------------------------------

@pytest.fixture(scope="module")
def thm1_report():
    return verify("sb.thm1,sd.acceptance", quick=True)


def test_a_report_is_a_mapping_consistent_with_indexing(sd_report):
    from collections.abc import Mapping
    rep = sd_report
    assert isinstance(rep, Mapping)
    assert "sd.acceptance" in rep and "sd.acceptence" not in rep and 5 not in rep and None not in rep
    assert list(rep) == list(rep.keys()) == ["sd.acceptance", "sd.expected_tokens"]
    assert [c.id for c in rep.values()] == list(rep) and len(rep) == 2
    assert all(rep[k] is v for k, v in rep.items())
    assert rep.get("sd.acceptance") is rep["sd.acceptance"] and rep.get("nope") is None and rep.get(0, "d") == "d"
    assert dict(rep) == {c.id: c for c in rep.claims}
    with pytest.raises(KeyError, match=r"claim ids are strings .*report\.claims\[i\]"):
        rep[0]


def test_a_claims_display_has_its_verdict_readings_counterexample_call_controls_and_plot(thm1_report):
    c = thm1_report["sb.thm1"]
    cex = c.counterexample
    text = repr(c)
    assert text.startswith(f"sb.thm1: {c.raw['summary']} · integer: fails")
    assert "reading real-gamma (principal): " in text and "reading integer (integer): fails" in text
    assert f"recompute both numbers: {cex['call']}" in text
    assert "controls: 2/2 rejected — " in text and "evidence items (.evidence, .to_frame())" in text
    html = c._repr_html_()
    import html as html_mod
    assert '<div class=spectheory><style>.spectheory ' in html  # its own scoped style: the notebook is not restyled
    assert "body{" not in html and "main{" not in html
    assert html_mod.escape(cex["call"]) in html and "Recompute both numbers" in html
    assert 'src="data:image/png;base64,' in html and "Negative controls" in html
    assert 'class="badge' in html and "Principal reading" in html
    summary = thm1_report._repr_html_()
    assert summary.count("<tr>") == 3 and '<span class="badge holds">' in summary


def test_records_and_frames_at_report_and_claim_level(thm1_report, monkeypatch):
    pd = pytest.importorskip("pandas")
    rows = thm1_report.records()
    assert [r["claim"] for r in rows] == ["sd.acceptance", "sb.thm1"]
    thm1 = rows[1]
    cex = thm1_report["sb.thm1"].counterexample
    assert (thm1["claimed"], thm1["measured"], thm1["call"]) == (cex["claimed"], cex["measured"], cex["call"])
    assert thm1["controls_rejected"] == thm1["controls"] == 2 and thm1["verdict"] == "holds"
    frame = thm1_report.to_frame()
    assert list(frame.index) == ["sd.acceptance", "sb.thm1"] and frame.loc["sb.thm1", "verdict"] == "holds"
    assert pd.DataFrame(rows).shape[0] == 2
    c = thm1_report["sb.thm1"]
    ev = c.to_frame()
    assert len(ev) == len(c.evidence) and list(ev.columns[:4]) == ["claim", "part", "mode", "instance"]
    assert set(ev["claim"]) == {"sb.thm1"} and (ev["mode"] == "exact").sum() == len(c.evidence.where(mode="exact"))
    assert len(c.evidence.to_frame()) == len(c.evidence) and len(pd.DataFrame(c.records())) == len(c.evidence)
    import sys
    monkeypatch.setitem(sys.modules, "pandas", None)  # pandas is not a dependency: a clear error without it
    for obj in (thm1_report, c, c.evidence):
        with pytest.raises(ImportError, match=r"needs pandas \(pip install pandas\); .*records\(\)"):
            obj.to_frame()


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(quick="yes"), TypeError, "quick must be True or False, got str 'yes'"),
    (dict(quick=1), TypeError, "quick must be True or False"),
    (dict(progress="no"), TypeError, "progress must be True or False"),
    (dict(with_builtin="no"), TypeError, "with_builtin must be True or False"),
    (dict(seed="1"), TypeError, "seed must be an integer"),
    (dict(seed=1.5), ValueError, "seed must be an integer"),
    (dict(jobs=-1), ValueError, "jobs must be ≥ 0"),
    (dict(alpha="0.01"), TypeError, "alpha"),
    (dict(log=3), TypeError, "log must be a callable"),
    (dict(claims_from=3), TypeError, "claims_from must be a path, a module name or a list of them"),
    (dict(claims_from=[3]), TypeError, "each claims_from entry"),
    (dict(instances=5), TypeError, r"instances \(a pairs file, or a \{name: MarkovPair\} dict\) must be a path"),
    (dict(instances={"a": 1}), TypeError, "instances must map names"),
    (dict(instances={}), ValueError, "instances is an empty dict"),
    (dict(logits=5), TypeError, "logits .* must be a path"),
])
def test_argument_types_are_checked_before_anything_runs(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        verify(**{"claims": "sd.acceptance", "quick": True, **kwargs})


def test_the_reports_methods_check_their_arguments(sd_report):
    with pytest.raises(TypeError, match="path must be a path"):
        load_report(5)
    with pytest.raises(TypeError, match="base must be a path"):
        sd_report.write(5)
    with pytest.raises(TypeError, match="html must be True or False"):
        sd_report.write("x", html="no")
    with pytest.raises(TypeError, match="path must be a path"):
        sd_report.to_json(None)
    with pytest.raises(TypeError, match="a column name is a string"):
        sd_report["sd.acceptance"].evidence.column(0)


def test_a_claim_file_given_as_a_path_object_runs(tmp_path):
    from spectheory.sims import user_claims
    path = tmp_path / "pathclaims.py"
    path.write_text(
        "from spectheory.sims.registry import Control, register\nfrom spectheory.judge.evidence import Evidence\n"
        "def check(ctx, s):\n    return [Evidence('exact', 't', 0.0, float(s(0)), outcome='pass' if s(0) == 0 else 'fail')]\n"
        "register(id='pth.zero', relation='=', paper='leviathan2023', reference='t', statement='f(0) = 0.',\n"
        "         check=check, subject=lambda x: x, modes=('exact',), controls=(Control('p1', lambda x: x + 1, 'f'),))\n")
    try:
        rep = verify(claims_from=path, quick=True)
        assert rep.verdicts == {"pth.zero": "holds"} and rep.run["claims_files"][0]["path"] == str(path)
    finally:
        user_claims.unload_all()
