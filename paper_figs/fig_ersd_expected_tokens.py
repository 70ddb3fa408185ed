"""Figure (analogue of Kobus & Gündüz 2025, Fig. 3): expected generated tokens per target evaluation against the
number of drafted tokens k, for batch, sequence, optimal (Alg. 3) and SpecInfer drafting trees,
GSD (left) and ERSD (right), on a first-order Markov source (V = 50, weakly aligned draft).

Caption. Lines: theory from the fitted 0th-order acceptance-index distribution a
(E = 1 + Σ_v Π a(i_j), claim zero_order.underestimates, opt_tree.greedy); markers: simulation
(iterations started at every position of simulated texts, Numba kernel). Dashed black: the
Lemma 4.2 bound minimised over n (claim tunstall.lemma4_2). The optimal tree keeps growing about
logarithmically (opt_tree.log_growth) while batch and sequence plateau.

Usage::

    python paper_figs/fig_ersd_expected_tokens.py [--out PATH] [--quick] [--seed N]
        [--jobs N | --scheduler ADDRESS] [--table PATH]
"""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cli import figure_parser, run_grid, save_figure  # noqa: E402
from _ersd_curves import N_FULL, N_QUICK, SOURCE, STRATEGIES, curves, jobs  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent / "out" / "fig_ersd_expected_tokens.png"


def make_figure(data):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True, constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (method, res) in zip(axes, data.items()):
        ks = res["ks"]
        for strat, col in zip(STRATEGIES.values(), colors):
            th, sim = res[strat]
            ax.plot(ks, th, color=col, lw=1.6, label=f"{strat} (theory, 0th-order a)")
            ax.plot(ks, sim, "o", ms=3.5, color=col, mfc="white", mew=1.0, label=f"{strat} (simulation)")
        ax.plot(ks, res["bound"], "k--", lw=1.2, label="Lemma 4.2 bound (min over n)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("drafted tokens k")
        ax.set_title(f"{method.upper()}  ({SOURCE})")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("E[generated tokens per target evaluation]")
    axes[1].legend(fontsize=7, ncol=2, loc="upper left")
    fig.suptitle("Kobus & Gündüz 2025, Fig. 3 analogue: batch / sequence / optimal / SpecInfer trees, GSD vs ERSD", fontsize=11)
    return fig


def main(argv=None) -> int:
    args = figure_parser(__doc__, DEFAULT_OUT, f"{N_QUICK:,} instead of {N_FULL:,} positions per stream set").parse_args(argv)
    data = curves(run_grid(jobs(N_QUICK if args.quick else N_FULL, args.seed, 24 if args.quick else 48), args))
    save_figure(make_figure(data), args.out)
    for method, res in data.items():
        th, sim = res["optimal tree"]
        print(f"{method}: optimal tree at k={res['ks'][-1]}: theory {th[-1]:.3f}, simulation {sim[-1]:.3f}, "
              f"Lemma 4.2 bound {res['bound'][-1]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
