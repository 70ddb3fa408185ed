"""Smoke test: the ECSV derivation notebook runs (its sympy asserts hold)."""
from __future__ import annotations

from _figures import run_notebook


def test_ecsv_derivations_notebook_runs(capsys):
    ns = run_notebook("ecsv_derivations.py", capsys)
    # the notebook's symbolic gain of a 3-branch binary majority is the library's number
    from spectheory.closed_forms import ecsv as cf
    for e in (0.2, 0.35):
        assert abs(float(ns["gain"].subs(ns["eps"], e)) - (cf.vote_accuracy([e] * 3, 2) - (1 - e))) < 1e-12
