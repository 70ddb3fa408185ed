"""The report for people and the command line around it (issue 20 items 2-5): where a run's
files go (a subset never overwrites the full report), progress without a terminal, --version,
list and show, runs on the user's own pairs, the HTML report (self-contained, a plot per curve,
rendered in headless Chromium where one is installed), the JSON Schemas against real output,
and failed sweeps that leave no files behind."""
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from spectheory.sims import report as rp
from spectheory.sims import sweep as sw
from spectheory.sims.report_html import claim_figure, to_html
from spectheory.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "sims" / "schemas"
PAIRS_TOML = """\
schema = "spectheory.instances/1"

[[pairs]]
name = "two-state"
order = 1
target = [[0.7, 0.3], [0.2, 0.8]]
draft  = [[0.5, 0.5], [0.4, 0.6]]

[[pairs]]
name = "iid-mix"
generator = "perturbed_pair"
args = { V = 3, order = 0, how = "mix", strength = 0.3, seed = 1 }

[[pairs]]
name = "too-big"
generator = "aligned_pair"
args = { V = 60, order = 1, alignment = "weak", seed = 3 }
"""


def validator(name):
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def subset_run(tmp_path_factory):
    """`spectheory verify --claims sd.acceptance --quick --no-progress` in a folder that already
    holds a full report."""
    d = tmp_path_factory.mktemp("subset")
    (d / "reports").mkdir()
    (d / "reports" / "verify.md").write_text("the full report\n")
    old = os.getcwd()
    os.chdir(d)
    try:
        res = CliRunner().invoke(app, ["verify", "--claims", "sd.acceptance", "--quick", "--no-progress"])
    finally:
        os.chdir(old)
    assert res.exit_code == 0, res.output
    return d, res


@pytest.fixture(scope="module")
def pairs_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("pairs")
    (d / "pairs.toml").write_text(PAIRS_TOML)
    res = CliRunner().invoke(app, ["verify", "--instances", str(d / "pairs.toml"), "--quick", "--no-progress",
                                   "--json", str(d / "mine.json")])
    assert res.exit_code == 0, res.output
    return d, json.loads((d / "mine.json").read_text())


def test_a_subset_never_overwrites_the_full_report(subset_run):
    d, res = subset_run
    assert (d / "reports" / "verify.md").read_text() == "the full report\n"
    for name in ("verify-sd.acceptance+quick.json", "verify-sd.acceptance+quick.md", "verify-sd.acceptance+quick-evidence.md",
                 "verify-sd.acceptance+quick.html"):
        assert (d / "reports" / name).is_file(), name
    assert not (d / "reports" / "verify.json").exists()
    assert "wrote reports/verify-sd.acceptance+quick.md" in res.output


def test_without_a_terminal_each_family_prints_a_line(subset_run):
    _, res = subset_run
    assert "sd family done: 1 claim, 2 checks in" in res.output and "(1 of 1 families" in res.output


def test_report_files_summary_sections_and_evidence(subset_run):
    d, _ = subset_run
    md = (d / "reports" / "verify-sd.acceptance+quick.md").read_text()
    assert "| claim | paper | relation | verdict | what was found | controls |" in md
    assert "| [`sd.acceptance`](#sd-acceptance) | Leviathan et al. 2023 + | = | **holds** | equality holds: " in md
    assert "**Legend.**" in md and "*relation*:" in md
    assert "[verify-sd.acceptance+quick-evidence.md](verify-sd.acceptance+quick-evidence.md#sd-acceptance)" in md
    assert "> P(accept at a position) = Σ_x min(p(x), q(x)) = 1 − TV(p, q)." in md
    ev = (d / "reports" / "verify-sd.acceptance+quick-evidence.md").read_text()
    assert "**Negative control `accept=min(1,q/p)`**" in ev and "| mode | instance |" in ev
    assert len(md) < len(ev)  # the long tables live in the evidence file


def test_show_prints_one_claim_from_the_last_report(subset_run):
    d, _ = subset_run
    old = os.getcwd()
    os.chdir(d)
    try:
        res = CliRunner().invoke(app, ["show", "sd.acceptance"])
        missing = CliRunner().invoke(app, ["show", "sd.lossless"])
    finally:
        os.chdir(old)
    assert res.exit_code == 0, res.output
    assert res.output.startswith("From reports/verify-sd.acceptance+quick.json (quick tier, seed 0")
    assert "## `sd.acceptance`: holds" in res.output and "**Reading.**" in res.output
    assert "Every evidence item:" in res.output and "per-state binomial" in res.output
    assert missing.exit_code == 2 and "no report under reports/ contains sd.lossless" in " ".join(missing.output.split())


def test_naming_one_output_puts_the_others_beside_it(tmp_path, monkeypatch, subset_run):
    from spectheory.sims import runner
    canned = json.loads((subset_run[0] / "reports" / "verify-sd.acceptance+quick.json").read_text())
    monkeypatch.setattr(runner, "run_claims", lambda *a, **k: canned)
    res = CliRunner().invoke(app, ["verify", "--claims", "sd.acceptance", "--json", str(tmp_path / "r.json"),
                                   "--no-html"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r-evidence.md", "r.json", "r.md"]


def test_version_and_list():
    res = CliRunner().invoke(app, ["--version"])
    from spectheory import __version__
    assert res.exit_code == 0 and res.output.strip() == f"spectheory {__version__}"
    res = CliRunner().invoke(app, ["list", "--takes-pairs", "--brief"])
    assert [line.split()[0] for line in res.output.splitlines()] == [
        "sd.lossless", "sd.acceptance", "sd.expected_tokens", "sd.walltime"]


def test_user_pairs_run_every_claim_that_takes_pairs(pairs_run):
    d, rep = pairs_run
    assert [c["id"] for c in rep["claims"]] == ["sd.lossless", "sd.acceptance", "sd.expected_tokens", "sd.walltime"]
    inst = rep["run"]["instances"]
    assert [p["name"] for p in inst["pairs"]] == ["two-state", "iid-mix", "too-big"]
    assert inst["pairs"][0] == {"name": "two-state", "V": 2, "order": 1, "states": 2, "params": {"tables": True}}
    for c in rep["claims"]:
        assert c["verdict"] == "holds", (c["id"], c["notes"])
        assert all(k["verdict"] == "fails" for k in c["controls"]), c["id"]
        names = {e["instance"].split()[0] for e in c["evidence"]}
        assert names <= {"two-state", "iid-mix", "too-big"}, names
    et = {c["id"]: c for c in rep["claims"]}["sd.expected_tokens"]
    parts = {p["id"]: p["verdict"] for p in et["parts"]}
    assert parts == {"iid": "holds", "chain": "holds", "formula-on-markov": "not-checkable"}
    notes = " ".join(et["notes"])
    assert "user pair 'two-state' skipped by the i.i.d. formula (exact): needs an order-0 (i.i.d.) pair" in notes
    lossless = {c["id"]: c for c in rep["claims"]}["sd.lossless"]
    assert any("'too-big' skipped by exact enumeration" in n for n in lossless["notes"])
    assert rep["run"]["mc_tests_in_registry"] == 3 * sum(  # the Bonferroni bound of this run, known before it
        1 + len(c["controls"]) for c in rep["claims"])
    validator("report-3.json").validate(rep)
    validator("instances-1.json").validate(tomllib.loads(PAIRS_TOML))
    md = (d / "mine.md").read_text()
    assert "On the user's pairs from" in md and "two-state (V=2, order 1)" in md


def test_html_report_is_self_contained_with_a_plot_per_curve(pairs_run, tmp_path):
    _, rep = pairs_run
    html = to_html(rep)
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    assert "http://" not in html and "https://" not in html  # no network: CSS and images inline
    for c in rep["claims"]:
        assert f'id="{rp.anchor(c["id"])}"' in html
        assert (claim_figure(c) is not None) == (f'alt="plot of the evidence of {c["id"]}"' in html)
    assert html.count("data:image/png;base64,") >= 3
    assert "relation" in html and "equality holds" in html


def test_html_plots_from_a_report_read_back_from_json_and_drawn_in_parallel():
    """A report read back from its JSON has lists where the run had tuples (a sweep point's
    ``eps=[0.177]``): the plots still draw; two drawing processes give the same PNGs as one."""
    from spectheory.sims.report_html import figures
    pts = [{"V": 2, "eps": [e], "claimed": 0.0, "measured": m, "outcome": "pass"} for e, m in ((0.1, 0.0), (0.2, 0.01))]
    ev = {"mode": "exact", "instance": "channel V=2", "claimed": 0.0, "measured": 0.0, "ci_low": None, "ci_high": None,
          "p_value": None, "n": None, "test": "t", "alpha": None, "power": None, "detectable": None, "tolerance": 1e-10,
          "outcome": "pass", "note": "", "part": "a", "points": pts}
    claim = {"id": "x.y", "verdict": "holds", "relation": "equality", "parts": [], "evidence": [ev, dict(ev, instance="channel V=3")]}
    claim = json.loads(json.dumps(claim))
    assert claim_figure(claim) is not None
    claims = [dict(claim, id=f"x.{i}") for i in range(4)]
    assert figures({"claims": claims}, jobs=2) == figures({"claims": claims}, jobs=1)


def _chromium():
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium installed (apt-get install chromium)")
def test_html_report_renders_in_headless_chromium(pairs_run, tmp_path):
    """Render the HTML report in headless Chromium (no network, a fresh profile): the page loads,
    its DOM has every claim, and the screenshot is a real PNG (docs/report_schema.md, "Looking at
    the HTML report", gives the command to take one and look at it)."""
    _, rep = pairs_run
    page = tmp_path / "report.html"
    page.write_text(to_html(rep), encoding="utf-8")
    flags = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars"]
    dom = subprocess.run(flags + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for c in rep["claims"]:
        assert c["id"] in dom.stdout
    shot = tmp_path / "shot.png"
    res = subprocess.run(flags + ["--window-size=1280,2000", f"--screenshot={shot}", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_findings_state_the_relation():
    """The summary's words: the relation, then the verdict in its terms."""
    bound = {"id": "x.b", "verdict": "holds", "evidence": [
        {"mode": "exact", "part": "main", "claimed": 1.0, "measured": 1.25, "outcome": "pass", "p_value": None,
         "instance": "iid-V2 γ=1", "test": "exact value ≥ bound (tol 1e-10)"}],
        "parts": [{"id": "main", "relation": "≥", "verdict": "holds", "statement": "s", "checkable": True,
                   "reason": "", "least_slack": None, "counterexample": None}]}
    assert rp.finding(bound) == "lower bound holds: least slack 0.25 at iid-V2 γ=1 (exact, 1 comparison)"
    slack = json.loads(json.dumps(bound))
    slack["parts"][0]["least_slack"] = {"value": 0.013, "instance": {"V": 2, "p": [0.25, 0.75]}, "call": "f()",
                                        "search": "exhaustive"}
    assert rp.finding(slack).startswith("lower bound holds: least slack 0.013 at V=2, p=[0.25, 0.75]")
    fails = {"id": "x.e", "verdict": "fails", "evidence": [], "parts": [
        {"id": "main", "relation": "=", "verdict": "fails", "statement": "s", "checkable": True, "reason": "",
         "least_slack": None, "counterexample": {"V": 2, "order": 0, "gamma": 1, "claimed": 1.0652, "measured": 1.6406,
                                                 "call": "f()", "source": "x"}}]}
    assert rp.finding(fails) == "equality fails: claimed 1.065, measured 1.641 at V=2, order=0, γ=1"


def test_sweep_rows_match_their_schema(tmp_path):
    rows = sw.run_sweep(sw.grid("sd.exact", instance=["iid-V4-random"], gamma=[1, 2]) +
                        sw.grid("sd.mc", alpha=[0.5], gamma=[2], n_iterations=[1000]),
                        tmp_path / "t.jsonl", executor=sw.SerialExecutor(), progress=False)
    v = validator("sweep-row-1.json")
    for line in (tmp_path / "t.jsonl").read_text().splitlines():
        v.validate(json.loads(line))
    assert len(rows) == 3


def test_failed_or_refused_sweeps_leave_no_files(tmp_path):
    out = tmp_path / "sub" / "t.jsonl"
    cases = [["sd.mc", "-g", "instance=nope", "-g", "gamma=1", "-g", "n_iterations=10"],
             ["sd.mc", "-g", "instance=iid-V1", "-g", "gamma=-1", "-g", "n_iterations=10"],
             ["sd.mc", "-g", "instance=iid-V1", "-g", "gama=1", "-g", "n_iterations=10"],
             ["sd.mc", "-g", "instance=iid-V1", "-g", "gamma=1", "-g", "n_iterations=10", "--scheduler", "tcp://127.0.0.1:1"],
             ["bad_inputs.cli:failing_job", "-g", "x=1,2", "--workers", "1"]]
    for args in cases:
        res = CliRunner().invoke(app, ["sweep", *args, "--out", str(out), "--no-progress"])
        assert res.exit_code in (1, 2) and not isinstance(res.exception, Exception) or \
            isinstance(res.exception, SystemExit), (args, res.output)
        assert not out.exists(), args


def test_a_part_no_user_pair_fits_is_not_checkable_and_its_controls_are_not_required():
    """Only a Markov pair: sd.expected_tokens's i.i.d. part (its principal reading) has nothing to
    run on, so it is not-checkable (with the reason) and so is the headline; the chain DP, a reading
    beside it, holds; the control is judged where the claim was graded."""
    from spectheory.sims.instances_file import pairs_from
    from spectheory.sims.runner import run_claims
    pairs = pairs_from({"pairs": [{"name": "m", "order": 1, "target": [[0.7, 0.3], [0.2, 0.8]],
                                   "draft": [[0.5, 0.5], [0.4, 0.6]]}]})
    c = run_claims("sd.expected_tokens", quick=True, progress=False, pairs=pairs)["claims"][0]
    parts = {p["id"]: p for p in c["parts"]}
    assert parts["iid"]["verdict"] == "not-checkable" and "no user pair fits" in parts["iid"]["reason"]
    assert parts["chain"]["verdict"] == "holds" and c["verdict"] == "not-checkable"
    assert {r["id"]: r["verdict"] for r in c["readings"]} == {"paper": "not-checkable", "markov-dp": "holds",
                                                               "formula-beyond-iid": "not-checkable"}
    ctl = c["controls"][0]
    assert ctl["verdict"] == "fails" and set(ctl["required"]) == {"chain"}, ctl["required"]


def test_report_names_encode_what_was_run():
    from spectheory.cli.cmd_verify import report_base
    names = {report_base().name, report_base(quick=True).name, report_base("sd.*").name,
             report_base("sd.*", quick=True).name, report_base(logits=Path("data/runs/r1")).name,
             report_base(logits=Path("data/runs/r1"), quick=True).name, report_base(seed=3).name,
             report_base(instances=Path("pairs.toml")).name, report_base(claims_from=("x/my_paper.py",)).name}
    assert len(names) == 9, names  # nine kinds of run, nine names
    assert report_base().name == "verify"
    assert report_base("sd.*", instances=Path("p.toml"), logits=Path("r1"), quick=True, seed=2).name == \
        "verify-sd+pairs-p+logits-r1+quick+seed2"


def test_no_html_removes_a_stale_page_and_the_index_lists_every_report(tmp_path):
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        stale = tmp_path / "reports" / "verify-sd.acceptance+quick.html"
        stale.parent.mkdir()
        stale.write_text("stale")
        args = ["verify", "--claims", "sd.acceptance", "--quick", "--no-progress", "--no-html"]
        assert CliRunner().invoke(app, args).exit_code == 0
        assert not stale.exists(), "--no-html leaves no stale page beside fresh Markdown/JSON"
        assert CliRunner().invoke(app, args[:-1] + ["--seed", "1"]).exit_code == 0
        index = (tmp_path / "reports" / "index.html").read_text()
        for name in ("verify-sd.acceptance+quick", "verify-sd.acceptance+quick+seed1"):
            assert f"<b>{name}</b>" in index
        assert 'href="verify-sd.acceptance+quick+seed1.html"' in index
        assert 'href="verify-sd.acceptance+quick.html"' not in index
        res = CliRunner().invoke(app, ["show", "sd.acceptance", "--no-evidence"])
        assert res.exit_code == 0, res.output
        first = res.output.splitlines()[0]
        assert first.startswith("From reports/verify-sd.acceptance+quick+seed1.json (quick tier, seed 1")
        assert "also in reports/verify-sd.acceptance+quick.json" in first
        rendered = CliRunner().invoke(app, ["show", "sd.acceptance", "--no-evidence", "--markdown", "render"])
        raw = CliRunner().invoke(app, ["show", "sd.acceptance", "--no-evidence", "--markdown", "raw"])
        assert "## " in raw.output and "## " not in rendered.output.split("\n", 2)[2]
    finally:
        os.chdir(old)


def test_a_pairs_report_states_the_instances_it_used(pairs_run):
    d, rep = pairs_run
    md = (d / "mine.md").read_text()
    for c in rep["claims"]:
        assert c["instances_used"].startswith("This run used your pairs (") and str(d / "pairs.toml") in \
            c["instances_used"]
    assert md.count("**Instances.** This run used your pairs") == len(rep["claims"])


def test_html_evidence_tables_keep_every_failing_row_and_cap_the_rest():
    """The HTML page stays small without hiding a failure: a table shows every failing or
    underpowered row, then passing rows up to the cap, and says how many it left out."""
    from spectheory.sims.report_html import MAX_ROWS, _evidence_rows
    row = dict(mode="exact", instance="x", claimed=0.0, measured=0.0, ci_low=None, ci_high=None, p_value=None,
               n=None, test="t", note="", part=None)
    evs = [dict(row, instance=f"pass{i}", outcome="pass") for i in range(50)]
    evs += [dict(row, instance=f"fail{i}", outcome="fail") for i in range(3)]
    evs += [dict(row, instance="weak", outcome="underpowered")]
    html = _evidence_rows(evs, parts=False, limit=MAX_ROWS)
    assert html.count("<tr>") == 1 + MAX_ROWS
    assert all(f">fail{i}<" in html for i in range(3)) and ">weak<" in html
    assert f"{len(evs) - MAX_ROWS} more passing or info rows" in html
    assert "more passing" not in _evidence_rows(evs[:5], parts=False, limit=MAX_ROWS)


def test_an_underpowered_row_says_how_many_samples_would_decide_it():
    """n·(detectable/tolerance)²: a chi-square test's detectable w scales as 1/√n (noncentrality
    n·w²), a z test's detectable deviation too; the text appears in the finding and the tables."""
    from spectheory.sims.report_html import _evidence_rows
    row = dict(mode="mc", instance="iid-V4 N=1", claimed=0.0, measured=0.01, ci_low=None, ci_high=None,
               p_value=0.4, n=4000, detectable=0.1, tolerance=0.05, outcome="underpowered", test="chi-square",
               note="", part="main")
    assert rp.samples_needed(row) == 16000
    assert rp.samples_needed(dict(row, detectable=0.051)) == 4162          # ceil(4000·1.0404)
    assert rp.samples_needed(dict(row, outcome="pass")) is None
    assert rp.samples_needed(dict(row, detectable=None)) is None and rp.samples_needed(dict(row, n=None)) is None
    assert rp.outcome_text(row) == "underpowered: n = 16,000 would decide it"
    assert rp.outcome_text(dict(row, outcome="pass")) == "pass"
    from spectheory.judge import stats
    ev = stats.chisquare_gof("x", [500, 500], [0.5, 0.5], alpha=1e-3, tolerance_w=0.05)
    big = stats.chisquare_gof("x", [500 * 9, 500 * 9], [0.5, 0.5], alpha=1e-3, tolerance_w=0.05)
    need = rp.samples_needed(ev.to_json())
    assert ev.outcome == "underpowered" and need is not None
    assert big.detectable == pytest.approx(ev.detectable / 3, rel=1e-9)  # the 1/√n the formula rests on
    assert stats.chisquare_gof("x", [need // 2, need - need // 2], [0.5, 0.5], alpha=1e-3,
                               tolerance_w=0.05).outcome == "pass"     # that many samples decide it
    claim = {"id": "x.u", "verdict": "inconclusive", "evidence": [row],
             "parts": [{"id": "main", "relation": "law", "verdict": "inconclusive", "statement": "s",
                        "checkable": True, "reason": "", "least_slack": None, "counterexample": None, "notes": []}]}
    assert "(n = 4,000; n = 16,000 would decide it)" in rp.finding(claim)
    assert "underpowered: n = 16,000 would decide it" in _evidence_rows([row], parts=False)
    assert "underpowered: n = 16,000 would decide it" in "\n".join(rp._evidence_table([row]))
