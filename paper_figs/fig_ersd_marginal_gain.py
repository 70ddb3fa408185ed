"""Figure (analogue of Kobus & Gündüz 2025, Fig. 4): marginal gain per drafted token, E(k) − E(k−1), for batch,
sequence, optimal (Alg. 3) and SpecInfer trees, GSD and ERSD, same source and data as
fig_ersd_expected_tokens.py.

Caption. Lines: theory from the fitted 0th-order a (for the batch strategy the gain at k is a(k),
the probability of acceptance index k); markers: simulation, the gain's 95% interval by batch
means over the same start positions (a simulated gain of 0, no iteration of the stream reaching the
new vertex, is not drawn on the log axis). GSD gains more from the first alternative, ERSD from later ones (claim
ersd.batch_crossover); the batch gain at k = 2 is marked in both panels.
"""
from __future__ import annotations

import numpy as np

from _ersd_curves import FULL, QUICK, STRATEGIES, curves, jobs, two_panels
from _figure import figure_main, finding


def gains(res, label):
    """(theory gain, simulated gain, its 95% interval clipped above 0, the points > 0): a log axis
    shows no gain ≤ 0."""
    th, _, _, g_sim, half = res[label]
    g_th = np.diff(th, prepend=1.0)
    keep = g_sim > 0
    return g_th, g_sim, np.vstack([np.minimum(half, 0.9 * np.abs(g_sim)), half]), keep


def make_figure(rows):
    data = curves(rows)
    fig, axes = two_panels(data, gains, "marginal gain E(k) − E(k−1)",
                           "marginal gain per drafted token (Fig. 4 analogue)")
    # below the smallest simulated gain the stream resolves nothing: the axis stops there
    low = min(g[g > 0].min() for res in data.values() for g in (gains(res, lab)[1] for lab in STRATEGIES.values()))
    for ax, res in zip(axes, data.values()):
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.2 * low)
        g2 = gains(res, "batch")[0][1]
        finding(ax, f"batch, 2nd alternative:\ngain a(2) = {g2:.3f}", (2, g2), (0.05, 0.3))
    return fig


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, jobs, make_figure, full=FULL, quick=QUICK))
