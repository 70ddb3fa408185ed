"""Shrinking a failing claim to its smallest counterexample.

Instances are tried in increasing size — vocabulary V, then Markov order, then draft length
γ, then number of drafts K, then any extra parameters (e.g. multi-draft switches), then
seed — and the first one on which the exact check fails is returned, with everything
needed to rebuild it. ``fails`` may return a fourth item, a dict of details merged into the
entry (for a losslessness failure: the token sequence whose probability is off, with its
claimed and measured probability).
"""
from __future__ import annotations

import itertools
from typing import Callable

from spectheory.pairs import random_pair


def smallest_counterexample(fails: Callable, *, V_values=(2, 3, 4), orders=(0, 1), gammas=(1, 2, 3),
                            K_values=(1,), seeds=range(10), concentration: float = 1.0,
                            extra: dict | None = None, pair_factory: Callable | None = None) -> dict | None:
    """``fails(pair, gamma, K, **extra_values) -> (bool, claimed, measured[, details])``;
    returns the first failing instance as a dict, or None if none of the grid fails.
    ``extra``: ``{name: values}`` further grid axes, searched after K and before the seed.
    ``pair_factory(V, order, concentration, seed)``: the candidate pairs (default
    :func:`spectheory.pairs.random_pair`), for claims whose failures need edge cases."""
    extra = dict(extra or {})
    keys = list(extra)
    for V, order, gamma, K, *vals, seed in itertools.product(V_values, orders, gammas, K_values,
                                                              *[tuple(extra[k]) for k in keys], seeds):
        pair = (pair_factory(V, order, concentration, seed) if pair_factory
                else random_pair(V, order, concentration, seed=seed))
        kw = dict(zip(keys, vals))
        out = fails(pair, gamma, K, **kw)
        bad, claimed, measured = out[:3]
        if bad:
            entry = {"V": V, "order": order, "gamma": gamma, "K": K, "seed": int(seed),
                     "source": (pair.params.get("construction", pair.name) if pair_factory else
                                f"spectheory.pairs.random_pair(V={V}, order={order}, "
                                f"concentration={concentration:g}, seed={seed})"),
                     "claimed": float(claimed), "measured": float(measured)}
            entry.update(kw)
            if len(out) > 3 and out[3]:
                entry.update(out[3])
            return entry
    return None
