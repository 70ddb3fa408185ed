"""Figure: SpecBranch's Theorem 1 (derived) — time per token of parallel SD against γ.

Caption. Parallel SD with rollback (the PSD model of docs/sb.md: the next draft overlaps
verification, a rejection invalidates it and costs a serial redraft) on two-token i.i.d. pairs
of acceptance α ∈ {0.5, 0.8, 0.95}, for c = T_p/T_q ∈ {2, 4, 8} (one panel each; time unit: one
draft call). Lines: the derived T(γ, α, c) = max(γ, c)/S_γ(α) + γ(1 − α); points: the Numba
pipeline kernel (16 streams, mean ± 95% CI), a sweep of ``sb.mc`` jobs; stars: the real-γ
minimiser (always ≤ c, dotted vertical line at γ = c); gray dashes: the ideal max(γ, c)/γ.
"""
from __future__ import annotations

import numpy as np
from _figure import figure_main, mc, plt, points, title

from spectheory.sims import sweep as sw
from spectheory.closed_forms import sb as cf

ALPHAS = (0.5, 0.8, 0.95)
CS = (2.0, 4.0, 8.0)
GAMMAS = tuple(range(1, 13))
ROUNDS_FULL, ROUNDS_QUICK = 20_000, 1_500
COLORS = ("tab:red", "tab:blue", "tab:green")


def mc_jobs(rounds: int) -> list:
    return sw.grid("sb.mc", alpha=ALPHAS, method="psd", gamma=GAMMAS, c=CS, n_rounds=rounds)


def make_figure(rows: list, rounds: int):
    fig, axes = plt.subplots(1, len(CS), figsize=(13.5, 5.0), constrained_layout=True)
    covered = total = 0
    g = np.linspace(1, max(GAMMAS), 400)
    for ax, c in zip(axes, CS):
        ax.plot(g, cf.ideal_parallel_latency(g, c), "--", color="0.6", lw=1, label="ideal max(γ, c)/γ (α = 1)")
        for a, col in zip(ALPHAS, COLORS):
            theory = cf.psd_latency(a, g, c)
            ax.plot(g, theory, "-", color=col, lw=1.6, label=f"Thm 1 (derived), α = {a}")
            x, m, h = points(rows, "sb.mc", "gamma", "latency", "se_latency", alpha=a, c=c)
            want = cf.psd_latency(a, x, c)
            covered += int(np.sum(np.abs(m - want) <= h))
            total += x.size
            mc(ax, x, m, h, color=col, ms=3.5, label=f"simulation ± 95% CI, α = {a}")
            gs = cf.psd_minimiser(a, c)
            ax.plot([gs], [cf.psd_latency(a, gs, c)], "*", ms=13, color=col, mec="black", mew=0.6,
                    label="Thm 1's real-γ minimiser γ* (one per α; ≤ c)" if a == ALPHAS[0] else None)
        ax.axvline(c, color="black", ls=":", lw=1, label="γ = c")
        ax.set_title(f"c = T_p/T_q = {c:g}")
        ax.set_xlabel("draft length γ")
        ax.set_ylim(0, None)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("time per token (draft calls)")
    handles, labels = axes[-1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=5, fontsize=7.5)
    title(fig, "shen2026", f"parallel SD with rollback, Theorem 1 (derived) vs simulation (16 streams × {rounds:,} "
          "rounds); every minimiser γ* ≤ c")
    return fig, [f"MC 95% CIs covering Theorem 1: {covered}/{total}"]


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, mc_jobs, make_figure,
                                 full=dict(rounds=ROUNDS_FULL), quick=dict(rounds=ROUNDS_QUICK)))
