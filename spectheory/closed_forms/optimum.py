"""The true optimum of K i.i.d. drafts: the best expected accepted length of any coupling.

A verification that emits the target block ``Y^γ ~ p`` (its first τ + 1 tokens now, the
rest through a modified target, as GBV and SpecTr-GBV do) and sees K i.i.d. drafts
``X_k ~ q`` is a coupling π of ``q^{⊗K}`` (on the drafts) and ``p`` (on blocks); it accepts
``τ(X, Y) = max{i : some X_k^i = Y^i}``. The optimum over all couplings is a linear program
(HiGHS through :func:`scipy.optimize.linprog`) with ``V^{γK}·V^γ`` variables: small
instances only. Seed 003's Lemma 5.1 restricts to *conditionally independent* couplings;
the LP is over all couplings, so ``LP ≥`` every algorithm here, and ``LP − bound`` measures
what the CIC restriction gives away.

γ = 1 has a closed form (Sun et al. 2023, SpecTr): ``max P(Y ∈ {X_k}) = min_{H ⊆ Ω}
p(H) + 1 − q(H)^K`` (min over all 2^V subsets).
"""
from __future__ import annotations

import itertools

import numpy as np
from scipy import optimize, sparse

from ..checks import check_int
from .multidraft import BlockTree

#: Largest LP (number of variables) solved.
MAX_VARIABLES = 300_000


def gamma1_optimum(p, q, K: int) -> float:
    """``min over subsets H of p(H) + 1 − q(H)^K`` (exhaustive over 2^V subsets; V ≤ 20)."""
    K = check_int(K, "K", min=1)
    p = np.asarray(p, float)
    q = np.asarray(q, float)
    V = p.shape[0]
    if V > 20:
        raise ValueError("the subset minimum is exhaustive: V ≤ 20")
    masks = np.array(list(itertools.product((0.0, 1.0), repeat=V)))
    vals = masks @ p + 1.0 - (masks @ q) ** K
    return float(vals.min())


def lp_optimum(tree: BlockTree, K: int, *, return_plan: bool = False):
    """Max over all couplings of (K i.i.d. q-blocks, one p-block) of ``E[τ]``.

    Variables π(X, Y) for draft tuples X in the support of q^{⊗K} and Y in the support of
    p; equality constraints on both marginals. Returns the optimum (and the plan)."""
    K = check_int(K, "K", min=1)
    V, g = tree.V, tree.gamma
    codes = np.arange(V ** g)
    digits = np.stack([(codes // V ** (g - 1 - j)) % V for j in range(g)], axis=1)  # (V^g, γ)
    same = digits[:, None, :] == digits[None, :, :]
    match = np.cumprod(same, axis=2).sum(axis=2)  # common-prefix length of two blocks
    qs = np.flatnonzero(tree.Q[g] > 0)
    ps = np.flatnonzero(tree.P[g] > 0)
    X = np.array(list(itertools.product(qs, repeat=K)), dtype=np.int64).reshape(-1, K)
    nX, nY = len(X), len(ps)
    if nX * nY > MAX_VARIABLES:
        raise ValueError(f"LP with {nX * nY} variables is too large")
    qX = np.prod(tree.Q[g][X], axis=1)
    tau = match[X][:, :, ps].max(axis=1).astype(float)
    rows = np.concatenate([np.repeat(np.arange(nX), nY), nX + np.tile(np.arange(nY), nX)])
    cols = np.concatenate([np.arange(nX * nY), np.arange(nX * nY)])
    A_eq = sparse.csr_matrix((np.ones(2 * nX * nY), (rows, cols)), shape=(nX + nY, nX * nY))
    b_eq = np.concatenate([qX / qX.sum(), tree.P[g][ps] / tree.P[g][ps].sum()])
    # the two marginals have the same total: drop one redundant row (rounding would
    # otherwise make the system infeasible)
    res = optimize.linprog(-tau.ravel(), A_eq=A_eq[:-1], b_eq=b_eq[:-1], bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed: {res.message}")
    val = float(-res.fun)
    if return_plan:
        return val, res.x.reshape(nX, nY), X, ps
    return val


def gamma1_optimum_fast(p, q, K: int) -> float:
    """The same minimum in O(V log V), for any V (real vocabularies).

    For a fixed draft mass s = q(H), the smallest p(H) is a fractional knapsack: tokens in
    increasing order of p/q, so min_H p(H) + 1 − q(H)^K ≥ min_s φ(s) + 1 − s^K with φ convex
    piecewise linear; φ(s) − s^K is concave on each piece of φ, so the minimum sits at a
    breakpoint — a prefix of that order. Tokens with q = 0 only add p and are never taken."""
    K = check_int(K, "K", min=1)
    p = np.asarray(p, float)
    q = np.asarray(q, float)
    keep = q > 0
    pk, qk = p[keep], q[keep]
    order = np.argsort(pk / qk, kind="stable")
    cp = np.concatenate([[0.0], np.cumsum(pk[order])])
    cq = np.concatenate([[0.0], np.cumsum(qk[order])])
    return float(min(1.0, (cp + 1.0 - np.minimum(cq, 1.0) ** K).min()))
