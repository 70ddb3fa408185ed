"""Built-in default instances: named, seeded Markov pairs that `spectheory verify` runs on.

Small ones (V ≤ 4) are for exact enumeration and include the edge cases every verifier must
survive; larger ones are for Monte Carlo. Every instance is rebuilt from its constructor
call and seed, so a report entry names all that is needed to reproduce it.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .markov import MarkovPair, MarkovSource
from .pairs import (aligned_pair, ngram_pair, pair_from_tables, perturbed_pair,
                              random_pair, dirichlet_source)


@lru_cache(maxsize=None)
def get(name: str) -> MarkovPair:
    """Build a named instance (cached)."""
    try:
        make = _BUILDERS[name]
    except KeyError:
        raise KeyError(f"unknown instance {name!r}; known: {', '.join(_BUILDERS)}") from None
    pair = make()
    return MarkovPair(pair.target, pair.draft, name, pair.params)


def names() -> list[str]:
    """Every built-in instance name."""
    return list(_BUILDERS)


def _shift_rows(source: MarkovSource, shift: int) -> MarkovSource:
    """The same source with its table stored in a cyclically shifted row order and
    ``row_of_state`` pointing into it (same conditional law in every state)."""
    R = source.rows.shape[0]
    perm = (np.arange(R) + shift) % R     # old row r is stored at perm[r]
    rows = np.empty_like(source.rows)
    rows[perm] = source.rows
    return MarkovSource(rows, source.order, perm[source.row_of_state])


def permuted_rows(pair: MarkovPair) -> MarkovPair:
    """The same pair (same conditional laws in every state) with the target's and the draft's
    tables stored in different shuffled row orders, so target and draft have different,
    non-identity row maps: code that reads a table through the wrong row map, or by state
    index, gets a wrong row."""
    return MarkovPair(_shift_rows(pair.target, 1), _shift_rows(pair.draft, 2), pair.name,
                      {**pair.params, "rows": "permuted"})


def _sparse(V: int, mass: dict) -> np.ndarray:
    """A distribution on V tokens with the given mass on a few of them (0 elsewhere)."""
    row = np.zeros(V)
    for token, m in mass.items():
        row[token] = m
    return row


_BUILDERS = {
    # i.i.d. (order-0) pairs: β is the same at every position
    "iid-V4-random": lambda: random_pair(4, 0, 1.0, seed=11),
    "iid-V4-strong": lambda: aligned_pair(4, 0, "strong", seed=21),
    "iid-V3-disjoint": lambda: pair_from_tables([0.5, 0.5, 0.0], [0.0, 0.0, 1.0], name="disjoint"),
    "iid-V3-equal": lambda: pair_from_tables([0.2, 0.3, 0.5], [0.2, 0.3, 0.5], name="equal"),
    "iid-V1": lambda: pair_from_tables([1.0], [1.0], name="one-token"),
    # Markov pairs: β varies with the state
    "markov1-V3-mix0.4": lambda: perturbed_pair(3, 1, how="mix", strength=0.4, seed=12),
    "markov2-V3-temp2": lambda: perturbed_pair(3, 2, how="temperature", strength=2.0, seed=13),
    "markov1-V4-topk2": lambda: perturbed_pair(4, 1, how="top_k", strength=2, seed=14),
    "markov1-V4-quant1": lambda: perturbed_pair(4, 1, how="quantize", strength=1.0, seed=15),
    "markov1-V4-weak": lambda: aligned_pair(4, 1, "weak", seed=16),
    "markov1-V3-ngram0": lambda: ngram_pair(dirichlet_source(3, 1, 0.5, seed=17), 2000, draft_order=0, seed=18),
    # target and draft with different row maps (draft rows stored permuted), and an order-2
    # target with an order-1 n-gram draft (lifted: 3 draft rows shared by 9 states)
    "markov1-V4-permrows": lambda: permuted_rows(perturbed_pair(4, 1, how="mix", strength=0.5, seed=19)),
    "markov2-V3-ngram1": lambda: ngram_pair(dirichlet_source(3, 2, 0.5, seed=22), 3000, draft_order=1, seed=23),
    # a large vocabulary with sparse support (i.i.d.): the target on tokens 1..4, the draft also on
    # tokens 5..8 where p = 0 (token 0 has p = q = 0); a bug that gives every token a floor of mass
    # (a clamp) puts mass ~V·floor on impossible tokens, which grows with V
    "iid-V4096-sparse4": lambda: pair_from_tables(_sparse(4096, {1: 0.4, 2: 0.3, 3: 0.2, 4: 0.1}),
                                                  _sparse(4096, {1: 0.2, 2: 0.1, 3: 0.1, 4: 0.1, 5: 0.2, 6: 0.1,
                                                                 7: 0.1, 8: 0.1}), name="sparse"),
    # Monte Carlo scale
    "markov1-V50-strong": lambda: aligned_pair(50, 1, "strong", seed=31),
    "markov1-V50-weak": lambda: aligned_pair(50, 1, "weak", seed=32),
}

#: Small instances every exact check runs on (edge cases included).
EXACT = ("iid-V4-random", "iid-V4-strong", "iid-V3-disjoint", "iid-V3-equal", "iid-V1",
         "markov1-V3-mix0.4", "markov2-V3-temp2", "markov1-V4-topk2", "markov1-V4-quant1",
         "markov1-V4-weak", "markov1-V3-ngram0", "markov1-V4-permrows", "markov2-V3-ngram1")
IID = tuple(n for n in EXACT if n.startswith("iid"))
MARKOV = tuple(n for n in EXACT if n.startswith("markov"))
