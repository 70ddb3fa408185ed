"""Figure: expected tokens per iteration and walltime improvement of standard speculative sampling.

Caption. (Left) Expected tokens emitted per iteration, E[τ] + 1, against the acceptance rate α
for draft lengths γ ∈ {1, 2, 4, 8}. Curves: the closed form (1 − α^{γ+1})/(1 − α)
(claim ``sd.expected_tokens``). Points: Monte Carlo means of i.i.d. iterations
(``spectheory.montecarlo.sd.simulate``, ``restart=True``) on order-0 pairs built so that
Σ_x min(p(x), q(x)) = α exactly (p = (1 − α/2, α/2), q = (α/2, 1 − α/2)), with 95% normal
confidence intervals. The grid (α × γ) runs as a sweep (``spectheory.sims.sweep``, job kind ``sd.mc``):
in this process by default, on local worker processes with ``--jobs N``, or on a Dask
cluster with ``--scheduler ADDRESS``; each point's seed derives from (seed, α, γ, n), so the
figure is the same whichever runs it. (Right) Walltime improvement over autoregressive decoding,
(1 − α^{γ+1})/((1 − α)(γc + 1)) (claim ``sd.walltime``), against γ at α = 0.8 for cost ratios
c ∈ {0.01, 0.05, 0.1, 0.2}; stars mark the optimal draft length γ* of each c.
"""
from __future__ import annotations

import numpy as np
from _figure import figure_main, finding, mc, plt, points, title

from spectheory.sims import sweep as sw
from spectheory.closed_forms import sd as cf
from spectheory.divergences import overlap
from spectheory.pairs import pair_from_tables

GAMMAS = (1, 2, 4, 8)
ALPHAS_MC = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
COSTS = (0.01, 0.05, 0.1, 0.2)
ALPHA_RIGHT = 0.8
GAMMA_MAX_RIGHT = 24
N_FULL, N_QUICK = 100_000, 3_000


def two_point_pair(alpha: float):
    """Order-0 pair over V = 2 with acceptance Σ min(p, q) = α exactly."""
    p = np.array([1.0 - alpha / 2, alpha / 2])
    q = p[::-1].copy()
    pair = pair_from_tables(p, q, order=0, name=f"two-point-alpha{alpha:g}")
    beta = float(overlap(pair.target.table[0], pair.draft.table[0]))
    assert abs(beta - alpha) < 1e-12, (alpha, beta)
    return pair


def mc_jobs(n_iter: int) -> list:
    """The α × γ grid of ``sd.mc`` jobs (i.i.d. iterations on the two-point pair of each α)."""
    for a in ALPHAS_MC:
        two_point_pair(a)  # asserts Σ min(p, q) = α for the pair the job builds
    return sw.grid("sd.mc", gamma=GAMMAS, alpha=ALPHAS_MC, n_iterations=[n_iter], restart=[True])


def make_figure(rows: list, n_iter: int):
    """``rows``: the table of :func:`mc_jobs` (run by ``_figure.figure_main``)."""
    sim = {g: points(rows, "sd.mc", "alpha", "mean_tokens", "se_tokens", gamma=g) for g in GAMMAS}
    fig, (axl, axr) = plt.subplots(1, 2, figsize=(11, 4.4), constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]

    # left: E[tokens per iteration] vs α
    grid = np.linspace(0.0, 1.0, 401)
    covered = total = 0
    for g, col in zip(GAMMAS, colors):
        axl.plot(grid, cf.expected_tokens(grid, g), color=col, lw=1.6, label=f"γ = {g}")
        a, m, h = sim[g]
        mc(axl, a, m, h, color=col)
        exact = cf.expected_tokens(a, g)
        covered += int(np.sum(np.abs(m - exact) <= h))
        total += a.size
    mc(axl, [], [], [], color="gray", label=f"Monte Carlo mean ± 95% CI\n(n = {n_iter:,} iterations per point)")
    axl.set_xlabel("acceptance rate α")
    axl.set_ylabel("E[tokens per iteration] = E[τ] + 1")
    axl.set_title(r"sd.expected_tokens:  closed form $(1-\alpha^{\gamma+1})\,/\,(1-\alpha)$ (lines)")
    axl.set_xlim(0, 1)
    axl.set_ylim(0.8, max(GAMMAS) + 1.3)
    axl.grid(alpha=0.3)
    axl.legend(loc="upper left", fontsize=8.5)

    # right: walltime improvement vs γ at α = 0.8
    gam = np.arange(1, GAMMA_MAX_RIGHT + 1)
    optima = {}
    for cc, col in zip(COSTS, colors):
        imp = np.array([cf.walltime_improvement(ALPHA_RIGHT, int(g), cc) for g in gam])
        i = int(np.argmax(imp))
        optima[cc] = (int(gam[i]), float(imp[i]))
        axr.plot(gam, imp, "-", lw=1.6, color=col, label=f"c = {cc:g}  (γ* = {gam[i]}, ×{imp[i]:.2f})")
        axr.plot(gam[i], imp[i], marker="*", ms=15, color=col, mec="black", mew=0.7, zorder=5)
        slower = np.flatnonzero(imp < 1.0)
        if slower.size:
            finding(axr, f"c = {cc:g}: slower than autoregressive\ndecoding from γ = {gam[slower[0]]}",
                    (gam[slower[0]], imp[slower[0]]), (0.6, 0.5))
    axr.axhline(1.0, color="gray", ls="--", lw=1)
    axr.text(GAMMA_MAX_RIGHT, 1.03, "autoregressive", ha="right", va="bottom", fontsize=8, color="gray")
    axr.set_xlabel("draft length γ")
    axr.set_ylabel("walltime improvement")
    axr.set_title(r"sd.walltime (closed form, no simulation):  $(1-\alpha^{\gamma+1})\,/\,((1-\alpha)(\gamma c+1))$,  "
                  + f"α = {ALPHA_RIGHT}", fontsize=9)
    axr.set_xlim(0, GAMMA_MAX_RIGHT + 1)
    axr.set_ylim(0.8, 5.6)
    axr.grid(alpha=0.3)
    axr.legend(loc="upper center", ncol=2, fontsize=8.5, title="★ = optimal draft length γ*", title_fontsize=8.5)

    title(fig, "leviathan2023", "standard speculative sampling (p target, q draft, γ draft length, α acceptance, "
          "c cost ratio)")
    return fig, [f"MC 95% CIs covering the closed form: {covered}/{total}",
                 "optimal γ at α = %g: %s" % (ALPHA_RIGHT, ", ".join(
                     f"c={cc:g}: γ*={g} (×{v:.3f})" for cc, (g, v) in optima.items()))]


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, mc_jobs, make_figure,
                                 full=dict(n_iter=N_FULL), quick=dict(n_iter=N_QUICK)))
