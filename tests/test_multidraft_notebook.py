"""The multi-draft derivation notebook runs (its sympy asserts hold): Remark 5.2's K = 1 identity,
the step Bound(K + 1) − Bound(K) = Σ p·m·(1 − m)^K and where it ties, and the limit."""
from __future__ import annotations

from _figures import run_notebook


def test_multidraft_derivations_notebook_runs(capsys):
    ns = run_notebook("multidraft_derivations.py", capsys)
    sp = ns["sp"]
    assert sp.simplify(ns["step"] - ns["p"] * ns["m"] * (1 - ns["m"]) ** ns["K"]) == 0
