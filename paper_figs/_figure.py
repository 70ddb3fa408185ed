"""The one helper every figure script goes through (the leading underscore keeps ``make figs``
from running it as a figure).

A figure script is its caption (the module docstring), its grid of jobs, and the drawing of
that grid; everything else is here:

* :func:`figure_main` — the command line (``--out``, ``--quick``, ``--seed``; where the grid runs:
  ``--jobs N`` local worker processes, ``--scheduler ADDRESS`` a Dask cluster, ``--table PATH``
  a resumable JSONL table; default: in this process), running the grid as one sweep
  (:mod:`spectheory.sims.sweep`: each point's seed derives from (``--seed``, job kind, parameters), so the
  figure is the same whichever executor runs it), the house style, and saving the PNG to
  ``paper_figs/out/<script>.png``.
* reading the sweep's rows: :func:`pick`, :func:`value`, :func:`points` (95% normal intervals);
* drawing what every figure draws the same way: :func:`mc` (simulated points, always with their
  95% interval, one legend entry), :func:`title` (the paper by authors and year),
  :func:`finding` (a finding marked on the figure).

A script::

    from _figure import figure_main, mc, plt, points, title

    def jobs(tokens):                         # the grid (spectheory.sims.sweep.grid), sized by the settings
        return sw.grid("se.mc", ..., tokens_per_stream=tokens)

    def draw(rows, tokens):                   # the figure from the rows; optionally lines to print
        fig, ax = plt.subplots()
        mc(ax, *points(rows, "se.mc", "lam", "mean_speedup", "se_speedup"), color="tab:blue",
           label="Monte Carlo ± 95% CI")
        title(fig, "fu2025", "SE speedup against λ")
        return fig, ["a line printed after saving"]

    if __name__ == "__main__":
        raise SystemExit(figure_main(__doc__, __file__, jobs, draw,
                                     full=dict(tokens=50_000), quick=dict(tokens=2_000)))

``jobs`` and ``draw`` each receive the settings they name: any key of ``full``/``quick`` (the
``--quick`` flag picks which), and ``seed`` (the ``--seed`` option).
"""
from __future__ import annotations

import argparse
import inspect
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from spectheory.sims import sweep as sw  # noqa: E402
from spectheory.sims.papers import PAPERS  # noqa: E402

__all__ = ["figure_main", "pick", "value", "points", "mc", "title", "finding", "plt", "Z95"]

Z95 = 1.959963984540054
#: the house style, applied to every figure
STYLE = {"axes.grid": True, "grid.alpha": 0.3, "legend.fontsize": 7.5, "legend.framealpha": 0.9,
         "axes.titlesize": 10, "figure.titlesize": 11, "errorbar.capsize": 2.5}
plt.rcParams.update(STYLE)


# --- the command line, the sweep, saving ---------------------------------------------------

def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got {n}")
    return n


def _parser(doc: str, default_out: Path, full: dict, quick: dict) -> argparse.ArgumentParser:
    quick_help = "smaller grid: " + ", ".join(
        f"{k} = {_fmt(v)} instead of {_fmt(full.get(k))}" for k, v in quick.items() if full.get(k) != v)
    ap = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    ap.add_argument("--out", type=Path, default=default_out, help=f"output PNG path (default {default_out.name} "
                                                                   "in paper_figs/out)")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--seed", type=int, default=0, help="Monte Carlo seed")
    grid = ap.add_argument_group("where the figure's grid runs (spectheory.sims.sweep)")
    where = grid.add_mutually_exclusive_group()
    where.add_argument("--jobs", "-j", "--workers", dest="workers", type=_positive, default=1, metavar="N",
                       help="local worker processes (default 1: in this process)")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="Dask scheduler address (tcp://host:8786): run the grid on that cluster")
    grid.add_argument("--table", type=Path, default=None, metavar="PATH",
                      help="keep the grid's table here (JSONL; a rerun resumes from it)")
    return ap


def _fmt(v) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    if isinstance(v, (tuple, list)):
        return "(" + ", ".join(map(str, v)) + ")"
    return str(v)


def _named(fn, settings: dict) -> dict:
    """The settings ``fn`` names (all of them if it takes ``**kwargs``)."""
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return dict(settings)
    return {k: v for k, v in settings.items() if k in params}


def _run_grid(jobs: list, args: argparse.Namespace) -> list[dict]:
    """Run ``jobs`` (duplicates dropped) where the command line says; the rows in grid order."""
    jobs = list(dict.fromkeys(jobs))
    with sw.executor_for(scheduler=args.scheduler, workers=args.workers) as ex:
        return sw.run_sweep(jobs, args.table, executor=ex, base_seed=args.seed, progress=False)


def figure_main(doc: str, file: str, jobs, draw, *, full: dict, quick: dict, dpi: int = 150,
                argv=None) -> int:
    """Parse the command line, run ``jobs(**settings)`` as one sweep, ``draw(rows, **settings)``,
    save the figure and print what ``draw`` returned beside it. Returns the exit status (0).

    ``doc``: the script's docstring (its first line is the ``--help`` description); ``file``:
    the script's ``__file__`` (the default output is ``paper_figs/out/<its name>.png``);
    ``full``/``quick``: the settings of a full and of a ``--quick`` run (same keys); ``draw``
    returns a figure or ``(figure, lines to print)``."""
    script = Path(file).resolve()
    args = _parser(doc, script.parent / "out" / f"{script.stem}.png", full, quick).parse_args(argv)
    settings = {**(quick if args.quick else full), "seed": args.seed}
    rows = _run_grid(jobs(**_named(jobs, settings)), args)
    made = draw(rows, **_named(draw, settings))
    fig, lines = made if isinstance(made, tuple) else (made, ())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=dpi)
    plt.close(fig)
    print(f"wrote {args.out}")
    for line in lines:
        print(line)
    return 0


# --- reading the rows ----------------------------------------------------------------------

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


# --- drawing -------------------------------------------------------------------------------

def mc(ax, x, y, half, *, color, label=None, marker="o", ms=4.0, dx=0.0, **kw):
    """Simulated points with their 95% intervals (``half``: half-widths, or a (2, n) array of
    lower/upper errors), white-filled markers so they never read as a theory curve. ``dx``
    shifts the points sideways (on a log axis: a factor ``2**dx``) so several methods at the
    same x stay readable. Returns the errorbar container (one legend entry)."""
    x = np.asarray(x, dtype=float)
    if dx:
        x = x * 2.0 ** dx if ax.get_xscale() == "log" else x + dx
    return ax.errorbar(x, y, yerr=half, fmt=marker, ms=ms, color=color, mfc="white", mew=1.1,
                       elinewidth=1.0, label=label, zorder=4, **kw)


def title(target, paper: str | tuple, text: str, **kw):
    """Title ``target`` (a figure: suptitle; an axis: title) with the paper named by its
    authors and year (``spectheory.sims.papers``), then ``text``."""
    keys = (paper,) if isinstance(paper, str) else tuple(paper)
    who = "; ".join(_authors_year(PAPERS[k]) for k in keys)
    full = f"{who}: {text}"
    return target.suptitle(full, **kw) if hasattr(target, "suptitle") else target.set_title(full, **kw)


def _authors_year(p) -> str:
    names = [a.strip() for a in p.authors.replace(" & ", ", ").split(",") if a.strip()]
    if len(names) > 3:
        who = f"{names[0]} et al."
    elif len(names) > 1:
        who = ", ".join(names[:-1]) + " & " + names[-1]
    else:
        who = p.authors
    return f"{who} ({p.year})"


def finding(ax, text: str, xy, xytext, **kw):
    """Mark a finding on the figure: ``text`` in a box at ``xytext`` (axes fraction), an arrow to
    the data point ``xy``."""
    kw.setdefault("fontsize", 7.5)
    return ax.annotate(text, xy=xy, xycoords="data", xytext=xytext, textcoords="axes fraction",
                       arrowprops=dict(arrowstyle="->", color="0.2", lw=0.9),
                       bbox=dict(boxstyle="round,pad=0.3", fc="lightyellow", ec="0.5", lw=0.6), **kw)
