"""Shared computation of the seed-004 figure analogues (Fig. 3 and Fig. 4): expected generated
tokens against drafted tokens k for batch, sequence, optimal (Alg. 3) and SpecInfer trees, GSD and
ERSD, on a first-order Markov source (V = 50, weakly aligned draft).

"Theory" follows the seed's §5: the acceptance-index distribution a is fitted from simulated text
(0th-order model) and every tree's E[generated] = 1 + Σ_v Π a(i_j); the optimal tree is Alg. 3 on
that a. "Simulation": iterations started at every position of the simulated texts (Numba
kernel, exponential races from the core RNG), vertex (i_1..i_d) accepted iff the next d indices
are i_1..i_d. The Lemma 4.2 bound is minimised over n for each k.
"""
from __future__ import annotations

import numpy as np

from sims import instances as inst
from spectheory import trees as T
from spectheory.closed_forms import ersd as cf
from spectheory.montecarlo import ersd as mc
from spectheory.rng import derive_seed
from spectheory.rules import ersd as R

SOURCE = "markov1-V50-weak"
STRATEGIES = ("batch", "sequence", "optimal tree", "SpecInfer tree")
K_MAX = 48
N_FULL, N_QUICK = 200_000, 20_000


def build(strategy: str, a, k: int, V: int) -> T.Tree:
    if strategy == "batch":
        return T.batch_tree(min(k, V))
    if strategy == "sequence":
        return T.sequence_tree(k)
    if strategy == "SpecInfer tree":
        return T.specinfer_tree(k)
    return T.optimal_tree(T.zero_order(a), k, V)


def curves(n_positions: int, seed: int, k_max: int = K_MAX):
    """{method: {"a": fitted a, "ks": ks, strategy: (theory, simulation), "bound": lemma 4.2}}."""
    pair = inst.get(SOURCE)
    ks = np.arange(1, k_max + 1)
    out = {}
    for rule in (R.GSD, R.ERSD):
        idx, _ = mc.index_stream(pair, rule, n_positions, m=pair.V,
                                 seed=np.random.default_rng(derive_seed(seed, "fig_ersd", rule.name)))
        a = T.fit_zero_order(idx, pair.V)
        res = {"a": a, "ks": ks}
        for strat in STRATEGIES:
            th, sim = [], []
            for k in ks:
                tree = build(strat, a, int(k), pair.V)
                th.append(cf.zero_order_expected(a, tree))
                sim.append(float(mc.tree_outcomes_from_stream(idx, tree).mean()))
            res[strat] = (np.array(th), np.array(sim))
        bound = []
        f = T.zero_order(a)
        for k in ks:
            tree = T.optimal_tree(f, int(k), pair.V)
            M = max(max(v) for v in tree.vertices)
            bound.append(cf.lemma42_min_bound(a, int(k), M)[0])
        res["bound"] = np.array(bound)
        out[rule.name] = res
    return out
