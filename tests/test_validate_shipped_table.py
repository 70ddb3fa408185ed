"""The shipped table of theory against measurement (docs/outputs/validate-table.json, written by the
command in docs/validate.md) regenerates from the shipped runs: every row's command is the one
``spectheory validate table`` prints for it, and running it gives the row again (predicted,
measured, interval, n, n needed, verdict). The small runs (greedy, prompt lookup: seconds) are
replayed in the fast tier; the decisive and the warped-sampling runs (minutes of replays) in the
slow tier."""
from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "docs" / "outputs" / "validate-table.json"
#: runs whose replays take seconds: regenerated in the fast tier
FAST_RUNS = ("data/runs/qwen2.5-coder-greedy", "data/runs/qwen2.5-coder-lookup")
#: rows still undecided ({(run, claim, role): verdict}; docs/validate.md, "What the settings
#: teach"): none. Exactly these, so that a new undecided row is seen here.
PENDING: dict = {}

pytest.importorskip("torch")  # the replays read the runs through spectheory.validate


def _shipped() -> dict:
    return json.loads(SHIPPED.read_text())


def _rows_by_run():
    by: dict[str, list[dict]] = {}
    for r in _shipped()["rows"]:
        by.setdefault(r["run"], []).append(r)
    return by


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


def _check_run(run: str):
    from spectheory.validate.table import command, table_rows
    shipped = _rows_by_run()[run]
    fresh = [r.to_json() for r in table_rows([ROOT / run], _shipped()["alpha"])]
    key = lambda r: (r["claim"], r["test"], r["role"])  # noqa: E731
    got = {key(r): r for r in fresh}
    assert sorted(got) == sorted(key(r) for r in shipped), "the run's rows changed: regenerate the shipped table"
    for r in shipped:
        f = got[key(r)]
        for field in ("predicted", "measured", "ci_low", "ci_high", "n", "n_needed", "verdict"):
            assert _same(r[field], f[field]), (run, r["claim"], r["test"], field, r[field], f[field])
        assert r["command"] == command(run, r["claim"])


def test_the_shipped_table_covers_four_settings_and_prints_each_rows_command():
    rows = _shipped()["rows"]
    assert len({r["setting"] for r in rows}) >= 4
    for r in rows:
        words = shlex.split(r["command"])
        assert words[:3] == ["spectheory", "validate", "table"] and words[3] == r["run"]
        assert words[4:] == ["--claims", r["claim"]]
        assert (ROOT / r["run"] / "run.json").is_file(), r["run"]
    undecided = {(r["run"], r["claim"], r["role"]): r["verdict"] for r in rows
                 if (r["role"] == "test" and r["verdict"] not in ("pass", "fail"))
                 or (r["role"] == "control" and r["verdict"] != "control rejected")}
    assert undecided == PENDING
    assert any(r["role"] == "test" for r in rows) and any(r["role"] == "control" for r in rows)


@pytest.mark.parametrize("run", FAST_RUNS)
def test_a_small_runs_rows_regenerate(run):
    _check_run(run)


@pytest.mark.slow
@pytest.mark.parametrize("run", sorted(set(_rows_by_run()) - set(FAST_RUNS)) if SHIPPED.exists() else [])
def test_a_large_runs_rows_regenerate(run):
    _check_run(run)
