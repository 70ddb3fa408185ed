"""Shared computation of the exponential-race figure analogues (Fig. 3 and Fig. 4): expected generated
tokens against drafted tokens k for batch, sequence, optimal (Alg. 3) and SpecInfer trees, GSD and
ERSD, on a first-order Markov source (V = 50, weakly aligned draft).

"Theory" follows the paper's §5: the acceptance-index distribution a is fitted from simulated text
(0th-order model) and every tree's E[generated] = 1 + Σ_v Π a(i_j); the optimal tree is Alg. 3 on
that a. "Simulation": iterations started at every position of the simulated texts (Numba
kernel, exponential races from the core RNG), vertex (i_1..i_d) accepted iff the next d indices
are i_1..i_d. The Lemma 4.2 bound is minimised over n for each k.

The rule × strategy × k grid runs as a sweep of ``ersd.tree`` and ``ersd.bound`` jobs
(``sims/jobs/ersd.py``): every job of one rule reads the same index stream (drawn from the
figure's seed), so theory and simulation use one fitted a and the marginal gains are
differences along one stream.
"""
from __future__ import annotations

import numpy as np
from _figure import Z95, mc, pick, plt, title
from matplotlib.lines import Line2D

from spectheory.sims import sweep as sw

SOURCE = "markov1-V50-weak"
#: job strategy → legend label
STRATEGIES = {"batch": "batch", "sequence": "sequence", "optimal": "optimal tree", "specinfer": "SpecInfer tree"}
RULES = ("gsd", "ersd")
K_MAX = 48
#: positions per stream set and largest k, of a full and of a --quick run
FULL, QUICK = dict(n_positions=200_000, k_max=K_MAX), dict(n_positions=20_000, k_max=24)


def jobs(n_positions: int, seed: int, k_max: int = K_MAX) -> list:
    """The sweep behind both figures (run by ``_figure.figure_main``)."""
    common = dict(instance=SOURCE, rule=RULES, n_positions=n_positions, stream_seed=seed)
    return (sw.grid("ersd.tree", **common, strategy=list(STRATEGIES), k=range(1, k_max + 1))
            + sw.grid("ersd.bound", **common, k=range(1, k_max + 1)))


def curves(rows: list) -> dict:
    """{rule: {"ks": ks, label: (theory, simulation, its 95% half-width, simulated gain, the gain's
    95% half-width), "bound": lemma 4.2}} from the rows of :func:`jobs`."""
    out = {}
    for rule in RULES:
        bound = pick(rows, "ersd.bound", rule=rule)
        res = {"ks": np.array([r["k"] for r in bound]), "bound": np.array([r["lemma42_bound"] for r in bound])}
        for strat, label in STRATEGIES.items():
            mine = pick(rows, "ersd.tree", rule=rule, strategy=strat)
            res[label] = tuple(np.array([r.get(key, np.nan) for r in mine]) * scale for key, scale in
                               (("theory", 1), ("simulation", 1), ("se_simulation", Z95),
                                                  ("simulation_gain", 1), ("se_gain", Z95)))
        out[rule] = res
    return out


def two_panels(data: dict, series, ylabel: str, text: str, *, bound: bool = False):
    """The figure both analogues share: GSD and ERSD side by side, one colour per strategy,
    lines = theory, markers = simulation ± 95% CI. ``series(res, label)`` gives (theory,
    simulation, half-widths, mask of the points to draw) of one strategy; ``bound``: add the
    Lemma 4.2 bound. Returns (figure, axes)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.9), sharey=True, constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (rule, res) in zip(axes, data.items()):
        ks = res["ks"]
        ax.set_xscale("log", base=2)
        for label, col in zip(STRATEGIES.values(), colors):
            th, sim, half, keep = series(res, label)
            ax.plot(ks, th, color=col, lw=1.5, label=label)
            mc(ax, ks[keep], sim[keep], half[..., keep], color=col, ms=3.2)
        if bound:
            ax.plot(ks, res["bound"], "k--", lw=1.2, label="Lemma 4.2 bound (min over n)")
        ax.set_xlabel("drafted tokens k")
        ax.set_title(f"{rule.upper()}  ({SOURCE})")
    axes[0].set_ylabel(ylabel)
    handles, labels = axes[1].get_legend_handles_labels()
    handles += [Line2D([], [], color="0.4", lw=1.5), mc(axes[1], [], [], [], color="0.4", ms=3.2)]
    labels += ["theory (fitted 0th-order a)", "simulation ± 95% CI"]
    axes[1].legend(handles, labels, ncol=2, loc="upper left" if bound else "lower left")
    title(fig, "kobus2025", text)
    return fig, axes
