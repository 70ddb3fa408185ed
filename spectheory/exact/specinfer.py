"""Exact engine of SpecInfer-style multi-round rejection (Miao et al. 2024, "SpecInfer: Accelerating
Large Language Model Serving with Tree-based Speculative Inference and Verification"): on K
independent drafts and on a static token tree, the law of one verification call enumerated over
every draw of the drafts and integrated over every acceptance test.

The rule, per depth: the candidates (the alive drafts' tokens, or the accepted node's children)
are verified in order, each accepted with probability min(1, r(x)/q(x)); after a rejection the
running residual is r ← norm(max(r − q, 0)) (r itself where that has no mass: the rejection then
had probability 0); when every candidate is rejected, the last token is drawn from r; on K drafts
the drafts carrying the accepted token stay alive at the next depth, on a tree the accepted
node's children are the next candidates; after the last depth, a bonus token from p.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..checks import check_int
from ..markov import MarkovPair, next_state

MAX_K = 4
MAX_NODES = 64


def residual(r, q):
    """norm(max(r − q, 0)), or r where that has no mass (the rejection had probability 0)."""
    w = np.maximum(np.asarray(r, dtype=np.float64) - np.asarray(q, dtype=np.float64), 0.0)
    s = w.sum()
    return w / s if s > 0 else np.asarray(r, dtype=np.float64)


def tree_size(branching) -> int:
    total, level = 0, 1
    for b in branching:
        level *= b
        total += level
    return total


def check_tree(tree) -> tuple:
    """Branching factors (b_1, …, b_D) of a static tree: 1 ≤ D ≤ 3, b ≥ 1, ≤ 64 nodes."""
    if isinstance(tree, (str, bytes)) or np.ndim(tree) != 1:
        raise TypeError(f"tree must be a sequence of branching factors per depth, e.g. (2, 2), got {tree!r}")
    bs = tuple(check_int(b, "branching factor", min=1, max=8) for b in tree)
    if not 1 <= len(bs) <= 3:
        raise ValueError(f"tree depth must be 1..3 (exact engines enumerate every draw), got {len(bs)}")
    if tree_size(bs) > MAX_NODES:
        raise ValueError(f"the tree {bs} has {tree_size(bs)} nodes; at most {MAX_NODES}")
    return bs


def _rows(pair, state):
    return pair.target.table[state], pair.draft.table[state]


def _check_engine(pair, state):
    from ..checks import check_state, check_type
    check_type(pair, MarkovPair, "pair")
    if pair.V > 4:
        raise ValueError(f"the exact engines enumerate every draw: V ≤ 4, got V = {pair.V}")
    return check_state(state, pair.n_states, "state")


def _round(p: np.ndarray, q: np.ndarray, n: int) -> tuple[dict, dict]:
    """One round of multi-round verification over ``n`` i.i.d. drafts from ``q`` against ``p``,
    every draw enumerated: ``({(x, copies of x among the drafts): P(x accepted)},
    {residual row (rounded key): P(every draft rejected, this residual left)})``."""
    acc: dict = {}
    none: dict = {}
    for cand in itertools.product(np.flatnonzero(q), repeat=n):
        pc = float(np.prod(q[list(cand)]))
        r, stay = p.astype(np.float64), 1.0
        for x in cand:
            a = min(1.0, r[x] / q[x])
            if a > 0:
                key = (int(x), cand.count(x))
                acc[key] = acc.get(key, 0.0) + pc * stay * a
            stay *= 1.0 - a
            if stay <= 0:
                break
            r = residual(r, q)
        if stay > 0:
            key = tuple(np.round(r, 15))
            none[key] = none.get(key, 0.0) + pc * stay
    return acc, none


def _emit(law: dict, prefix: tuple, w: float, row) -> None:
    """Add ``w`` times the law of one token drawn from ``row`` after ``prefix`` to ``law``."""
    row = np.asarray(row)
    for y in np.flatnonzero(row):
        law[prefix + (int(y),)] = law.get(prefix + (int(y),), 0.0) + w * float(row[y])


def specinfer_drafts_law(pair: MarkovPair, gamma: int, K: int, state: int = 0) -> dict:
    """Exact law {emitted block: probability} of one multi-round (SpecInfer-style) call on K
    drafts from ``state``: every draft outcome enumerated (the alive drafts' tokens at each
    depth) and every acceptance test integrated (weight min(1, r/q) and its complement)."""
    state = _check_engine(pair, state)
    gamma = check_int(gamma, "gamma", min=1, max=3)
    K = check_int(K, "K (number of drafts)", min=1, max=MAX_K)
    V, S = pair.V, pair.n_states
    law: dict = {}

    def go(depth, s, n_alive, w, prefix):
        p, q = _rows(pair, s)
        if depth == gamma:
            _emit(law, prefix, w, p)
            return
        acc, none = _round(p, q, n_alive)
        for rk, pr in none.items():
            _emit(law, prefix, w * pr, rk)
        for (x, c), pr in acc.items():  # the drafts that drew x stay alive below it
            go(depth + 1, int(next_state(s, x, V, S)), c, w * pr, prefix + (x,))

    go(0, state, K, 1.0, ())
    return law


def specinfer_tree_law(pair: MarkovPair, branching: tuple, state: int = 0) -> dict:
    """Exact law of one multi-round call on the static tree ``branching`` from ``state``."""
    state = _check_engine(pair, state)
    branching = check_tree(branching)
    V, S = pair.V, pair.n_states
    D = len(branching)
    law: dict = {}

    def go(depth, s, w, prefix):
        p, q = _rows(pair, s)
        if depth == D:
            _emit(law, prefix, w, p)
            return
        acc, none = _round(p, q, branching[depth])
        for rk, pr in none.items():
            _emit(law, prefix, w * pr, rk)
        by_token: dict = {}  # a static tree's children do not depend on how many drafts drew x
        for (x, _), pr in acc.items():
            by_token[x] = by_token.get(x, 0.0) + pr
        for x, pr in by_token.items():
            go(depth + 1, int(next_state(s, x, V, S)), w * pr, prefix + (x,))

    go(0, state, 1.0, ())
    return law


