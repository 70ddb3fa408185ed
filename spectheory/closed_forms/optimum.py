"""The true optimum of K i.i.d. drafts: the best expected accepted length of any coupling.

A verification that emits the target block ``Y^γ ~ p`` (its first τ + 1 tokens now, the
rest through a modified target, as GBV and SpecTr-GBV do) and sees K i.i.d. drafts
``X_k ~ q`` is a coupling π of ``q^{⊗K}`` (on the drafts) and ``p`` (on blocks); it accepts
``τ(X, Y) = max{i : some X_k^i = Y^i}``. The optimum over all couplings is a linear program
(HiGHS through :func:`scipy.optimize.linprog`) with ``V^{γK}·V^γ`` variables: small
instances only. Lin et al.'s Lemma 5.1 restricts to *conditionally independent* couplings;
the LP is over all couplings, so ``LP ≥`` every algorithm here, and ``LP − bound`` measures
what the CIC restriction gives away.

γ = 1 has a closed form (Sun et al. 2023, SpecTr): ``max P(Y ∈ {X_k}) = min_{H ⊆ Ω}
p(H) + 1 − q(H)^K`` (min over all 2^V subsets).
"""
from __future__ import annotations

import itertools

import numpy as np
from scipy import optimize, sparse

from ..checks import check_int, check_type
from ..rng import check_random_state
from .multidraft import BlockTree, _check_pq

#: Largest LP (number of variables) solved.
MAX_VARIABLES = 300_000


def gamma1_optimum(p, q, K: int) -> float:
    """``min over subsets H of p(H) + 1 − q(H)^K`` (exhaustive over 2^V subsets; V ≤ 20)."""
    K = check_int(K, "K", min=1)
    p, q = _check_pq(p, q)
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
    check_type(tree, BlockTree, "tree")
    K = check_int(K, "K", min=1)
    V, g = tree.V, tree.gamma
    codes = np.arange(V ** g)
    digits = np.stack([(codes // V ** (g - 1 - j)) % V for j in range(g)], axis=1)  # (V^g, γ)
    same = digits[:, None, :] == digits[None, :, :]
    match = np.cumprod(same, axis=2).sum(axis=2)  # common-prefix length of two blocks
    qs = np.flatnonzero(tree.Q[g] > 0)
    ps = np.flatnonzero(tree.P[g] > 0)
    nX, nY = len(qs) ** K, len(ps)
    if nX * nY > MAX_VARIABLES:  # before the K-fold product is materialised
        raise ValueError(f"LP with {nX * nY} variables is too large (limit {MAX_VARIABLES})")
    X = np.array(list(itertools.product(qs, repeat=K)), dtype=np.int64).reshape(-1, K)
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
    p, q = _check_pq(p, q)
    keep = q > 0
    pk, qk = p[keep], q[keep]
    order = np.argsort(pk / qk, kind="stable")
    cp = np.concatenate([[0.0], np.cumsum(pk[order])])
    cq = np.concatenate([[0.0], np.cumsum(qk[order])])
    return float(min(1.0, (cp + 1.0 - np.minimum(cq, 1.0) ** K).min()))


def cic_search(tree: BlockTree, *, restarts: int = 20, iters: int = 30, seed=0) -> tuple[float, dict]:
    """Best E[τ] found over conditionally independent couplings of K = 2 drafts (Lemma 5.1's
    class): ``π(x1, x2, y) = p(y) r1(x1|y) r2(x2|y)`` with the drafts' joint law ``q ⊗ q``.

    The objective and constraints are bilinear; with one kernel fixed they are linear in the
    other, so each step is an LP (HiGHS) and alternating them never decreases E[τ] and stays
    feasible. Starts: r2 ≡ q (independent of y) and r1 a random coupling with marginal q —
    feasible. A heuristic: it finds couplings, it cannot prove there is no better one.
    Returns (best E[τ], {"r1", "r2", "blocks"})."""
    check_type(tree, BlockTree, "tree")
    restarts = check_int(restarts, "restarts", min=1)
    iters = check_int(iters, "iters", min=0)
    rng = check_random_state(seed)
    V, g = tree.V, tree.gamma
    codes = np.arange(V ** g)
    digits = np.stack([(codes // V ** (g - 1 - j)) % V for j in range(g)], axis=1)
    match = np.cumprod(digits[:, None, :] == digits[None, :, :], axis=2).sum(axis=2).astype(float)
    xs = np.flatnonzero(tree.Q[g] > 0)
    ys = np.flatnonzero(tree.P[g] > 0)
    q = tree.Q[g][xs] / tree.Q[g][xs].sum()
    p = tree.P[g][ys] / tree.P[g][ys].sum()
    M = match[np.ix_(xs, ys)]  # (nx, ny): common-prefix length of draft block and target block
    nx, ny = len(xs), len(ys)
    T = np.maximum(M[:, None, :], M[None, :, :])  # (x1, x2, y) → τ

    def solve(fixed, first):
        # variables r(x|y) for the free kernel, index x*ny + y
        if first:   # free = r1, fixed = r2: coefficient of r1(x1|y) in E[τ]: p(y) Σ_x2 r2(x2|y) T[x1,x2,y]
            c = np.einsum("y,by,aby->ay", p, fixed, T)
        else:
            c = np.einsum("y,ay,aby->by", p, fixed, T)
        rows, cols, vals, b = [], [], [], []
        r = 0
        for a in range(nx):          # joint constraint Σ_y p(y) fixed(a|y) free(b|y) = q(a) q(b)
            for bb in range(nx):
                for y in range(ny):
                    w = p[y] * fixed[a, y]
                    if w:
                        rows.append(r)
                        cols.append(bb * ny + y)
                        vals.append(w)
                b.append(q[a] * q[bb])
                r += 1
        for y in range(ny):          # each free(·|y) is a distribution
            for x in range(nx):
                rows.append(r)
                cols.append(x * ny + y)
                vals.append(1.0)
            b.append(1.0)
            r += 1
        A = sparse.csr_matrix((vals, (rows, cols)), shape=(r, nx * ny))
        res = optimize.linprog(-c.ravel(), A_eq=A, b_eq=np.array(b), bounds=(0, None), method="highs")
        if res.status != 0:
            return None
        return res.x.reshape(nx, ny)

    def value(r1, r2):
        return float(np.einsum("y,ay,by,aby->", p, r1, r2, T))

    best, arg = -np.inf, {}
    for _ in range(restarts):
        # random feasible start: r1 from a random coupling of (q, p), r2 ≡ q
        pi = rng.dirichlet(np.ones(nx * ny)).reshape(nx, ny)
        for _ in range(200):  # Sinkhorn to marginals (q, p)
            pi *= (q / pi.sum(axis=1))[:, None]
            pi *= (p / pi.sum(axis=0))[None, :]
        r1 = pi / pi.sum(axis=0, keepdims=True)
        r2 = np.tile(q[:, None], (1, ny))
        cur = value(r1, r2)
        for _ in range(iters):
            n2 = solve(r1, False)
            if n2 is None:
                break
            r2 = n2
            n1 = solve(r2, True)
            if n1 is None:
                break
            r1 = n1
            new = value(r1, r2)
            if new <= cur + 1e-12:
                cur = max(cur, new)
                break
            cur = new
        if cur > best:
            best, arg = cur, {"r1": r1, "r2": r2, "draft_blocks": xs, "target_blocks": ys}
    return best, arg
