"""``spectheory sweep``: run a grid of Monte Carlo or exact jobs (:mod:`sims.sweep`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from .app import app


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


@app.command()
def sweep(
    kind: str = typer.Argument(..., help="Job kind: sd.mc, sd.exact, se.mc, ersd.tree, ersd.bound, multidraft.mc, "
                              "multidraft.exact (docs/engine.md), or an importable 'module:function'."),
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
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
):
    """Run a grid (instances × algorithm parameters × seeds) and write a tidy table.

    Example: spectheory sweep sd.mc -g instance=markov1-V50-weak,iid-V4-random -g gamma=1,2,4
    -g n_iterations=100000 --reps 3 --out reports/sweep.jsonl
    """
    from sims import sweep as sw
    if reps < 1:
        raise typer.BadParameter("reps must be ≥ 1", param_hint="--reps")
    if seed < 0:
        raise typer.BadParameter("seed must be ≥ 0", param_hint="--seed")
    if workers is not None and workers < 1:
        raise typer.BadParameter("workers must be ≥ 1", param_hint="--workers")
    if scheduler is not None and workers is not None:
        raise typer.BadParameter("give either --workers (local pool) or --scheduler (Dask)", param_hint="--workers")
    axes = dict(parse_axis(g) for g in (grid or []))
    try:
        jobs = sw.grid(kind, reps=reps, **axes)
    except (KeyError, ValueError, TypeError, ImportError, AttributeError) as err:
        raise typer.BadParameter(str(err), param_hint="KIND/--grid") from None
    before = {r.get("job_id") for r in sw.read_table(out)}
    resumed = sum(j.job_id in before for j in jobs)
    with sw.executor_for(scheduler=scheduler, workers=workers) as ex:
        rows = sw.run_sweep(jobs, out, executor=ex, base_seed=seed, progress=progress)
    typer.echo(f"{len(rows)} jobs ({resumed} already in {out}, {len(rows) - resumed} run); wrote {out}")
    if csv_path:
        sw.write_csv(rows, csv_path)
        typer.echo(f"wrote {csv_path}")
