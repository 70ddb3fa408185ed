"""Smoke test: the multi-draft figure script renders a non-trivial PNG (quick mode)."""
from __future__ import annotations

from _figures import render_quick


def test_fig_multidraft_be_quick(tmp_path):
    render_quick("fig_multidraft_be.py", tmp_path / "fig.png", seed=2, min_shape=(400, 600))
