"""Smoke tests: the SE derivation notebook runs (its sympy asserts hold) and one SE figure
script renders a non-trivial PNG with --quick."""
from __future__ import annotations

import json

from _figures import render_quick, run_notebook


def test_se_derivations_notebook_runs(capsys):
    ns = run_notebook("se_derivations.py", capsys)
    assert "THM36" in ns and "PROCESS" in ns


def test_fig_se_speedup_lambda_quick(tmp_path):
    table = tmp_path / "grid.jsonl"
    proc = render_quick("fig_se_speedup_lambda.py", tmp_path / "fig.png", timeout=180, extra=("--table", str(table)))
    assert "MC 95% CIs covering" in proc.stdout
    # the grid ran as a sweep: one se.mc row per (λ, proposer)
    rows = [json.loads(line) for line in table.read_text().splitlines()]
    assert len(rows) == 10 and {r["kind"] for r in rows} == {"se.mc"}
