"""Figure (analogue of Kobus & Gündüz 2025, Fig. 4): marginal gain per drafted token, E(k) − E(k−1), for batch,
sequence, optimal (Alg. 3) and SpecInfer trees, GSD and ERSD, same source and data as
fig_ersd_expected_tokens.py.

Caption. Lines: theory from the fitted 0th-order a (for the batch strategy the gain at k is a(k),
the probability of acceptance index k); markers: simulation. GSD gains more from the first
alternative, ERSD from later ones (claim ersd.batch_crossover).

Usage::

    python paper_figs/fig_ersd_marginal_gain.py [--out PATH] [--quick] [--seed N]
        [--jobs N | --scheduler ADDRESS] [--table PATH]
"""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cli import figure_parser, run_grid, save_figure  # noqa: E402
from _ersd_curves import N_FULL, N_QUICK, SOURCE, STRATEGIES, curves, jobs  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent / "out" / "fig_ersd_marginal_gain.png"


def make_figure(data):
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


def main(argv=None) -> int:
    args = figure_parser(__doc__, DEFAULT_OUT, f"{N_QUICK:,} instead of {N_FULL:,} positions").parse_args(argv)
    data = curves(run_grid(jobs(N_QUICK if args.quick else N_FULL, args.seed, 24 if args.quick else 48), args))
    save_figure(make_figure(data), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
