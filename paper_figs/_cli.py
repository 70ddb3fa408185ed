"""The command line every figure script shares: ``--out``, ``--quick``, ``--seed``, where the
figure's grid of simulated (and exact) points runs (``--jobs N`` local worker processes,
``--scheduler ADDRESS`` a Dask cluster, ``--table PATH`` a resumable JSONL table; default: in
this process), and saving the figure (one copy for all families; the leading underscore keeps
``make figs`` from running this file as a figure).

Every grid runs as a sweep (:mod:`sims.sweep`): each point's seed derives from (``--seed``, job
kind, parameters), so the figure is the same whichever executor runs it.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from sims import sweep as sw

Z95 = 1.959963984540054


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got {n}")
    return n


def figure_parser(doc: str, default_out: Path, quick_help: str) -> argparse.ArgumentParser:
    """Parser with the standard options; a script may add its own before parsing."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=default_out, help="output PNG path")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--seed", type=int, default=0, help="Monte Carlo seed")
    grid = ap.add_argument_group("where the figure's grid runs (sims.sweep)")
    where = grid.add_mutually_exclusive_group()
    where.add_argument("--jobs", "-j", "--workers", dest="workers", type=_positive, default=1, metavar="N",
                       help="local worker processes (default 1: in this process)")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="Dask scheduler address (tcp://host:8786): run the grid on that cluster")
    grid.add_argument("--table", type=Path, default=None, metavar="PATH",
                      help="keep the grid's table here (JSONL; a rerun resumes from it)")
    return ap


def run_grid(jobs: list, args: argparse.Namespace) -> list[dict]:
    """Run ``jobs`` (built with :func:`sims.sweep.grid`; duplicates dropped) where the command
    line says; the rows in grid order."""
    jobs = list(dict.fromkeys(jobs))
    with sw.executor_for(scheduler=args.scheduler, workers=args.workers) as ex:
        return sw.run_sweep(jobs, args.table, executor=ex, base_seed=args.seed, progress=False)


def pick(rows: list[dict], kind: str, **match) -> list[dict]:
    """The rows of job kind ``kind`` whose parameters equal ``match``, in grid order."""
    return [r for r in rows if r["kind"] == kind and all(r.get(k) == v for k, v in match.items())]


def value(rows: list[dict], kind: str, result: str, **match):
    """The result ``result`` of the one row of ``kind`` matching ``match``."""
    found = pick(rows, kind, **match)
    if len(found) != 1:
        raise LookupError(f"{len(found)} rows of {kind} match {match}")
    return found[0][result]


def points(rows: list[dict], kind: str, x: str, mean: str, se: str, **match):
    """(x, mean, 95% half-width) arrays of the matching rows (normal intervals from ``se``)."""
    found = pick(rows, kind, **match)
    return (np.array([r[x] for r in found]), np.array([r[mean] for r in found]),
            Z95 * np.array([r[se] for r in found]))


def save_figure(fig, out: Path, dpi: int = 150) -> Path:
    """Write the PNG (creating its folder), close the figure, say where it went."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    print(f"wrote {out}")
    return out
