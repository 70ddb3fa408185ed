"""Fair headlines (issue 24 items 1-4, issue 25 item 3), on throw-away claims registered here:
the principal reading decides the headline and every other reading is shown beside it with its
own verdict; evidence and shrinker findings outside the claim's scope are reported as such, never
as counterexamples; a failing principal reading is re-run at each value of its open choices
(robust, or ``depends``); a strict inequality met with equality fails as a tie; an identity part's
verdict is its symbolic proof (a wrong proof fails; a failing implementation test is an error, not
a finding); real-model evidence has its own verdict beside the paper-level one."""
import json
from pathlib import Path

import jsonschema
import pytest

from spectheory.sims import registry
from spectheory.sims.registry import Choice, Control, Part, Reading, Scope
from spectheory.sims.report import beside, print_table, to_markdown, verdict_text
from spectheory.sims.runner import run_claims
from spectheory.sims.shapes import each, least_slack, mark_ties, shrinker, strict_bound, sweep
from spectheory.sims.slack import PairSpace, exhaustive, search_pairs
from spectheory.judge import stats, verdicts
from spectheory.judge.evidence import Evidence

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "sims" / "schemas" / "report-3.json"


@pytest.fixture
def empty_registry(monkeypatch):
    monkeypatch.setattr(registry, "REGISTRY", {})


def _exact(part, ok, claimed=1.0, measured=None, instance="i"):
    m = claimed if ok else claimed + 1.0 if measured is None else measured
    return stats.exact_equal(instance, claimed, m if measured is None else measured) if part is None else \
        _tag(stats.exact_equal(instance, claimed, m if measured is None else measured), part)


def _tag(e, part):
    e.part = part
    return e


def _register(**kw):
    """A toy claim; ``check(ctx, subject)`` given; one control failing every part in exact mode."""
    base = dict(id="toy.fair", paper="leviathan2023", reference="§1", statement="A toy claim.", modes=("exact",),
                subject="good", controls=(Control("bad", "bad", "negative control: broken"),),
                scope=Scope("any instance (no case of the non-degeneracy rule occurs)", degenerate=()))
    base.update(kw)
    return registry.register(**base)


def _report(pattern="toy.*", **kw):
    return run_claims(pattern, progress=False, **kw)


def _validate(rep):
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.validate(json.loads(json.dumps(rep)), schema)


# --- item 1: the principal reading decides; others beside it ---------------------------------------

def two_readings_check(ctx, subject):
    """Part `printed` (principal) holds for the subject; part `integer` (another reading) fails;
    the control fails both."""
    bad = subject == "bad"
    return [_tag(stats.exact_equal("x", 1.0, 2.0 if bad else 1.0), "printed"),
            _tag(stats.exact_equal("y", 1.0, 1.5), "integer")]


TWO = (Reading("as-printed", "Over real γ, as the paper states it.", ("printed",), role="principal",
               quote="§3: 'the optimal γ is at most c'", why="the theorem is stated over real γ"),
       Reading("integer", "Over integer γ.", ("integer",), kind="integer", why="rounding, not the theorem"))


def test_principal_reading_decides_the_headline_and_others_are_beside_it(empty_registry):
    _register(parts=(Part("printed", "γ* ≤ c over real γ", "≤"), Part("integer", "γ* ≤ c over integers", "≤")),
              readings=TWO, check=two_readings_check)
    rep = _report()
    c = rep["claims"][0]
    assert c["verdict"] == "holds" and c["summary"] == "holds"
    rd = {r["id"]: r for r in c["readings"]}
    assert rd["as-printed"]["role"] == "principal" and rd["as-printed"]["verdict"] == "holds"
    assert rd["integer"]["verdict"] == "fails" and rd["integer"]["kind"] == "integer"
    assert rd["as-printed"]["quote"].startswith("§3")
    assert beside(c) == ["integer: fails"]
    assert verdict_text(c) == "holds · integer: fails"
    assert c["sources"] == {"synthetic": "holds", "real": None}
    assert c["controls"][0]["verdict"] == "fails"  # controls unchanged: it must fail in both parts
    md = to_markdown(rep)
    assert "**holds** · integer: fails" in md and "Principal reading `as-printed`" in md
    assert "§3: 'the optimal γ is at most c'" in md
    from spectheory.sims.report_html import to_html
    html = to_html(rep, plots=False)
    assert '<span class="beside">· integer: fails</span>' in html and "Principal reading <code>as-printed</code>" in html
    _validate(rep)


def test_the_terminal_table_shows_other_readings_beside_the_headline(empty_registry, capsys):
    from rich.console import Console
    _register(parts=(Part("printed", "a", "≤"), Part("integer", "b", "≤")), readings=TWO, check=two_readings_check)
    print_table(_report(), Console(width=220, color_system=None))
    assert "holds · integer: fails" in capsys.readouterr().out


def test_a_failing_principal_reading_fails_whatever_the_others_say(empty_registry):
    def check(ctx, subject):
        return [_tag(stats.exact_equal("x", 1.0, 2.0), "printed"), _tag(stats.exact_equal("y", 1.0, 1.0), "integer")]
    _register(parts=(Part("printed", "a", "="), Part("integer", "b", "=")), readings=TWO, check=check,
              controls=(Control("bad", "bad", "broken", parts=("printed",)),
                        Control("bad2", "bad", "broken", parts=("integer",))),)
    c = _report()["claims"][0]
    assert c["verdict"] == "fails" and c["robust"] is True and c["depends_on"] == []
    assert beside(c) == ["integer: inconclusive"]  # its control does not fail there: undecided, said so


def test_a_claim_without_readings_has_one_principal_reading_over_every_part(empty_registry):
    _register(relation="=", check=lambda ctx, s: [stats.exact_equal("x", 1.0, 2.0 if s == "bad" else 1.0)])
    c = _report()["claims"][0]
    assert [r["id"] for r in c["readings"]] == ["paper"] and c["readings"][0]["role"] == "principal"
    assert c["verdict"] == "holds" and beside(c) == []


# --- item 2: scope ----------------------------------------------------------------------------------

def _v(pair, **_):
    return None if pair.V >= 3 else f"V = {pair.V} < 3: the mechanism never engages"


SCOPE = Scope("V ≥ 3 (the mechanism engages)", guard=_v)


def toy_measure(pair, subject, gamma=1):
    """(claimed, measured): the toy claim 'V·γ ≠ 2' fails only at V = 2, γ = 1 (out of scope) and,
    for the broken subject, at V = 3 too."""
    return 0.0, float(pair.V * gamma == 2 or (subject == "bad" and pair.V == 3))


def scope_check(ctx, subject):
    from spectheory.pairs import random_pair
    out = []
    for V in (2, 3, 4):
        pair = random_pair(V, 0, seed=0)
        claimed, measured = toy_measure(pair, subject)
        e = stats.exact_equal(f"V={V}", claimed, measured)
        why = ctx.out_of_scope(pair)
        out.append(ctx.outside(e, why) if why else e)
    return out


def test_out_of_scope_evidence_and_shrinker_findings_are_not_counterexamples(empty_registry):
    _register(relation="=", scope=SCOPE, check=scope_check,
              shrink=shrinker(toy_measure, applies=("V", "gamma", "seed"), orders=(0,), gammas=(1,), seeds=(0,),
                              fails=lambda c, m: m > 0, scope=SCOPE))
    rep = _report()
    c = rep["claims"][0]
    assert c["verdict"] == "holds"  # the only failure (V = 2) is outside the scope
    found = c["scope"]["out_of_scope"]
    assert c["scope"]["statement"] == SCOPE.statement
    assert [f["instance"] for f in found] == ["V=2"] and "mechanism never engages" in found[0]["reason"]
    ctl = c["controls"][0]
    assert ctl["verdict"] == "fails" and ctl["counterexample"]["V"] == 3  # in scope: a counterexample
    assert "outside the claim's scope: V=2" in to_markdown(rep)
    _validate(rep)


def test_a_shrinker_that_finds_only_out_of_scope_failures_returns_none_and_records_them():
    from spectheory.sims.registry import Context
    ctx = Context(claim_id="toy", scope=SCOPE)
    shrink = shrinker(toy_measure, applies=("V", "gamma", "seed"), orders=(0,), gammas=(1,), seeds=(0,),
                      fails=lambda c, m: m > 0, scope=SCOPE)
    assert shrink(ctx, "good") is None
    assert len(ctx.scope_findings) == 1
    f = ctx.scope_findings[0]
    assert f["settings"]["V"] == 2 and f["measured"] == 1.0 and "V = 2" in f["reason"] and f["call"]
    ctx2 = Context(claim_id="toy", scope=SCOPE)
    assert shrink(ctx2, "bad")["V"] == 3  # an in-scope failure is the counterexample
    unscoped = shrinker(toy_measure, applies=("V", "gamma", "seed"), orders=(0,), gammas=(1,), seeds=(0,),
                        fails=lambda c, m: m > 0)
    assert unscoped(Context(claim_id="toy"), "good")["V"] == 2  # negative control: without the scope it is found


def test_search_pairs_honours_the_scope():
    def slack(pair):  # least as p(0) → 1
        return 1.0 - float(pair.target.conditional(0)[0])
    guard = lambda pair, **_: "p(0) > 0.8" if pair.target.conditional(0)[0] > 0.8 else None  # noqa: E731
    free = search_pairs(slack, PairSpace(V=2), budget=300, restarts=3, seed=1)
    scoped = search_pairs(slack, PairSpace(V=2), budget=300, restarts=3, seed=1, scope=guard)
    assert free.value < 0.05  # the unscoped search runs into the out-of-scope region
    assert 0.2 <= scoped.value < 0.25  # the scoped one stops at its edge
    assert scoped.instance["p"][0] <= 0.8


def test_outside_scope_evidence_must_be_info():
    with pytest.raises(ValueError, match="must be info"):
        Evidence("exact", "i", 0, 1, outcome="fail", out_of_scope="V = 2")


# --- item 3: choices swept ------------------------------------------------------------------------------

def choice_check(ctx, subject):
    """The principal part fails at k_max = 4 (default) and 8, holds at 2; the broken subject fails
    everywhere."""
    k = ctx.choice("k_max")
    bad = subject == "bad" or k >= 4
    return [_tag(stats.exact_equal(f"k_max={k}", 1.0, 2.0 if bad else 1.0), "main")]


def test_a_choice_whose_end_flips_the_verdict_gives_depends(empty_registry):
    calls = []

    def check(ctx, subject):
        calls.append((subject, ctx.choice("k_max")))
        return choice_check(ctx, subject)
    _register(relation="=", check=check,
              choices=(Choice("k_max", 4, (2, 4, 8), "the paper leaves the fork budget open"),))
    rep = _report()
    c = rep["claims"][0]
    assert c["verdict"] == "depends" and c["robust"] is False and c["depends_on"] == ["k_max"]
    assert c["choices"][0]["verdicts"] == {"2": "holds", "4": "fails", "8": "fails"}
    assert c["summary"] == "depends on k_max: holds at 2, fails at 4 (default), fails at 8"
    assert c["readings"][0]["verdict"] == "fails"  # the principal reading at the defaults
    assert sorted(calls) == [("bad", 4), ("good", 2), ("good", 4), ("good", 8)]  # controls at the default only
    assert "1 depend on a choice" in to_markdown(rep)
    _validate(rep)


def test_a_failure_at_every_value_is_robust(empty_registry):
    def check(ctx, subject):
        return [_tag(stats.exact_equal("x", 1.0, 2.0), "main")]
    _register(relation="=", check=check, choices=(Choice("eps", 0.3, (0.1, 0.5), "band", invented=True),))
    c = _report()["claims"][0]
    assert c["verdict"] == "fails" and c["robust"] is True and c["depends_on"] == []
    assert c["choices"][0]["verdicts"] == {"0.3": "fails", "0.1": "fails", "0.5": "fails"}
    assert c["choices"][0]["invented"] is True


def test_choices_are_swept_when_the_principal_reading_holds_too(empty_registry):
    """Issue 34: a hold is re-run at every value as a failure is (controls at the default only)."""
    calls = []

    def check(ctx, subject):
        calls.append((subject, ctx.choice("k_max")))
        return [_tag(stats.exact_equal("x", 1.0, 2.0 if subject == "bad" else 1.0), "main")]
    _register(relation="=", check=check, choices=(Choice("k_max", 4, (2, 8), "open"),))
    c = _report()["claims"][0]
    assert c["verdict"] == "holds" and c["robust"] is True and c["depends_on"] == []
    assert sorted(calls) == [("bad", 4), ("good", 2), ("good", 4), ("good", 8)]
    assert c["choices"][0]["verdicts"] == {"4": "holds", "2": "holds", "8": "holds"}


def test_choice_reruns_count_in_the_bonferroni_denominator(empty_registry):
    """A re-run is graded in exact mode where a part has exact evidence (its Monte Carlo is then not
    graded and not counted); a part graded in Monte Carlo alone makes every re-run count its tests."""
    cl = _register(relation="=", check=choice_check, modes=("exact", "mc"), mc_tests=2,
                   choices=(Choice("k_max", 4, (2, 4, 8), "open"),))
    assert cl.choice_reruns == 2 and cl.rerun_mc_tests == 0 and cl.n_mc_tests == 2 * (1 + 1)
    mc_only = _register(id="toy.mconly", parts=(Part("main", "x", "=", modes=("mc",)),), check=choice_check,
                        modes=("exact", "mc"), mc_tests=2, choices=(Choice("k_max", 4, (2, 4, 8), "open"),),
                        controls=(Control("bad", "bad", "broken", modes=("mc",)),))
    assert mc_only.rerun_required == {"main": ("mc",)} and mc_only.n_mc_tests == 2 * (1 + 1 + 2)


# --- item 4: ties and identities --------------------------------------------------------------------------

def test_strict_bounds_tell_a_tie_from_a_strict_violation():
    tie = strict_bound("i", 0.9, 0.9, side="gt")
    assert tie.outcome == "fail" and tie.tie and "tie" in tie.note
    bad = strict_bound("i", 0.9, 0.8, side="gt")
    assert bad.outcome == "fail" and not bad.tie
    assert strict_bound("i", 0.9, 0.95, side="gt").outcome == "pass"
    assert strict_bound("i", 0.9, 0.85, side="lt").outcome == "pass"
    ev = sweep("s", [{"b": 1}, {"b": 2}], lambda b: (0.9, 0.9 if b == 1 else 1.0), grade="bound", side="gt")
    assert ev.outcome == "fail" and ev.tie and [p["outcome"] for p in ev.points] == ["fail", "pass"]
    ev = sweep("s", [{"b": 1}], lambda b: (0.9, 0.9), grade="bound", side="ge")
    assert ev.outcome == "pass" and not ev.tie  # non-strict: equality holds
    marked = mark_ties([stats.exact_equal("a", 0.9, 0.9 + 1e-14), Evidence("exact", "b", 0.9, 0.5, outcome="fail"),
                        Evidence("exact", "c", 0.9, 0.9, outcome="fail")])
    assert [e.tie for e in marked] == [False, False, True]  # a pass is never marked
    with pytest.raises(ValueError, match="side"):
        sweep("s", [{"b": 1}], lambda b: (0, 0), grade="bound", side="gte")


def test_least_slack_on_a_strict_part_fails_a_zero_slack_as_a_tie(empty_registry):
    def check(ctx, subject):
        zero = 0.0 if subject == "good" else -1.0
        return [least_slack(ctx, "main", lambda: exhaustive(lambda c: zero + 0.0 * c, {"c": [1.0, 2.0]}))]
    _register(relation=">", check=check)
    c = _report()["claims"][0]
    assert c["verdict"] == "fails" and c["summary"] == "fails by equality (tie)"
    assert c["parts"][0]["failure"] == "tie"
    assert c["controls"][0]["verdict"] == "fails"


def test_each_marks_ties_and_a_part_failing_strictly_is_not_a_tie(empty_registry):
    def check(ctx, subject):
        ev = each(["a", "b"], lambda name, pair: Evidence("exact", name, 0.9, 0.9 if name == "a" or subject == "good"
                                                           else 0.5, outcome="fail"), get=lambda n: None, strict=True)
        return ev
    _register(relation=">", check=check)
    c = _report()["claims"][0]
    assert c["parts"][0]["failure"] == "tie"
    assert verdicts.failure_kind([Evidence("exact", "a", 0.9, 0.9, outcome="fail", tie=True),
                                  Evidence("exact", "b", 0.9, 0.5, outcome="fail")]) == "strict"


def _sympy_proof():
    import sympy as sp
    a, b = sp.symbols("a b", positive=True)
    expr = sp.simplify((a + b) ** 2 - (a ** 2 + 2 * a * b + b ** 2))
    return expr == 0, f"simplify((a + b)² − (a² + 2ab + b²)) = {expr}"


def _wrong_proof():
    import sympy as sp
    a, b = sp.symbols("a b", positive=True)
    expr = sp.simplify((a + b) ** 2 - (a ** 2 + b ** 2))
    return expr == 0, f"simplify((a + b)² − (a² + b²)) = {expr}"


def identity_check(ctx, subject, implementation_ok=True):
    bad = subject == "bad" or not implementation_ok
    return [_tag(stats.exact_equal("x", 4.0, 5.0 if bad else 4.0), "square")]


def test_an_identity_part_is_proved_and_its_numerical_check_is_an_implementation_test(empty_registry):
    _register(parts=(Part("square", "(a+b)² = a² + 2ab + b²", "=", identity=True, proof=_sympy_proof,
                     proved_for="general: symbolic a, b"),),
              check=identity_check)
    rep = _report()
    c = rep["claims"][0]
    p = c["parts"][0]
    assert c["verdict"] == "holds" and c["summary"] == "holds (identity)"
    assert p["identity"] and p["implementation_test"] == "holds" and "proof" in p["modes"]
    proof = [e for e in c["evidence"] if e["mode"] == "proof"]
    assert len(proof) == 1 and proof[0]["outcome"] == "pass" and "= 0" in proof[0]["note"]
    assert c["controls"][0]["verdict"] == "fails"  # controls still cover the numerical mode
    assert "identity (proved for general: symbolic a, b)" in to_markdown(rep)
    _validate(rep)


def test_a_wrong_proof_fails(empty_registry):
    _register(parts=(Part("square", "(a+b)² = a² + b²", "=", identity=True, proof=_wrong_proof,
                     proved_for="general: symbolic a, b"),),
              check=identity_check)
    c = _report()["claims"][0]
    assert c["verdict"] == "fails" and c["parts"][0]["verdict"] == "fails"
    assert "2*a*b" in next(e for e in c["evidence"] if e["mode"] == "proof")["note"]


def test_a_failing_implementation_test_is_an_error_not_a_finding(empty_registry, capsys):
    _register(parts=(Part("square", "(a+b)² = a² + 2ab + b²", "=", identity=True, proof=_sympy_proof,
                     proved_for="general: symbolic a, b"),),
              check=lambda ctx, s: identity_check(ctx, s, implementation_ok=False))
    rep = _report()
    c = rep["claims"][0]
    assert c["verdict"] == "inconclusive" and c["parts"][0]["implementation_test"] == "fails"
    assert c["implementation_errors"] and "IMPLEMENTATION ERROR" in rep["run"]["implementation_errors"][0]
    from rich.console import Console
    print_table(rep, Console(width=200, color_system=None))
    assert "IMPLEMENTATION ERROR" in capsys.readouterr().out


def test_identity_registration_rules(empty_registry):
    with pytest.raises(registry.RegistrationError, match="needs proof"):
        _register(parts=(Part("square", "x", "=", identity=True),), check=identity_check)
    with pytest.raises(registry.RegistrationError, match="proof"):
        _register(relation="=", check=identity_check, modes=("exact", "proof"))


# --- issue 25 item 3: a verdict per evidence source -----------------------------------------------------

def _logits(outcome, n=8992, detectable=0.015, tolerance=0.02, note=""):
    return Evidence("logits", "real SD", 0.5, 0.5, n=n, detectable=detectable, tolerance=tolerance,
                    outcome=outcome, note=note, test="martingale z-test")


@pytest.mark.parametrize("logits, real, text", [
    ([_logits("pass", note="power: n needed 5000 (power 0.8) / 6244 (power 0.9, the report's grading)")],
     {"verdict": "holds", "n": 8992, "n_needed": 6244}, "real pair: holds (n 8,992 ≥ 6,244)"),
    ([_logits("underpowered", n=1536, detectable=0.0415)],
     {"verdict": "underpowered", "n": 1536, "n_needed": 6614}, "real pair: underpowered (n 1,536 of 6,614 needed)"),
    ([_logits("pass"), _logits("fail")], {"verdict": "fails"}, "real pair: fails"),
    # a one-sided improvement test (H-RAD's gain) passes on significance with fewer prompts than its
    # power statement sizes to rule out a gain of the tolerance: never rendered as "n ≥ needed"
    ([_logits("pass", n=380, detectable=0.0408)], {"verdict": "holds", "n": 380, "n_needed": 1582},
     "real pair: holds (n 380, significant before the 1,582 its power statement sizes)"),
])
def test_real_pair_verdict_beside_the_synthetic_one(empty_registry, logits, real, text):
    _register(relation="=", modes=("exact", "logits"),
              check=lambda ctx, s: [stats.exact_equal("x", 1.0, 2.0 if s == "bad" else 1.0)])
    rep = _report(extra_evidence={"toy.fair": logits}, extra_source="data/runs/x")
    c = rep["claims"][0]
    assert c["verdict"] == "holds"  # an underpowered or failing real test never changes the headline
    got = c["sources"]["real"]
    assert {k: got[k] for k in real} == real
    assert c["sources"]["synthetic"] == "holds"
    assert beside(c)[-1].startswith(text)
    assert text in to_markdown(rep)
    _validate(rep)


def test_real_pair_counts_its_logits_controls(empty_registry):
    """A claim's logits-mode negative controls are counted beside the real pair's verdict, with the
    ones not rejected named (issue 25: every logits control must be rejected)."""
    ok = Evidence("logits", "broken A (must fail)", 0.5, 0.7, outcome="info", control="rejected")
    bad = Evidence("logits", "broken B (must fail)", 0.5, 0.51, outcome="info", control="not rejected")
    _register(relation="=", modes=("exact", "logits"),
              check=lambda ctx, s: [stats.exact_equal("x", 1.0, 2.0 if s == "bad" else 1.0)])
    rep = _report(extra_evidence={"toy.fair": [_logits("pass"), ok, bad]}, extra_source="data/runs/x")
    c = rep["claims"][0]
    assert c["sources"]["real"]["controls"] == {"rejected": 1, "total": 2, "not_rejected": ["broken B (must fail)"]}
    assert "controls 1/2 rejected" in beside(c)[-1]
    assert [e.get("control") for e in c["evidence"] if e["mode"] == "logits"] == [None, "rejected", "not rejected"]
    _validate(rep)
    with pytest.raises(ValueError, match="control must be"):
        Evidence("logits", "x", 0, 0, control="maybe")


def test_real_pair_verdict_needs_graded_logits_evidence():
    assert verdicts.real_pair_verdict([Evidence("logits", "i", 0, 0, outcome="info")]) is None
    assert verdicts.real_pair_verdict([]) is None


# --- item 6: the README table counts the other readings that differ -----------------------------------

def test_readme_rows_carry_readings_and_the_table_counts_those_that_differ(empty_registry):
    from spectheory.sims.readme_outputs import differ_cell, summary_rows, verify_table
    _register(parts=(Part("printed", "a", "≤"), Part("integer", "b", "≤")), readings=TWO, check=two_readings_check)
    rows = summary_rows(_report())
    row = rows["claims"][0]
    assert row["summary"] == "holds" and row["differ"] == 1 and differ_cell(row) == "1 of 1 differ"
    assert [r["verdict"] for r in row["readings"]] == ["holds", "fails"]
    table = verify_table(rows)
    assert "integer: fails" in table and "other readings" not in table  # beside the headline, as verify prints


def test_the_readme_table_is_the_table_verify_prints(empty_registry):
    """The README's quoted table, rendered from the stored rows, is line for line what `spectheory
    verify` prints (same columns, title and caption), the legend below it aside."""
    import io

    from rich.console import Console

    from spectheory.sims.readme_outputs import WIDTH, summary_rows, verify_table
    from spectheory.sims.report import print_table
    _register(parts=(Part("printed", "a", "≤"), Part("integer", "b", "≤")), readings=TWO, check=two_readings_check)
    report = _report()
    console = Console(width=WIDTH, record=True, color_system=None, file=io.StringIO())
    print_table(report, console)
    printed = [line.rstrip() for line in console.export_text().splitlines()]
    quoted = verify_table(summary_rows(report)).splitlines()
    assert printed[:len(quoted)] == quoted
    assert printed[len(quoted)].startswith("relation: ")  # then the legend


def test_list_shows_readings_scope_and_choices(empty_registry):
    from typer.testing import CliRunner
    from spectheory.cli.main import app
    _register(parts=(Part("printed", "a", "≤"), Part("integer", "b", "≤")), readings=TWO, check=two_readings_check,
              scope=SCOPE, choices=(Choice("k_max", 4, (2, 4, 8), "open", invented=True),))
    out = CliRunner().invoke(app, ["list", "--claims", "toy.*"]).output
    assert "reading as-printed (principal; parts printed)" in out and "reading integer (integer; parts integer)" in out
    assert "scope: V ≥ 3" in out and "choice k_max (invented): default 4, values 2, 4, 8" in out


def test_smallest_counterexample_honours_a_scope():
    from spectheory.sims.shrink import smallest_counterexample

    def fails(pair, gamma, K):
        return (pair.V * gamma == 2 or pair.V == 4, 0.0, 1.0)
    found = []
    cex = smallest_counterexample(fails, V_values=(2, 3, 4), orders=(0,), gammas=(1,), seeds=(0,), scope=SCOPE,
                                  found_outside=found)
    assert cex["V"] == 4 and [f["V"] for f in found] == [2] and "V = 2" in found[0]["reason"]
    assert smallest_counterexample(fails, V_values=(2, 3, 4), orders=(0,), gammas=(1,), seeds=(0,))["V"] == 2


def test_what_was_found_names_the_real_pair_apart_from_monte_carlo():
    """A part graded by Monte Carlo and by the real pair states each source's smallest p under its
    own name (a real-logits p once read as "Monte Carlo")."""
    from spectheory.sims.report import part_finding
    ev = [{"mode": "mc", "outcome": "pass", "p_value": 0.4, "claimed": 1, "measured": 1, "instance": "a", "part": "x"},
          {"mode": "logits", "outcome": "pass", "p_value": 3e-39, "claimed": 1, "measured": 1, "instance": "b",
           "part": "x"}]
    claim = {"evidence": ev, "parts": [{"id": "x", "verdict": "holds", "relation": ">"}]}
    text = part_finding(claim, claim["parts"][0])
    assert "Monte Carlo: smallest p 0.4 over 1 test" in text and "real pair: smallest p 3.00e-39 over 1 test" in text
