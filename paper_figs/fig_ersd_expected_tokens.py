"""Figure (analogue of Kobus & Gündüz 2025, Fig. 3): expected generated tokens per target evaluation against the
number of drafted tokens k, for batch, sequence, optimal (Alg. 3) and SpecInfer drafting trees,
GSD (left) and ERSD (right), on a first-order Markov source (V = 50, weakly aligned draft).

Caption. Lines: theory from the fitted 0th-order acceptance-index distribution a
(E = 1 + Σ_v Π a(i_j), claim zero_order.underestimates, opt_tree.greedy); markers: simulation
(iterations started at every position of simulated texts, Numba kernel) with 95% intervals
(batch means: iterations at nearby positions overlap). Dashed black: the
Lemma 4.2 bound minimised over n (claim tunstall.lemma4_2). The optimal tree keeps growing about
logarithmically (opt_tree.log_growth) while batch and sequence plateau.
"""
from __future__ import annotations

import numpy as np
from _ersd_curves import FULL, QUICK, curves, jobs, two_panels
from _figure import figure_main, finding


def make_figure(rows):
    data = curves(rows)
    fig, axes = two_panels(data, lambda res, label: (*res[label][:3], np.ones(res["ks"].size, bool)),
                           "E[generated tokens per target evaluation]",
                           "expected tokens against drafted tokens k, batch / sequence / optimal / SpecInfer trees "
                           "(Fig. 3 analogue)", bound=True)
    res = data["ersd"]
    ks, opt = res["ks"], res["optimal tree"][1]
    finding(axes[1], "the optimal tree keeps growing\n(about log k); batch and\nsequence trees plateau",
            (ks[-1], opt[-1]), (0.45, 0.03))
    lines = []
    for method, res in data.items():
        th, sim = res["optimal tree"][:2]
        lines.append(f"{method}: optimal tree at k={res['ks'][-1]}: theory {th[-1]:.3f}, simulation {sim[-1]:.3f}, "
                     f"Lemma 4.2 bound {res['bound'][-1]:.3f}")
    return fig, lines


if __name__ == "__main__":
    raise SystemExit(figure_main(__doc__, __file__, jobs, make_figure, full=FULL, quick=QUICK))
