"""The figure families' sweep job kinds (sims/jobs/<family>.py): a tiny grid of each gives the
same table in this process and on an in-process Dask cluster; the kinds resolve in a fresh
process without the figure scripts (and `import spectheory.sims.sweep` loads no Numba); bad parameters
are clear errors."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from _sweeps import assert_dask_gives_the_serial_table
from spectheory.sims import sweep as sw

KINDS = ("se.mc", "ersd.tree", "ersd.bound", "multidraft.mc", "multidraft.exact")
SE = dict(V=8, strength=0.3, pair_seed=4, gamma_q=2, gamma_p=1, c=0.5, n_streams=4, tokens_per_stream=200)
ERSD = dict(instance="markov1-V4-weak", rule=["gsd", "ersd"], n_positions=2000, stream_seed=1, k=[1, 3])
MD = dict(V=3, order=1, alignment="weak", pair_seed=40, gamma=[1, 2])


def tiny_grid() -> list:
    return (sw.grid("se.mc", **SE, ensemble="we", lam=[0.3, 0.7])
            + sw.grid("se.mc", **SE, ensemble="cd", mu=0.1, temperature=[0.0, 1.0], first="p")
            + sw.grid("ersd.tree", **ERSD, strategy=["batch", "optimal"])
            + sw.grid("ersd.bound", **ERSD)
            + sw.grid("multidraft.mc", **MD, rule=["spectr-gbv", "k-seq"], K=2, n_runs=500)
            + sw.grid("multidraft.exact", **MD, method=["sd", "gbv"], K=1)
            + sw.grid("multidraft.exact", **MD, method=["k-seq", "lp-optimum", "lemma51-bound"], K=2))


def test_each_family_kind_gives_the_serial_table_on_dask(tmp_path):
    rows = assert_dask_gives_the_serial_table(tiny_grid(), tmp_path)
    assert {r["kind"] for r in rows} == set(KINDS)
    # the results are sane: speedups positive, theory ≈ simulation on one stream, LP ≥ the others
    assert all(r["mean_speedup"] > 0 and r["se_speedup"] > 0 for r in rows if r["kind"] == "se.mc")
    for r in rows:
        if r["kind"] == "ersd.tree":
            assert abs(r["theory"] - r["simulation"]) < 0.1 * r["theory"]
    exact = {(r["gamma"], r["method"]): r["expected_tau"] for r in rows if r["kind"] == "multidraft.exact"}
    for g in (1, 2):
        assert exact[g, "lp-optimum"] >= max(exact[g, m] for m in ("sd", "gbv", "k-seq")) - 1e-9


def test_family_kinds_resolve_in_a_fresh_process():
    code = ("import sys; from spectheory.sims import sweep as sw; assert 'numba' not in sys.modules; "
            f"[sw.resolve(k) for k in {KINDS!r}]; print(sorted(sw.JOBS))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert all(k in proc.stdout for k in KINDS)
    with pytest.raises(KeyError, match=r"families with more kinds: (\w+, )*ersd, multidraft, (\w+, )*se\b"):
        sw.resolve("se.nope")


SEED = np.random.SeedSequence(0)
SE1 = dict(SE, ensemble="we", lam=0.5)


@pytest.mark.parametrize("kind, params, error, match", [
    ("se.mc", dict(SE1, gamma=3), ValueError, r"se.mc: unknown parameter\(s\) 'gamma'; accepted: instance, V"),
    ("se.mc", dict(SE1, gamma_q="3"), TypeError, "se.mc parameter 'gamma_q' must be an integer, got '3'"),
    ("se.mc", dict(SE1, c=0.0), ValueError, r"se.mc parameter 'c' must lie in \(0, inf\]"),
    ("se.mc", {k: v for k, v in SE1.items() if k != "n_streams"}, ValueError, "se.mc: missing parameter 'n_streams'"),
    ("se.mc", dict(SE1, mu=0.1), ValueError, "'mu' do not apply to ensemble 'we'"),
    ("se.mc", dict(SE1, ensemble="avg"), ValueError, "'ensemble' must be one of 'we', 'cd'"),
    ("se.mc", dict(SE1, instance="iid-V4-random"), ValueError, "do not apply with 'instance'"),
    ("se.mc", dict(SE1, alignment="weak"), ValueError, "exactly one of 'strength' and 'alignment'"),
    ("ersd.tree", dict(instance="markov1-V4-weak", rule="gsd", n_positions=100, k=2, strategy="star"),
     ValueError, "'strategy' must be one of 'batch', 'sequence', 'optimal', 'specinfer'"),
    ("ersd.bound", dict(instance="nope", rule="gsd", n_positions=100, k=2), ValueError, "'instance' must be one of"),
    ("ersd.bound", dict(instance="markov1-V4-weak", rule="gsd", n_positions=1.5, k=2), ValueError,
     "'n_positions' must be an integer"),
    ("multidraft.exact", dict(V=3, alignment="weak", pair_seed=1, gamma=1, K=2, method="sd"), ValueError,
     "method 'sd' verifies one draft: K must be 1"),
    ("multidraft.mc", dict(V=3, alignment="weak", pair_seed=1, gamma=1, K=True, rule="gbv", n_runs=10), TypeError,
     "'K' must be an integer, got a bool"),
])
def test_bad_parameters_are_clear_errors(kind, params, error, match):
    with pytest.raises(error, match=match):
        sw.resolve(kind)(params, SEED)
    # the same error surfaces through a sweep
    with pytest.raises(error, match=match):
        sw.run_sweep(sw.grid(kind, **params), executor=sw.SerialExecutor(), progress=False)
