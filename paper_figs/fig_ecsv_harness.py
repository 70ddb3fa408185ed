"""Figure: ECSV's falsification harness — accepted length and TV to p against B and k, per method.

Caption. The medium-alignment Markov source of the harness (order 1, V = 8, peaked Dirichlet(0.3)
target, draft mixed with noise of weight 0.4; ``spectheory.montecarlo.ecsv.default_sources``).
Rows: the clean drafter (q itself) and the noisy one (log q on a 2-nat grid, temperature 1.5).
Columns: accepted length E[τ] per step against the number of branches B at k = 4; against the
depth k at B = 4; then the TV between the law of the first two emitted tokens and p², against B and
against k. Every method of the paper's plan at matched verifier budget (k + 1 positions per step;
ECSV-spot verifies k − R_used fused tokens): SD-1, SD-multi, Vote-unif, Oracle-Top1 (not
budget-matched), ECSV-lite, ECSV-spot (R = 1, 2), ECSV-soft, fused drafts verified by matching
the verifier's own sample (solid); ECSV-lite with the 'standard final check' min(1, p/q̄)
(dashed, lossy). Markers: Monte Carlo means (Numba kernel, 16 chains) with 95% intervals, offset sideways a
little so the methods at one B or k stay apart; TV is
the plug-in estimate over ``tv_runs`` runs (log scale, so the methods at the null level stay
apart from the lossy reading) with bars of ± its null level (the plug-in's noise scale), the grey
band that null level (what exact draws from p give). Coefficients: the paper's defaults (α = (1, 1, 0, 1), γ = 1, λ = 0.5). Every point is
a job of one sweep (``ecsv.mc``; ``sims/jobs/ecsv.py``).

Source: "Error-Correcting Speculative Decoding via Branch Voting" (ECSV), anonymous manuscript
under revision, 2026.
"""
from __future__ import annotations

import numpy as np
from _figure import Z95, figure_main, finding, mc, pick, plt, title

from spectheory.sims import sweep as sw

SOURCE = "medium"
METHODS = ("SD-1", "SD-multi", "Vote-unif", "Oracle-Top1", "ECSV-lite", "ECSV-spot(R=1)", "ECSV-spot(R=2)", "ECSV-soft")
LOSSY = ("ECSV-lite",)
#: bottom of the null-level band on the TV panels' log axis
TV_FLOOR = 3e-3


def grid_jobs(Bs, ks, B0: int, k0: int, n: int, tv_runs: int) -> list:
    """Every point: each method against B at k0 and against k at B0, both drafters, matching
    verification; the lossy reading of ECSV-lite on the same axes."""
    jobs = []
    for dr in ("clean", "noisy"):
        common = dict(source=SOURCE, drafter=dr, n_steps=n, tv_runs=tv_runs)
        jobs += sw.grid("ecsv.mc", method=list(METHODS), B=list(Bs), k=k0, reading="match", **common)
        jobs += sw.grid("ecsv.mc", method=list(METHODS), B=B0, k=list(ks), reading="match", **common)
        jobs += sw.grid("ecsv.mc", method=list(LOSSY), B=list(Bs), k=k0, reading="rs", **common)
        jobs += sw.grid("ecsv.mc", method=list(LOSSY), B=B0, k=list(ks), reading="rs", **common)
    return jobs


def _series(rows, result: str, se: str | None, axis: str, **match):
    """(x, y, bar half-widths): 95% normal intervals from ``se``; for the plug-in TV (no standard
    error) the bar is ± its null level, the plug-in's noise scale at that number of runs."""
    rs = sorted(pick(rows, "ecsv.mc", **match), key=lambda r: r[axis])
    x = np.array([r[axis] for r in rs], dtype=float)
    y = np.array([r[result] for r in rs], dtype=float)
    if se:
        e = Z95 * np.array([r[se] for r in rs], dtype=float)
    elif result == "tv":  # on a log axis: the lower bar stops short of 0
        e = np.array([r["tv_null"] for r in rs], dtype=float)
        e = np.vstack([np.minimum(e, 0.8 * y), e])
    else:
        e = None
    return x, y, e


def make_figure(rows: list, Bs, ks, B0: int, k0: int):
    fig, axes = plt.subplots(2, 4, figsize=(19, 9))
    colours = plt.cm.tab10(np.linspace(0, 1, 10))
    n_series = len(METHODS) + len(LOSSY)
    #: sideways offsets (in log2 units of the x axis) so the methods at one x stay apart
    dodge = {m: 0.36 * (i / (n_series - 1) - 0.5) for i, m in enumerate(METHODS + tuple(f"{m}:rs" for m in LOSSY))}
    for row, dr in enumerate(("clean", "noisy")):
        panels = ((0, "accepted_length", "se_accepted", "B", dict(k=k0), f"accepted length E[τ] (k = {k0})"),
                  (1, "accepted_length", "se_accepted", "k", dict(B=B0), f"accepted length E[τ] (B = {B0})"),
                  (2, "tv", None, "B", dict(k=k0), f"TV(first 2 tokens, p²) (k = {k0}; log scale)"),
                  (3, "tv", None, "k", dict(B=B0), f"TV(first 2 tokens, p²) (B = {B0}; log scale)"))
        for col, result, se, axis, fixed, ylabel in panels:
            ax = axes[row, col]
            ax.set_xscale("log", base=2)
            if result == "tv":
                x, y0, _ = _series(rows, "tv_null", None, axis, source=SOURCE, drafter=dr, method="SD-1",
                                   reading="match", **fixed)
                ax.set_yscale("log")
                ax.set_ylim(TV_FLOOR, 1.0)
                ax.fill_between(x, TV_FLOOR, y0, color="0.85", label="null level (exact draws from p)")
            bar = "95% CI" if se else "± null level"
            ys = {}
            for i, m in enumerate(METHODS):
                x, y, e = _series(rows, result, se, axis, source=SOURCE, drafter=dr, method=m, reading="match", **fixed)
                mc(ax, x, y, e, color=colours[i], dx=dodge[m], ls="-", lw=1.2, label=m)
                ys[m] = y
            for m in LOSSY:
                x, y, e = _series(rows, result, se, axis, source=SOURCE, drafter=dr, method=m, reading="rs", **fixed)
                mc(ax, x, y, e, color="k", marker="s", dx=dodge[f"{m}:rs"], ls="--", lw=1.2,
                   label=f"{m}, min(1, p/q̄) (lossy)")
                ys[f"{m}:rs"] = y
            if row == 0 and col == 2:
                lossy = ys[f"{LOSSY[0]}:rs"]
                finding(ax, "the 'standard final check' is lossy:\nTV far above the null level",
                        (x[0] * 2 ** dodge[f"{LOSSY[0]}:rs"], lossy[0]), (0.3, 0.5))
            if row == 0 and col == 0:
                ecsv = np.max([ys[m] for m in METHODS if m.startswith("ECSV")], axis=0)
                if np.all(ecsv < ys["SD-1"]):
                    finding(ax, "every ECSV variant accepts less\nthan SD-1 at matched budget",
                            (x[0], ecsv[0]), (0.25, 0.68))
            ax.set_xticks(Bs if axis == "B" else ks)
            ax.set_xticklabels([str(v) for v in (Bs if axis == "B" else ks)])
            ax.set_xlabel("branches B" if axis == "B" else "depth k")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{dr} drafter (bars: {bar})")
    handles, labels = axes[0, 2].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=9, frameon=False)
    title(fig, "ecsv2026", "falsification harness (medium source, V = 8), matched verifier budget; Monte Carlo "
          "points offset sideways; solid = matching verification, dashed = the lossy 'standard final check'")
    fig.tight_layout(rect=(0, 0.09, 1, 0.96))
    return fig


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, grid_jobs, make_figure, dpi=110,
                                 full=dict(Bs=(2, 4, 8), ks=(2, 4, 8), B0=4, k0=4, n=20_000, tv_runs=20_000),
                                 quick=dict(Bs=(2, 8), ks=(2, 8), B0=2, k0=2, n=1_500, tv_runs=1_500)))
