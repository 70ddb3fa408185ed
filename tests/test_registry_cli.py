"""The claim registry and `spectheory verify`: schema, verdicts, controls, reproducibility."""
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from spectheory.sims import registry
from spectheory.cli.main import app
from spectheory.judge.evidence import Evidence, combine
from spectheory.sims.runner import SCHEMA, run_claims
from spectheory.sims.shrink import recompute

CLAIM_KEYS = {"id", "verdict", "statement", "evidence", "counterexample"}
EVIDENCE_KEYS = {"mode", "instance", "claimed", "measured", "ci_low", "ci_high", "p_value", "n"}
SD_IDS = ["sd.lossless", "sd.acceptance", "sd.expected_tokens", "sd.walltime"]


@pytest.fixture(scope="module")
def quick_report():
    return run_claims("sd.*", quick=True, seed=0, progress=False)


def test_every_sd_claim_is_registered_with_controls():
    claims = registry.select("sd.*")
    assert [c.id for c in claims] == SD_IDS
    for c in claims:
        assert c.modes == ("exact", "mc") and c.mc_tests >= 1, c.id
        for mode in c.modes:  # every graded mode has a control that must fail in it
            assert any(mode in c.control_modes(ctl) for ctl in c.controls), (c.id, mode)
        assert c.reference.startswith("Leviathan et al. 2023"), c.id
    names = {c.id: [ctl.name for ctl in c.controls] for c in claims}
    assert names["sd.walltime"] == ["no-bonus", "serial-verify"]
    assert registry.REGISTRY["sd.lossless"].mc_tests == 5 and registry.REGISTRY["sd.acceptance"].mc_tests == 3


def test_quick_report_schema_and_verdicts(quick_report):
    r = quick_report
    assert r["schema"] == SCHEMA == "spectheory.report/3"
    assert [c["id"] for c in r["claims"]] == SD_IDS
    for c in r["claims"]:
        assert CLAIM_KEYS <= c.keys()
        assert c["verdict"] == "holds", (c["id"], c["notes"])
        modes = {e["mode"] for e in c["evidence"] if e["outcome"] != "info"}
        assert modes == {"exact", "mc"}, c["id"]
        for e in c["evidence"]:
            assert EVIDENCE_KEYS <= e.keys()
        for ctl in c["controls"]:
            assert ctl["verdict"] == "fails", (c["id"], ctl["name"])
            assert ctl["modes"] == {"exact": "fails", "mc": "fails"}, (c["id"], ctl["name"], ctl["modes"])
            cex = ctl["counterexample"]
            assert cex is not None and {"V", "seed", "order", "source", "call"} <= cex.keys()
            assert "K" not in cex  # only the settings that apply (one draft)
            claimed, measured = recompute(cex["call"])[:2]  # the one-line call gives both numbers
            assert (float(claimed), float(measured)) == (cex["claimed"], cex["measured"]), (c["id"], cex)
    assert r["run"]["alpha_per_test"] == pytest.approx(r["run"]["alpha_family"] / r["run"]["mc_tests_in_registry"])
    assert r["run"]["mc_tests_in_registry"] == registry.total_mc_tests() >= sum(
        registry.REGISTRY[i].n_mc_tests for i in SD_IDS)
    for c in r["claims"]:  # every Monte Carlo test ran at the Bonferroni level, with power stated
        for e in c["evidence"] + [e for k in c["controls"] for e in k["evidence"]]:
            if e["mode"] == "mc":
                assert e["alpha"] == pytest.approx(r["run"]["alpha_per_test"], rel=1e-12), (c["id"], e)
                assert e["power"] == 0.9 and e["n"] >= 100_000, (c["id"], e)
            if e["mode"] == "mc" and e in c["evidence"]:
                assert e["detectable"] <= e["tolerance"], (c["id"], e)
    json.dumps(r)  # serialisable


def _family_level(per_test: float) -> float:
    """The family-wise α whose Bonferroni share over today's registry is exactly ``per_test``."""
    import numpy as np
    m = registry.total_mc_tests()
    a = per_test * m
    for _ in range(64):  # a few ulps either way
        if a / m == per_test:
            return a
        a = np.nextafter(a, np.inf if a / m < per_test else -np.inf)
    raise AssertionError(f"no family level gives {per_test!r} per test over {m} tests")


def test_quick_report_numbers_are_those_before_registry_v2(quick_report):
    """Issue 15's invariant on the quick tier of sd.*: every verdict, every control verdict and
    every number of every evidence item as main gave before the registry moved to parts and the
    claims onto the check shapes (fixture from that run; tests/_report_diff.py). The per-test
    level is the fixture's: the Bonferroni denominator counts every Monte Carlo test of the
    registry, which grows as families add claims, parts and controls."""
    from _report_diff import diff_reports
    fixture = json.loads((Path(__file__).parent / "fixtures" / "verify_quick_sd_seed0.json").read_text())
    level = next(e["alpha"] for c in fixture["claims"] for e in c["evidence"] if e["mode"] == "mc")
    if quick_report["run"]["alpha_per_test"] != level:
        quick_report = run_claims("sd.*", quick=True, seed=0, progress=False, alpha=_family_level(level))
    assert quick_report["run"]["alpha_per_test"] == level
    assert diff_reports(fixture, quick_report) == []
    moved = json.loads(json.dumps(quick_report))
    moved["claims"][0]["controls"][0]["evidence"][0]["measured"] += 1e-15  # the comparison sees one ulp
    assert len(diff_reports(fixture, moved)) == 1


def test_bonferroni_denominator_counts_every_monte_carlo_test_of_subjects_and_controls(quick_report):
    """Every Monte Carlo test a report runs (each one's evidence carries its α) counts in the
    Bonferroni denominator: the subject's and each control's. Per claim, the tests in the sd.*
    report equal ``n_mc_tests`` = mc_tests × (1 + controls), and the registry total sums them."""
    for c in quick_report["claims"]:
        ran = sum(1 for e in c["evidence"] + [e for k in c["controls"] for e in k["evidence"]]
                  if e["mode"] == "mc" and e["alpha"] is not None)
        claim = registry.REGISTRY[c["id"]]
        assert ran == claim.n_mc_tests == claim.mc_tests * (1 + len(c["controls"])), c["id"]
    assert registry.REGISTRY["sd.lossless"].n_mc_tests == 5 * 3  # 5 tests, subject + 2 controls
    assert registry.total_mc_tests() == sum(c.n_mc_tests for c in registry.load_all().values())


def test_report_reproducible_from_seed(quick_report):
    """Same seed, same evidence, also when the claim runs in a different selection (the
    per-test level counts the whole registry; seeds derive from the claim id)."""
    again = run_claims("sd.walltime,sd.lossless", quick=True, seed=0, progress=False)
    strip = lambda rep: {c["id"]: (c["evidence"], [k["evidence"] for k in c["controls"]]) for c in rep["claims"]}
    first = strip(quick_report)
    assert strip(again) == {i: first[i] for i in ("sd.lossless", "sd.walltime")}


def test_cli_writes_json_and_markdown(tmp_path):
    j, m = tmp_path / "r.json", tmp_path / "r.md"
    res = CliRunner().invoke(app, ["verify", "--claims", "sd.acceptance", "--quick", "--no-progress", "--seed", "3",
                                   "--alpha", "0.02", "--json", str(j), "--markdown", str(m)])
    assert res.exit_code == 0, res.output
    assert "sd.acceptance" in res.output and "holds" in res.output
    data = json.loads(j.read_text())
    assert [c["id"] for c in data["claims"]] == ["sd.acceptance"]
    assert (data["run"]["seed"], data["run"]["quick"], data["run"]["alpha_family"]) == (3, True, 0.02)
    assert data == json.loads(json.dumps(data))  # plain JSON: no NaN/inf floats
    mc = [e for e in data["claims"][0]["evidence"] if e["mode"] == "mc"]
    assert mc and all("stream of 150000 iterations" in e["note"] for e in mc)  # the quick tier's size
    md = m.read_text()
    assert "- `accept=min(1,q/p)` **rejected** (exact fails, mc fails)" in md
    evidence = (tmp_path / "r-evidence.md").read_text()  # every table goes to the evidence file
    assert "**Negative control `accept=min(1,q/p)`**" in evidence
    assert "(per mode: exact fails, mc fails; must fail in exact, mc)" in evidence


def test_cli_glob_list_runs_exactly_the_named_claims(tmp_path):
    j = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["verify", "--claims", "sd.walltime, sd.accept*", "--quick", "--no-progress",
                                   "--json", str(j), "--markdown", str(tmp_path / "r.md")])
    assert res.exit_code == 0, res.output
    assert [c["id"] for c in json.loads(j.read_text())["claims"]] == ["sd.acceptance", "sd.walltime"]


def test_cli_checks_every_pattern_and_the_report_paths_before_running(tmp_path, monkeypatch):
    """A typo inside a list, or an unwritable report path, is refused before any check runs
    (the run is replaced by one that fails the test if called), with exit status 2 and a
    message, not a traceback."""
    from spectheory.sims import runner
    monkeypatch.setattr(runner, "run_claims", lambda *a, **k: pytest.fail("the run started"))
    (tmp_path / "file").write_text("")
    cases = [(["--claims", "sd.lossless,sd.acceptence"], "sd.acceptence"),
             (["--claims", "sd.lossless", "--json", str(tmp_path / "file" / "r.json")], "not a folder"),
             (["--claims", "sd.lossless", "--markdown", str(tmp_path)], "is a directory"),
             (["--seed", "-1"], "--seed")]
    for args, fragment in cases:
        res = CliRunner().invoke(app, ["verify", "--no-progress", "--json", str(tmp_path / "ok.json"),
                                       "--markdown", str(tmp_path / "ok.md"), *args])
        assert res.exit_code == 2, (args, res.output)
        assert isinstance(res.exception, SystemExit), (args, res.exception)
        assert fragment in " ".join(res.output.replace("│", " ").split()), (args, res.output)
    assert not (tmp_path / "ok.json").exists() and not (tmp_path / "ok.md").exists()


def test_cli_strict_exit_status(tmp_path, monkeypatch):
    """--strict: exit 0 when every claim holds, 1 when one does not (the run is replaced by a
    canned report so the status logic is tested alone)."""
    from spectheory.sims import runner
    real = runner.run_claims("sd.acceptance", quick=True, progress=False)
    args = ["verify", "--strict", "--no-progress", "--claims", "sd.acceptance", "--json", str(tmp_path / "r.json"),
            "--markdown", str(tmp_path / "r.md")]
    monkeypatch.setattr(runner, "run_claims", lambda *a, **k: real)
    assert CliRunner().invoke(app, args).exit_code == 0
    failing = json.loads(json.dumps(real))
    other = json.loads(json.dumps(real["claims"][0]))
    other.update(id="sd.other", verdict="inconclusive")
    failing["claims"].append(other)  # one claim holds, one does not
    monkeypatch.setattr(runner, "run_claims", lambda *a, **k: failing)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1 and "inconclusive" in res.output


def test_cli_list(tmp_path):
    res = CliRunner().invoke(app, ["list", "--claims", "sd.*", "--brief"])
    assert res.exit_code == 0
    assert [line.split()[0] for line in res.output.splitlines()] == SD_IDS
    res = CliRunner().invoke(app, ["list", "--claims", "sd.expected_tokens"])  # statements and parts
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    assert registry.REGISTRY["sd.expected_tokens"].statement in text
    assert "- iid (=): With constant per-position acceptance" in text and "(=, not checkable)" in text
    res = CliRunner().invoke(app, ["list", "--claims", "zzz"])
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit)
    assert "no registered claim matches 'zzz'" in res.output


def test_cli_unknown_claim_is_a_clear_error(tmp_path):
    res = CliRunner().invoke(app, ["verify", "--claims", "nope.*", "--json", str(tmp_path / "x.json")])
    assert res.exit_code != 0
    assert "no registered claim matches" in res.output


def test_primary_evidence_is_the_first_failure_else_the_first_monte_carlo():
    from spectheory.sims.report import primary_evidence
    ex_ok = Evidence("exact", "a", 0, 0, outcome="pass").to_json()
    mc_ok = Evidence("mc", "b", 0, 0, outcome="pass").to_json()
    mc_bad = Evidence("mc", "c", 0, 1, outcome="fail").to_json()
    info = Evidence("exact", "d", 0, 1, outcome="info").to_json()
    assert primary_evidence({"evidence": [ex_ok, mc_ok, mc_bad]})["instance"] == "c"
    assert primary_evidence({"evidence": [info, ex_ok, mc_ok]})["instance"] == "b"
    assert primary_evidence({"evidence": [info, ex_ok]})["instance"] == "a"
    assert primary_evidence({"evidence": []}) is None


def test_verdict_combination():
    ok = Evidence("exact", "i", 0, 0, outcome="pass")
    weak = Evidence("mc", "i", 0, 0, outcome="underpowered")
    bad = Evidence("mc", "i", 0, 1, outcome="fail")
    note = Evidence("exact", "i", 0, 1, outcome="info")
    assert combine([ok, note]) == "holds"
    assert combine([ok, weak]) == "inconclusive"
    assert combine([ok, weak, bad]) == "fails"
    assert combine([note]) == "inconclusive"


def test_mc_test_count_is_enforced(monkeypatch):
    claim = registry.REGISTRY["sd.walltime"]
    fake = registry.Claim(**{**claim.__dict__, "mc_tests": 3})
    from spectheory.sims import runner
    with pytest.raises(RuntimeError, match="mc_tests"):
        runner._run_subject(fake, fake.subject, "subject", 0, True, 0.01)


#: claims the checks find false as printed (findings, each with a shrunk counterexample)
KNOWN_FINDINGS = {  # headline (principal reading) verdicts other than holds, each explained in its family's doc
    "se.thm3_6": "fails",  # docs/se.md: Thm 3.6 is not the alternating process's speedup
    "entropy.kl_lower": "fails",  # docs/ersd.md: the transfer to the SD index
    "ersd.batch_crossover": "depends",  # on what "moderate k" means (integer k or the lines through the points)
    "spectr_gbv.lossless": "fails", "spectr_gbv.sub_block": "fails", "spectr_gbv.attains": "fails",
    "spectr_gbv.tables": "fails",  # docs/multidraft.md: Alg. 1 as printed is lossy for K ≥ 2
    "spectr_gbv.remark5_2": "fails",  # by equality only (a tie at q = p)
    "sb.branch_lossless": "fails", "sb.rollback": "fails", "sb.speedup": "fails",  # docs/sb.md
    "ecsv.map": "fails", "ecsv.majority": "fails", "ecsv.prefix_length": "fails", "ecsv.budget": "fails",
    "ecsv.falsification": "fails",  # docs/ecsv.md
}


@pytest.mark.slow
def test_default_tier_every_claim_holds():
    """The full default run (what `make verify` does): every registered claim holds, or fails
    with a recorded counterexample (a paper's claim may be false), and every negative control
    fails."""
    r = run_claims("*", quick=False, seed=0, progress=False)
    for c in r["claims"]:
        if c["id"] in KNOWN_FINDINGS:
            assert c["verdict"] == KNOWN_FINDINGS[c["id"]], (c["id"], c["summary"])
            assert c["counterexample"] or c["verdict"] == "depends", c["id"]
        else:
            assert c["verdict"] == "holds", c["id"]
        assert all(ctl["verdict"] == "fails" for ctl in c["controls"]), c["id"]


def _toy(**kw):
    base = dict(id="toy.claim", paper="leviathan2023", reference="r", statement="s", relation="=",
                check=lambda ctx, s: [],
                mc_tests=1, controls=(registry.Control("bad", None, "broken"),))
    base.update(kw)
    return base


def test_registration_refuses_a_mode_without_a_control(monkeypatch):
    monkeypatch.setattr(registry, "REGISTRY", {})
    with pytest.raises(registry.RegistrationError, match="no negative control covers"):
        registry.register(**_toy(controls=(registry.Control("bad", None, "broken", modes=("exact",)),)))
    with pytest.raises(registry.RegistrationError, match="no negative control covers"):
        registry.register(**_toy(controls=()))
    with pytest.raises(registry.RegistrationError, match="mc_tests"):
        registry.register(**_toy(mc_tests=0))
    with pytest.raises(registry.RegistrationError, match="modes"):
        registry.register(**_toy(modes=("exact", "psychic")))
    registry.register(**_toy())  # exact + mc covered by the one control


def test_a_control_caught_only_by_the_exact_engine_is_not_a_failing_control():
    """The hole the bug-seeding review found: a Monte Carlo check that always runs the correct
    rule still leaves the control 'fails' through its exact evidence alone. Per mode, it must
    not count."""
    from spectheory.sims.runner import control_verdict
    claim = registry.Claim(**_toy())
    ctl = claim.controls[0]
    exact_fail = Evidence("exact", "i", 0, 1, outcome="fail")
    mc_pass = Evidence("mc", "i", 0, 0, outcome="pass")
    mc_fail = Evidence("mc", "i", 0, 1, outcome="fail")
    verdict, per_mode, _ = control_verdict(claim, ctl, [exact_fail, mc_pass])
    assert verdict != "fails" and per_mode == {"exact": "fails", "mc": "holds"}
    assert control_verdict(claim, ctl, [exact_fail, mc_fail])[0] == "fails"
    assert control_verdict(claim, ctl, [exact_fail])[0] != "fails"  # no MC evidence at all


def test_a_control_is_graded_in_the_modes_it_is_registered_for():
    """A control registered for the exact mode only (another control covers mc) fails when its
    exact evidence fails, whatever its Monte Carlo evidence says; one registered for mc only
    needs the mc failure."""
    from spectheory.sims.runner import control_verdict
    exact_only = registry.Control("exact-only", None, "broken", modes=("exact",))
    mc_only = registry.Control("mc-only", None, "broken", modes=("mc",))
    claim = registry.Claim(**_toy(controls=(exact_only, mc_only)))
    exact_fail = Evidence("exact", "i", 0, 1, outcome="fail")
    exact_pass = Evidence("exact", "i", 0, 0, outcome="pass")
    mc_pass = Evidence("mc", "i", 0, 0, outcome="pass")
    mc_fail = Evidence("mc", "i", 0, 1, outcome="fail")
    assert control_verdict(claim, exact_only, [exact_fail, mc_pass])[0] == "fails"
    assert control_verdict(claim, exact_only, [exact_pass, mc_fail])[0] != "fails"
    assert control_verdict(claim, mc_only, [exact_pass, mc_fail])[0] == "fails"
    assert control_verdict(claim, mc_only, [exact_fail, mc_pass])[0] != "fails"


def test_a_control_that_does_not_fail_makes_the_claim_inconclusive(monkeypatch):
    """A check that cannot tell the broken subject from the correct one: the claim's verdict is
    downgraded from holds to inconclusive, with a note naming the control and the mode."""
    monkeypatch.setattr(registry, "REGISTRY", {})

    def check(ctx, subject):
        fail = subject == "broken-in-mc"
        return [Evidence("exact", "i", 0, 1, outcome="fail" if subject != "ok" else "pass"),
                ctx.mc(Evidence("mc", "i", 0, 1, outcome="fail" if fail else "pass"))]

    registry.register(**_toy(check=check, subject="ok",
                             controls=(registry.Control("exact-only", "broken-in-exact", "caught by exact only"),)))
    rep = run_claims("toy.*", quick=True, progress=False)
    c = rep["claims"][0]
    assert c["verdict"] == "inconclusive"
    assert c["controls"][0]["verdict"] != "fails" and c["controls"][0]["modes"] == {"exact": "fails", "mc": "holds"}
    assert any("exact-only" in n and "mc" in n for n in c["notes"])
    monkeypatch.setattr(registry, "REGISTRY", {})
    registry.register(**_toy(check=check, subject="ok",
                             controls=(registry.Control("both", "broken-in-mc", "caught in both modes"),)))
    c = run_claims("toy.*", quick=True, progress=False)["claims"][0]
    assert c["verdict"] == "holds" and c["controls"][0]["verdict"] == "fails" and not c["notes"]
