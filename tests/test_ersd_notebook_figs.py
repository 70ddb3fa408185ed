"""Smoke tests for Kobus & Gündüz: the derivation notebook runs (its sympy asserts hold) and the Fig. 3
analogue renders a non-trivial PNG; the figure's theory and simulation agree on the optimal tree."""
from __future__ import annotations

from _figures import render_quick, run_notebook


def test_ersd_derivations_notebook_runs(capsys):
    run_notebook("ersd_derivations.py", capsys)


def test_fig_ersd_expected_tokens_quick(tmp_path):
    proc = render_quick("fig_ersd_expected_tokens.py", tmp_path / "fig.png", min_shape=(300, 800))
    # printed summary: theory and simulation of the optimal tree within 3% of each other
    lines = [ln for ln in proc.stdout.splitlines() if "optimal tree" in ln]
    assert lines
    for line in lines:
        th = float(line.split("theory ")[1].split(",")[0])
        sim = float(line.split("simulation ")[1].split(",")[0])
        bound = float(line.split("bound ")[1])
        assert abs(th - sim) / th < 0.03 and th <= bound
