"""Exact engines for GSD and ERSD on small instances (Kobus & Gündüz, Alg. 2, 4, 5).

The core object is, at one context with target ``p`` and draft ``q``, the law of the pair
(acceptance index I, emitted token X) — computed from the algorithm itself:

* GSD (:func:`gsd_outcomes`): enumeration of every ordered draw of alternatives without
  replacement and every accept/reject outcome of recursive rejection (cost ~ e·V! for full
  drafting: V ≤ 7).
* ERSD (:func:`ersd_index_law`): the exponential-race integral. Given the target winner's
  exponential ``E_x = e``, each other token y independently either beats x in the draft race
  (``E_y < e·q(y)/q(x)``) while losing the target race (``E_y > e·p(y)/p(x)``), or loses both;
  P(X_p = x, rank_q(x) = j+1) = ∫ e^{−e} [z^j] Π_y f_y(e, z) de, each f_y a sum of exponentials in
  e, so the integral is a finite sum Σ c/λ (cost ~ 2^V per token: V ≤ 10).

On top of them: the per-vertex outcome law of a drafting tree (:func:`vertex_law`), the exact
output law of the first N generated tokens for any tree (:func:`first_tokens_distribution`),
the exact acceptance probability of every vertex of a tree on a Markov source
(:func:`vertex_acceptance`), and the exact acceptance function f(path) for Alg. 3
(:func:`acceptance_function`).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..checks import check_enumerable, check_int, check_state, check_type
from ..distributions import DistributionError, check_distribution, check_pair
from ..markov import MarkovPair, next_state, stationary_distribution
from ..rules.ersd import ERSD, GSD, ERSDRule, GSDRule
from ..trees import Tree

#: Largest vocabulary for exact GSD enumeration with full drafting (V! draw orders).
GSD_MAX_V = 7
#: Largest vocabulary for the exact exponential-race integral (2^(V−1) terms per token).
ERSD_MAX_V = 12


def _check_pq(p, q):
    p, q = check_pair(p, q, names=("p (target)", "q (draft)"))
    if p.ndim != 1:
        raise DistributionError(f"p and q must be 1-D distributions over the vocabulary, got shape {p.shape}")
    return p, q


# --- GSD (the paper's Alg. 4) --------------------------------------------------------------------------

def gsd_outcomes(p, q, m: int, rule: GSDRule = GSD) -> tuple[np.ndarray, np.ndarray]:
    """Exact outcome law of GSD batch verification with ``m`` alternatives drawn from q without
    replacement (capped at |supp q|). Returns ``(A, R)``: ``A[i−1, x]`` = P(alternative i is the
    accepted one and it is x), i = 1..m; ``R[x]`` = P(all m rejected, emitted token x).
    Recursive rejection: alternative i is accepted w.p. min(1, r_i(x)/q̃_i(x)) with r_1 = p,
    r_{i+1} = norm(max(r_i − q̃_i, 0)), q̃_i the verifier's draft law (``rule.q_update``)."""
    p, q = _check_pq(p, q)
    check_type(rule, GSDRule, "rule", " (spectheory.rules.ersd)")
    V = p.shape[0]
    m = min(check_int(m, "m (alternatives)", min=0), int(np.count_nonzero(q)))
    A = np.zeros((max(m, 0), V))
    R = np.zeros(V)

    def rec(i, reach, r, drawn):
        # draw law of the i-th alternative: q without the drawn tokens, renormalised
        d = q.copy()
        d[list(drawn)] = 0.0
        if i > m or d.sum() <= 0:
            R[:] += reach * r
            return
        d /= d.sum()
        qv = d if rule.q_update == "without_replacement" else q
        with np.errstate(divide="ignore", invalid="ignore"):
            acc = np.where(qv > 0, np.minimum(1.0, r / np.where(qv > 0, qv, 1.0)), 1.0)
        res = np.maximum(r - qv, 0.0)
        tot = res.sum()
        r_next = res / tot if tot > 0 else r
        for x in np.flatnonzero(d):
            w = reach * d[x]
            A[i - 1, x] += w * acc[x]
            rej = w * (1.0 - acc[x])
            if rej > 0:
                rec(i + 1, rej, r_next, drawn | {int(x)})

    if m == 0:
        R[:] = p
    elif rule.accept == "always_first":
        A[0] = q
    else:
        rec(1, 1.0, p, frozenset())
    return A, R


def gsd_index_law(p, q, rule: GSDRule = GSD) -> np.ndarray:
    """``J[i−1, x]`` = P(I = i, X = x) for i = 1..V with full drafting; row V: no alternative
    accepted (only possible where p puts mass outside supp q)."""
    p, q = _check_pq(p, q)
    check_type(rule, GSDRule, "rule", " (spectheory.rules.ersd)")
    V = p.shape[0]
    if V > GSD_MAX_V:
        raise ValueError(f"exact GSD enumeration needs V ≤ {GSD_MAX_V}, got V = {V}")
    A, R = gsd_outcomes(p, q, V, rule)
    J = np.zeros((V + 1, V))
    J[:A.shape[0]] = A
    J[V] = R
    return J


# --- ERSD (the paper's Alg. 2, Alg. 5) ----------------------------------------------------------------

def _race_rank_law(x: int, a_ratio: np.ndarray | None, b_ratio: np.ndarray) -> np.ndarray:
    """∫_0^∞ e^{−e} [z^j] Π_{y≠x} f_y(e, z) de for j = 0..V−1, where (target condition
    E_y > e·a_y, with a_y = p(y)/p(x); draft race: y beats x iff E_y < e·b_y, b_y = q(y)/q(x))
    f_y = e^{−e·max(a_y,b_y)} + z·(e^{−e a_y} − e^{−e b_y})₊. ``a_ratio=None``: no target
    condition (independent races: a_y = 0)."""
    V = b_ratio.shape[0]
    poly = [{1.0: 1.0}]  # poly[j] = {rate λ: coefficient c} meaning Σ c·e^{−λe}
    for y in range(V):
        if y == x:
            continue
        ay = 0.0 if a_ratio is None else float(a_ratio[y])
        by = float(b_ratio[y])
        new = [dict() for _ in range(len(poly) + 1)]
        for j, terms in enumerate(poly):
            for lam, c in terms.items():
                if by > ay:
                    for lam2, c2, jj in ((lam + by, c, j), (lam + ay, c, j + 1), (lam + by, -c, j + 1)):
                        new[jj][lam2] = new[jj].get(lam2, 0.0) + c2
                else:
                    new[j][lam + ay] = new[j].get(lam + ay, 0.0) + c
        poly = new
    out = np.zeros(V)
    for j, terms in enumerate(poly):
        if j < V:
            out[j] = sum(c / lam for lam, c in terms.items())
    return np.clip(out, 0.0, None)


def ersd_index_law(p, q, rule: ERSDRule = ERSD) -> np.ndarray:
    """``J[i−1, x]`` = P(target winner X_p = x and x is the i-th arrival of the draft race),
    i = 1..V; row V: X_p = x with q(x) = 0 (never drafted). Shared races (``rule.shared``) or
    independent ones (then J[i−1, x] = p(x)·P(x is the i-th arrival of an independent race))."""
    p, q = _check_pq(p, q)
    check_type(rule, ERSDRule, "rule", " (spectheory.rules.ersd)")
    V = p.shape[0]
    if V > ERSD_MAX_V:
        raise ValueError(f"exact exponential-race integral needs V ≤ {ERSD_MAX_V}, got V = {V}")
    J = np.zeros((V + 1, V))
    for x in range(V):
        if p[x] <= 0:
            continue
        if q[x] <= 0:
            J[V, x] = p[x]  # x never arrives in the draft race (cell computed: 1/Σ_y p(y)/p(x))
            J[V, x] = 1.0 / np.sum(p / p[x])
            continue
        if rule.shared:
            J[:V, x] = _race_rank_law(x, p / p[x], q / q[x])
        else:
            J[:V, x] = p[x] * _race_rank_law(x, None, q / q[x])
    return J


def index_law(p, q, rule) -> np.ndarray:
    """Joint law of (acceptance index, emitted token) with full drafting, for either method."""
    if not isinstance(rule, (GSDRule, ERSDRule)):
        raise TypeError(f"rule must be a GSDRule or an ERSDRule, got {type(rule).__name__}")
    return gsd_index_law(p, q, rule) if rule.method == "gsd" else ersd_index_law(p, q, rule)


def ersd_first_acceptance(p, q, rule: ERSDRule = ERSD) -> float:
    """P(first drafted token accepted) = P(X_p = X_q) from the exact race law (Lemma 3.1's
    left-hand side)."""
    return float(ersd_index_law(p, q, rule)[0].sum())


# --- drafting trees on a Markov pair -----------------------------------------------------------

class _Laws:
    """Per-state cache of outcome laws for one (pair, rule)."""

    def __init__(self, pair: MarkovPair, rule):
        check_type(pair, MarkovPair, "pair")
        if not isinstance(rule, (GSDRule, ERSDRule)):
            raise TypeError(f"rule must be a GSDRule or an ERSDRule, got {type(rule).__name__}")
        self.pair, self.rule = pair, rule
        self._full = {}
        self._gsd = {}

    def full(self, s):
        if s not in self._full:
            self._full[s] = index_law(self.pair.target.conditional(s), self.pair.draft.conditional(s), self.rule)
        return self._full[s]

    def vertex(self, s, kept: tuple):
        """(cont {i: law over x}, stop law over x) at a vertex in state s keeping ``kept``."""
        p = self.pair.target.conditional(s)
        if self.rule.method == "gsd":
            m = max(kept, default=0)
            key = (s, m)
            if key not in self._gsd:
                self._gsd[key] = gsd_outcomes(p, self.pair.draft.conditional(s), m, self.rule)
            A, R = self._gsd[key]
            cont = {i: A[i - 1] for i in kept if i <= A.shape[0]}
            stop = R + sum((A[i - 1] for i in range(1, A.shape[0] + 1) if i not in cont), np.zeros_like(R))
            return cont, stop
        J = self.full(s)
        V = J.shape[1]
        cont = {i: J[i - 1] for i in kept if i <= V}
        stop = J.sum(axis=0) - sum(cont.values(), np.zeros(V))
        stop = np.clip(stop, 0.0, None)
        if self.rule.on_reject == "resample":
            stop = stop.sum() * p
        return cont, stop


def vertex_law(pair: MarkovPair, rule, state: int, kept: tuple):
    """Outcome law at one vertex: ``({i: P(I = i, X = ·)} for kept i, P(stop, X = ·))``."""
    laws = _Laws(pair, rule)
    if isinstance(kept, (str, bytes)) or np.ndim(kept) != 1:
        raise TypeError(f"kept must be a sequence of 1-based acceptance indices, got {kept!r}")
    kept = tuple(check_int(i, "kept index", min=1) for i in kept)
    return laws.vertex(state, kept)


def iteration_blocks(pair: MarkovPair, rule, tree: Tree, start_state: int = 0, laws=None) -> list:
    """Every emitted block of one tree-drafting iteration: (tokens, prob, end state)."""
    laws = laws or _Laws(pair, rule)
    check_type(tree, Tree, "tree", " (spectheory.trees)")
    start_state = check_state(start_state, pair.n_states)
    V, S = pair.V, pair.n_states
    out = []
    stack = [((), (), 1.0, start_state)]
    while stack:
        v, toks, prob, s = stack.pop()
        cont, stop = laws.vertex(s, tree.children(v))
        for x in np.flatnonzero(stop):
            out.append((toks + (int(x),), prob * float(stop[x]), int(next_state(s, x, V, S))))
        for i, law in cont.items():
            for x in np.flatnonzero(law):
                stack.append((v + (i,), toks + (int(x),), prob * float(law[x]), int(next_state(s, x, V, S))))
    return out


def expected_generated_enumerated(pair, rule, tree: Tree, start_state: int = 0) -> float:
    """E[tokens emitted in one iteration] by enumeration of the blocks."""
    return float(sum(pr * len(t) for t, pr, _ in iteration_blocks(pair, rule, tree, start_state)))


def first_tokens_distribution(pair: MarkovPair, rule, tree: Tree, n_tokens: int, start_state: int = 0) -> np.ndarray:
    """Exact law of the first ``n_tokens`` generated tokens over as many iterations as it takes
    (flat over V**n_tokens, first token most significant): equals
    ``pair.target.sequence_probs(n_tokens, start_state)`` iff the method is lossless."""
    laws = _Laws(pair, rule)
    V = pair.V
    check_type(tree, Tree, "tree", " (spectheory.trees)")
    n_tokens = check_enumerable(V, check_int(n_tokens, "n_tokens", min=1))
    start_state = check_state(start_state, pair.n_states)

    @lru_cache(maxsize=None)
    def blocks(s):
        return iteration_blocks(pair, rule, tree, s, laws)

    @lru_cache(maxsize=None)
    def dist(s, n):
        out = np.zeros(V ** n)
        for toks, prob, end in blocks(s):
            L = len(toks)
            idx = 0
            for t in toks[:n]:
                idx = idx * V + t
            if L >= n:
                out[idx] += prob
            else:
                w = V ** (n - L)
                out[idx * w:(idx + 1) * w] += prob * dist(end, n - L)
        return out

    return dist(start_state, n_tokens)


def index_transition(pair: MarkovPair, rule, i: int, laws=None) -> np.ndarray:
    """T_i[s, s'] = Σ_{x: next(s,x)=s'} P(I = i, X = x | s), full drafting."""
    laws = laws or _Laws(pair, rule)
    V, S = pair.V, pair.n_states
    i = check_int(i, "i (acceptance index)", min=1)  # i > V: never accepted (zero matrix)
    T = np.zeros((S, S))
    for s in range(S):
        J = laws.full(s)
        if i <= V:
            for x in np.flatnonzero(J[i - 1]):
                T[s, next_state(s, x, V, S)] += J[i - 1, x]
    return T


def acceptance_function(pair: MarkovPair, rule, start=0):
    """Exact f(path) = P(the acceptance indices of the first len(path) contexts are path) on
    the Markov pair, from a start state (int) or a start distribution over states (array),
    e.g. the stationary law for a long text. Decreases along paths (a child needs its parent)."""
    laws = _Laws(pair, rule)
    S = pair.n_states
    mass0 = np.zeros(S)
    if np.ndim(start) == 0:
        mass0[check_state(start, S, "start")] = 1.0
    else:
        mass0 = check_distribution(start, name="start (law over the context states)")
        if mass0.shape != (S,):
            raise DistributionError(f"start (law over the context states) must have shape ({S},), got {mass0.shape}")
    Ts = {}

    @lru_cache(maxsize=None)
    def mass(path):
        if not path:
            return mass0
        i = path[-1]
        if i not in Ts:
            Ts[i] = index_transition(pair, rule, i, laws)
        return mass(path[:-1]) @ Ts[i]

    def f(path):
        return float(mass(tuple(path)).sum())
    f.n_indices = pair.V
    return f


def vertex_acceptance(pair: MarkovPair, rule, tree: Tree, start=0) -> dict:
    """Exact P(v accepted) for every vertex of ``tree`` (the paper's Eq. 3)."""
    f = acceptance_function(pair, rule, start)
    check_type(tree, Tree, "tree", " (spectheory.trees)")
    return {v: f(v) for v in tree.vertices}


def expected_generated(pair: MarkovPair, rule, tree: Tree, start=0) -> float:
    """Exact ``1 + Σ_v P(v accepted)`` (the paper's Eq. 4) from a start state or distribution."""
    return 1.0 + sum(vertex_acceptance(pair, rule, tree, start).values())


def stationary_start(pair: MarkovPair) -> np.ndarray:
    """Stationary law of the target's context states (where a long text's iterations start)."""
    check_type(pair, MarkovPair, "pair")
    return stationary_distribution(pair.target.transition_matrix())


def stationary_index_law(pair: MarkovPair, rule) -> np.ndarray:
    """The 0th-order acceptance-index distribution of a long text: a(i) = Σ_s π(s) P(I = i | s),
    length V + 1 (last cell: never accepted). Exactly what fitting a to a long run estimates."""
    laws = _Laws(pair, rule)
    pi = stationary_start(pair)
    return sum(pi[s] * laws.full(s).sum(axis=1) for s in range(pair.n_states))
