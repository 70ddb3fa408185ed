"""Figure: block efficiency against γ and acceptance against K for multi-draft verification.

Caption. Rows: a weakly (noise mixing ε = 0.7) and a strongly (ε = 0.1) aligned first-order
Markov pair over V = 3 tokens (``spectheory.pairs.aligned_pair``). (Left) Block efficiency
BE = E[τ] + 1 of one iteration from state 0 against the draft length γ for token-level SD,
SpecTr-GBV (Alg. 1 as printed) with K = 2 drafts and the true optimum for K = 2 i.i.d. drafts
(LP over all couplings, HiGHS). (Middle) Every method's BE minus SD's, so that methods whose
curves coincide stay apart: also K-SEQ (SpecTr), GBV and Lemma 5.1's bound + 1 (dashed) —
Lin et al.'s Tables 3 and 5 as a plot; where SpecTr-GBV falls below SD it is marked. Lines:
exact engine; markers: Monte Carlo means of the Numba kernels (K-SEQ and SpecTr-GBV) with 95%
intervals, offset sideways a little to stay apart. (Right) Acceptance rate E[τ]/γ against K at γ = 2 for
K-SEQ and SpecTr-GBV (Lin et al. 2026, Fig. 2a), with Lemma 5.1's bound / γ. Every point (exact,
LP and Monte Carlo) is a job of one sweep (``multidraft.exact``, ``multidraft.mc``;
``sims/jobs/multidraft.py``).
"""
from __future__ import annotations

import numpy as np
from _figure import Z95, figure_main, finding, mc, pick, plt, title, value

from spectheory.sims import sweep as sw

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
#: one colour per method in every panel; the absolute panel shows these (the rest sit on top of
#: them when the pair is strongly aligned, so they are read against SD in the middle panel)
COLORS = {"sd": "0.25", "k-seq": "tab:orange", "gbv": "tab:green", "spectr-gbv": "tab:red",
          "lp-optimum": "tab:purple", "lemma51-bound": "tab:brown"}
MARKERS = {"spectr-gbv": "o", "k-seq": "s"}
ABSOLUTE = ("sd", "spectr-gbv", "lp-optimum")


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
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.2), constrained_layout=True)
    for row, (align, pair) in enumerate(PAIRS):
        exact = {m: [value(rows, "multidraft.exact", "expected_tau", **pair, method=m, K=K, gamma=g) + 1
                     for g in gammas] for _, m, K in BE_LINES}
        sd = exact["sd"]
        mcs = {m: pick(rows, "multidraft.mc", **pair, rule=m) for m in MC_RULES}
        ax_abs, ax_diff, ax_k = axes[row]
        for name, method, _ in BE_LINES:
            ls = "--" if "bound" in name else "-"
            if method in ABSOLUTE:
                ax_abs.plot(gammas, exact[method], ls, color=COLORS[method], lw=1.6, label=f"{name} (exact)")
            ax_diff.plot(gammas, [e - s for e, s in zip(exact[method], sd)], ls, color=COLORS[method], lw=1.6,
                         label=f"{name} (exact)")
        for i, (method, found) in enumerate(mcs.items()):
            g = [r["gamma"] for r in found]
            y = np.array([r["mean_tokens"] for r in found])
            half = Z95 * np.array([r["se_tokens"] for r in found])
            label = f"{dict((m, n) for n, m, _ in BE_LINES)[method]}: Monte Carlo ± 95% CI"
            if method in ABSOLUTE:
                mc(ax_abs, g, y, half, color=COLORS[method], marker=MARKERS[method], label=label)
            mc(ax_diff, g, y - np.array([sd[gammas.index(x)] for x in g]), half, color=COLORS[method],
               marker=MARKERS[method], dx=0.04 * (2 * i - 1), label=label)
        gap = [e - s for e, s in zip(exact["spectr-gbv"], sd)]
        worst = int(np.argmin(gap))
        if gap[worst] < -1e-9:
            finding(ax_abs, f"SpecTr-GBV below SD\n(Δ = {gap[worst]:+.3f} at γ = {gammas[worst]})",
                    (gammas[worst], exact["spectr-gbv"][worst]), (0.45, 0.12))
        others = [e - s for m in exact if m != "spectr-gbv" for e, s in zip(exact[m], sd)]
        spread = max(others) - min(others)
        if gap[worst] < min(others) - 3 * spread:  # zoom on the rest; SpecTr-GBV is read on the left
            ax_diff.set_ylim(min(others) - 0.25 * spread, max(others) + 0.6 * spread)
            ax_diff.text(0.98, 0.03, f"SpecTr-GBV off scale below: Δ = {gap[worst]:+.3f} at γ = {gammas[worst]}",
                         transform=ax_diff.transAxes, ha="right", va="bottom", fontsize=7.5, color=COLORS["spectr-gbv"])
        ax_diff.axhline(0.0, color=COLORS["sd"], lw=1.0)
        for ax in (ax_abs, ax_diff):
            ax.set_xlabel("draft length γ")
            ax.set_xticks(gammas)
        ax_abs.set_ylabel("block efficiency E[τ] + 1")
        ax_abs.set_title(f"{align}ly aligned pair (V = 3, order 1): block efficiency")
        ax_abs.legend(loc="upper left")
        ax_diff.set_ylabel("block efficiency − SD's")
        ax_diff.set_title(f"{align}ly aligned: every method against SD (0 = SD)")
        ax_diff.legend(loc="upper left", fontsize=6.5)
        acc = {m: [value(rows, "multidraft.exact", "expected_tau", **pair, method=m, gamma=GAMMA_K, K=K) / GAMMA_K
                   for K in Ks] for _, m in K_LINES}
        for name, method in K_LINES:
            ax_k.plot(Ks, acc[method], "--" if "bound" in name else "-", color=COLORS[method], lw=1.6,
                      label=f"{name} (exact)")
        drop = acc["spectr-gbv"]
        if drop[-1] < drop[0] - 1e-9:
            finding(ax_k, "SpecTr-GBV's acceptance falls\nas drafts are added", (Ks[-1], drop[-1]), (0.45, 0.5))
        ax_k.set_xlabel("number of drafts K")
        ax_k.set_ylabel(f"acceptance rate E[τ]/γ (γ = {GAMMA_K})")
        ax_k.set_title(f"{align}ly aligned: acceptance against K")
        ax_k.set_xticks(Ks)
        ax_k.legend(loc="lower left" if row else "upper left")
    title(fig, ("lin2026", "sun2023"), "multi-draft verification, exact engine (lines) and Monte Carlo "
          "(markers, 95% CI)")
    return fig


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, grid_jobs, make_figure, dpi=110,
                                 full=dict(gammas=(1, 2, 3), Ks=(1, 2, 3, 4, 5), n=100_000),
                                 quick=dict(gammas=(1, 2), Ks=(1, 2, 3), n=3_000)))
