"""Figure: block efficiency against γ and acceptance against K for multi-draft verification.

Caption. Rows: a weakly (noise mixing ε = 0.7) and a strongly (ε = 0.1) aligned first-order
Markov pair over V = 3 tokens (``spectheory.pairs.aligned_pair``). (Left) Block efficiency
BE = E[τ] + 1 of one iteration from state 0 against the draft length γ for token-level SD,
K-SEQ (SpecTr), GBV, SpecTr-GBV (Alg. 1 as printed) with K = 2 drafts, the true optimum for
K = 2 i.i.d. drafts (LP over all couplings, HiGHS) and Lemma 5.1's bound + 1 (dashed) —
Lin et al.'s Tables 3 and 5 as a plot. Lines: exact engine; markers: Monte Carlo means of the
Numba kernels with 95% intervals. (Right) Acceptance rate E[τ]/γ against K at γ = 2 for
K-SEQ and SpecTr-GBV (Lin et al. 2026, Fig. 2a), with Lemma 5.1's bound / γ. Every point (exact,
LP and Monte Carlo) is a job of one sweep (``multidraft.exact``, ``multidraft.mc``;
``sims/jobs/multidraft.py``).
"""
from __future__ import annotations

from _figure import figure_main, pick, plt, value

from sims import sweep as sw

K_BE = 2
GAMMA_K = 2
#: rows of the figure: (alignment, the pair's parameters: aligned_pair(3, 1, alignment, seed))
PAIRS = tuple((align, dict(V=3, order=1, alignment=align, pair_seed=40 + row))
              for row, align in enumerate(("weak", "strong")))
#: left panel, exact lines: (label, method, K)
BE_LINES = (("SD", "sd", 1), (f"K-SEQ (K={K_BE})", "k-seq", K_BE), ("GBV", "gbv", 1),
            (f"SpecTr-GBV (K={K_BE})", "spectr-gbv", K_BE), (f"optimum (LP, K={K_BE})", "lp-optimum", K_BE),
            ("Lemma 5.1 bound", "lemma51-bound", K_BE))
MC_RULES = ("spectr-gbv", "k-seq")
#: right panel, exact lines against K at γ = GAMMA_K: (label, method)
K_LINES = (("K-SEQ", "k-seq"), ("SpecTr-GBV", "spectr-gbv"), ("Lemma 5.1 bound / γ", "lemma51-bound"))


def grid_jobs(gammas, Ks, n: int) -> list:
    """Every point of the figure: exact/LP lines (both panels) and the Monte Carlo markers."""
    jobs = []
    for _, pair in PAIRS:
        for _, method, K in BE_LINES:
            jobs += sw.grid("multidraft.exact", **pair, method=method, K=K, gamma=gammas)
        jobs += sw.grid("multidraft.exact", **pair, method=[m for _, m in K_LINES], gamma=GAMMA_K, K=Ks)
        jobs += sw.grid("multidraft.mc", **pair, rule=MC_RULES, K=K_BE, gamma=gammas, n_runs=n)
    return jobs


def make_figure(rows: list, gammas, Ks):
    """``rows``: the table of :func:`grid_jobs` (run by ``_figure.figure_main``)."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for row, (align, pair) in enumerate(PAIRS):
        ax = axes[row, 0]
        for name, method, K in BE_LINES:
            ys = [value(rows, "multidraft.exact", "expected_tau", **pair, method=method, K=K, gamma=g) + 1
                  for g in gammas]
            ax.plot(gammas, ys, "--" if "bound" in name else "-", marker="o" if "LP" in name else None,
                    label=name, lw=1.5)
        for r in pick(rows, "multidraft.mc", **pair):
            ax.errorbar(r["gamma"], r["mean_tokens"], yerr=1.96 * r["se_tokens"], fmt="x", color="k", capsize=3)
        ax.set_xlabel("draft length γ")
        ax.set_ylabel("block efficiency E[τ] + 1")
        ax.set_title(f"{align}ly aligned pair (V = 3, order 1)")
        ax.set_xticks(gammas)
        ax.legend(fontsize=7)
        ax = axes[row, 1]
        for name, method in K_LINES:
            ax.plot(Ks, [value(rows, "multidraft.exact", "expected_tau", **pair, method=method, gamma=GAMMA_K, K=K)
                         / GAMMA_K for K in Ks], "--" if "bound" in name else "-o", label=name)
        ax.set_xlabel("number of drafts K")
        ax.set_ylabel(f"acceptance rate E[τ]/γ (γ = {GAMMA_K})")
        ax.set_xticks(Ks)
        ax.legend(fontsize=8)
    fig.suptitle("Multi-draft verification (Lin et al. 2026): exact engine (lines), Monte Carlo (×, 95% CI)")
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, grid_jobs, make_figure, dpi=110,
                                 full=dict(gammas=(1, 2, 3), Ks=(1, 2, 3, 4, 5), n=100_000),
                                 quick=dict(gammas=(1, 2), Ks=(1, 2, 3), n=3_000)))
