"""Claims a researcher writes in one file (issue 29): `verify --claims-from` runs them through the
same registry, checks, controls, shrinker and report; a bad claim file is a usage error (exit 2)
naming the problem, and no report is written."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spectheory.sims import registry, runner, user_claims
from spectheory.sims.shrink import recompute
from spectheory.cli.main import app
from _toy_claims import HEADER, TOY

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "typical_acceptance.py"


@pytest.fixture(autouse=True)
def _forget_user_claims():
    """Every test starts and ends with the built-in registry alone (the Bonferroni split counts it)."""
    user_claims.unload_all()
    n = len(registry.load_all())
    yield
    user_claims.unload_all()
    assert len(registry.REGISTRY) == n


def _write(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(HEADER) + textwrap.dedent(body))
    return path


def _verify(tmp_path, *args):
    out = tmp_path / "out" / "r.json"
    res = CliRunner().invoke(app, ["verify", "--quick", "--no-progress", "--no-html", "--jobs", "1",
                                   "--json", str(out), *args], env={"COLUMNS": "1000"})  # no wrapped paths
    return res, out




def test_a_claim_file_runs_alone_and_gets_a_verdict_with_its_control_rejected(tmp_path):
    path = _write(tmp_path, "toyclaims", TOY)
    res, out = _verify(tmp_path, "--claims-from", str(path))
    assert res.exit_code == 0, res.output
    rep = json.loads(out.read_text())
    assert [c["id"] for c in rep["claims"]] == ["toy.zero"]
    assert rep["claims"][0]["verdict"] == "holds"
    assert rep["run"]["claims_from"] == [str(path)]
    assert rep["run"]["mc_tests_in_registry"] == 0  # the Bonferroni split counts only the file's claims


def test_with_builtin_runs_them_beside_the_selected_builtin_claims(tmp_path):
    path = _write(tmp_path, "toyclaims2", TOY)
    res, out = _verify(tmp_path, "--claims-from", str(path), "--with-builtin", "--claims", "toy.*,sd.acceptance")
    assert res.exit_code == 0, res.output
    assert [c["id"] for c in json.loads(out.read_text())["claims"]] == ["sd.acceptance", "toy.zero"]


@pytest.mark.parametrize("name, body, message", [
    ("raises", 'raise RuntimeError("half-written module")\n', r"importing it raised RuntimeError: half-written "
     r"module at .*raises\.py:\d+"),
    ("twice", TOY + TOY, r"claim 'toy\.zero' registered twice"),
    ("clash", TOY.replace("toy.zero", "sd.lossless"), r"'sd\.lossless' is a built-in claim's id"),
    ("empty", "x = 1\n", "registers no claim"),
    ("nopaper", TOY.replace('paper="leviathan2023"', 'paper="nosuch2030"'), r"unknown paper key.*sims\.papers\.add"),
    ("nocontrol", TOY.replace('controls=(Control("plus one", bad, "f(0) = 1"),)', "controls=()"),
     "no negative control covers"),
    ("partless", '''
register(id="toy.parts", paper="leviathan2023", reference="toy", statement="two things.", check=check, subject=good,
         modes=("exact",), parts=(Part("main", "f(0) = 0", "="), Part("other", "never checked", "=")),
         controls=(Control("plus one", bad, "f(0) = 1", parts=("main",)),))
''', r"toy\.parts.*other"),
    ("idle", '''
def ignores(ctx, subject):
    return [Evidence("exact", "toy", 0.0, 0.0, outcome="pass")]

register(id="toy.idle", relation="=", paper="leviathan2023", reference="toy", statement="f(0) = 0.",
         check=ignores, subject=good, modes=("exact",), controls=(Control("plus one", bad, "f(0) = 1"),))
''', r"control 'plus one' never ran"),
    ("crash", '''
def crashes(ctx, subject):
    return [1 / 0]

register(id="toy.crash", relation="=", paper="leviathan2023", reference="toy", statement="f(0) = 0.",
         check=crashes, subject=good, modes=("exact",), controls=(Control("plus one", bad, "f(0) = 1"),))
''', r"toy\.crash \(subject\): ZeroDivisionError.*crash\.py:\d+"),
])
def test_a_bad_claim_file_is_a_usage_error_and_writes_no_report(tmp_path, name, body, message):
    path = _write(tmp_path, name, body)
    res, out = _verify(tmp_path, "--claims-from", str(path))
    assert res.exit_code == 2, res.output
    import re
    assert re.search(message, " ".join(res.output.replace("│", " ").split())), res.output
    assert not out.parent.exists() or not any(out.parent.iterdir()), "no half-written report"
    assert not any(cid.startswith("toy.") for cid in registry.REGISTRY if cid not in user_claims.LOADED.get(str(path), ()))


def test_missing_file_and_unknown_module_are_usage_errors(tmp_path):
    for spec, message in ((str(tmp_path / "nope.py"), "no such file"), ("no_such_module_xyz", "no importable module")):
        res, _ = _verify(tmp_path, "--claims-from", spec)
        assert res.exit_code == 2 and message in " ".join(res.output.replace("│", " ").split()), res.output


def test_with_builtin_needs_claims_from(tmp_path):
    res, _ = _verify(tmp_path, "--with-builtin")
    assert res.exit_code == 2 and "--claims-from" in res.output


def test_an_importable_module_and_the_entry_point_group_load(tmp_path, monkeypatch):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "claims.py").write_text(textwrap.dedent(HEADER) + textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert user_claims.load("mypkg.claims") == ("toy.zero",)
    user_claims.unload_all()
    monkeypatch.setattr(user_claims, "_entry_point_modules", lambda: ["mypkg.claims"])
    assert user_claims.load(user_claims.ENTRY_POINTS) == ("toy.zero",)
    user_claims.unload_all()
    monkeypatch.setattr(user_claims, "_entry_point_modules", lambda: [])
    with pytest.raises(user_claims.UserClaimsError, match="no installed package declares"):
        user_claims.load(user_claims.ENTRY_POINTS)


def test_the_tutorial_file_fails_where_it_should_with_counterexamples_that_recompute(monkeypatch):
    """docs/your_claims.md's example: the lossy rule's law claim and its speed-up claim fail with
    shrunk counterexamples whose calls reproduce the printed numbers; standard SD re-implemented in
    the same file holds; every control is rejected, in the exact and the Monte Carlo mode."""
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))
    rep = runner.run_claims("*", quick=True, progress=False, jobs=1, claims_from=[str(EXAMPLE)], builtin=False)
    by = {c["id"]: c for c in rep["claims"]}
    assert {k: c["verdict"] for k, c in by.items()} == {
        "example.lossless": "fails", "example.accepts_more": "fails", "example.sd_lossless": "holds"}
    for c in by.values():
        assert all(ctl["verdict"] == "fails" for ctl in c["controls"]), c["id"]
    modes = {e["mode"] for e in by["example.sd_lossless"]["evidence"]}
    assert modes == {"exact", "mc"}
    for cid in ("example.lossless", "example.accepts_more"):
        cex = by[cid]["counterexample"]
        claimed, measured = recompute(cex["call"])
        assert (claimed, measured) == pytest.approx((cex["claimed"], cex["measured"]), abs=1e-12)


def test_list_shows_the_claims_of_a_file(tmp_path):
    path = _write(tmp_path, "toylist", TOY)
    res = CliRunner().invoke(app, ["list", "--claims-from", str(path), "--claims", "toy.*", "--brief"])
    assert res.exit_code == 0, res.output
    assert res.output.split()[0] == "toy.zero"


def test_token_rules_run_in_the_exact_engine_but_not_in_the_builtin_kernel():
    """A TokenRule subclass is enumerated by the exact engine; the Numba kernel refuses it instead of
    silently running the standard rule under its name."""
    import sys

    from spectheory import instances
    from spectheory.exact import sd as exact_sd
    from spectheory.montecarlo import sd as mc_sd
    user_claims.load(str(EXAMPLE))
    mod = sys.modules["typical_acceptance"]
    pair = instances.get("iid-V4-random")
    assert exact_sd.expected_tokens(pair, 2, mod.RATIO) == pytest.approx(exact_sd.expected_tokens(pair, 2), abs=1e-14)
    with pytest.raises(TypeError, match="runs the built-in rules only"):
        mc_sd.simulate(pair, 2, 100, rule=mod.RATIO, seed=0)


# --- mistakes in the user's terms, the loader's every branch, recompute anywhere ----------------------

RETURNS = {
    "a float": ("return 0.5", r"toy\.ret \(subject\): its check ret returned a float \(0\.5\); a check returns a list "
                              r"of Evidence .* at .*rets\.py:\d+"),
    "None": ("pass", r"returned None \(no `return` statement\?\)"),
    "one Evidence": ('return Evidence("exact", "toy", 0.0, 0.0, outcome="pass")',
                     r"returned one Evidence, not a list of them; .*return \[evidence\]"),
    "a tuple of numbers": ("return [(0.0, 0.5)]", r"returned a list whose item 0 is a tuple \(\(0\.0, 0\.5\)\), not an "
                                                  r"Evidence"),
    "a string": ('return "pass"', r"returned a str \('pass'\)"),
    "a dict": ('return {"claimed": 0}', r"returned a dict"),
}


@pytest.mark.parametrize("what", list(RETURNS))
def test_a_check_that_returns_the_wrong_type_is_named_at_its_definition(tmp_path, what):
    body, message = RETURNS[what]
    path = _write(tmp_path, "rets", f'''
def ret(ctx, subject):
    {body}

register(id="toy.ret", relation="=", paper="leviathan2023", reference="toy", statement="f(0) = 0.",
         check=ret, subject=good, modes=("exact",), controls=(Control("plus one", bad, "f(0) = 1"),))
''')
    res, out = _verify(tmp_path, "--claims-from", str(path))
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.replace("│", " ").split())
    import re
    assert re.search(message, text), text
    assert "sims/runner.py" not in text and "not iterable" not in text


def test_a_generator_of_evidence_is_a_list_of_evidence(tmp_path):
    path = _write(tmp_path, "gens", '''
def gen(ctx, subject):
    yield Evidence("exact", "toy", 0.0, float(subject(0)), outcome="pass" if subject(0) == 0 else "fail")

register(id="toy.gen", relation="=", paper="leviathan2023", reference="toy", statement="f(0) = 0.",
         check=gen, subject=good, modes=("exact",), controls=(Control("plus one", bad, "f(0) = 1"),))
''')
    res, out = _verify(tmp_path, "--claims-from", str(path))
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["claims"][0]["verdict"] == "holds"


@pytest.mark.parametrize("name, body, message", [
    ("kw_register", TOY.replace("relation=", "relaton="),
     r"toy\.zero: register\(\) got an unexpected keyword argument 'relaton' \(did you mean 'relation'\?\) at "
     r".*kw_register\.py:\d+"),
    ("kw_unknown", TOY.replace("statement=", "zzzqqq="),
     r"unexpected keyword argument 'zzzqqq' \(it takes: id, paper, reference, statement"),
    ("kw_part", '''
register(id="toy.p", paper="leviathan2023", reference="toy", statement="s", check=check, subject=good,
         modes=("exact",), parts=(Part("main", "f(0) = 0", relaton="="),),
         controls=(Control("plus one", bad, "f(0) = 1"),))
''', r"TypeError: Part\.__init__\(\) got an unexpected keyword argument 'relaton' \(did you mean 'relation'\?\) at "
     r".*kw_part\.py:\d+"),
    ("kw_module_attr", '''
import spectheory.sims.registry as registry

registry.register(id="toy.m", relation="=", paper="leviathan2023", reference="toy", statement="s", check=check,
                  subject=good, modes=("exact",), controls=(registry.Control("plus one", bad, "f(0) = 1",
                                                                             part=("main",)),))
''', r"Control\.__init__\(\) got an unexpected keyword argument 'part' \(did you mean 'parts'\?\)"),
    ("syntax", TOY.replace('reference="toy", ', 'reference="toy" '),
     r"importing it raised SyntaxError: .* at .*syntax\.py:(\d+):\d+: register\(id=\"toy\.zero\""),
    ("onecontrol", TOY.replace('controls=(Control("plus one", bad, "f(0) = 1"),)', 'controls=Control("plus one", bad, "f(0) = 1")'),
     r"toy\.zero: controls takes a tuple of Control, got one Control: write controls=\(Control\(\.\.\.\),\) \(the "
     r"trailing comma makes the tuple\) at .*onecontrol\.py:\d+"),
    ("onemode", TOY.replace('modes=("exact",)', 'modes="exact"'),
     r"modes takes a tuple of str, got one str: write modes=\('exact',\)"),
    ("signature", '''
def onearg(ctx):
    return []

register(id="toy.sig", relation="=", paper="leviathan2023", reference="toy", statement="s", check=onearg,
         subject=good, modes=("exact",), controls=(Control("plus one", bad, "f(0) = 1"),))
''', r"toy\.sig \(subject\): TypeError: onearg\(\) takes 1 positional argument but 2 were given at "
     r".*signature\.py:(\d+)"),
    ("runkw", '''
from spectheory.sims.shapes import mc_mean

def checkkw(ctx, subject):
    return [mc_mean(ctx, "x", 0.0, np.zeros(10), tolerence=0.1)]

register(id="toy.k", relation="=", paper="leviathan2023", reference="toy", statement="s", mc_tests=1,
         check=checkkw, subject=good, modes=("mc",), controls=(Control("plus one", bad, "f(0) = 1"),))
''', r"toy\.k \(subject\): TypeError: mc_mean\(\) got an unexpected keyword argument 'tolerence' \(did you mean "
     r"'tolerance'\?\) at .*runkw\.py:\d+"),
])
def test_mistakes_are_named_in_the_users_terms(tmp_path, name, body, message):
    path = _write(tmp_path, name, body)
    res, out = _verify(tmp_path, "--claims-from", str(path))
    assert res.exit_code == 2, res.output
    import re
    text = " ".join(res.output.replace("│", " ").split())
    m = re.search(message, text)
    assert m, text
    if name == "syntax":  # the line of the user's file that does not parse, not the importer's
        lines = path.read_text().splitlines()
        assert lines[int(m.group(1)) - 1].startswith("register(id=\"toy.zero\"")
    if name == "signature":  # raised by the toolkit's call: located where the user's check is defined
        assert path.read_text().splitlines()[int(m.group(1)) - 1] == "def onearg(ctx):"
    assert "importlib" not in text and "user_claims.py" not in text and "sims/runner.py" not in text


def test_keyword_hint_and_error_text_directly():
    def f(alpha, beta):
        return alpha
    try:
        f(alpha=1, betta=2)
    except TypeError as err:
        assert user_claims.keyword_hint(err) == " (did you mean 'beta'?)"
    try:
        f(alpha=1, zzz=2)
    except TypeError as err:
        assert user_claims.keyword_hint(err) == " (it takes: alpha, beta)"
    assert user_claims.keyword_hint(ValueError("f() got an unexpected keyword argument 'x'")) == ""
    assert user_claims.keyword_hint(TypeError("f() got an unexpected keyword argument 'x'. Did you mean 'y'?")) == ""
    err = SyntaxError("invalid syntax", ("/x/claims.py", 7, 3, "  a b\n"))
    assert user_claims.describe_error(err, "/x/claims.py") == "SyntaxError: invalid syntax at /x/claims.py:7:3: a b"
    assert user_claims.check_location(f).endswith(f":{f.__code__.co_firstlineno}")
    assert user_claims.check_location(len) == ""


def test_a_subset_run_of_a_users_module_runs_only_the_claims_asked_for(tmp_path):
    """`--claims toy.a --claims-from FILE`: only toy.a runs; the Bonferroni split is the file's, as
    the built-in registry's is for a built-in subset; the report's name says the subset."""
    path = _write(tmp_path, "two", '''
def mc_check(ctx, subject):
    from spectheory.sims.shapes import mc_mean
    return [mc_mean(ctx, "x", 0.0, np.full(50, float(subject(0))) + np.linspace(-1e-3, 1e-3, 50), tolerance=0.1)]

register(id="toy.a", relation="=", paper="leviathan2023", reference="toy", statement="a.", check=check,
         subject=good, modes=("exact",), controls=(Control("plus one", bad, "f(0) = 1"),))
register(id="toy.b", relation="=", paper="leviathan2023", reference="toy", statement="b.", check=mc_check,
         subject=good, modes=("mc",), mc_tests=1, controls=(Control("plus one", bad, "f(0) = 1"),))
''')
    res, out = _verify(tmp_path, "--claims-from", str(path), "--claims", "toy.a")
    assert res.exit_code == 0, res.output
    rep = json.loads(out.read_text())
    assert [c["id"] for c in rep["claims"]] == ["toy.a"]
    assert rep["run"]["mc_tests_in_registry"] == 2  # toy.b's test and its control's: the file's split
    assert rep["run"]["claims_files"][0]["claims"] == ["toy.a", "toy.b"]
    from spectheory.cli.runs import report_base
    assert report_base("toy.a", claims_from=(str(path),), quick=True).name == "verify-toy.a+from-two+quick"
    res, _ = _verify(tmp_path, "--claims-from", str(path), "--claims", "toy.nope")
    assert res.exit_code == 2 and "toy.nope" in res.output


def test_a_weak_control_is_not_rejected_and_is_not_read_as_one_that_never_ran(tmp_path):
    """A control whose check ran on it (its evidence differs from the subject's) but did not fail
    leaves the claim inconclusive with a note; only a control given exactly the subject's evidence
    is a declaration problem ("never ran")."""
    path = _write(tmp_path, "weak", '''
def slightly(x):
    return x + 1e-12

def tol_check(ctx, subject):
    v = float(subject(0))
    return [Evidence("exact", "toy", 0.0, v, outcome="pass" if abs(v) < 1e-9 else "fail")]

register(id="toy.weak", relation="=", paper="leviathan2023", reference="toy", statement="f(0) = 0.",
         check=tol_check, subject=good, modes=("exact",), controls=(Control("too weak", slightly, "f(0) = 1e-12"),))
''')
    res, out = _verify(tmp_path, "--claims-from", str(path))
    assert res.exit_code == 0, res.output
    c = json.loads(out.read_text())["claims"][0]
    assert c["controls"][0]["verdict"] != "fails" and c["verdict"] == "inconclusive"
    assert any("negative control 'too weak' did not fail" in n for n in c["notes"])
    assert "never ran" not in res.output


@pytest.mark.parametrize("module, file", [("dottedpkg.sub.claims", "dottedpkg/sub/claims.py"),
                                          ("dottedpkgi.claims", "dottedpkgi/claims/__init__.py")])
def test_dotted_module_names_load_run_and_recompute_in_a_fresh_process(tmp_path, monkeypatch, module, file):
    """`--claims-from pkg.sub.claims` (a module, or a package's __init__.py): the report's calls name
    the dotted module; a fresh process, elsewhere and without the package on its path, recomputes them
    from the file the report stored."""
    path = tmp_path / "proj" / file
    path.parent.mkdir(parents=True)
    for folder in path.relative_to(tmp_path / "proj").parents:
        if str(folder) != ".":
            (tmp_path / "proj" / folder / "__init__.py").touch()
    path.write_text(textwrap.dedent(HEADER) + textwrap.dedent(FAILING.format(mod=module)))
    monkeypatch.syspath_prepend(str(tmp_path / "proj"))
    monkeypatch.chdir(tmp_path / "proj")
    res, out = _verify(tmp_path, "--claims-from", module)
    assert res.exit_code == 0, res.output
    rep = json.loads(out.read_text())
    cex = rep["claims"][0]["counterexample"]
    assert cex["call"].startswith(f"import {module}; {module}.measure(")
    assert rep["run"]["claims_files"] == [{"spec": module, "module": module, "path": str(path),
                                           "claims": ["toy.fails"]}]
    got = _fresh_recompute(out, "toy.fails", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["0.0", "1.0"]


FAILING = '''
def measure(x):
    """(claimed 0, measured x)."""
    return 0.0, float(x)


def fcheck(ctx, subject):
    v = float(subject(1))
    return [Evidence("exact", "toy", 0.0, v, outcome="pass" if v == 0 else "fail")]


def shrink(ctx, subject):
    return {{"x": 1, "claimed": 0.0, "measured": 1.0, "call": "import {mod}; {mod}.measure(1)"}}


register(id="toy.fails", relation="=", paper="leviathan2023", reference="toy", statement="f(1) = 0.",
         check=fcheck, subject=good, modes=("exact",), shrink=shrink,
         controls=(Control("plus one", bad, "f(1) = 2"),))
'''


def _fresh_recompute(report_json, claim_id, cwd, claims_from=None):
    import os
    import subprocess
    import sys
    code = (f"from spectheory.cli import load_report\n"
            f"r = load_report({str(report_json)!r})\n"
            f"c = r[{claim_id!r}]\n"
            f"print(*c.recompute(claims_from={claims_from!r})[:2])\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)  # the toolkit only: not the user's folder
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def test_a_reloaded_report_recomputes_a_users_claim_from_its_file_and_says_so_when_it_moved(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    path = work / "myfails.py"
    path.write_text(textwrap.dedent(HEADER) + textwrap.dedent(FAILING.format(mod="myfails")))
    res, out = _verify(tmp_path, "--claims-from", "myfails.py")  # a relative path, from its folder
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["run"]["claims_files"][0]["path"] == str(path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    got = _fresh_recompute(out, "toy.fails", cwd=elsewhere)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["0.0", "1.0"]
    moved = tmp_path / "moved" / "myfails.py"
    moved.parent.mkdir()
    path.rename(moved)
    got = _fresh_recompute(out, "toy.fails", cwd=elsewhere)
    assert got.returncode != 0
    assert "FileNotFoundError" in got.stderr and f"{path}, which is no longer there" in got.stderr
    assert "recompute(claims_from=" in got.stderr
    got = _fresh_recompute(out, "toy.fails", cwd=elsewhere, claims_from=str(moved))
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["0.0", "1.0"]


def test_the_loader_keys_a_file_by_its_resolved_path_and_reloads_one_imported_before(tmp_path, monkeypatch):
    path = _write(tmp_path, "keyed", TOY)
    monkeypatch.chdir(tmp_path)
    assert user_claims.load("keyed.py") == ("toy.zero",)
    assert user_claims.load("./keyed.py") == ("toy.zero",)           # the same file: no second registration
    assert user_claims.load(str(path)) == ("toy.zero",)
    assert user_claims.load(path) == ("toy.zero",)                   # a pathlib.Path too
    assert list(user_claims.LOADED) == [str(path.resolve())]
    assert user_claims.describe("keyed.py") == {"spec": "keyed.py", "module": "keyed", "path": str(path.resolve()),
                                                "claims": ["toy.zero"]}
    user_claims.unload_all()
    assert not user_claims.LOADED and not user_claims.SOURCES and "toy.zero" not in registry.REGISTRY
    import importlib
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.load_all()
    importlib.import_module("keyed")                                 # a notebook's `import keyed` first
    assert "toy.zero" in registry.REGISTRY
    assert user_claims.load("keyed.py") == ("toy.zero",)             # then --claims-from: loaded, not "no claim"
    assert user_claims.is_user_claim("toy.zero") and not user_claims.is_user_claim("sd.lossless")


@pytest.mark.parametrize("spec, message", [
    ("spectheory.sims.claims.sd", "a built-in claim module"),
    ("", "expects a file path or a module name"),
    (3, "expects a file path or a module name"),
])
def test_specs_that_are_no_users_module_are_refused(spec, message):
    with pytest.raises(user_claims.UserClaimsError, match=message):
        user_claims.load(spec)
    assert len(registry.load_all()) == len({cid for cid in registry.REGISTRY})


def test_a_file_whose_name_is_taken_or_not_an_identifier_or_not_python_is_refused(tmp_path):
    bad_name = tmp_path / "my-claims.py"
    bad_name.write_text("x = 1\n")
    with pytest.raises(user_claims.UserClaimsError, match="must be a Python identifier"):
        user_claims.load(str(bad_name))
    not_py = tmp_path / "claims.txt"
    not_py.write_text("x = 1\n")
    with pytest.raises(user_claims.UserClaimsError, match=r"must be a Python file \(\.py\)"):
        user_claims.load(str(not_py))
    taken = tmp_path / "json.py"  # a module of that name (the standard library's) is already imported
    taken.write_text(textwrap.dedent(HEADER) + textwrap.dedent(TOY))
    with pytest.raises(user_claims.UserClaimsError, match="a different module named 'json' is already imported"):
        user_claims.load(str(taken))
