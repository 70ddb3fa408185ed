"""Figure (analogue of Fu et al. 2025, Fig. 5): SE speedup against the contrastive weight μ (CD), T ∈ {0, 1}.

Caption. Contrastive ensemble r = softmax((l_p − μ l_q)/T) (T = 0: argmax limit) of an i.i.d.
V = 50 pair with a small proposer (c = t_q/t_p = 0.15). Solid: exact long-run speedup of
Speculative Ensemble (Alg. 1, γq = 5, γp = 1) over the vanilla ensemble (renewal–reward,
closed_forms.se.alternating_speedup_iid); dotted: SD on the ensemble (q proposes γ = 5, the
ensemble verifies with a bonus from r; one call of each member per iteration); dashed: the
Thm 3.6 formula; thin: SE with γq = γp = 1 (never slower, Cor 3.7; at T = 0 the proposer's
acceptance is low and γq = 5 is slower than the vanilla ensemble). Points: Numba Monte Carlo of SE, mean over streams ± 95% CI;
the μ × T grid runs as a sweep of ``se.mc`` jobs (``spectheory.sims.sweep``, ``sims/jobs/se.py``).
"""
from __future__ import annotations

import numpy as np
from _figure import figure_main, finding, mc, plt, points, title

from spectheory.sims import sweep as sw
from spectheory.sims.jobs import se as se_jobs
from spectheory.closed_forms import sd as cf_sd
from spectheory.closed_forms import se as cf

C, GAMMA = 0.15, 5
TEMPS = (0.0, 1.0)
MUS_MC = (0.1, 0.2, 0.3, 0.4, 0.5)
STREAMS, TOKENS_FULL, TOKENS_QUICK = 32, 50_000, 2_000
PAIR = dict(V=50, order=0, strength=0.4, concentration=0.3, pair_seed=5)


def models(mu: float, T: float):
    return se_jobs.models({**PAIR, "ensemble": "cd", "mu": mu, "temperature": T})


def mc_jobs(tokens: int) -> list:
    """The T × μ grid of ``se.mc`` jobs (SE, γq = GAMMA, γp = 1)."""
    return sw.grid("se.mc", **PAIR, ensemble="cd", temperature=TEMPS, mu=MUS_MC, gamma_q=GAMMA, gamma_p=1,
                   c=C, n_streams=STREAMS, tokens_per_stream=tokens)


def curves(mus, T):
    se, sd, thm, se1 = [], [], [], []
    for mu in mus:
        M = models(mu, T)
        aq, ap = float(M.acceptance(0)[0]), float(M.acceptance(1)[0])
        se.append(cf.alternating_speedup_iid(aq, ap, GAMMA, 1, C))
        sd.append(float(cf_sd.expected_tokens(aq, GAMMA)) / (GAMMA * C + 1 + C) * (1 + C))
        thm.append(cf.thm3_6_speedup(aq, GAMMA, 1, C))
        se1.append(cf.alternating_speedup_iid(aq, ap, 1, 1, C))
    return np.array(se), np.array(sd), np.array(thm), np.array(se1)


def make_figure(rows: list, tokens: int):
    """``rows``: the table of :func:`mc_jobs` (run by ``_figure.figure_main``)."""
    grid = np.linspace(0.02, 0.6, 59)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True, sharey=True)
    covered = total = 0
    for ax, T in zip(axes, TEMPS):
        se, sd, thm, se1 = curves(grid, T)
        ax.plot(grid, se1, color="tab:red", lw=1.0, alpha=0.6, label="SE (γq=γp=1): process (Cor 3.7: ≥ 1)")
        ax.plot(grid, se, color="tab:red", lw=1.8, label=f"SE (γq={GAMMA}, γp=1): process")
        ax.plot(grid, thm, color="tab:red", lw=1.1, ls="--", label="Thm 3.6 formula")
        ax.plot(grid, sd, color="tab:purple", lw=1.5, ls=":", label=f"SD on the ensemble (γ={GAMMA})")
        pts = np.column_stack(points(rows, "se.mc", "mu", "mean_speedup", "se_speedup", temperature=T)[1:])
        mc(ax, MUS_MC, pts[:, 0], pts[:, 1], color="tab:red", label=f"SE Monte Carlo ± 95% CI ({STREAMS}×{tokens:,})")
        if np.all(se < 1.0) and np.all(se1 >= 1.0):
            finding(ax, f"γq = {GAMMA}: slower than the vanilla ensemble;\nγq = γp = 1 never is (Cor 3.7)",
                    (grid[3 * len(grid) // 4], se[3 * len(grid) // 4]), (0.25, 0.5))
        covered += int(np.sum(np.abs(pts[:, 0] - np.interp(MUS_MC, grid, se)) <= pts[:, 1]))
        total += len(MUS_MC)
        ax.axhline(1.0, color="gray", lw=1, ls=":")
        ax.set_title(f"CD, T = {T:g}{' (argmax limit)' if T == 0 else ''}, c = {C}", fontsize=10)
        ax.set_xlabel("μ")
    axes[0].set_ylabel("speedup over the vanilla ensemble")
    axes[0].legend(loc="upper right")
    title(fig, "fu2025", "Speculative Ensemble speedup against the contrastive weight μ (Fig. 5 analogue)")
    return fig, [f"MC 95% CIs covering the process curve: {covered}/{total}"]


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, mc_jobs, make_figure,
                                 full=dict(tokens=TOKENS_FULL), quick=dict(tokens=TOKENS_QUICK)))
