"""Report names that never collide: every option that changes a report's numbers (claims, claim
files, --with-builtin, pairs, logits run, tier, seed, α) is in its name; two inputs of the same name
from different folders (two ``claims.py``) never share a report, and a run never overwrites the
report of another run; conformance reports are named after the sampler they test; reports/index.html
lists every report, conformance ones too."""
from __future__ import annotations

import itertools
import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spectheory.sims import user_claims
from spectheory.cli import runs
from spectheory.cli.main import app
from spectheory.cli.report_index import runs as index_rows
from spectheory.cli.report_index import write_index
from spectheory.cli.runs import (NameTaken, conformance_base, default_base, identity, options_of, output_paths,
                                 report_base, run_paths)

from _toy_claims import HEADER
from _toy_claims import TOY as _ONE

TOY = HEADER + _ONE.replace("toy.zero", "{cid}")  # a file per test, each with its own claim id


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    """Each test in its own folder (reports/ relative to it), with only the built-in claims."""
    user_claims.unload_all()
    monkeypatch.chdir(tmp_path)
    yield
    user_claims.unload_all()


#: one value per option that changes a report's numbers, beside the default run's
VARIANTS = {
    "claims": "sd.*", "claims_from": ("a/claims.py",), "instances": "pairs.toml", "logits": "runs/r1",
    "quick": True, "seed": 3, "alpha": 0.05,
}


def test_every_option_that_changes_the_numbers_is_in_the_name():
    plain = report_base()
    assert plain.name == "verify" and plain.parent == runs.REPORTS
    names = {}
    for k, v in VARIANTS.items():
        opts = {k: v}
        names[k] = (report_base(opts.pop("claims")) if k == "claims" else report_base(**opts)).name
    names["builtin"] = report_base(claims_from=("a/claims.py",), builtin=True).name
    assert len(set(names.values()) | {"verify"}) == len(names) + 1, names
    # every pair of options together differs from each alone and from every other pair
    pairs = set()
    for (k1, v1), (k2, v2) in itertools.combinations(VARIANTS.items(), 2):
        opts = {k1: v1, k2: v2}
        claims = opts.pop("claims", "*")
        pairs.add(report_base(claims, **opts).name)
    assert len(pairs) == len(list(itertools.combinations(VARIANTS, 2)))
    assert not pairs & set(names.values())
    assert report_base("sd.*", claims_from=("x/claims.py",), builtin=True, instances=Path("p.toml"),
                       logits=Path("r1"), quick=True, seed=2, alpha=0.05).name == \
        "verify-sd+from-claims+builtin+pairs-p+logits-r1+quick+seed2+alpha0.05"
    assert report_base(alpha=0.01).name == "verify"  # the default α is not spelled out
    assert report_base(builtin=True).name == "verify"  # --with-builtin means nothing without claim files
    assert report_base(claims_from=("mypkg.sub.claims",)).name == "verify-from-mypkg.sub.claims"


def test_identity_names_each_input_by_its_resolved_path(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / "claims.py").write_text("x = 1\n")
    same = [identity(claims_from=(p,)) for p in ("a/claims.py", "./a/claims.py", str(tmp_path / "a" / "claims.py"))]
    assert same[0] == same[1] == same[2]
    assert identity(claims_from=("a/claims.py",)) != identity(claims_from=("b/claims.py",))
    assert identity(claims_from=("mypkg.claims",))["claims_from"] == ["mypkg.claims"]  # a module by its name
    assert identity(instances="p.toml")["pairs"] == str(tmp_path / "p.toml")
    assert identity(instances="<dict a sha1:1>")["pairs"] == "<dict a sha1:1>"
    base = identity()
    for k, v in VARIANTS.items():
        opts = {k: v}
        claims = opts.pop("claims", "*")
        assert identity(claims, **opts) != base, k
    assert identity(claims_from=("a/claims.py",), builtin=True) != identity(claims_from=("a/claims.py",))
    assert identity(" sd.a , sd.b ") == identity("sd.a,sd.b")


def _run_record(**over):
    run = {"claims_pattern": "*", "claims_from": [], "seed": 0, "quick": False, "alpha_family": 0.01,
           "logits_run": None}
    run.update(over)
    return run


def test_a_run_record_gives_back_the_options_and_name_of_its_run(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "claims.py").write_text("x = 1\n")
    run = _run_record(claims_pattern="toy.*", claims_from=["a/claims.py"], seed=4, quick=True, alpha_family=0.05,
                      with_builtin=True, logits_run="runs/r1", instances={"source": "p.toml", "pairs": []},
                      inputs={"claims_from": [str(tmp_path / "a" / "claims.py")], "instances": str(tmp_path / "p.toml"),
                              "logits": str(tmp_path / "runs" / "r1")})
    opts = options_of(run)
    assert opts == {"claims": "toy.*", "claims_from": (str(tmp_path / "a" / "claims.py"),), "builtin": True,
                    "instances": str(tmp_path / "p.toml"), "logits": str(tmp_path / "runs" / "r1"), "quick": True,
                    "seed": 4, "alpha": 0.05}
    assert run_paths(run)["json"] == Path("reports/verify-toy+from-claims+builtin+pairs-p+logits-r1+quick+seed4"
                                          "+alpha0.05.json")
    old = _run_record(claims_from=["a/claims.py"])  # a report written before `inputs` existed
    assert identity(**options_of(old)) == identity(claims_from=("a/claims.py",))


def _store(base: Path, run: dict):
    base.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{base}.json").write_text(json.dumps({"schema": "spectheory.report/3", "claims": [], "run": run}))


def test_a_report_of_another_run_is_never_overwritten(tmp_path):
    for d in ("a", "b", "c"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "claims.py").write_text("x = 1\n")
    a, b, c = ({"claims_from": (f"{d}/claims.py",), "quick": True} for d in "abc")
    plain = default_base(**a)
    assert plain == Path("reports/verify-from-claims+quick")
    _store(plain, _run_record(claims_from=["a/claims.py"], quick=True))
    assert default_base(**a) == plain                       # a rerun of the same run replaces its report
    other = default_base(**b)                               # claims.py from another folder: another name
    assert other != plain and other.name.startswith("verify-from-claims+quick-")
    assert default_base(**b) == other                       # deterministic
    _store(other, _run_record(claims_from=["b/claims.py"], quick=True))
    assert default_base(**b) == other                       # b's rerun replaces b's report
    assert default_base(**c) not in (plain, other)
    third = default_base(**c)
    _store(third, _run_record(claims_from=["b/claims.py"], quick=True))  # c's second name held by b's run
    with pytest.raises(NameTaken, match="hold reports of other runs"):
        default_base(**c)
    assert output_paths(json_path="mine.json", **c)["json"] == Path("mine.json")  # a name given is used as is
    # a file that is not a verify report does not block the plain name
    Path("reports/verify-seed9.json").write_text("not json")
    assert default_base(seed=9) == Path("reports/verify-seed9")


def test_two_claims_files_of_the_same_name_get_two_reports_and_the_index_lists_both(tmp_path):
    paths = []
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        paths.append(tmp_path / d / "claims.py")
        paths[-1].write_text(textwrap.dedent(TOY.format(cid=f"toy{d}.zero")))
    outs = []
    for p in paths:
        user_claims.unload_all()  # two modules named `claims`: one per process, as two commands would run
        res = CliRunner().invoke(app, ["verify", "--quick", "--no-progress", "--no-html", "--jobs", "1",
                                       "--claims-from", str(p)], env={"COLUMNS": "1000"})
        assert res.exit_code == 0, res.output
        outs.append(res.output.split("wrote ")[-1].split(",")[0])
    assert outs[0] == "reports/verify-from-claims+quick.md" and outs[1].startswith("reports/verify-from-claims+quick-")
    reports = sorted(Path("reports").glob("verify*.json"))
    assert len(reports) == 2
    assert {json.loads(r.read_text())["claims"][0]["id"] for r in reports} == {"toya.zero", "toyb.zero"}
    index = Path("reports/index.html").read_text()
    for r in reports:
        assert f"<b>{r.stem}</b>" in index
    assert str(paths[0]) in index and str(paths[1]) in index  # each row names its file by its full path


def test_alpha_and_with_builtin_are_in_the_cli_name(tmp_path):
    p = tmp_path / "toyab.py"
    p.write_text(textwrap.dedent(TOY.format(cid="toyab.zero")))
    for extra in ([], ["--alpha", "0.05"], ["--with-builtin", "--claims", "toyab.*,sd.acceptance"]):
        res = CliRunner().invoke(app, ["verify", "--quick", "--no-progress", "--no-html", "--jobs", "1",
                                       "--claims-from", str(p), *extra], env={"COLUMNS": "1000"})
        assert res.exit_code == 0, res.output
    names = sorted(r.stem for r in Path("reports").glob("verify*.json"))
    assert names == ["verify-from-toyab+quick", "verify-from-toyab+quick+alpha0.05",
                     "verify-toyab+sd.acceptance+from-toyab+builtin+quick"], names
    run = json.loads(Path("reports/verify-from-toyab+quick+alpha0.05.json").read_text())["run"]
    assert run["alpha_family"] == 0.05 and run["inputs"]["claims_from"] == [str(p)]
    assert run["claims_files"] == [{"spec": str(p), "module": "toyab", "path": str(p), "claims": ["toyab.zero"]}]
    index = Path("reports/index.html").read_text()
    assert "α 0.05" in index and "with the built-in claims" in index


def test_report_write_names_the_file_after_its_run(tmp_path):
    from spectheory.cli import verify
    p = tmp_path / "toyw.py"
    p.write_text(textwrap.dedent(TOY.format(cid="toyw.zero")))
    rep = verify(claims_from=p, quick=True, alpha=0.02, seed=1)
    out = rep.write(html=False)
    assert out["json"] == Path("reports/verify-from-toyw+quick+seed1+alpha0.02.json")
    assert out["index"] == Path("reports/index.html")
    assert rep.write(html=False)["json"] == out["json"]  # the same run: its report is replaced
    _store(Path("reports/verify-from-toyw+quick+seed1+alpha0.02"), _run_record(seed=1, quick=True))
    moved = rep.write(html=False)["json"]
    assert moved != out["json"] and moved.name.startswith("verify-from-toyw+quick+seed1+alpha0.02-")


def test_conformance_reports_are_named_after_their_target_and_listed():
    from spectheory.cli.cmd_conformance import report_paths
    assert conformance_base("mypkg.sampling:verify") == Path("reports/conformance-mypkg.sampling-verify")
    assert conformance_base("tests/x.py:fn", kind="ragged", seed=2, alpha=0.05).name == \
        "conformance-x-fn+ragged+seed2+alpha0.05"
    assert conformance_base("a:f") != conformance_base("b:f")
    Path("reports").mkdir()
    Path("reports/conformance-x-fn.json").write_text(json.dumps({"run": {"target": "/elsewhere/x.py:fn",
                                                                         "kind_option": "block"}}))
    other = conformance_base("tests/x.py:fn")  # another folder's x.py: another name
    assert other.name.startswith("conformance-x-fn-") and conformance_base("/elsewhere/x.py:fn").name == "conformance-x-fn"
    assert report_paths("a:f") == (Path("reports/conformance-a-f.json"), Path("reports/conformance-a-f.md"))
    assert report_paths("a:f", json_path=Path("x/r.json")) == (Path("x/r.json"), Path("x/r.md"))
    assert report_paths("a:f", md_path=Path("y.md")) == (Path("y.json"), Path("y.md"))
    conf = {"schema": "spectheory.report/1", "verdicts": {"lossless": {"verdict": "holds"},
                                                          "standard": {"verdict": "fails"}},
            "run": {"subject": "a:f", "kind": "block verifier", "seed": 0, "alpha_family": 0.01,
                    "started_at": "2026-01-02T00:00:00+00:00", "duration_s": 1.0}, "claims": []}
    Path("reports/conformance-a-f.json").write_text(json.dumps(conf))
    Path("reports/conformance-a-f.md").write_text("x")
    _store(Path("reports/verify-sd+quick"), {**_run_record(claims_pattern="sd.*", quick=True),
                                              "started_at": "2026-01-01T00:00:00+00:00", "duration_s": 2.0})
    rows = index_rows(Path("reports"))
    assert [r["name"] for r in rows] == ["conformance-a-f", "verify-sd+quick"]  # newest first
    assert rows[0]["verdicts"] == "lossless: holds, standard: fails"
    page = write_index(Path("reports")).read_text()
    assert "<b>conformance-a-f</b>" in page and "conformance of <code>a:f</code> (block verifier)" in page
    assert 'href="conformance-a-f.md"' in page and "<b>verify-sd+quick</b>" in page


def test_the_conformance_command_writes_under_its_targets_name():
    target = str(Path(__file__).resolve().parent / "conformance_fixtures" / "pure_python_sd.py") + ":verify"
    res = CliRunner().invoke(app, ["conformance", target, "--n", "300", "--gammas", "1", "--no-progress",
                                   "--no-probes", "--no-controls", "--report-only"])
    assert res.exit_code == 0, res.output
    base = conformance_base(target)
    assert Path(f"{base}.json").is_file() and Path(f"{base}.md").is_file()
    assert not Path("reports/conformance.json").exists()
    assert f"<b>{base.name}</b>" in Path("reports/index.html").read_text()
