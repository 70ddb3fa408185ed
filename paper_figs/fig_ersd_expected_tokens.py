"""Figure (analogue of Kobus & Gündüz 2025, Fig. 3): expected generated tokens per target evaluation against the
number of drafted tokens k, for batch, sequence, optimal (Alg. 3) and SpecInfer drafting trees,
GSD (left) and ERSD (right), on a first-order Markov source (V = 50, weakly aligned draft).

Caption. Lines: theory from the fitted 0th-order acceptance-index distribution a
(E = 1 + Σ_v Π a(i_j), claim zero_order.underestimates, opt_tree.greedy); markers: simulation
(iterations started at every position of simulated texts, Numba kernel). Dashed black: the
Lemma 4.2 bound minimised over n (claim tunstall.lemma4_2). The optimal tree keeps growing about
logarithmically (opt_tree.log_growth) while batch and sequence plateau.
"""
from __future__ import annotations

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
    lines = []
    for method, res in data.items():
        th, sim = res["optimal tree"]
        lines.append(f"{method}: optimal tree at k={res['ks'][-1]}: theory {th[-1]:.3f}, simulation {sim[-1]:.3f}, "
                     f"Lemma 4.2 bound {res['bound'][-1]:.3f}")
    return fig, lines


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, jobs, make_figure, full=FULL, quick=QUICK))
