"""Smoke tests: the SE derivation notebook runs (its sympy asserts hold) and one SE figure
script renders a non-trivial PNG with --quick."""
from __future__ import annotations

from _figures import render_quick, run_notebook


def test_se_derivations_notebook_runs(capsys):
    ns = run_notebook("se_derivations.py", capsys)
    assert "THM36" in ns and "PROCESS" in ns


def test_fig_se_speedup_lambda_quick(tmp_path):
    proc = render_quick("fig_se_speedup_lambda.py", tmp_path / "fig.png", timeout=180)
    assert "MC 95% CIs covering" in proc.stdout
