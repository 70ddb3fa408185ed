"""Quiet by default: the first progress line comes before anything heavy is imported or selected
(a piped `spectheory verify` says what it does within seconds), and the library warnings that used
to land between the progress lines are gone at their source."""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]


def test_the_command_line_loads_nothing_heavy_before_its_first_line():
    code = ("import sys, spectheory.cli.main\n"
            "print(sorted(m for m in ('numba', 'scipy', 'spectheory.sims.registry', 'spectheory.sims.claims', 'matplotlib', 'torch',"
            " 'validate') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]", res.stdout


def test_verify_says_what_it_does_before_selecting_anything(monkeypatch, tmp_path):
    """The first line is printed before the registry (numba, every claim module) is loaded: here
    the selection fails at once, and the line is there already."""
    from spectheory.cli import api
    from spectheory.cli.main import app

    def boom(*a, **k):
        raise RuntimeError("selection reached")
    monkeypatch.setattr(api, "select_run", boom)
    res = CliRunner().invoke(app, ["verify", "--quick", "--claims", "sd.*", "--alpha", "0.05", "--json",
                                   str(tmp_path / "r.json")])
    assert isinstance(res.exception, RuntimeError)
    assert res.output.splitlines()[0] == "spectheory verify: selecting 'sd.*' (quick tier, seed 0, α = 0.05)"


def test_the_run_announces_its_checks_before_the_first_family_ends():
    lines = []
    from spectheory.cli.api import verify
    verify("sd.acceptance", quick=True, log=lines.append)
    assert lines[0] == ("checking 1 claim and 1 negative control (2 checks; family sd) on 1 worker: a line as each "
                        "family finishes")
    assert lines[1].startswith("sd family done: 1 claim, 2 checks in ")


def test_a_least_slack_search_with_out_of_scope_points_warns_nothing():
    """Out-of-scope pairs score +inf; once Nelder–Mead's simplex has shrunk inside such a region its
    convergence test subtracts them (inf − inf): numpy's 'invalid value' RuntimeWarning used to print
    between the progress lines. Here every pair the search meets is out of scope."""
    import pytest

    from spectheory.sims.slack import PairSpace, search_pairs

    def slack(pair):
        return float(pair.target.rows[0, 0]) - 0.2

    def guard(pair):
        return "outside" if pair.target.rows[0, 0] > 0.01 else None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="warn"):
            with pytest.raises(RuntimeError, match="no slack evaluation finished"):
                search_pairs(slack, PairSpace(V=2), budget=2000, restarts=1, seed=0, scope=guard)
