"""The SpecBranch derivation notebook runs (its sympy asserts hold) and its Theorem 1 is the
library's closed form."""
from __future__ import annotations

from _figures import run_notebook


def test_sb_derivations_notebook_runs(capsys):
    ns = run_notebook("sb_derivations.py", capsys)
    from spectheory.closed_forms import sb as cf
    T = ns["T_closed"]
    for al, g, c in ((0.5, 2, 4.0), (0.9, 5, 4.0), (0.8, 3, 2.0)):
        val = float(T.subs({ns["a"]: al, ns["gi"]: g, ns["M"]: max(g, c)}))
        assert abs(val - cf.psd_latency(al, g, c)) < 1e-12
