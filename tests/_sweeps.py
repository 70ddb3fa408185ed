"""Shared sweep-test helper (one copy for tests/test_sweep.py and tests/test_figure_jobs.py):
a grid run in this process and on an in-process Dask cluster must give the same table."""
from __future__ import annotations

import json

import pytest

from spectheory.sims import sweep as sw


def assert_dask_gives_the_serial_table(jobs, tmp_path) -> list[dict]:
    """Run ``jobs`` through :class:`SerialExecutor` and through ``LocalCluster(processes=False)``;
    the two JSONL tables must be byte-identical. Returns the rows."""
    distributed = pytest.importorskip("dask.distributed")
    a, b = tmp_path / "serial.jsonl", tmp_path / "dask.jsonl"
    sw.run_sweep(jobs, a, executor=sw.SerialExecutor(), progress=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        with sw.dask_executor(cluster) as ex:
            sw.run_sweep(jobs, b, executor=ex, progress=False)
    assert a.read_text() == b.read_text()
    return [json.loads(x) for x in a.read_text().splitlines()]
