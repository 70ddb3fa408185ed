"""``spectheory sweep``: run a grid of Monte Carlo or exact jobs (:mod:`spectheory.sims.sweep`).

Every argument is checked before any job runs or any file is written: the job kind, every
parameter of every grid point (a misspelt name gets a suggestion), the output files, and the
Dask scheduler (reached within a few seconds). A job that fails ends the sweep with a one-line
error; the rows already written stay (a rerun resumes), and no empty table is left behind."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from .app import app, check_writable


def _value(text: str):
    """``4`` → int, ``0.5`` → float, ``true`` → bool, anything else a string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_axis(spec: str) -> tuple[str, list]:
    name, sep, values = spec.partition("=")
    name = name.strip()
    if not sep or not name or not values.strip():
        raise typer.BadParameter(f"expected NAME=V1,V2,..., got {spec!r}", param_hint="--grid")
    return name, [_value(v.strip()) for v in values.split(",") if v.strip()]


def _kinds_epilog() -> str:
    """The list of job kinds under ``sweep --help``, generated from the job registry."""
    from spectheory.sims import jobs
    return "Job kinds (docs/engine.md):\n\n" + "\n\n".join(f"• {k}: {v}" for k, v in jobs.kinds().items())


def summary_table(rows: list[dict], axes: dict):
    """A rich table of what a sweep computed: one row per grid point (replicates pooled), the
    point's varied parameters, the number of replicates and the mean of each numeric result (the
    first six)."""
    from rich.table import Table
    varied = [a for a, vals in axes.items() if len(vals) > 1] or list(axes)[:3]
    skip = {"job_id", "kind", "rep", *axes}
    results: list[str] = []
    for r in rows:
        for k, v in r.items():
            if k not in skip and k not in results and isinstance(v, (int, float)) and not isinstance(v, bool):
                results.append(k)
    shown = results[:6]
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(json.dumps(r.get(a), sort_keys=True) for a in varied), []).append(r)
    t = Table(title=f"sweep: {len(rows)} job(s) at {len(groups)} grid point(s)"
              + (f"; first {len(shown)} of {len(results)} results" if len(results) > len(shown) else ""))
    for a in varied:
        t.add_column(a)
    t.add_column("reps", justify="right")
    for k in shown:
        t.add_column(f"mean {k}", justify="right")
    for key, group in groups.items():
        means = []
        for k in shown:
            vals = [g[k] for g in group if isinstance(g.get(k), (int, float)) and not isinstance(g.get(k), bool)]
            means.append(f"{sum(vals) / len(vals):.4g}" if vals else "")
        t.add_row(*[str(json.loads(k)) for k in key], str(len(group)), *means)
    return t


@app.command(epilog=_kinds_epilog())
def sweep(
    kind: str = typer.Argument(..., help="Job kind: a built-in kind listed below, or an importable "
                              "'module:function' with the signature fn(params: dict, seed: "
                              "numpy.random.SeedSequence) -> dict."),
    grid: Optional[List[str]] = typer.Option(None, "--grid", "-g",
                                             help="An axis of the grid, NAME=V1,V2,... (repeat the option)."),
    reps: int = typer.Option(1, "--reps", help="Replicates (independent seeds) per grid point."),
    seed: int = typer.Option(0, "--seed", help="Base seed; each job's seed derives from it and the job's parameters."),
    out: Path = typer.Option(Path("reports/sweep.jsonl"), "--out",
                             help="Results table (JSONL, one row per job); a rerun resumes from it."),
    csv_path: Optional[Path] = typer.Option(None, "--csv", help="Also write the table as CSV."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j",
                                          help="Local worker processes (default: one per CPU; 1 = in this process)."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                            help="Dask scheduler address (tcp://host:8786): run on that cluster."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar with an ETA."),
):
    """Run a grid (instances × algorithm parameters × seeds) and write a tidy table.

    Example: spectheory sweep sd.mc -g instance=markov1-V50-weak,iid-V4-random -g gamma=1,2,4
    -g n_iterations=100000 --reps 3 --out reports/sweep.jsonl
    """
    from spectheory.sims import sweep as sw
    if reps < 1:
        raise typer.BadParameter(f"reps must be ≥ 1, got {reps}", param_hint="--reps")
    if seed < 0:
        raise typer.BadParameter(f"seed must be ≥ 0, got {seed}", param_hint="--seed")
    if workers is not None and workers < 1:
        raise typer.BadParameter(f"workers must be ≥ 1, got {workers}", param_hint="--workers")
    if scheduler is not None and workers is not None:
        raise typer.BadParameter("give either --workers (local pool) or --scheduler (Dask)", param_hint="--workers")
    axes: dict = {}
    for g in grid or []:
        name, values = parse_axis(g)
        if name in axes:
            raise typer.BadParameter(f"axis {name!r} given twice", param_hint="--grid")
        axes[name] = values
    try:
        jobs = sw.grid(kind, reps=reps, **axes)  # the kind and every grid point's parameters
    except (KeyError, ValueError, TypeError, ImportError, AttributeError) as err:
        raise typer.BadParameter(str(err.args[0] if err.args else err), param_hint="KIND/--grid") from None
    check_writable(out, "--out")
    if csv_path is not None:
        if csv_path.resolve() == out.resolve():
            raise typer.BadParameter("--csv and --out name the same file", param_hint="--csv")
        check_writable(csv_path, "--csv")
    if scheduler is not None:
        try:
            scheduler = sw.check_scheduler(scheduler)
        except sw.SweepError as err:
            raise typer.BadParameter(str(err), param_hint="--scheduler") from None
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            raise typer.BadParameter("a Dask scheduler needs dask.distributed: pip install 'spectheory[dask]'",
                                     param_hint="--scheduler") from None
    before = {r.get("job_id") for r in sw.read_table(out)}
    resumed = sum(j.job_id in before for j in jobs)
    try:
        with sw.executor_for(scheduler=scheduler, workers=workers) as ex:
            rows = sw.run_sweep(jobs, out, executor=ex, base_seed=seed, progress=progress)
    except sw.SweepError as err:
        typer.secho(f"error: {err}", fg="red", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.secho(f"interrupted: the finished jobs are in {out}; rerun the same command to resume", err=True)
        raise typer.Exit(130) from None
    except Exception as err:  # noqa: BLE001 - a failing job: one line, not a worker traceback
        done = len(sw.read_table(out))
        typer.secho(f"error: a job failed: {type(err).__name__}: {err}", fg="red", err=True)
        typer.echo(f"{done} finished job(s) kept in {out} (a rerun resumes)" if done else
                   "no job finished; nothing was written", err=True)
        raise typer.Exit(1) from None
    if rows:
        from rich.console import Console
        Console().print(summary_table(rows, axes))
    typer.echo(f"{len(rows)} jobs ({resumed} already in {out}, {len(rows) - resumed} run); wrote {out}")
    if csv_path:
        sw.write_csv(rows, csv_path)
        typer.echo(f"wrote {csv_path}")
