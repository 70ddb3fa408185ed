"""Exact law of multi-draft verification (Lin et al. 2026: SpecTr-GBV, GBV; SpecTr's K-SEQ).

One iteration: every draft outcome is summed over (K i.i.d. blocks from q) and every
uniform acceptance test is integrated analytically (a test ``η < h`` is a branch of weight
h and one of weight 1 − h). SpecTr-GBV (Alg. 1) is processed draft by draft as a dynamic
program over the algorithm's state ``(τ, t, H)`` — H pruned to the sub-blocks deeper than τ,
the only ones line 5 can still look up — so K drafts cost K·V^γ·2^γ per state, not V^{γK}.
K-SEQ is a recursion over positions carrying the number of drafts still alive.

Several iterations: the first N emitted tokens over as many iterations as it takes, with
Alg. 2's modified target carried into the next iteration (its block tree uses the modified
conditionals at the first γ − τ − 1 depths). Meant for V ≤ 4, γ ≤ 3, K ≤ 4.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_enumerable, check_int, check_state, check_type
from ..closed_forms import multidraft as cf
from ..markov import MarkovPair, next_state
from ..rules.multidraft import SPECTR_GBV, MultiDraftRule


@dataclass(frozen=True)
class Outcome:
    """One outcome of an iteration: accepted block ``t`` (length τ), then token ``y``
    (correction if τ < γ, bonus if τ = γ), with its probability."""

    tau: int
    t: tuple
    y: int
    prob: float


def _decode(code: int, depth: int, V: int) -> tuple:
    out = []
    for _ in range(depth):
        out.append(code % V)
        code //= V
    return tuple(reversed(out))


def _check_tree_rule(tree, rule, algorithm: str | None = None) -> None:
    check_type(tree, cf.BlockTree, "tree")
    check_type(rule, MultiDraftRule, "rule", " (spectheory.rules.multidraft)")
    if algorithm is not None and rule.algorithm != algorithm:
        raise ValueError(f"rule {rule.name!r} is a {rule.algorithm!r} rule; this function runs {algorithm!r} "
                         "(iteration_outcomes dispatches on rule.algorithm)")


# --- SpecTr-GBV (Alg. 1) ---------------------------------------------------------------------

def spectr_gbv_accept_law(tree: cf.BlockTree, K: int, rule: MultiDraftRule = SPECTR_GBV) -> dict:
    """``{(τ, code of t): probability}`` of the final accepted block of Alg. 1."""
    _check_tree_rule(tree, rule, "spectr_gbv")
    K = check_int(K, "K", min=1)
    V, g = tree.V, tree.gamma
    h = cf.h_tables(tree, K, rule.h_form, rule.power, rule.h_scale)
    leaves = np.flatnonzero(tree.Q[g] > 0)
    pw = [V ** (g - i) for i in range(g + 1)]
    states = {(0, 0, frozenset()): 1.0}
    for _ in range(K):
        new: dict = {}
        for (tau, tcode, H), w in states.items():
            if tau == g:  # line 13: break after a full block is accepted
                new[(tau, tcode, H)] = new.get((tau, tcode, H), 0.0) + w
                continue
            for leaf in leaves:
                wq = w * tree.Q[g][leaf]
                # branches over i = τ+1..γ: (τ', t', H', weight)
                branches = [(tau, tcode, H, wq)]
                for i in range(tau + 1, g + 1):
                    node = (i, int(leaf // pw[i]))
                    hi = float(h[i][node[1]])
                    nxt = []
                    for (ta, tc, HH, ww) in branches:
                        if ta == g:
                            nxt.append((ta, tc, HH, ww))
                            continue
                        if node in HH and rule.h_in_H == "reject":
                            nxt.append((ta, tc, HH, ww))
                            continue
                        if hi > 0.0:
                            nxt.append((i, node[1], HH, ww * hi))
                        if hi < 1.0:
                            nxt.append((ta, tc, HH | {node}, ww * (1.0 - hi)))
                    branches = nxt
                for (ta, tc, HH, ww) in branches:
                    if ww == 0.0:
                        continue
                    HH = frozenset(n for n in HH if n[0] > ta)
                    key = (ta, tc, HH)
                    new[key] = new.get(key, 0.0) + ww
        states = new
    law: dict = {}
    for (tau, tcode, _), w in states.items():
        law[(tau, tcode)] = law.get((tau, tcode), 0.0) + w
    return law


def _final_token_dist(tree: cf.BlockTree, tau: int, tcode: int, K: int, rule: MultiDraftRule):
    V, g = tree.V, tree.gamma
    base = tree.condP[tau][tcode]
    if tau == g or rule.residual == "p":
        return base
    w = cf.residual_weights(tree, tau, tcode, rule.exponent(K))
    s = w.sum()
    return w / s if s > 0 else base


def spectr_gbv_outcomes(tree: cf.BlockTree, K: int, rule: MultiDraftRule = SPECTR_GBV) -> list[Outcome]:
    """Every (t, y) emitted by one iteration of Alg. 1 with its exact probability."""
    out = []
    V = tree.V
    for (tau, tcode), w in spectr_gbv_accept_law(tree, K, rule).items():
        d = _final_token_dist(tree, tau, tcode, K, rule)
        t = _decode(tcode, tau, V)
        for y in np.flatnonzero(d):
            out.append(Outcome(tau, t, int(y), w * float(d[y])))
    return out


def modification(tree: cf.BlockTree, tau: int, tcode: int, y: int, K: int,
                 rule: MultiDraftRule = SPECTR_GBV) -> list | None:
    """Alg. 2: the target conditionals for the next iteration's first γ − τ − 1 depths,
    ``p_new(x | x^{j}) ∝ p(t, y, x^{j}, x)(1 − m(t, y, x^{j}, x))^K`` (joints of this
    iteration's block tree); a row of zero mass keeps the current conditional."""
    _check_tree_rule(tree, rule)
    V, g = tree.V, tree.gamma
    tau = check_int(tau, "tau", min=0, max=g)
    tcode = check_int(tcode, "tcode (accepted block)", min=0, max=V ** tau - 1)
    y = check_int(y, "y (token)", min=0, max=V - 1)
    K = check_int(K, "K", min=1)
    n_mod = g - tau - 1
    if n_mod <= 0 or not rule.modify:
        return None
    e = rule.exponent(K)
    head = tcode * V + y  # code of (t, y) at depth τ + 1
    rows = []
    for j in range(n_mod):
        depth = tau + 1 + j
        codes = head * V ** j + np.arange(V ** j)
        Pc = tree.P[depth + 1].reshape(-1, V)[codes]
        Qc = tree.Q[depth + 1].reshape(-1, V)[codes]
        w = cf.W(Pc, Qc, e)
        s = w.sum(axis=1, keepdims=True)
        cur = tree.condP[depth][codes]
        rows.append(np.where(s > 0, w / np.where(s > 0, s, 1.0), cur))
    return rows


# --- K-SEQ -----------------------------------------------------------------------------------

def _kseq_rho(rule: MultiDraftRule, p, q, n_alive: int, K: int) -> float:
    if rule.rho != "solve":
        return 1.0 if rule.rho == "one" else float(n_alive)
    return cf.kseq_rho(p, q, K if rule.rho_k == "initial" else n_alive)


def kseq_outcomes(tree: cf.BlockTree, K: int, rule: MultiDraftRule) -> list[Outcome]:
    """Every (t, y) of one K-SEQ iteration with its exact probability."""
    _check_tree_rule(tree, rule, "kseq")
    K = check_int(K, "K", min=1)
    V, g = tree.V, tree.gamma
    out: list[Outcome] = []
    import itertools

    def go(depth, code, n, w):
        p, q = tree.condP[depth][code], tree.condQ[depth][code]
        t = _decode(code, depth, V)
        if depth == g:
            for y in np.flatnonzero(p):
                out.append(Outcome(g, t, int(y), w * float(p[y])))
            return
        rho = _kseq_rho(rule, p, q, n, K)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(q > 0, np.minimum(1.0, p / (rho * np.where(q > 0, q, 1.0))), 0.0)
        acc = {}  # (token, copies) -> prob
        none = 0.0
        supp = np.flatnonzero(q)
        for cand in itertools.product(supp, repeat=n):
            pc = float(np.prod(q[list(cand)]))
            stay = 1.0
            for j, x in enumerate(cand):
                pa = stay * a[x]
                if pa > 0:
                    key = (int(x), cand.count(x))
                    acc[key] = acc.get(key, 0.0) + pc * pa
                stay *= 1.0 - a[x]
            none += pc * stay
        if none > 0:
            res = p if rule.residual == "p" else cf.kseq_residual(p, q, rho)
            for y in np.flatnonzero(res):
                out.append(Outcome(depth, t, int(y), w * none * float(res[y])))
        for (x, c), pr in acc.items():
            go(depth + 1, code * V + x, c, w * pr)

    go(0, 0, K, 1.0)
    return out


# --- public API ------------------------------------------------------------------------------

def iteration_outcomes(tree: cf.BlockTree, K: int, rule: MultiDraftRule = SPECTR_GBV) -> list[Outcome]:
    """One iteration's outcomes for any rule (GBV = spectr_gbv with K = 1)."""
    _check_tree_rule(tree, rule)
    if rule.algorithm == "kseq":
        return kseq_outcomes(tree, K, rule)
    return spectr_gbv_outcomes(tree, K, rule)


def tau_distribution(tree: cf.BlockTree, K: int, rule: MultiDraftRule = SPECTR_GBV) -> np.ndarray:
    """Exact ``P(τ = k)``, k = 0..γ, of one iteration."""
    _check_tree_rule(tree, rule)
    d = np.zeros(tree.gamma + 1)
    for o in iteration_outcomes(tree, K, rule):
        d[o.tau] += o.prob
    return d


def expected_tau(tree: cf.BlockTree, K: int, rule: MultiDraftRule = SPECTR_GBV) -> float:
    """Exact E[τ] of one iteration."""
    d = tau_distribution(tree, K, rule)
    return float(d @ np.arange(d.size))


def prefix_acceptance(tree: cf.BlockTree, K: int, rule: MultiDraftRule = SPECTR_GBV) -> list:
    """``P(τ ≥ i and t^i = x^i)`` for every block x^i, i = 1..γ (index 0 unused): the
    quantity of Lemma A.1 (spectr_gbv.sub_block)."""
    _check_tree_rule(tree, rule)
    V, g = tree.V, tree.gamma
    acc = [None] + [np.zeros(V ** i) for i in range(1, g + 1)]
    if rule.algorithm == "kseq":
        law: dict = {}
        for o in kseq_outcomes(tree, K, rule):
            c = 0
            for x in o.t:
                c = c * V + x
            law[(o.tau, c)] = law.get((o.tau, c), 0.0) + o.prob
    else:
        law = spectr_gbv_accept_law(tree, K, rule)
    for (tau, tcode), w in law.items():
        for i in range(1, tau + 1):
            acc[i][tcode // V ** (tau - i)] += w
    return acc


def first_tokens_distribution(pair: MarkovPair, gamma: int, K: int, n_tokens: int,
                              rule: MultiDraftRule = SPECTR_GBV, start_state: int = 0) -> np.ndarray:
    """Exact law of the first ``n_tokens`` emitted tokens over as many iterations as it
    takes (Alg. 3: drafts redrawn each iteration, Alg. 2's modification carried over), as a
    flat array over V**n_tokens sequences — compare with ``pair.target.sequence_probs``."""
    check_type(pair, MarkovPair, "pair")
    check_type(rule, MultiDraftRule, "rule", " (spectheory.rules.multidraft)")
    gamma = check_int(gamma, "gamma", min=1)
    K = check_int(K, "K", min=1)
    n_tokens = check_enumerable(pair.V, check_int(n_tokens, "n_tokens", min=1))
    check_state(start_state, pair.n_states)
    V, S = pair.V, pair.n_states
    memo: dict = {}

    def dist(state, override, n):
        key = (state, n, None if override is None else tuple(np.round(r, 15).tobytes() for r in override))
        if key in memo:
            return memo[key]
        tree = cf.block_tree(pair, gamma, state, override)
        out = np.zeros(V ** n)
        for o in iteration_outcomes(tree, K, rule):
            em = o.t + (o.y,)
            L = len(em)
            idx = 0
            for tkn in em[:n]:
                idx = idx * V + tkn
            if L >= n:
                out[idx] += o.prob
                continue
            s = state
            for tkn in em:
                s = int(next_state(s, tkn, V, S))
            tcode = 0
            for x in o.t:
                tcode = tcode * V + x
            ov = modification(tree, o.tau, tcode, o.y, K, rule) if rule.algorithm == "spectr_gbv" else None
            w = V ** (n - L)
            out[idx * w:(idx + 1) * w] += o.prob * dist(s, ov, n - L)
        memo[key] = out
        return out

    return dist(start_state, None, n_tokens)


def one_iteration_tv(tree: cf.BlockTree, K: int, rule: MultiDraftRule = SPECTR_GBV) -> tuple[float, tuple, float, float]:
    """Theorem 4.2 within one iteration: the law of ``O = (t, y, x^{γ−τ−1})`` with the tail
    drawn from Alg. 2's modified distribution, against ``p(x^γ)``... extended to depth γ.
    Returns (TV, worst sequence, its claimed p, its measured probability)."""
    _check_tree_rule(tree, rule)
    V, g = tree.V, tree.gamma
    law = np.zeros(V ** g)
    for o in iteration_outcomes(tree, K, rule):
        em = o.t + (o.y,)
        tcode = 0
        for x in o.t:
            tcode = tcode * V + x
        head = 0
        for x in em[:g]:
            head = head * V + x
        L = min(len(em), g)
        if L == g:
            law[head] += o.prob
            continue
        ov = modification(tree, o.tau, tcode, o.y, K, rule) if rule.modify and rule.algorithm == "spectr_gbv" else None
        tail = np.ones(1)
        for j in range(g - L):
            rows = ov[j] if ov is not None and j < len(ov) else None
            if rows is None:
                codes = head * V ** j + np.arange(V ** j)
                rows = tree.condP[L + j][codes]
            tail = (tail[:, None] * rows).ravel()
        w = V ** (g - L)
        law[head * w:(head + 1) * w] += o.prob * tail
    diff = law - tree.P[g]
    k = int(np.argmax(np.abs(diff)))
    return float(0.5 * np.abs(diff).sum()), _decode(k, g, V), float(tree.P[g][k]), float(law[k])
