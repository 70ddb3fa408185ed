"""spectheory.testing (issue 26 item 6): the pytest helpers and the example a user copies.

The example file docs/examples/test_my_sampler.py is executed here (each of its tests called),
so the documented usage cannot drift. The helpers are deterministic (same seed, same report) and
their failure message carries the kind of failure and rerunnable calls that reproduce it."""
import importlib.util
import json
import warnings
from pathlib import Path

import pytest

from spectheory.testing import ConformanceBudgetWarning, assert_lossless, assert_standard

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "test_my_sampler.py"


def _example():
    spec = importlib.util.spec_from_file_location("test_my_sampler_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["test_my_sampler_is_lossless", "test_my_sampler_is_standard_speculative_sampling",
                                  "test_a_boundary_bug_fails_with_its_kind_and_a_rerunnable_call"])
def test_the_example_test_file_runs(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # its rerunnable calls name the file relative to the working directory
    getattr(_example(), name)()


def test_assert_lossless_fails_a_lossy_sampler_with_the_law_kind_and_calls_that_rerun(monkeypatch):
    """Negative control: bonus from the wrong row (lossy in law) must raise; every call printed in
    the message must recompute what the report says."""
    import spectheory.conformance
    monkeypatch.chdir(ROOT)
    scope = dict(instances=("markov1-V3-mix0.4",), gammas=(2,), controls=False, probes=False)
    with pytest.raises(AssertionError) as err:
        assert_lossless("tests/conformance_fixtures/bonus_wrong_row.py:verify", **scope)
    msg = str(err.value)
    assert "LOSSLESS: fails [law]" in msg and "empirical TV" in msg, msg
    calls = [ln.strip() for ln in msg.splitlines() if ln.strip().startswith("spectheory.conformance.")]
    assert calls, msg
    for call in calls:
        ev = eval(call, {"spectheory": spectheory})  # noqa: S307  (the call the message prints)
        assert ev["outcome"] == "fail", (call, ev)


def test_assert_standard_fails_a_lossless_nonstandard_sampler_and_is_deterministic():
    from spectheory.conformance import accept_p_verifier
    scope = dict(instances=("iid-V3-equal",), gammas=(1,), n=8000, controls=False)
    rep = assert_lossless(accept_p_verifier, **scope)  # lossless: passes
    with pytest.raises(AssertionError, match="matches standard speculative sampling"):
        assert_standard(accept_p_verifier, **scope)
    again = assert_lossless(accept_p_verifier, **scope)
    strip = ("duration_s", "cpu_s", "started_at", "sampler_s", "checker_s", "load_average_1m", "trial", "blocks")
    same = [{k: v for k, v in r["run"].items() if k not in strip} for r in (rep, again)]
    blocks = [[{k: v for k, v in b.items() if k != "sampler_s"} for b in r["run"]["blocks"]] for r in (rep, again)]
    assert blocks[0] == blocks[1]
    assert json.dumps(same[0], sort_keys=True, default=str) == json.dumps(same[1], sort_keys=True, default=str)
    assert json.dumps(rep["claims"], default=str) == json.dumps(again["claims"], default=str)


def test_a_budget_warns_and_never_changes_the_verdict():
    from spectheory.conformance import reference_verifier
    scope = dict(instances=("iid-V1",), gammas=(1,), n=200, controls=False, probes=False)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        rep = assert_lossless(reference_verifier, budget_s=1e-9, **scope)
    assert any(issubclass(w.category, ConformanceBudgetWarning) and "over its budget" in str(w.message) for w in got)
    assert rep["verdicts"]["lossless"]["verdict"] == "holds"


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        assert_lossless(lambda p, q, d, rng: [0], kind="tree")
    with pytest.raises(TypeError, match="fn must be the sampler"):
        assert_lossless(42)
