"""Exact reference for token-level speculative sampling on a Markov pair.

Enumerates every draft block and every accept/reject outcome of one iteration (γ drafted
tokens, then a correction or bonus token), so the distribution of the emitted block, of τ
and of the first N emitted tokens over several iterations are exact up to float64
rounding. Cost grows like V**(γ+1) per iteration: meant for V ≤ ~6, γ ≤ ~4.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..checks import check_int, check_state
from ..markov import MarkovPair, next_state
from ..rules.sd import STANDARD, SDRule, TokenRule

#: Refuse enumerations larger than this many blocks per iteration.
MAX_BLOCKS = 2_000_000


@dataclass(frozen=True)
class Block:
    """One possible emitted block of an iteration."""

    tokens: tuple
    prob: float
    end_state: int
    tau: int  # accepted draft tokens (the last emitted token is a correction/bonus unless no bonus)


class _StateCache:
    def __init__(self, pair: MarkovPair, rule: SDRule):
        self.pair, self.rule = pair, rule
        self._c = {}

    def __call__(self, s: int):
        got = self._c.get(s)
        if got is None:
            p = self.pair.target.conditional(s)
            q = self.pair.draft.conditional(s)
            a = self.rule.accept_probability(p, q)
            reject = float(np.sum(q * (1.0 - a)))
            got = (p, q, a, reject, self.rule.residual_distribution(p, q))
            self._c[s] = got
        return got


def _check_args(pair, gamma, rule, start_state) -> tuple[int, int]:
    if not isinstance(pair, MarkovPair):
        raise TypeError(f"pair must be a MarkovPair, got {type(pair).__name__}")
    if not isinstance(rule, TokenRule):
        raise TypeError(f"rule must be a TokenRule (spectheory.rules.sd; SDRule or your subclass), got "
                        f"{type(rule).__name__}")
    return check_int(gamma, "gamma (draft length)", min=1), check_state(start_state, pair.n_states)


def iteration_blocks(pair: MarkovPair, gamma: int, rule: SDRule = STANDARD, start_state: int = 0) -> list[Block]:
    """All emitted blocks of one iteration with their probabilities (they sum to 1)."""
    gamma, start_state = _check_args(pair, gamma, rule, start_state)
    V, S = pair.V, pair.n_states
    if V ** (gamma + 1) > MAX_BLOCKS:
        raise ValueError(f"V**(γ+1) = {V ** (gamma + 1)} blocks is too many to enumerate exactly")
    info = _StateCache(pair, rule)
    out: list[Block] = []

    def emit_final(prefix, prob, s, dist, tau):
        for y in np.flatnonzero(dist):
            out.append(Block(prefix + (int(y),), prob * float(dist[y]), int(next_state(s, y, V, S)), tau))

    stack = [((), 1.0, start_state)]
    while stack:
        prefix, prob, s = stack.pop()
        p, q, a, reject, res = info(s)
        i = len(prefix)
        if i == gamma:
            if rule.bonus:
                emit_final(prefix, prob, s, p, gamma)
            else:
                out.append(Block(prefix, prob, s, gamma))
            continue
        if reject > 0:
            emit_final(prefix, prob * reject, s, res, i)
        for x in np.flatnonzero(q * a):
            stack.append((prefix + (int(x),), prob * float(q[x] * a[x]), int(next_state(s, x, V, S))))
    return out


def block_distribution(pair, gamma, rule=STANDARD, start_state=0) -> dict:
    """``{block tokens: probability}`` for one iteration."""
    d: dict = {}
    for b in iteration_blocks(pair, gamma, rule, start_state):
        d[b.tokens] = d.get(b.tokens, 0.0) + b.prob
    return d


def tau_distribution(pair, gamma, rule=STANDARD, start_state=0) -> np.ndarray:
    """Exact ``P(τ = k)``, k = 0..γ, for one iteration from ``start_state``."""
    gamma, start_state = _check_args(pair, gamma, rule, start_state)
    dist = np.zeros(gamma + 1)
    for b in iteration_blocks(pair, gamma, rule, start_state):
        dist[b.tau] += b.prob
    return dist


def expected_tokens(pair, gamma, rule=STANDARD, start_state=0) -> float:
    """Exact expected number of emitted tokens in one iteration (= target calls' yield)."""
    return float(sum(b.prob * len(b.tokens) for b in iteration_blocks(pair, gamma, rule, start_state)))


def first_tokens_distribution(pair: MarkovPair, gamma: int, n_tokens: int, rule: SDRule = STANDARD,
                              start_state: int = 0) -> np.ndarray:
    """Exact distribution of the first ``n_tokens`` emitted tokens over as many iterations as
    it takes, as a flat array over V**n_tokens sequences (first token most significant) —
    directly comparable with ``pair.target.sequence_probs(n_tokens, start_state)``."""
    gamma, start_state = _check_args(pair, gamma, rule, start_state)
    n_tokens = check_int(n_tokens, "n_tokens", min=1)
    V = pair.V
    if V ** n_tokens > MAX_BLOCKS:
        raise ValueError(f"V**n_tokens = {V ** n_tokens} sequences is too many to enumerate exactly")

    @lru_cache(maxsize=None)
    def blocks(s):
        return iteration_blocks(pair, gamma, rule, s)

    @lru_cache(maxsize=None)
    def dist(s, n):
        out = np.zeros(V ** n)
        for b in blocks(s):
            L = len(b.tokens)
            if L == 0:
                raise ValueError("an iteration emitted no token; the first-N distribution is undefined")
            if L >= n:
                idx = 0
                for t in b.tokens[:n]:
                    idx = idx * V + t
                out[idx] += b.prob
            else:
                idx = 0
                for t in b.tokens:
                    idx = idx * V + t
                w = V ** (n - L)
                out[idx * w:(idx + 1) * w] += b.prob * dist(b.end_state, n - L)
        return out

    return dist(start_state, n_tokens)
