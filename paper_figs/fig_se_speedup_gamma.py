"""Figure (analogue of Fu et al. 2025, Fig. 6): SE speedup against the proposal length γ.

Caption. Speculative Ensemble (Alg. 1, γq = γ, γp = 1) on i.i.d. V = 50 pairs in three
settings as in Fig. 6: (a) WE λ = 0.5, comparable models (c = 0.8); (b) CD μ = 0.1, T = 0,
small proposer (c = 0.15); (c) CD μ = 0.1, T = 1 (c = 0.15). Solid: exact long-run speedup
of the alternating process (renewal–reward, closed_forms.se.alternating_speedup_iid); dashed:
the Thm 3.6 formula; points: Numba Monte Carlo, mean over streams ± 95% CI; the setting × γ
grid runs as a sweep of ``se.mc`` jobs (``spectheory.sims.sweep``, ``sims/jobs/se.py``).
"""
from __future__ import annotations

import numpy as np
from _figure import figure_main, finding, mc, plt, points, title

from spectheory.sims import sweep as sw
from spectheory.sims.jobs import se as se_jobs
from spectheory.closed_forms import se as cf

GAMMAS = tuple(range(1, 9))
STREAMS, TOKENS_FULL, TOKENS_QUICK = 32, 50_000, 2_000
WE_PAIR = dict(V=50, order=0, strength=0.3, pair_seed=4)
CD_PAIR = dict(V=50, order=0, strength=0.4, concentration=0.3, pair_seed=5)
#: (title, the setting's se.mc parameters: pair, ensemble, cost ratio c)
SETTINGS = (("(a) WE λ=0.5, c=0.8", dict(**WE_PAIR, ensemble="we", lam=0.5, c=0.8)),
            ("(b) CD μ=0.1, T=0, c=0.15", dict(**CD_PAIR, ensemble="cd", mu=0.1, temperature=0.0, c=0.15)),
            ("(c) CD μ=0.1, T=1, c=0.15", dict(**CD_PAIR, ensemble="cd", mu=0.1, temperature=1.0, c=0.15)))


def mc_jobs(tokens: int) -> list:
    """The setting × γ grid of ``se.mc`` jobs (γq = γ, γp = 1)."""
    return [j for _, setting in SETTINGS
            for j in sw.grid("se.mc", **setting, gamma_q=GAMMAS, gamma_p=1, n_streams=STREAMS,
                             tokens_per_stream=tokens)]


def make_figure(rows: list, tokens: int):
    """``rows``: the table of :func:`mc_jobs` (run by ``_figure.figure_main``)."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4), constrained_layout=True)
    covered = total = 0
    g = np.array(GAMMAS)
    for ax, (name, setting) in zip(axes, SETTINGS):
        c = setting["c"]
        M = se_jobs.models(setting)
        aq, ap = float(M.acceptance(0)[0]), float(M.acceptance(1)[0])
        proc = np.array([cf.alternating_speedup_iid(aq, ap, int(x), 1, c) for x in g])
        thm = np.array([cf.thm3_6_speedup(aq, int(x), 1, c) for x in g])
        pts = np.column_stack(points(rows, "se.mc", "gamma_q", "mean_speedup", "se_speedup", **setting)[1:])
        covered += int(np.sum(np.abs(pts[:, 0] - proc) <= pts[:, 1]))
        total += g.size
        ax.plot(g, proc, "-", color="tab:blue", lw=1.8, label="SE process (renewal–reward)")
        ax.plot(g, thm, "--", color="tab:orange", lw=1.3, label="Thm 3.6 formula")
        mc(ax, g, pts[:, 0], pts[:, 1], color="tab:blue", label=f"Monte Carlo ± 95% CI ({STREAMS}×{tokens:,})")
        ax.axhline(1.0, color="gray", lw=1, ls=":")
        slower = np.flatnonzero(proc < 1.0)
        if slower.size:
            i = slower[0]
            finding(ax, f"slower than the vanilla\nensemble from γ = {g[i]}", (g[i], proc[i]), (0.5, 0.72))
        gap = np.abs(thm - proc)
        if gap.max() > 0.1:
            i = int(np.argmax(gap))
            finding(ax, f"Thm 3.6 formula off the\nprocess by {gap[i]:.2f} at γ = {g[i]}", (g[i], thm[i]),
                    (0.06, 0.08) if slower.size else (0.3, 0.3))
        ax.set_title(f"{name}  (α_q={aq:.2f}, α_p={ap:.2f})", fontsize=9.5)
        ax.set_xlabel("γ (= γq; γp = 1)")
    axes[0].set_ylabel("speedup over the vanilla ensemble")
    axes[0].legend(loc="lower left")
    title(fig, "fu2025", "Speculative Ensemble speedup against the proposal length γ (Fig. 6 analogue)")
    return fig, [f"MC 95% CIs covering the process curve: {covered}/{total}"]


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, mc_jobs, make_figure,
                                 full=dict(tokens=TOKENS_FULL), quick=dict(tokens=TOKENS_QUICK)))
