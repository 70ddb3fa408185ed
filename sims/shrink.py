"""Shrinking a failing claim to its smallest counterexample.

Instances are tried in increasing size — vocabulary V, then Markov order, then draft length
γ, then number of drafts K, then seed — and the first one on which the exact check fails is
returned, with everything needed to rebuild it.
"""
from __future__ import annotations

import itertools
from typing import Callable

from spectheory.pairs import random_pair


def smallest_counterexample(fails: Callable, *, V_values=(2, 3, 4), orders=(0, 1), gammas=(1, 2, 3),
                            K_values=(1,), seeds=range(10), concentration: float = 1.0) -> dict | None:
    """``fails(pair, gamma, K) -> (bool, claimed, measured)``; returns the first failing
    instance as a dict, or None if none of the grid fails."""
    for V, order, gamma, K, seed in itertools.product(V_values, orders, gammas, K_values, seeds):
        pair = random_pair(V, order, concentration, seed=seed)
        bad, claimed, measured = fails(pair, gamma, K)
        if bad:
            return {"V": V, "order": order, "gamma": gamma, "K": K, "seed": int(seed),
                    "source": f"spectheory.pairs.random_pair(V={V}, order={order}, "
                              f"concentration={concentration:g}, seed={seed})",
                    "claimed": float(claimed), "measured": float(measured)}
    return None
