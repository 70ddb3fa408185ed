"""Verdicts that do not hinge on the analyst's dice (issue 34), on throw-away claims registered here
only: every branch of the sweep over open choices, the headline over them, a hold's least slack over
them, the verdict classes (identity, reconstructed model), ``exists`` parts that rest on undecided
comparisons, and the report's words for each. The shipped registry reaches few of these branches;
each toy claim below reaches one on purpose.

Toy checks are tables: ``outcomes(subject, value) -> [(part, mode, outcome[, slack])]`` with the
value of the toy's one choice ``c`` in force (the subject is "good", the control "bad")."""
import json
from pathlib import Path

import jsonschema
import pytest

from spectheory.sims import registry
from spectheory.sims.registry import Choice, Control, Part, Reading, Scope
from spectheory.sims.report import (beside, choices_lines, finding, part_verdict_text, slack_over_choices_text,
                         to_markdown, verdict_counts)
from spectheory.sims.reproduce import check_call, mismatches, printed_calls
from spectheory.sims.runner import run_claims
from spectheory.judge import verdicts
from spectheory.judge.evidence import Evidence

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "sims" / "schemas" / "report-3.json"
ANY = Scope("any instance (no case of the non-degeneracy rule occurs)", degenerate=())


@pytest.fixture
def empty_registry(monkeypatch):
    monkeypatch.setattr(registry, "REGISTRY", {})


def table_check(outcomes, always_mc: bool = False):
    """A check that returns the table's evidence for (subject, value of choice ``c``); its Monte Carlo
    rows are skipped where the run is not graded in mc (a choice re-run of a part with exact
    evidence), unless ``always_mc``."""
    def check(ctx, subject):
        value = ctx.choice("c") if ctx.claim_choices else None
        out = []
        for part, mode, outcome, *rest in outcomes(subject, value):
            if mode == "mc" and not (always_mc or ctx.wants("mc")):
                continue
            e = Evidence(mode, f"{part} at c={value}", 1.0, 1.0 if outcome == "pass" else 2.0, outcome=outcome,
                         part=part, slack=rest[0] if rest else None, n=100 if mode == "mc" else None)
            out.append(ctx.mc(e) if mode == "mc" else e)
        return out
    return check


def toy(outcomes, *, parts=None, values=(1, 2, 3), default=2, always_mc=False, **kw):
    """Register a toy claim with one choice ``c`` (default 2) and a control that fails every part."""
    base = dict(id="toy.dice", paper="leviathan2023", reference="§1", statement="A toy claim.", modes=("exact",),
                subject="good", check=table_check(outcomes, always_mc), scope=ANY,
                controls=(Control("bad", "bad", "negative control: broken"),),
                choices=(Choice("c", default, values, "a choice the paper leaves open"),))
    if parts is None:
        base["relation"] = "≥"
    else:
        base["parts"] = parts
    base.update(kw)
    return registry.register(**base)


def run(**kw):
    rep = run_claims("toy.*", progress=False, **kw)
    jsonschema.validate(json.loads(json.dumps(rep)), json.loads(SCHEMA_FILE.read_text()))
    return rep, rep["claims"][0]


def bad_fails(rows):
    """The control's rows: every part fails in every mode the rows use."""
    return [(p, m, "fail") for p, m, *_ in rows]


# --- the judge's rule over choices ------------------------------------------------------------------------

@pytest.mark.parametrize("default, swept, verdict, depends, undecided", [
    ("holds", {"c": {"1": "holds", "3": "holds"}}, "holds", [], []),
    ("holds", {"c": {"1": "holds", "3": "fails"}}, "depends", ["c"], []),          # a hold that fails in range
    ("fails", {"c": {"1": "holds"}}, "depends", ["c"], []),                        # a fail that holds in range
    ("fails", {"c": {"1": "fails", "3": "fails"}}, "fails", [], []),
    ("holds", {"c": {"1": "inconclusive"}}, "inconclusive", [], ["c"]),            # a value that decides nothing
    ("fails", {"c": {"1": "inconclusive"}}, "inconclusive", [], ["c"]),
    ("inconclusive", {"c": {"1": "holds"}}, "inconclusive", [], ["c"]),
    ("holds", {"c": {"1": "not-checkable"}}, "inconclusive", [], ["c"]),
    ("inconclusive", {"c": {"1": "holds", "3": "fails"}}, "depends", ["c"], []),   # two decided values split it
    ("holds", {"a": {"1": "fails"}, "b": {"1": "inconclusive"}}, "depends", ["a"], ["b"]),
    ("holds", {}, "holds", [], []),
])
def test_over_choices(default, swept, verdict, depends, undecided):
    got = verdicts.over_choices(default, swept)
    assert got == {"verdict": verdict, "depends_on": depends, "undecided_on": undecided}


def test_reading_class_and_exists_combination():
    pv = {"a": "holds", "b": "holds", "c": "fails"}
    cls = {"a": "identity", "b": "reconstructed", "c": "evidence"}
    assert verdicts.reading_class(pv, cls, ("a",)) == "identity"
    assert verdicts.reading_class(pv, cls, ("a", "b")) == "reconstructed"
    assert verdicts.reading_class(pv, {**cls, "b": "evidence"}, ("a", "b")) == "evidence"
    assert verdicts.reading_class(pv, cls, ("a", "c")) == "evidence"   # the reading fails on evidence
    p = lambda o: Evidence("exact", "i", 1, 1, outcome=o)  # noqa: E731
    assert verdicts.combine_exists([p("fail"), p("pass")]) == "holds"
    assert verdicts.combine_exists([p("fail"), p("underpowered")]) == "inconclusive"
    assert verdicts.combine_exists([p("fail"), p("fail"), p("info")]) == "fails"
    assert verdicts.combine_exists([p("info")]) == "inconclusive"
    assert verdicts.combine_part([p("fail"), p("pass")], "≥") == "fails"


# --- the sweep, whatever the verdict at the defaults --------------------------------------------------------

def test_a_hold_that_fails_at_one_end_depends(empty_registry):
    calls = []

    def rows(subject, c):
        calls.append((subject, c))
        r = [("main", "exact", "fail" if c == 3 else "pass")]
        return bad_fails(r) if subject == "bad" else r
    toy(rows)
    rep, c = run()
    assert c["verdict"] == "depends" and c["depends_on"] == ["c"] and c["robust"] is False
    assert c["summary"] == "depends on c: holds at 1, holds at 2 (default), fails at 3"
    assert c["readings"][0]["verdict"] == "holds"  # the principal reading at the defaults
    assert c["least_slack_over_choices"] == {}     # a hold's least slack is given only when it holds
    assert sorted(calls) == [("bad", 2), ("good", 1), ("good", 2), ("good", 3)]  # controls at the default only
    assert "1 depend on a choice" in verdict_counts(rep)


def test_a_fail_that_holds_at_one_end_depends(empty_registry):
    toy(lambda s, c: [("main", "exact", "fail" if s == "bad" or c != 1 else "pass")])
    _, c = run()
    assert c["verdict"] == "depends" and "holds at 1" in c["summary"] and "fails at 2 (default)" in c["summary"]


def test_a_value_that_decides_nothing_leaves_the_headline_inconclusive(empty_registry):
    toy(lambda s, c: [("main", "exact", "fail" if s == "bad" else "underpowered" if c == 1 else "pass")])
    rep, c = run()
    assert c["verdict"] == "inconclusive" and c["undecided_on"] == ["c"] and c["depends_on"] == []
    assert c["summary"] == "inconclusive over c: inconclusive at 1, holds at 2 (default), holds at 3"
    assert c["robust"] is False
    assert "The headline does not persist across the choices: inconclusive over c" in "\n".join(choices_lines(c))
    assert "1 inconclusive" in verdict_counts(rep)


def test_a_failure_at_every_value_is_robust_and_so_is_a_hold(empty_registry):
    toy(lambda s, c: [("main", "exact", "fail")])
    _, c = run()
    assert c["verdict"] == "fails" and c["robust"] is True
    assert c["choices"][0]["verdicts"] == {"1": "fails", "2": "fails", "3": "fails"}
    assert "The headline persists: fails at every value" in "\n".join(choices_lines(c))


def test_a_part_its_control_did_not_catch_stays_withheld_at_every_value(empty_registry):
    """The controls run at the defaults only: a part whose control did not fail there is inconclusive
    at every value where it does not fail — also when it fails at the defaults and holds elsewhere."""
    def rows(s, c):
        if s == "bad":
            return [("caught", "exact", "fail"), ("missed", "exact", "pass")]
        return [("caught", "exact", "pass"), ("missed", "exact", "fail" if c == 2 else "pass")]
    toy(rows, parts=(Part("caught", "a", "≥"), Part("missed", "b", "≥")))
    _, c = run()
    pv = {p["id"]: p["verdict"] for p in c["parts"]}
    assert pv == {"caught": "holds", "missed": "fails"}       # a fail stands even so
    assert c["choices"][0]["parts"]["1"]["missed"] == "inconclusive"   # not "holds": its control missed
    assert c["choices"][0]["verdicts"] == {"1": "inconclusive", "2": "fails", "3": "inconclusive"}
    assert c["verdict"] == "inconclusive" and c["undecided_on"] == ["c"]


def test_an_identity_whose_implementation_test_fails_at_a_value_is_withheld_there(empty_registry):
    def rows(s, c):
        return [("id", "exact", "fail" if s == "bad" or c == 3 else "pass")]
    toy(rows, parts=(Part("id", "x = x", "=", identity=True, proof=lambda: (True, "x − x = 0"),
                          proved_for="general"),))
    _, c = run()
    assert c["parts"][0]["verdict"] == "holds" and c["summary"] == "inconclusive over c: holds at 1, holds at 2 " \
                                                                   "(default), inconclusive at 3"
    assert c["choices"][0]["parts"]["3"]["id"] == "inconclusive"


def test_an_alternative_reading_failing_beside_a_hold_never_moves_the_headline(empty_registry):
    def rows(s, c):
        return [("printed", "exact", "fail" if s == "bad" else "pass"), ("integer", "exact", "fail")]
    toy(rows, parts=(Part("printed", "a", "≤"), Part("integer", "b", "≤")),
        readings=(Reading("paper", "as printed", ("printed",), role="principal", quote="§1: 'x'", why="it says so"),
                  Reading("integer", "over integers", ("integer",), kind="integer", why="rounding")),
        controls=(Control("bad", "bad", "broken", parts=("printed",)),
                  Control("bad2", "bad", "broken", parts=("integer",))))
    _, c = run()
    assert c["verdict"] == "holds" and c["robust"] is True
    assert beside(c) == ["integer: fails"]
    assert all(v == "holds" for v in c["choices"][0]["verdicts"].values())
    assert all(p["integer"] == "fails" for p in c["choices"][0]["parts"].values())  # reported at every value


def test_a_rerun_is_graded_on_exact_evidence_where_a_part_has_it(empty_registry):
    """A re-run of a part with exact evidence grades only that (its Monte Carlo is not graded, not
    counted); a part with Monte Carlo evidence alone is graded on it at every value."""
    def rows(s, c):
        if s == "bad":
            return [("both", "exact", "fail"), ("both", "mc", "fail"), ("mconly", "mc", "fail")]
        return [("both", "exact", "pass"), ("both", "mc", "fail" if c != 2 else "pass"),
                ("mconly", "mc", "fail" if c == 1 else "pass")]
    cl = toy(rows, parts=(Part("both", "a", "≥"), Part("mconly", "b", "≥", modes=("mc",))), modes=("exact", "mc"),
             mc_tests=2, always_mc=True)
    assert cl.rerun_required == {"both": ("exact",), "mconly": ("mc",)}
    assert cl.n_mc_tests == 2 * (1 + 1) + 2 * 2   # the re-runs' mc tests count: one part needs them
    _, c = run()
    per = c["choices"][0]["parts"]
    assert per["3"] == {"both": "holds", "mconly": "holds"}    # the failing mc row of 'both' is not graded
    assert per["1"] == {"both": "holds", "mconly": "fails"}
    assert c["verdict"] == "depends"


def test_exists_parts_rest_on_decided_comparisons(empty_registry):
    def rows(s, c):
        if s == "bad":
            return [("some", "exact", "fail"), ("some", "mc", "fail")]
        return [("some", "exact", "fail"), ("some", "mc", {1: "pass", 2: "underpowered", 3: "fail"}[c])]
    cl = toy(rows, parts=(Part("some", "some setting works", "exists"),), modes=("exact", "mc"), mc_tests=1)
    assert cl.rerun_required == {"some": ("exact", "mc")}  # alternatives on other instances: exact cannot decide
    _, c = run()
    assert c["choices"][0]["verdicts"] == {"1": "holds", "2": "inconclusive", "3": "fails"}
    assert c["verdict"] == "depends" and c["undecided_on"] == []
    assert c["controls"][0]["verdict"] == "fails"


# --- a hold's least slack over the choices ----------------------------------------------------------------

def test_a_holds_least_slack_over_the_choices_names_where_and_recomputes(empty_registry):
    slack = {1: 0.3, 2: 0.25, 3: 0.01234567}
    toy(lambda s, c: [("main", "exact", "fail", -1.0)] if s == "bad" else [("main", "exact", "pass", slack[c])])
    rep, c = run()
    rec = c["least_slack_over_choices"]["main"]
    assert rec["value"] == pytest.approx(0.01234567) and rec["choice"] == "c" and rec["choice_value"] == 3
    assert rec["source"] == "exact" and rec["instance"] == "main at c=3"
    assert "least slack over the choices: 0.01235 at c = 3 (main at c=3)" in finding(c)
    assert slack_over_choices_text(c) in to_markdown(rep)
    item = next(i for i in printed_calls(rep) if "over the choices" in i["where"])
    assert check_call(item) is None and not mismatches(rep)   # the printed number is what its call gives
    wrong = {**item, "printed": {"value": 0.01236}}             # off in the 4th significant digit: caught
    assert check_call(wrong) is not None


def test_least_slack_over_choices_prefers_a_search_record(empty_registry):
    def check(ctx, subject):
        v = ctx.choice("c")
        ctx.least_slack("main", {"value": {1: 0.5, 2: 0.02, 3: 0.4}[v] if subject == "good" else -1.0,
                                 "instance": {"searched at": v}, "call": "0", "search": "grid"})
        return [Evidence("exact", "row", 0, 1, outcome="pass" if subject == "good" else "fail", slack=0.9)]
    toy(None, check=check)
    _, c = run()
    rec = c["least_slack_over_choices"]["main"]
    assert rec["value"] == 0.02 and rec["choice"] is None and rec["source"] == "search"
    assert "at the defaults (searched at=2)" in slack_over_choices_text(c)


# --- verdict classes ------------------------------------------------------------------------------------------

def _ok(s, c, parts):
    return [(p, "exact", "fail" if s == "bad" else "pass") for p in parts]


def test_a_property_of_the_reconstructed_model_is_its_own_class(empty_registry):
    toy(lambda s, c: _ok(s, c, ("formula", "shape")),
        parts=(Part("formula", "T = ...", "=", reconstructed="the formula is lost; derived here"),
               Part("shape", "its minimum is at γ ≤ c", "≤", reconstructed="the same derivation")))
    rep, c = run()
    assert c["verdict"] == "holds" and c["class"] == "reconstructed"
    assert c["summary"] == "holds in the reconstructed model (2 of 2 parts)"
    assert part_verdict_text(c["parts"][0]) == "holds in the reconstructed model"
    assert c["parts"][0]["reconstructed"] == "the formula is lost; derived here"
    assert verdict_counts(rep) == "1 claim: 1 hold in the reconstructed model; negative controls rejected: 1 of 1"


def test_evidence_beside_identities_and_reconstructions_is_counted_as_evidence(empty_registry):
    toy(lambda s, c: _ok(s, c, ("ev", "id", "rec")),
        parts=(Part("ev", "a", "≥"), Part("id", "b", "=", identity=True, proof=lambda: (True, "0"), proved_for="B = 3"),
               Part("rec", "c", "=", reconstructed="ours")))
    rep, c = run()
    assert c["class"] == "evidence"
    assert c["summary"] == "holds (3 of 3 parts; 1 identity, 1 in the reconstructed model)"
    assert part_verdict_text(next(p for p in c["parts"] if p["id"] == "id")) == ("holds: identity (proved for B = 3); "
                                                                                    "implementation test holds")
    assert verdict_counts(rep).startswith("1 claim: 1 hold;")


def test_identities_alone_are_counted_apart(empty_registry):
    toy(lambda s, c: _ok(s, c, ("id",)),
        parts=(Part("id", "b", "=", identity=True, proof=lambda: (True, "0"), proved_for="general"),))
    rep, c = run()
    assert c["class"] == "identity" and c["summary"] == "holds (identity)"
    assert "1 hold as identities" in verdict_counts(rep)


def test_class_registration_rules(empty_registry):
    with pytest.raises(registry.RegistrationError, match="proof covers"):
        toy(lambda s, c: [], parts=(Part("id", "b", "=", identity=True, proof=lambda: (True, "")),))
    with pytest.raises(registry.RegistrationError, match="non-degeneracy"):
        toy(lambda s, c: [], parts=(Part("s", "b", ">"),), scope=None)
    with pytest.raises(registry.RegistrationError, match="unknown degeneracy"):
        toy(lambda s, c: [], parts=(Part("s", "b", ">"),), scope=Scope("x", degenerate=("p = 0",)))
    toy(lambda s, c: [], parts=(Part("s", "b", ">"),), scope=Scope("x", degenerate=()))   # () is a declaration


def test_a_failing_instance_of_an_undecided_part_is_not_a_counterexample(empty_registry):
    """A shrinker may find a failing instance of a part whose verdict is not 'fails' (an exists part
    undecided elsewhere): it is a note on the part, never a counterexample of the claim."""
    def rows(s, c):
        return [("some", "exact", "fail"), ("some", "mc", "fail" if s == "bad" else "underpowered")]
    toy(rows, parts=(Part("some", "some setting works", "exists"),), modes=("exact", "mc"), mc_tests=1,
        shrink=lambda ctx, s: {"part": "some", "V": 3, "claimed": 1.0, "measured": 0.0, "call": "(1.0, 0.0)"})
    _, c = run()
    part = c["parts"][0]
    assert part["verdict"] == "inconclusive" and part["counterexample"] is None and c["counterexample"] is None
    assert any("not a counterexample" in n and "V=3" in n for n in part["notes"])
