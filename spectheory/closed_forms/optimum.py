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


def _match_len(a: tuple, b: tuple) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def lp_optimum(tree: BlockTree, K: int, *, return_plan: bool = False):
    """Max over all couplings of (K i.i.d. q-blocks, one p-block) of ``E[τ]``.

    Variables π(X, Y) for draft tuples X in the support of q^{⊗K} and Y in the support of
    p; equality constraints on both marginals. Returns the optimum (and the plan)."""
    K = check_int(K, "K", min=1)
    V, g = tree.V, tree.gamma
    blocks = [tuple(int(d) for d in np.base_repr(c, V).zfill(g)) if V > 1 else (0,) * g
              for c in range(V ** g)]
    qs = np.flatnonzero(tree.Q[g] > 0)
    ps = np.flatnonzero(tree.P[g] > 0)
    X = list(itertools.product(qs, repeat=K))
    nX, nY = len(X), len(ps)
    if nX * nY > MAX_VARIABLES:
        raise ValueError(f"LP with {nX * nY} variables is too large")
    qX = np.array([np.prod([tree.Q[g][c] for c in xs]) for xs in X])
    tau = np.empty((nX, nY))
    for a, xs in enumerate(X):
        for b, yc in enumerate(ps):
            tau[a, b] = max(_match_len(blocks[c], blocks[yc]) for c in xs)
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
