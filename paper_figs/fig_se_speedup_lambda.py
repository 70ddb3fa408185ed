"""Figure (analogue of Fu et al. 2025, Fig. 4): SE speedup against the ensemble weight λ (WE), both proposers.

Caption. Speculative Ensemble (Alg. 1) on an i.i.d. V = 50 pair of comparable models
(c = t_q/t_p = 0.8), weighted ensemble r = λq + (1 − λ)p. Blue: q proposes first (γq = 3,
γp = 1); green: p proposes first (γp = 3, γq = 1); the shaded band is the better of the two.
Solid curves: the exact long-run speedup of the alternating process over the vanilla ensemble
(closed_forms.se.alternating_speedup_iid, renewal–reward over the alternation's three
configurations). Dashed: the paper's Thm 3.6 one-cycle formula (q first, α = α_q). Points:
Numba Monte Carlo (montecarlo.se.simulate_streams), mean over independent streams ± 95% CI;
the λ × proposer grid runs as a sweep of ``se.mc`` jobs (``spectheory.sims.sweep``, ``sims/jobs/se.py``).
"""
from __future__ import annotations

import numpy as np
from _figure import figure_main, finding, mc, plt, points, title

from spectheory.sims import sweep as sw
from spectheory.sims.jobs import se as se_jobs
from spectheory.closed_forms import se as cf

C = 0.8
GAMMA = 3
LAMBDAS_MC = (0.1, 0.3, 0.5, 0.7, 0.9)
STREAMS, TOKENS_FULL, TOKENS_QUICK = 32, 50_000, 2_000
PAIR = dict(V=50, order=0, strength=0.3, pair_seed=4)   # i.i.d. V = 50, draft = target mixed with noise
#: the two proposers: q first (γq = GAMMA, γp = 1) and p first (γq = 1, γp = GAMMA)
PROPOSERS = {"q": dict(gamma_q=GAMMA, gamma_p=1, first="q"), "p": dict(gamma_q=1, gamma_p=GAMMA, first="p")}


def models(lam: float):
    return se_jobs.models({**PAIR, "ensemble": "we", "lam": lam})


def curves(lams):
    q_first, p_first, formula = [], [], []
    for lam in lams:
        M = models(lam)
        aq, ap = float(M.acceptance(0)[0]), float(M.acceptance(1)[0])
        q_first.append(cf.alternating_speedup_iid(aq, ap, GAMMA, 1, C))
        # p first: roles swap, time measured in units of the (new) verifier q
        p_first.append(cf.alternating_speedup_iid(ap, aq, GAMMA, 1, 1.0 / C))
        formula.append(cf.thm3_6_speedup(aq, GAMMA, 1, C))
    return np.array(q_first), np.array(p_first), np.array(formula)


def mc_jobs(tokens: int) -> list:
    """The λ × proposer grid of ``se.mc`` jobs."""
    return [j for alg in PROPOSERS.values()
            for j in sw.grid("se.mc", **PAIR, ensemble="we", lam=LAMBDAS_MC, **alg, c=C,
                             n_streams=STREAMS, tokens_per_stream=tokens)]


def make_figure(rows: list, tokens: int):
    """``rows``: the table of :func:`mc_jobs` (run by ``_figure.figure_main``)."""
    grid = np.linspace(0.02, 0.98, 97)
    qf, pf, thm = curves(grid)
    sim = {who: np.column_stack(points(rows, "se.mc", "lam", "mean_speedup", "se_speedup", **alg)[1:])
           for who, alg in PROPOSERS.items()}
    fig, ax = plt.subplots(figsize=(7, 4.4), constrained_layout=True)
    ax.fill_between(grid, 1.0, np.maximum(qf, pf), color="0.85", label="best of the two proposers")
    ax.plot(grid, qf, color="tab:blue", lw=1.8, label=f"q first (γq={GAMMA}, γp=1): process")
    ax.plot(grid, pf, color="tab:green", lw=1.8, label=f"p first (γp={GAMMA}, γq=1): process")
    ax.plot(grid, thm, color="tab:blue", lw=1.2, ls="--", label="Thm 3.6 formula (q first)")
    lam = np.array(LAMBDAS_MC)
    mc(ax, lam, sim["q"][:, 0], sim["q"][:, 1], color="tab:blue",
       label=f"q first: Monte Carlo ± 95% CI ({STREAMS}×{tokens:,} tokens)")
    mc(ax, lam, sim["p"][:, 0], sim["p"][:, 1], color="tab:green", marker="s",
       label=f"p first: Monte Carlo ± 95% CI ({STREAMS}×{tokens:,} tokens)")
    cross = np.flatnonzero(np.diff(np.sign(qf - pf)))
    if cross.size:
        i = cross[0]
        finding(ax, f"the better proposer switches at λ ≈ {grid[i]:.2f}:\np first below, q first above",
                (grid[i], qf[i]), (0.3, 0.88))
    ax.axhline(1.0, color="gray", lw=1, ls=":")
    ax.set_xlabel("λ (weight of q in r = λq + (1−λ)p)")
    ax.set_ylabel("speedup over the vanilla ensemble")
    title(ax, "fu2025", f"SE speedup against λ (Fig. 4 analogue; WE, i.i.d. V=50, c = {C})", fontsize=9.5)
    ax.legend(loc="lower center")
    covered = int(np.sum(np.abs(sim["q"][:, 0] - np.interp(lam, grid, qf)) <= sim["q"][:, 1])
                  + np.sum(np.abs(sim["p"][:, 0] - np.interp(lam, grid, pf)) <= sim["p"][:, 1]))
    return fig, [f"MC 95% CIs covering the process curve: {covered}/{2 * lam.size}"]


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, mc_jobs, make_figure,
                                 full=dict(tokens=TOKENS_FULL), quick=dict(tokens=TOKENS_QUICK)))
