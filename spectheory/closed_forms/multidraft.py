"""Closed forms of SpecTr-GBV (Lin et al. 2026) and of K-SEQ (Sun et al. 2023).

Notation is ours throughout: ``p`` target, ``q`` draft (the paper swaps the letters; its
equations are quoted here translated). Blocks ``x^i`` are indexed by depth i and a flat code
(first token most significant), so depth-i arrays have ``V**i`` entries:

* ``P[i][c] = p(x^i)``, ``Q[i][c] = q(x^i)`` — joint block probabilities from a start state;
* ``m(x^i) = min(q(x^i)/p(x^i), 1)`` (0 where p(x^i) = 0 is irrelevant: it is always
  multiplied by p(x^i));
* ``A(x^i) = p(x^i)[1 − (1 − m(x^i))^K]`` (Lemma A.1);
* ``h`` (Eq. 2 for i < γ, Eq. 3 for i = γ), the residual (Eq. 4) and the distribution
  modification (Alg. 2) all reduce to ``W(x^i) = p(x^i)(1 − m(x^i))^K = p·max(1 − q/p, 0)^K``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from ..checks import check_int, check_real, check_state, check_type
from ..distributions import DistributionError, check_distribution, check_pair
from ..markov import MarkovPair, next_state

#: Refuse block trees with more nodes than this at the deepest level.
MAX_LEAVES = 200_000


# --- K-SEQ (Sun et al. 2023, SpecTr; Lin et al. Sec. 3.2) -------------------------------------------

def _check_pq(p, q):
    p, q = check_pair(p, q, names=("p (target)", "q (draft)"))
    if p.ndim != 1:
        raise DistributionError(f"p and q must be 1-D distributions over the vocabulary, got shape {p.shape}")
    return p, q


def _check_rho(rho, K: int | None = None) -> float:
    return check_real(rho, "ρ (rho)", lo=1.0, hi=None if K is None else float(K))


def _beta(p, q, rho):
    return float(np.minimum(q, p / rho).sum())


def kseq_beta(p, q, rho: float) -> float:
    """β(ρ) = Σ_x min(q(x), p(x)/ρ) (Lin et al. Sec. 3.2, translated); ρ ≥ 1."""
    p, q = _check_pq(p, q)
    return _beta(p, q, _check_rho(rho))


def kseq_rho(p, q, K: int) -> float:
    """ρ ∈ [1, K] solving ``1 − (1 − β(ρ))^K = ρ β(ρ)``.

    f(ρ) = 1 − (1 − β(ρ))^K − ρβ(ρ) has f(1) ≥ 0 and f(K) ≤ 0 and is strictly decreasing
    unless β ≡ 0 (disjoint supports), so the root is unique except then. Edge cases, all
    resolved to ρ = 1 (the acceptance 1 − (1 − β)^K is then the same for every root):
    K = 1 (f ≡ 0·(1 − ρ)), β(1) ∈ {0, 1} (disjoint supports, or p = q where f(1) = 0).
    Otherwise brentq on [1, K] (xtol 1e-15, rtol 4e-16).
    """
    K = check_int(K, "K", min=1)
    p, q = _check_pq(p, q)
    if K == 1:
        return 1.0

    def f(rho):
        b = _beta(p, q, rho)
        return 1.0 - (1.0 - b) ** K - rho * b

    b1 = _beta(p, q, 1.0)
    if b1 <= 0.0 or f(1.0) <= 0.0:
        return 1.0
    fK = f(float(K))
    if fK >= 0.0:
        return float(K)
    return float(brentq(f, 1.0, float(K), xtol=1e-15, rtol=4.0 * np.finfo(float).eps, maxiter=500))


def kseq_acceptance(p, q, K: int, rho: float | None = None) -> float:
    """P(some of K candidates accepted) = 1 − (1 − β(ρ))^K (= ρβ(ρ) at the root)."""
    K = check_int(K, "K", min=1)
    p, q = _check_pq(p, q)
    rho = kseq_rho(p, q, K) if rho is None else _check_rho(rho, K)
    return float(1.0 - (1.0 - _beta(p, q, rho)) ** K)


def kseq_residual(p, q, rho: float) -> np.ndarray:
    """K-SEQ residual ``(p − ρ·min(q, p/ρ)) / (1 − ρβ(ρ)) = norm(max(p − ρq, 0))``; falls back
    to p when it has no mass (then rejection has probability 0)."""
    p, q = _check_pq(p, q)
    rho = _check_rho(rho)
    w = np.maximum(p - rho * q, 0.0)
    s = w.sum()
    return w / s if s > 0 else p


# --- block trees -------------------------------------------------------------------------------

@dataclass(frozen=True)
class BlockTree:
    """Joint probabilities of every block up to depth γ (+1 level of conditionals).

    ``P[i]``, ``Q[i]``: (V**i,) joints, i = 0..γ; ``condP[i]``, ``condQ[i]``: (V**i, V) next-token
    conditionals after each depth-i block, i = 0..γ.
    """

    V: int
    gamma: int
    P: tuple
    Q: tuple
    condP: tuple
    condQ: tuple


def _markov_conditionals(source, V, S, start_state, gamma):
    out = []
    states = np.array([start_state], dtype=np.int64)
    for i in range(gamma + 1):
        out.append(source.rows[source.row_of_state[states]])
        states = next_state(states[:, None], np.arange(V)[None, :], V, S).ravel()
    return out


def block_tree(pair: MarkovPair, gamma: int, start_state: int = 0, target_override=None) -> BlockTree:
    """Block joints of ``pair`` from ``start_state``. ``target_override``: list of (V**j, V)
    conditionals replacing the target's at depths j = 0..len−1 (the distribution
    modification of Alg. 2 carried into the next iteration)."""
    check_type(pair, MarkovPair, "pair")
    gamma = check_int(gamma, "gamma", min=1)
    check_state(start_state, pair.n_states)
    V, S = pair.V, pair.n_states
    if V ** gamma > MAX_LEAVES:
        raise ValueError(f"V**γ = {V ** gamma} blocks is too many for an exact block tree")
    cp = _markov_conditionals(pair.target, V, S, start_state, gamma)
    cq = _markov_conditionals(pair.draft, V, S, start_state, gamma)
    if target_override is not None:
        if len(target_override) > gamma + 1:
            raise ValueError(f"target_override gives {len(target_override)} depths, more than γ + 1 = {gamma + 1}")
        for j, rows in enumerate(target_override):
            cp[j] = np.asarray(rows, dtype=np.float64)
    return tree_from_conditionals(cp, cq)


def tree_from_conditionals(condP, condQ) -> BlockTree:
    """Block tree from per-depth conditionals (lists of (V**i, V) arrays, i = 0..γ)."""
    if len(condP) == 0 or len(condP) != len(condQ):
        raise ValueError(f"condP and condQ must be non-empty lists of per-depth conditionals of one "
                         f"length (γ + 1), got {len(condP)} and {len(condQ)}")
    condP = [np.asarray(c, dtype=np.float64) for c in condP]
    condQ = [np.asarray(c, dtype=np.float64) for c in condQ]
    gamma = len(condP) - 1
    V = condP[0].shape[-1] if condP[0].ndim else 0
    for i in range(gamma + 1):
        for nm, c in (("condP", condP[i]), ("condQ", condQ[i])):
            if c.shape != (V ** i, V):
                raise DistributionError(f"{nm}[{i}] must have shape (V**{i}, V) = {(V ** i, V)}, got {c.shape}")
            check_distribution(c, name=f"{nm}[{i}]")
    P, Q = [np.ones(1)], [np.ones(1)]
    for i in range(gamma):
        P.append((P[-1][:, None] * condP[i]).ravel())
        Q.append((Q[-1][:, None] * condQ[i]).ravel())
    return BlockTree(V, gamma, tuple(P), tuple(Q), tuple(condP), tuple(condQ))


def iid_tree(p, q, gamma: int) -> BlockTree:
    """Block tree of an order-0 pair (same p, q at every position)."""
    p, q = _check_pq(p, q)
    gamma = check_int(gamma, "gamma", min=1)
    V = p.shape[0]
    if V ** gamma > MAX_LEAVES:
        raise ValueError(f"V**γ = {V ** gamma} blocks is too many for an exact block tree")
    return tree_from_conditionals([np.tile(p, (V ** i, 1)) for i in range(gamma + 1)],
                                  [np.tile(q, (V ** i, 1)) for i in range(gamma + 1)])


def W(P, Q, K: int):
    """``p(x^i)(1 − m(x^i))^K = p·max(1 − q/p, 0)^K`` elementwise (0 where p = 0)."""
    K = check_int(K, "K", min=1)
    P = np.asarray(P, float)
    Q = np.asarray(Q, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(P > 0, np.maximum(1.0 - Q / np.where(P > 0, P, 1.0), 0.0), 0.0)
    return P * r ** K


def A(P, Q, K: int):
    """``A(x^i) = p(x^i)[1 − (1 − m(x^i))^K]`` (Lemma A.1)."""
    return np.asarray(P, float) - W(P, Q, K)


def has_prob(Q, K: int):
    """``P(some of K i.i.d. drafts has prefix x^i) = 1 − (1 − q(x^i))^K``."""
    K = check_int(K, "K", min=1)
    return 1.0 - (1.0 - np.asarray(Q, float)) ** K


def _ratio(num, den):
    """num/den clipped to [0, 1]; 0/0 → 0 (the event has probability 0), x/0 with x > 0 → 1."""
    num = np.maximum(num, 0.0)
    den = np.maximum(den, 0.0)
    tiny = 1e-300
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den > tiny, num / np.where(den > tiny, den, 1.0), np.where(num > 1e-15, 1.0, 0.0))
    return np.clip(r, 0.0, 1.0)


def h_tables(tree: BlockTree, K: int, h_form: str = "eq2", power: int | None = None, scale: float = 1.0) -> list:
    """Acceptance probabilities ``h[i][code]`` for every block, i = 1..γ (``h[0]`` unused).

    ``h_form="eq2"``: the paper's Eq. 2 for i < γ and Eq. 3 for i = γ (translated):
    ``h(x^i) = [Σ_x W(x^i,x) − W(x^i)] / [1 − (1 − q(x^i))^K − p(x^i) + Σ_x W(x^i,x)]``,
    ``h(x^γ) = A(x^γ) / (1 − (1 − q(x^γ))^K)``.
    ``power`` replaces K in ``(1 − m)^K`` and ``scale`` multiplies every h (broken variants only).
    ``h_form="sec3.3"`` (K = 1 only): the single-draft formula printed in Sec. 3.3,
    ``α(x^i) = Σ_x max(ν_i p(x|x^i) − q(x|x^i), 0) / Σ_x max(q(x|x^i) − ν_i p(x|x^i), 0)`` with
    the unclipped ``ν_i = p(x^i)/q(x^i)``, and ``α(x^γ) = min(ν_γ, 1)`` — which is Sun et al.
    2024b's block verification, not the greedy one; kept as the alternative reading.
    """
    check_type(tree, BlockTree, "tree")
    K = check_int(K, "K", min=1)
    e = K if power is None else check_int(power, "power", min=1)  # exponent of (1 − m); a broken variant changes it
    g = tree.gamma
    V = tree.V
    h = [None]
    for i in range(1, g + 1):
        Pi, Qi = tree.P[i], tree.Q[i]
        if h_form == "one":
            h.append(np.ones_like(Pi))
            continue
        if h_form == "sec3.3":
            if i == g:
                with np.errstate(divide="ignore", invalid="ignore"):
                    nu = np.where(Qi > 0, Pi / np.where(Qi > 0, Qi, 1.0), 0.0)
                h.append(np.clip(nu, 0.0, 1.0))
                continue
            Pc = tree.P[i + 1].reshape(-1, V)
            Qc = tree.Q[i + 1].reshape(-1, V)
            num = np.maximum(Pc - Qc, 0.0).sum(axis=1)
            den = np.maximum(Qc - Pc, 0.0).sum(axis=1)
            h.append(_ratio(num, den))
            continue
        if h_form != "eq2":
            raise ValueError(f"unknown h_form {h_form!r}")
        if i == g:
            h.append(_ratio(A(Pi, Qi, e), has_prob(Qi, K)))
            continue
        Wc = W(tree.P[i + 1], tree.Q[i + 1], e).reshape(-1, V).sum(axis=1)
        num = Wc - W(Pi, Qi, e)
        den = has_prob(Qi, K) - Pi + Wc
        h.append(_ratio(num, den))
    return h if scale == 1.0 else [None] + [scale * hi for hi in h[1:]]


def residual_weights(tree: BlockTree, i: int, code: int, K: int) -> np.ndarray:
    """Unnormalised Eq. 4 residual after block (i, code): ``W(x^i, x)`` over x (i < γ)."""
    check_type(tree, BlockTree, "tree")
    i = check_int(i, "i (depth)", min=0, max=tree.gamma - 1)
    code = check_int(code, "code (block)", min=0, max=tree.V ** i - 1)
    V = tree.V
    sl = slice(code * V, code * V + V)
    return W(tree.P[i + 1][sl], tree.Q[i + 1][sl], K)


def lemma51_bound(tree: BlockTree, K: int) -> float:
    """Lemma 5.1 / Thm 5.3: ``Σ_{i=1}^{γ} Σ_{x^i} A(x^i)``."""
    check_type(tree, BlockTree, "tree")
    return float(sum(A(tree.P[i], tree.Q[i], K).sum() for i in range(1, tree.gamma + 1)))


def lemma51_bound_pair(pair: MarkovPair, gamma: int, K: int, start_state: int = 0) -> float:
    return lemma51_bound(block_tree(pair, gamma, start_state), K)


def gbv_optimum(tree: BlockTree) -> float:
    """``Σ_{i=1}^{γ} Σ_{x^i} min(p(x^i), q(x^i))`` (gbv.optimal; Remark 5.2 at K = 1)."""
    check_type(tree, BlockTree, "tree")
    return float(sum(np.minimum(tree.P[i], tree.Q[i]).sum() for i in range(1, tree.gamma + 1)))


def sd_expected_tau(tree: BlockTree) -> float:
    """Token-level SD: ``E[τ] = Σ_i Σ_{x^i} Π_{j≤i} min(p, q)(x_j | x^{j−1})``."""
    check_type(tree, BlockTree, "tree")
    tot, run = 0.0, np.ones(1)
    for i in range(tree.gamma):
        run = (run[:, None] * np.minimum(tree.condP[i], tree.condQ[i])).ravel()
        tot += run.sum()
    return float(tot)


def bound_limit_gap(tree: BlockTree, K: int) -> float:
    """γ' − Bound(K) where γ' = Σ_i Σ_{x^i: q(x^i)>0} p(x^i): the K → ∞ limit of the bound
    (= γ exactly when q covers p's support)."""
    check_type(tree, BlockTree, "tree")
    lim = sum(tree.P[i][tree.Q[i] > 0].sum() for i in range(1, tree.gamma + 1))
    return float(lim - lemma51_bound(tree, K))


def bound_limit(tree: BlockTree) -> float:
    """``lim_{K→∞} Bound(K) = Σ_i Σ_{x^i: q(x^i) > 0} p(x^i)`` (= γ iff q covers p's support)."""
    check_type(tree, BlockTree, "tree")
    return float(sum(tree.P[i][tree.Q[i] > 0].sum() for i in range(1, tree.gamma + 1)))


# --- reference selection steps: plain Python, so spectheory.opcount can count their work -------

def _w_term(P: float, Q: float, K: int, power: str) -> float:
    if P <= 0.0:
        return 0.0
    r = 1.0 - Q / P
    if r <= 0.0:
        return 0.0
    if power == "pow":
        return P * r ** float(K)  # one float power (libm pow): O(1) whatever K
    out = P
    for _ in range(K):  # broken: K multiplications, O(K) per term
        out *= r
    return out


def selection_step_reference(p_row, q_children, Pprefix: float, Qprefix: float, K: int, power: str = "pow") -> float:
    """One SpecTr-GBV selection step at a sub-block x^i (Eq. 2) in plain Python over sequences:
    the O(V) sum Σ_x W(x^i x) with ``p(x^i x) = Pprefix·p_row[x]``, ``q(x^i x) = Qprefix·q_children[x]``,
    then the ratio. ``power="pow"``: each ``(1 − m)^K`` is one float power; ``"loop"`` (broken)
    multiplies K times. The same h as the kernel's ``selection_step``; this version exists so
    :func:`spectheory.opcount.count_opcodes` can count the work (spectr_gbv.cost)."""
    if power not in ("pow", "loop"):
        raise ValueError(f"power must be 'pow' or 'loop', got {power!r}")
    sw = 0.0
    for x in range(len(p_row)):
        sw += _w_term(Pprefix * p_row[x], Qprefix * q_children[x], K, power)
    hp = 1.0 - (1.0 - Qprefix) ** float(K)
    num, den = sw - _w_term(Pprefix, Qprefix, K, power), hp - Pprefix + sw
    return 0.0 if den <= 1e-300 else min(1.0, max(0.0, num / den))


def kseq_rho_reference(p, q, K: int, search: str = "bisection") -> float:
    """K-SEQ's ρ at one position in plain Python: ``f(ρ) = 1 − (1 − β(ρ))^K − ρβ(ρ)`` with
    ``β(ρ) = Σ_x min(q(x), p(x)/ρ)`` (one O(V) pass per evaluation). ``"bisection"``: ⌈log2 K⌉ + 1
    halvings of [1, K] (so O(V log K) per step, the cost Lin et al. attribute to SpecTr);
    ``"scan"`` (broken): f at K − 1 evenly spaced points, O(V·K)."""
    if search not in ("bisection", "scan"):
        raise ValueError(f"search must be 'bisection' or 'scan', got {search!r}")

    def f(rho):
        b = 0.0
        for x in range(len(p)):
            v = p[x] / rho
            b += q[x] if q[x] < v else v
        return 1.0 - (1.0 - b) ** K - rho * b

    lo, hi = 1.0, float(K)
    if search == "scan":
        for j in range(1, K):
            rho = 1.0 + (K - 1.0) * j / K
            if f(rho) > 0.0:
                lo = rho
            else:
                return 0.5 * (lo + rho)
        return 0.5 * (lo + hi)
    for _ in range(math.ceil(math.log2(K)) + 1):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
