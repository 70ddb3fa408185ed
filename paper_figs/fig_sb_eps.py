"""Figure: sensitivity of SpecBranch to the confidence threshold ε, H-RAD vs a pure threshold.

Caption. SpecBranch (k_max = 4, γ = 4, c = T_p/T_q = 4) with H-RAD (trained on the pair;
all-reject / confidence / all-accept, ε used only for the 'confidence' signal) and with the pure
confidence threshold (the "w/o H-RAD" ablation), against ε, on weakly and strongly aligned V = 6
pairs (one panel each). Lines: exact long-run speedup over autoregressive decoding (``sb.exact``);
points: the Numba pipeline kernel (16 streams, mean ± 95% CI, ``sb.mc``); dotted: PEARL.
"""
from __future__ import annotations

from _figure import figure_main, finding, mc, plt, points, title, value

import numpy as np

from spectheory.sims import sweep as sw

PAIRS = ("bimodal-weak-V6", "bimodal-strong-V6", "mix-weak-V6", "mix-strong-V6")
EPS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
GAMMA, C = 4, 4.0
ROUNDS_FULL, ROUNDS_QUICK = 20_000, 1_500
POLICIES = (("specbranch", "H-RAD", "tab:blue"), ("specbranch:no-hrad", "pure confidence threshold", "tab:red"))


def jobs(rounds: int) -> list:
    out = []
    for m, _, _ in POLICIES:
        out += sw.grid("sb.mc", pair=PAIRS, method=m, gamma=GAMMA, c=C, eps=EPS, n_rounds=rounds)
        out += sw.grid("sb.exact", pair=PAIRS, method=m, gamma=GAMMA, c=C, eps=EPS)
    return out + sw.grid("sb.exact", pair=PAIRS, method="pearl", gamma=GAMMA, c=C)


def make_figure(rows: list, rounds: int):
    fig, axes = plt.subplots(1, len(PAIRS), figsize=(15, 4.6), constrained_layout=True, sharey=False)
    for ax, pair in zip(axes, PAIRS):
        for m, lab, col in POLICIES:
            exact = [value(rows, "sb.exact", "speedup_ar", pair=pair, method=m, eps=e) for e in EPS]
            ax.plot(EPS, exact, "-", color=col, lw=1.6, label=f"{lab} (exact)")
            x, y, h = points(rows, "sb.mc", "eps", "speedup_ar", "se_speedup_ar", pair=pair, method=m)
            mc(ax, x, y, h, color=col, ms=3.5, label=f"{lab} (simulation ± 95% CI)")
        pearl = value(rows, "sb.exact", "speedup_ar", pair=pair, method="pearl")
        ax.axhline(pearl, color="0.4", ls=":", lw=1, label="PEARL (exact)")
        ax.set_title(pair.replace("-V6", ""), fontsize=10)
        ax.set_xlabel("confidence threshold ε")
    thr = [value(rows, "sb.exact", "speedup_ar", pair=PAIRS[-1], method=POLICIES[1][0], eps=e) for e in EPS]
    hrad = [value(rows, "sb.exact", "speedup_ar", pair=PAIRS[-1], method=POLICIES[0][0], eps=e) for e in EPS]
    i = int(np.argmax(np.array(hrad) - np.array(thr)))
    finding(axes[-1], f"a pure threshold falls to AR\nspeed as ε grows; H-RAD stays\nflat (×{hrad[i]:.2f} vs ×{thr[i]:.2f} "
            f"at ε = {EPS[i]})", (EPS[i], thr[i]), (0.35, 0.42))
    axes[0].set_ylabel(f"speedup over AR (γ = {GAMMA}, c = {C:g})")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=5)
    title(fig, "shen2026", f"SpecBranch's sensitivity to the confidence threshold ε: H-RAD vs a pure threshold "
          f"(16 streams × {rounds:,} rounds per point)")
    return fig


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, jobs, make_figure,
                                 full=dict(rounds=ROUNDS_FULL), quick=dict(rounds=ROUNDS_QUICK)))
