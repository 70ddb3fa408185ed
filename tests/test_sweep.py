"""Sweeps (spectheory.sims.sweep, `spectheory sweep`) and `verify --jobs`: the table does not depend on
the executor or the order, a rerun resumes, a local Dask cluster gives the serial table."""
import random

import pytest
from typer.testing import CliRunner

from _sweeps import assert_dask_gives_the_serial_table
from spectheory.sims import sweep as sw
from spectheory.cli.main import app

CALLS = []


@sw.job("test.count")
def _counting_job(params, seed):
    CALLS.append(params["x"])
    return {"y": params["x"] * 2, "draw": int(seed.generate_state(1)[0])}


def _small_grid():
    return sw.grid("sd.mc", reps=2, instance=["iid-V4-random", "markov1-V3-mix0.4"], gamma=[1, 3],
                   n_iterations=[2000])


def test_grid_order_ids_and_seeds_depend_only_on_job_content():
    jobs = _small_grid()
    assert len(jobs) == 8 and len({j.job_id for j in jobs}) == 8
    assert [(j.params["instance"], j.params["gamma"], j.rep) for j in jobs[:3]] == [
        ("iid-V4-random", 1, 0), ("iid-V4-random", 1, 1), ("iid-V4-random", 3, 0)]
    serial = sw.run_sweep(jobs, executor=sw.SerialExecutor(), progress=False)
    shuffled = jobs[:]
    random.Random(1).shuffle(shuffled)
    again = sw.run_sweep(shuffled, executor=sw.SerialExecutor(), progress=False)
    assert sorted(serial, key=lambda r: r["job_id"]) == sorted(again, key=lambda r: r["job_id"])
    # replicates differ, another base seed differs
    assert serial[0]["mean_tokens"] != serial[1]["mean_tokens"]
    other = sw.run_sweep(jobs[:1], executor=sw.SerialExecutor(), base_seed=1, progress=False)
    assert other[0]["mean_tokens"] != serial[0]["mean_tokens"]


def test_rerun_resumes_from_the_table(tmp_path):
    out = tmp_path / "t.jsonl"
    jobs = sw.grid("test.count", x=[1, 2, 3, 4, 5])
    CALLS.clear()
    full = sw.run_sweep(jobs, out, executor=sw.SerialExecutor(), progress=False)
    assert CALLS == [1, 2, 3, 4, 5]
    text = out.read_text()
    # an interrupted run: two rows written, the third cut mid-line
    lines = text.splitlines()
    out.write_text("\n".join(lines[:2]) + "\n" + lines[2][:10])
    CALLS.clear()
    resumed = sw.run_sweep(jobs, out, executor=sw.SerialExecutor(), progress=False)
    assert CALLS == [3, 4, 5]
    assert resumed == full and out.read_text() == text
    CALLS.clear()
    sw.run_sweep(jobs, out, executor=sw.SerialExecutor(), progress=False)
    assert CALLS == []


def test_local_dask_cluster_gives_the_serial_table(tmp_path):
    jobs = _small_grid() + sw.grid("sd.exact", instance=["markov1-V3-mix0.4"], gamma=[1, 2])
    rows = assert_dask_gives_the_serial_table(jobs, tmp_path)
    assert {r["kind"] for r in rows} == {"sd.mc", "sd.exact"}


def test_bad_grids_are_clear_errors():
    with pytest.raises(KeyError, match="unknown job kind"):
        sw.grid("nope", x=[1])
    with pytest.raises(ValueError, match="no values"):
        sw.grid("test.count", x=[])
    with pytest.raises(TypeError, match="JSON scalars"):
        sw.grid("test.count", x=[object()])
    with pytest.raises(ValueError, match="reps"):
        sw.grid("test.count", reps=0, x=[1])
    with pytest.raises(ValueError, match="same job twice"):
        sw.run_sweep(sw.grid("test.count", x=[1, 1]), executor=sw.SerialExecutor(), progress=False)


def test_cli_sweep_writes_and_resumes(tmp_path):
    out, csv = tmp_path / "s.jsonl", tmp_path / "s.csv"
    args = ["sweep", "sd.exact", "-g", "instance=iid-V4-random,markov1-V3-mix0.4", "-g", "gamma=1,2",
            "--workers", "1", "--no-progress", "--out", str(out)]
    res = CliRunner().invoke(app, args + ["--csv", str(csv)])
    assert res.exit_code == 0, res.output
    assert "4 jobs (0 already" in res.output
    assert len(out.read_text().splitlines()) == 4 and csv.read_text().startswith("job_id,kind,gamma,instance")
    res = CliRunner().invoke(app, args)
    assert "4 jobs (4 already" in res.output
    bad = CliRunner().invoke(app, ["sweep", "sd.exact", "-g", "gamma", "--out", str(out)])
    assert bad.exit_code != 0 and "NAME=V1" in bad.output


def test_verify_jobs_gives_the_serial_report():
    """`verify --jobs 2` (two worker processes, one family each) reports what the serial run
    reports."""
    from spectheory.sims.runner import _family_groups, run_claims
    from spectheory.sims.registry import select
    pattern = "sd.walltime,sd.acceptance,se.thm3_2"
    assert len(_family_groups([(c, None) for c in select(pattern)])) == 2  # the parallel path runs
    a = run_claims(pattern, quick=True, seed=3, progress=False)
    b = run_claims(pattern, quick=True, seed=3, progress=False, jobs=2)
    strip = lambda rep: [(c["id"], c["verdict"], c["evidence"], c["counterexample"], c["notes"],
                          [(k["name"], k["verdict"], k["evidence"], k["counterexample"]) for k in c["controls"]])
                         for c in rep["claims"]]
    assert strip(a) == strip(b)


def test_cli_sweep_on_a_dask_scheduler_gives_the_local_table(tmp_path):
    """`spectheory sweep --scheduler ADDRESS` (an in-process Dask cluster) writes the table
    the local run writes, byte for byte."""
    distributed = pytest.importorskip("dask.distributed")
    grid = ["sd.mc", "-g", "instance=iid-V4-random", "-g", "gamma=1,2", "-g", "n_iterations=3000",
            "--reps", "2", "--no-progress"]
    local, remote = tmp_path / "local.jsonl", tmp_path / "dask.jsonl"
    res = CliRunner().invoke(app, ["sweep", *grid, "--workers", "1", "--out", str(local)])
    assert res.exit_code == 0, res.output
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        res = CliRunner().invoke(app, ["sweep", *grid, "--scheduler", cluster.scheduler_address,
                                       "--out", str(remote)])
    assert res.exit_code == 0, res.output
    assert local.read_text() == remote.read_text() and len(local.read_text().splitlines()) == 4
