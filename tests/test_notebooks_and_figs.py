"""Smoke tests: the derivation notebook runs (its sympy asserts hold) and the paper figure
script renders a non-trivial PNG. Fast tier: a few seconds in all."""
from __future__ import annotations

from _figures import render_quick, run_notebook


def test_sd_derivations_notebook_runs(capsys):
    ns = run_notebook("sd_derivations.py", capsys)
    # the notebook's symbolic closed form is the library's sd.expected_tokens formula
    from spectheory.closed_forms import sd as cf
    for a, g in ((0.3, 1), (0.75, 4), (0.9, 7)):
        value = float(ns["CLOSED"].subs({ns["alpha"]: a, ns["gamma"]: g}))
        assert abs(value - cf.expected_tokens(a, g)) < 1e-12, (a, g)


def test_fig_sd_expected_tokens_quick(tmp_path):
    render_quick("fig_sd_expected_tokens.py", tmp_path / "fig.png", timeout=120)
