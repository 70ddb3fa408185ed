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
from _figure import Z95, figure_main, finding, plt, title, value

from spectheory.sims import sweep as sw

PAIRS = ("bimodal-weak-V6", "mix-weak-V6", "bimodal-strong-V6", "mix-strong-V6")
METHODS = ("sps", "psd", "pearl", "specbranch", "specbranch:no-branch", "specbranch:no-hrad")
LABELS = {"sps": "SpS (SD)", "psd": "parallel SD (PSD)", "pearl": "PEARL", "specbranch": "SpecBranch",
          "specbranch:no-branch": "SpecBranch w/o branches", "specbranch:no-hrad": "SpecBranch w/o H-RAD"}
GAMMA, C = 4, 4.0
ROUNDS_FULL, ROUNDS_QUICK = 20_000, 1_500


def jobs(rounds: int) -> list:
    return (sw.grid("sb.mc", pair=PAIRS, method=METHODS, gamma=GAMMA, c=C, n_rounds=rounds)
            + sw.grid("sb.exact", pair=PAIRS, method=METHODS, gamma=GAMMA, c=C))



def make_figure(rows: list, rounds: int):
    fig, axes = plt.subplots(1, 2, figsize=(13.5, 5.2), constrained_layout=True)
    width = 0.8 / len(METHODS)
    x = np.arange(len(PAIRS))
    cmap = plt.get_cmap("tab10")
    for ax, rate, name in ((axes[0], "rollback_rate", "rollback rate"), (axes[1], "speedup_ar", "speedup over AR")):
        for i, m in enumerate(METHODS):
            mc = [value(rows, "sb.mc", rate, pair=p, method=m) for p in PAIRS]
            se = [value(rows, "sb.mc", f"se_{rate}", pair=p, method=m) for p in PAIRS]
            exact = [value(rows, "sb.exact", rate, pair=p, method=m) for p in PAIRS]
            pos = x - 0.4 + (i + 0.5) * width
            ax.bar(pos, mc, width * 0.9, yerr=Z95 * np.array(se), capsize=2, color=cmap(i),
                   label=f"{LABELS[m]} (simulation ± 95% CI)")
            ax.plot(pos, exact, "_", color="black", ms=10, mew=2, label="exact" if i == 0 else None)
        ax.set_xticks(x, [p.replace("-V6", "") for p in PAIRS])
        ax.set_title(f"{name}, γ = {GAMMA}, c = {C:g}")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("share of speculated tokens discarded")
    axes[1].set_ylabel("tokens per unit time / AR's")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4)
    speed = {(p, m): value(rows, "sb.exact", "speedup_ar", pair=p, method=m) for p in PAIRS for m in METHODS}
    j = max(range(len(PAIRS)), key=lambda j: speed[PAIRS[j], "specbranch"] - speed[PAIRS[j], "specbranch:no-hrad"])
    p = PAIRS[j]
    finding(axes[1], f"{p.replace('-V6', '')}: without H-RAD ×{speed[p, 'specbranch:no-hrad']:.2f},\n"
            f"SpecBranch ×{speed[p, 'specbranch']:.2f} (exact)",
            (x[j] - 0.4 + (METHODS.index("specbranch:no-hrad") + 0.5) * width, speed[p, "specbranch:no-hrad"]),
            (0.02, 0.8))
    title(fig, ("shen2026", "liu2025"), f"SpecBranch vs PEARL vs SpS by alignment level (16 streams × {rounds:,} "
          "rounds per bar)")
    return fig


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, jobs, make_figure,
                                 full=dict(rounds=ROUNDS_FULL), quick=dict(rounds=ROUNDS_QUICK)))
