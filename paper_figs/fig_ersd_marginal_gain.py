"""Figure (analogue of Kobus & Gündüz 2025, Fig. 4): marginal gain per drafted token, E(k) − E(k−1), for batch,
sequence, optimal (Alg. 3) and SpecInfer trees, GSD and ERSD, same source and data as
fig_ersd_expected_tokens.py.

Caption. Lines: theory from the fitted 0th-order a (for the batch strategy the gain at k is a(k),
the probability of acceptance index k); markers: simulation. GSD gains more from the first
alternative, ERSD from later ones (claim ersd.batch_crossover).
"""
from __future__ import annotations

import numpy as np

from _ersd_curves import FULL, QUICK, SOURCE, STRATEGIES, curves, jobs
from _figure import figure_main, plt


def make_figure(rows):
    data = curves(rows)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True, constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (method, res) in zip(axes, data.items()):
        ks = res["ks"]
        for strat, col in zip(STRATEGIES.values(), colors):
            th, sim = res[strat]
            ax.plot(ks, np.diff(th, prepend=1.0), color=col, lw=1.5, label=f"{strat} (theory)")
            ax.plot(ks, np.diff(sim, prepend=1.0), "o", ms=3.5, color=col, mfc="white", mew=1.0,
                    label=f"{strat} (simulation)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("drafted tokens k")
        ax.set_title(f"{method.upper()}  ({SOURCE})")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("marginal gain E(k) − E(k−1)")
    axes[1].legend(fontsize=7, ncol=2, loc="lower left")
    fig.suptitle("Kobus & Gündüz 2025, Fig. 4 analogue: marginal gain per drafted token", fontsize=11)
    return fig


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, jobs, make_figure, full=FULL, quick=QUICK))
