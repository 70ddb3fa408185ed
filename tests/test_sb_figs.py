"""Smoke tests of the SpecBranch figures (quick mode): a real PNG, and the sweep jobs behind
them agree with the exact engine."""
from __future__ import annotations

import pytest

from _figures import render_quick
from spectheory.sims import sweep as sw


def test_fig_sb_latency_quick(tmp_path):
    proc = render_quick("fig_sb_latency.py", tmp_path / "fig.png", timeout=300)
    covered, total = map(int, proc.stdout.split("Theorem 1:")[1].split()[0].split("/"))
    assert covered >= 0.8 * total


@pytest.mark.slow
@pytest.mark.parametrize("script", ["fig_sb_methods.py", "fig_sb_eps.py"])
def test_fig_sb_quick(tmp_path, script):
    render_quick(script, tmp_path / "fig.png", timeout=300)


def test_sb_jobs_exact_and_mc():
    rows = sw.run_sweep(sw.grid("sb.exact", alpha=0.8, method="psd", gamma=3, c=3.0)
                        + sw.grid("sb.mc", alpha=0.8, method="psd", gamma=3, c=3.0, n_rounds=2000), None,
                        base_seed=1, progress=False)
    from spectheory.closed_forms import sb as cf
    ex, mc = rows
    assert abs(ex["latency"] - cf.psd_latency(0.8, 3, 3.0)) < 1e-12
    assert abs(mc["latency"] - ex["latency"]) < 5 * mc["se_latency"]


@pytest.mark.parametrize("params,match", [
    (dict(method="psd", gamma=3, c=3.0), "exactly one of 'pair' and 'alpha'"),
    (dict(alpha=0.8, pair="bimodal-V4", method="psd", gamma=3, c=3.0), "exactly one of"),
    (dict(alpha=0.8, method="tree", gamma=3, c=3.0), "method"),
    (dict(alpha=0.8, method="sps", gamma=3, c=3.0, k_max=3), "do not apply"),
    (dict(alpha=0.8, method="psd", gamma=0, c=3.0), "gamma"),
])
def test_sb_job_parameters_are_checked(params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        sw.resolve("sb.exact")(params, 0)
