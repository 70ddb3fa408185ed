"""Shared computation of the exponential-race figure analogues (Fig. 3 and Fig. 4): expected generated
tokens against drafted tokens k for batch, sequence, optimal (Alg. 3) and SpecInfer trees, GSD and
ERSD, on a first-order Markov source (V = 50, weakly aligned draft).

"Theory" follows the paper's §5: the acceptance-index distribution a is fitted from simulated text
(0th-order model) and every tree's E[generated] = 1 + Σ_v Π a(i_j); the optimal tree is Alg. 3 on
that a. "Simulation": iterations started at every position of the simulated texts (Numba
kernel, exponential races from the core RNG), vertex (i_1..i_d) accepted iff the next d indices
are i_1..i_d. The Lemma 4.2 bound is minimised over n for each k.

The rule × strategy × k grid runs as a sweep of ``ersd.tree`` and ``ersd.bound`` jobs
(``sims/jobs/ersd.py``): every job of one rule reads the same index stream (drawn from the
figure's seed), so theory and simulation use one fitted a and the marginal gains are
differences along one stream.
"""
from __future__ import annotations

import numpy as np
from _figure import pick

from sims import sweep as sw

SOURCE = "markov1-V50-weak"
#: job strategy → legend label
STRATEGIES = {"batch": "batch", "sequence": "sequence", "optimal": "optimal tree", "specinfer": "SpecInfer tree"}
RULES = ("gsd", "ersd")
K_MAX = 48
#: positions per stream set and largest k, of a full and of a --quick run
FULL, QUICK = dict(n_positions=200_000, k_max=K_MAX), dict(n_positions=20_000, k_max=24)


def jobs(n_positions: int, seed: int, k_max: int = K_MAX) -> list:
    """The sweep behind both figures (run by ``_figure.figure_main``)."""
    common = dict(instance=SOURCE, rule=RULES, n_positions=n_positions, stream_seed=seed)
    return (sw.grid("ersd.tree", **common, strategy=list(STRATEGIES), k=range(1, k_max + 1))
            + sw.grid("ersd.bound", **common, k=range(1, k_max + 1)))


def curves(rows: list) -> dict:
    """{rule: {"ks": ks, label: (theory, simulation), "bound": lemma 4.2}} from the rows of :func:`jobs`."""
    out = {}
    for rule in RULES:
        bound = pick(rows, "ersd.bound", rule=rule)
        res = {"ks": np.array([r["k"] for r in bound]), "bound": np.array([r["lemma42_bound"] for r in bound])}
        for strat, label in STRATEGIES.items():
            mine = pick(rows, "ersd.tree", rule=rule, strategy=strat)
            res[label] = (np.array([r["theory"] for r in mine]), np.array([r["simulation"] for r in mine]))
        out[rule] = res
    return out
