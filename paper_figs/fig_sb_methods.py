"""Figure: rollback rate and speedup of each method by alignment level (SpecBranch, PEARL, SpS).

Caption. The pipeline model of docs/sb.md at γ = 4, c = T_p/T_q = 4 (flat target cost), on
weakly and strongly aligned order-1 pairs of two kinds (easy/hard contexts "bimodal"; uniform
mixing "mix"; V = 6). Bars: the Numba pipeline kernel (16 streams, ± 95% CI), a sweep of
``sb.mc`` jobs; black ticks: the exact long-run rates (``sb.exact``). SpecBranch: k_max = 4,
ε = 0.3, H-RAD trained on the pair. Left: rollback rate (tokens a rejection discards / accepted
+ discarded); right: speedup over autoregressive decoding.
"""
from __future__ import annotations

import numpy as np
from _figure import Z95, figure_main, plt, value

from sims import sweep as sw

PAIRS = ("bimodal-weak-V6", "mix-weak-V6", "bimodal-strong-V6", "mix-strong-V6")
METHODS = ("sps", "psd", "pearl", "specbranch", "specbranch:no-branch", "specbranch:no-hrad")
GAMMA, C = 4, 4.0
ROUNDS_FULL, ROUNDS_QUICK = 20_000, 1_500


def jobs(rounds: int) -> list:
    return (sw.grid("sb.mc", pair=PAIRS, method=METHODS, gamma=GAMMA, c=C, n_rounds=rounds)
            + sw.grid("sb.exact", pair=PAIRS, method=METHODS, gamma=GAMMA, c=C))



def make_figure(rows: list, rounds: int):
    fig, axes = plt.subplots(1, 2, figsize=(13.5, 4.4), constrained_layout=True)
    width = 0.8 / len(METHODS)
    x = np.arange(len(PAIRS))
    cmap = plt.get_cmap("tab10")
    for ax, rate, title in ((axes[0], "rollback_rate", "rollback rate"), (axes[1], "speedup_ar", "speedup over AR")):
        for i, m in enumerate(METHODS):
            mc = [value(rows, "sb.mc", rate, pair=p, method=m) for p in PAIRS]
            se = [value(rows, "sb.mc", f"se_{rate}", pair=p, method=m) for p in PAIRS]
            exact = [value(rows, "sb.exact", rate, pair=p, method=m) for p in PAIRS]
            pos = x - 0.4 + (i + 0.5) * width
            ax.bar(pos, mc, width * 0.9, yerr=Z95 * np.array(se), capsize=2, color=cmap(i),
                   label=f"{m} (simulation ± 95% CI)")
            ax.plot(pos, exact, "_", color="black", ms=10, mew=2, label="exact" if i == 0 else None)
        ax.set_xticks(x, [p.replace("-V6", "") for p in PAIRS])
        ax.set_title(f"{title}, γ = {GAMMA}, c = {C:g}")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("share of speculated tokens discarded")
    axes[1].set_ylabel("tokens per unit time / AR's")
    axes[1].legend(fontsize=7, ncol=2, loc="upper left")
    fig.suptitle(f"SpecBranch vs PEARL vs SpS by alignment level (16 streams × {rounds:,} rounds per bar)", fontsize=10)
    return fig


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, jobs, make_figure,
                                 full=dict(rounds=ROUNDS_FULL), quick=dict(rounds=ROUNDS_QUICK)))
