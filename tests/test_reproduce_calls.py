"""Every printed number is recomputed by the call printed beside it (issue 24, item 5): every
counterexample call and every least-slack call of the quick report (fast tier) and of the default
report (slow tier) is run with ``spectheory.sims.shrink.recompute`` and compared with the printed numbers at the
printed precision (:mod:`spectheory.sims.reproduce`). A failure lists each call by claim with both numbers. The
claims' own calls are checked here (counterexamples, least slack, scope findings); the negative
controls' calls, printed in the evidence file, are listed by ``python -m spectheory.sims.reproduce REPORT``."""
import pytest

from spectheory.sims.reproduce import check_call, mismatches, printed_calls
from spectheory.sims.runner import run_claims


def _call(value):
    return f"import math; math.fsum([{value!r}])"


def test_a_call_that_does_not_reproduce_its_number_is_caught():
    report = {"claims": [{"id": "toy.a", "parts": [
        {"id": "main", "counterexample": {"claimed": 0.9076, "measured": 1.0,
                                          "call": "import math; (math.fsum([0.9009]), 1.0)"},
         "least_slack": {"value": 0.25, "call": _call(0.25)}}], "controls": [], "counterexample": None}]}
    calls = printed_calls(report)
    assert [c["kind"] for c in calls] == ["counterexample", "least slack"]
    bad = mismatches(report)
    assert len(bad) == 1 and bad[0]["claim"] == "toy.a" and bad[0]["got"]["claimed"] == 0.9009
    # at the printed precision: a difference below the sixth significant digit is not a mismatch
    assert check_call({"kind": "counterexample", "call": "(0.123456700001, 2.0)",
                       "printed": {"claimed": 0.1234567, "measured": 2.0}}) is None
    assert check_call({"kind": "least slack", "call": "1/0", "printed": {"value": 1.0}})["got"].startswith("raised")
    # "Recompute both numbers": a call giving the measured value alone does not reproduce, even for
    # a slack encoding (claimed 0); both numbers, right, do
    assert check_call({"kind": "counterexample", "call": "-0.0054", "printed": {"claimed": 0.0, "measured": -0.0054}})
    assert check_call({"kind": "counterexample", "call": "(0.0, -0.0054)",
                       "printed": {"claimed": 0.0, "measured": -0.0054}}) is None
    assert check_call({"kind": "counterexample", "call": "(0.0, -0.0055)",
                       "printed": {"claimed": 0.0, "measured": -0.0054}})
    assert check_call({"kind": "counterexample", "call": "1.0", "printed": {"claimed": 0.5, "measured": 1.0}})


def _assert_reproduce(report):
    bad = mismatches(report, controls=False)
    assert not bad, "calls that do not reproduce their printed numbers:\n" + "\n".join(
        f"{m['claim']} ({m['where']}, {m['kind']}): printed {m['printed']}, got {m['got']}: {m['call']}" for m in bad)


def test_every_call_of_the_quick_report_reproduces_its_numbers():
    report = run_claims("*", quick=True, seed=0, jobs=0, progress=False)
    assert printed_calls(report)  # the report prints calls (a vacuous pass would hide a broken collector)
    _assert_reproduce(report)


@pytest.mark.slow
def test_every_call_of_the_default_report_reproduces_its_numbers():
    _assert_reproduce(run_claims("*", quick=False, seed=0, jobs=0, progress=False))
