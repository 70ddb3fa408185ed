"""Figure: block efficiency against γ and acceptance against K for multi-draft verification.

Caption. Rows: a weakly (noise mixing ε = 0.7) and a strongly (ε = 0.1) aligned first-order
Markov pair over V = 3 tokens (``spectheory.pairs.aligned_pair``). (Left) Block efficiency
BE = E[τ] + 1 of one iteration from state 0 against the draft length γ for token-level SD,
K-SEQ (SpecTr), GBV, SpecTr-GBV (Alg. 1 as printed) with K = 2 drafts, the true optimum for
K = 2 i.i.d. drafts (LP over all couplings, HiGHS) and Lemma 5.1's bound + 1 (dashed) —
seed 003's Tables 3 and 5 as a plot. Lines: exact engine; markers: Monte Carlo means of the
Numba kernels with 95% intervals. (Right) Acceptance rate E[τ]/γ against K at γ = 2 for
K-SEQ and SpecTr-GBV (seed 003 Fig. 2a), with Lemma 5.1's bound / γ.

Usage::

    python paper_figs/fig_multidraft_be.py [--out PATH] [--quick] [--seed N]
"""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cli import figure_parser, save_figure  # noqa: E402
import numpy as np  # noqa: E402

from spectheory.closed_forms import multidraft as cf  # noqa: E402
from spectheory.closed_forms.optimum import lp_optimum  # noqa: E402
from spectheory.exact import multidraft as ex  # noqa: E402
from spectheory.montecarlo import multidraft as mc  # noqa: E402
from spectheory.pairs import aligned_pair  # noqa: E402
from spectheory.rng import derive_seed  # noqa: E402
from spectheory.rules import multidraft as R  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent / "out" / "fig_multidraft_be.png"
K_BE = 2
GAMMA_K = 2


def main(argv=None) -> Path:
    a = figure_parser(__doc__, DEFAULT_OUT, "γ ≤ 2, K ≤ 3 and 3,000 MC iterations per point").parse_args(argv)
    gammas = (1, 2) if a.quick else (1, 2, 3)
    Ks = (1, 2, 3) if a.quick else (1, 2, 3, 4, 5)
    n = 3_000 if a.quick else 100_000
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for row, align in enumerate(("weak", "strong")):
        pair = aligned_pair(3, 1, align, seed=40 + row)
        ax = axes[row, 0]
        curves = {"SD": [], f"K-SEQ (K={K_BE})": [], "GBV": [], f"SpecTr-GBV (K={K_BE})": [],
                  f"optimum (LP, K={K_BE})": [], "Lemma 5.1 bound": []}
        for g in gammas:
            tree = cf.block_tree(pair, g, 0)
            curves["SD"].append(cf.sd_expected_tau(tree) + 1)
            curves[f"K-SEQ (K={K_BE})"].append(ex.expected_tau(tree, K_BE, R.KSEQ) + 1)
            curves["GBV"].append(ex.expected_tau(tree, 1, R.GBV) + 1)
            curves[f"SpecTr-GBV (K={K_BE})"].append(ex.expected_tau(tree, K_BE, R.SPECTR_GBV) + 1)
            curves[f"optimum (LP, K={K_BE})"].append(lp_optimum(tree, K_BE) + 1)
            curves["Lemma 5.1 bound"].append(cf.lemma51_bound(tree, K_BE) + 1)
        for name, ys in curves.items():
            ax.plot(gammas, ys, "--" if "bound" in name else "-", marker="o" if "LP" in name else None,
                    label=name, lw=1.5)
        for name, rule, K in (("SpecTr-GBV", R.SPECTR_GBV, K_BE), ("K-SEQ", R.KSEQ, K_BE)):
            for g in gammas:
                res = mc.simulate(pair, g, K, n, 1, rule=rule, seed=derive_seed(a.seed, align, name, str(g)))
                m, se = res.tau.mean() + 1, res.tau.std(ddof=1) / np.sqrt(n)
                ax.errorbar(g, m, yerr=1.96 * se, fmt="x", color="k", capsize=3)
        ax.set_xlabel("draft length γ")
        ax.set_ylabel("block efficiency E[τ] + 1")
        ax.set_title(f"{align}ly aligned pair (V = 3, order 1)")
        ax.set_xticks(gammas)
        ax.legend(fontsize=7)
        ax = axes[row, 1]
        tree = cf.block_tree(pair, GAMMA_K, 0)
        for name, rule in (("K-SEQ", R.KSEQ), ("SpecTr-GBV", R.SPECTR_GBV)):
            ax.plot(Ks, [ex.expected_tau(tree, K, rule) / GAMMA_K for K in Ks], "-o", label=name)
        ax.plot(Ks, [cf.lemma51_bound(tree, K) / GAMMA_K for K in Ks], "--", label="Lemma 5.1 bound / γ")
        ax.set_xlabel("number of drafts K")
        ax.set_ylabel(f"acceptance rate E[τ]/γ (γ = {GAMMA_K})")
        ax.set_xticks(Ks)
        ax.legend(fontsize=8)
    fig.suptitle("Multi-draft verification (seed 003): exact engine (lines), Monte Carlo (×, 95% CI)")
    fig.tight_layout()
    return save_figure(fig, a.out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1:])
