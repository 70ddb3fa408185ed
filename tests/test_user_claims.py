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

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "typical_acceptance.py"

HEADER = '''
import numpy as np
from spectheory.sims.registry import Control, Part, register
from spectheory.judge.evidence import Evidence


def good(x):
    return x


def bad(x):
    return x + 1


def check(ctx, subject):
    return [Evidence("exact", "toy", 0.0, float(subject(0)), outcome="pass" if subject(0) == 0 else "fail")]
'''


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


TOY = '''
register(id="toy.zero", relation="=", paper="leviathan2023", reference="toy", statement="f(0) = 0.",
         check=check, subject=good, modes=("exact",), controls=(Control("plus one", bad, "f(0) = 1"),))
'''


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
