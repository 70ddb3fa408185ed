"""Figure: sensitivity of SpecBranch to the confidence threshold ε, H-RAD vs a pure threshold.

Caption. SpecBranch (k_max = 4, γ = 4, c = T_p/T_q = 4) with H-RAD (trained on the pair;
all-reject / confidence / all-accept, ε used only for the 'confidence' signal) and with the pure
confidence threshold (the "w/o H-RAD" ablation), against ε, on weakly and strongly aligned V = 6
pairs (one panel each). Lines: exact long-run speedup over autoregressive decoding (``sb.exact``);
points: the Numba pipeline kernel (16 streams, mean ± 95% CI, ``sb.mc``); dotted: PEARL.
"""
from __future__ import annotations

from _figure import figure_main, plt, points, value

from sims import sweep as sw

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
    fig, axes = plt.subplots(1, len(PAIRS), figsize=(15, 4.0), constrained_layout=True, sharey=False)
    for ax, pair in zip(axes, PAIRS):
        for m, lab, col in POLICIES:
            exact = [value(rows, "sb.exact", "speedup_ar", pair=pair, method=m, eps=e) for e in EPS]
            ax.plot(EPS, exact, "-", color=col, lw=1.6, label=f"{lab} (exact)")
            x, y, h = points(rows, "sb.mc", "eps", "speedup_ar", "se_speedup_ar", pair=pair, method=m)
            ax.errorbar(x, y, yerr=h, fmt="o", ms=3.5, color=col, mfc="white", capsize=2,
                        label=f"{lab} (simulation ± 95% CI)")
        pearl = value(rows, "sb.exact", "speedup_ar", pair=pair, method="pearl")
        ax.axhline(pearl, color="0.4", ls=":", lw=1, label="PEARL (exact)")
        ax.set_title(pair.replace("-V6", ""), fontsize=10)
        ax.set_xlabel("confidence threshold ε")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"speedup over AR (γ = {GAMMA}, c = {C:g})")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"ε sensitivity: H-RAD vs a pure confidence threshold (16 streams × {rounds:,} rounds per point)",
                 fontsize=10)
    return fig


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, jobs, make_figure,
                                 full=dict(rounds=ROUNDS_FULL), quick=dict(rounds=ROUNDS_QUICK)))
