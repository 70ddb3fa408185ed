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


def _cic_setup(tree: BlockTree):
    """(q, p over the support blocks at depth γ, T[x1, x2, y] = τ of two drafts against the target
    block — the longer common prefix —, the draft blocks, the target blocks)."""
    V, g = tree.V, tree.gamma
    codes = np.arange(V ** g)
    digits = np.stack([(codes // V ** (g - 1 - j)) % V for j in range(g)], axis=1)
    match = np.cumprod(digits[:, None, :] == digits[None, :, :], axis=2).sum(axis=2).astype(float)
    xs = np.flatnonzero(tree.Q[g] > 0)
    ys = np.flatnonzero(tree.P[g] > 0)
    q = tree.Q[g][xs] / tree.Q[g][xs].sum()
    p = tree.P[g][ys] / tree.P[g][ys].sum()
    M = match[np.ix_(xs, ys)]
    return q, p, np.maximum(M[:, None, :], M[None, :, :]), xs, ys


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
    q, p, T, xs, ys = _cic_setup(tree)
    nx, ny = len(xs), len(ys)

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


def _centered_basis(p) -> np.ndarray:
    """An orthonormal basis (rows) of the functions of y with E_p[f] = 0, in L²(p)."""
    B = []
    for v in np.eye(len(p)):
        v = v - p @ v
        for e in B:
            v = v - (p * e @ v) * e
        nv = float(np.sqrt(p @ (v * v)))
        if nv > 1e-9:
            B.append(v / nv)
    return np.array(B).reshape(-1, len(p))


def _box_vertices(lo, hi) -> list:
    """Vertices of {c : lo ≤ c ≤ hi, Σ c = 0}: every coordinate but one at a bound."""
    n, out = len(lo), []
    for j in range(n):
        others = [i for i in range(n) if i != j]
        for bits in itertools.product((0, 1), repeat=n - 1):
            c = np.zeros(n)
            c[others] = np.where(np.array(bits, dtype=bool), hi[others], lo[others])
            c[j] = -c[others].sum()
            if lo[j] - 1e-12 <= c[j] <= hi[j] + 1e-12 and not any(np.allclose(c, o, atol=1e-14) for o in out):
                out.append(c)
    return out


def _cic_given_direction(q, p, T, f):
    """max E[τ] over CIC couplings of two drafts whose second kernel is r2 = q + c·fᵀ: exact (an LP
    per vertex c of the feasible box, the rows of r1 − q confined to f's orthogonal complement).
    ``f = 0``: r2 ≡ q, and r1 any coupling of (q, p) (one LP)."""
    nx, ny = len(q), len(p)
    free = np.ptp(f) < 1e-12
    lo, hi = (np.zeros(nx), np.zeros(nx)) if free else (-q / f.max(), q / -f.min())
    rows = [np.kron(np.ones(nx), np.eye(ny)[y]) for y in range(ny)]            # Σ_a r1(a|y) = 1
    rows += [np.kron(np.eye(nx)[a], p) for a in range(nx - 1)]                 # Σ_y p r1(a|y) = q(a)
    rows += [] if free else [np.kron(np.eye(nx)[a], p * f) for a in range(nx)]  # rows of r1 − q ⟂ f
    A = np.array(rows)
    b = np.concatenate([np.ones(ny), q[:-1], np.zeros(0 if free else nx)])
    best = (-np.inf, None, None)
    for c in _box_vertices(lo, hi):
        r2 = q[:, None] + c[:, None] * f[None, :]
        coef = np.einsum("y,by,aby->ay", p, r2, T)
        res = optimize.linprog(-coef.ravel(), A_eq=A, b_eq=b, bounds=(0, None), method="highs")
        if res.status == 0 and -res.fun > best[0]:
            best = (float(-res.fun), res.x.reshape(nx, ny), r2)
    return best


def cic_optimum(tree: BlockTree, *, grid: int = 12, refine: int = 2, maxfev: int = 80) -> tuple[float, dict]:
    """The best E[τ] of a conditionally independent coupling of K = 2 drafts (Lemma 5.1's class),
    ``π(x1, x2, y) = p(y) r1(x1|y) r2(x2|y)`` with draft marginal ``q ⊗ q``, for targets with at most
    four blocks in p's support (γ = 1 with V ≤ 4, γ = 2 with V = 2).

    Reduction (exact): write ``r_k = q 1ᵀ + D_k``; the constraint is ``D1 diag(p) D2ᵀ = 0`` — the
    rows of D1 and of D2 span L²(p)-orthogonal subspaces of the centred functions of y, a space of
    dimension n_y − 1 ≤ 3. Since E[τ] is symmetric in the two drafts, one of them (say r2) may be
    taken to vary along a single direction f: ``r2 = q + c fᵀ``, the rows of r1 − q orthogonal to f,
    or not at all: ``r2 ≡ q`` with r1 any coupling of (q, p) (one more LP; with these two cases every
    pair of orthogonal subspaces of a space of dimension ≤ 3 is covered, up to swapping the drafts).
    For fixed f the best E[τ] is convex in c (a maximum
    of linear functions of c over r1's polytope, which does not depend on c), so it sits at a
    vertex of c's feasible box ``{Σ c = 0, q + c f ≥ 0}``: one HiGHS LP per vertex gives it
    exactly. What is left is the direction f on the unit sphere of the centred functions: a point
    for n_y = 2, a half circle for n_y = 3, a hemisphere for n_y = 4, searched on a grid of
    ``grid`` angles per dimension and refined by Nelder–Mead (``maxfev`` evaluations) from the
    ``refine`` best grid points. The result is a value attained by a feasible coupling (a lower
    bound on the class's optimum, exact up to that direction search). Returns (value,
    {"r1", "r2", "direction", "draft_blocks", "target_blocks", "evaluations"})."""
    check_type(tree, BlockTree, "tree")
    grid = check_int(grid, "grid", min=1)
    refine = check_int(refine, "refine", min=0)
    maxfev = check_int(maxfev, "maxfev", min=1)
    q, p, T, xs, ys = _cic_setup(tree)
    if len(ys) > 4:
        raise ValueError(f"cic_optimum reduces the search to directions only when p's support has ≤ 4 blocks "
                         f"(γ = 1 with V ≤ 4, γ = 2 with V = 2); this target has {len(ys)}")
    B = _centered_basis(p)
    d = len(B)
    seen = {"n": 0}

    def direction(a):
        if d <= 1:
            return np.ones(d)
        if d == 2:
            return np.array([np.cos(a[0]), np.sin(a[0])])
        return np.array([np.cos(a[0]), np.sin(a[0]) * np.cos(a[1]), np.sin(a[0]) * np.sin(a[1])])

    def value(a):
        seen["n"] += 1
        f = direction(a) @ B if d else np.zeros(len(p))
        return _cic_given_direction(q, p, T, f), f

    if d <= 1:
        starts = [np.zeros(0)]
    elif d == 2:
        starts = [np.array([t]) for t in np.linspace(0.0, np.pi, grid, endpoint=False)]
    else:
        starts = [np.array([t, u]) for t in np.linspace(0.0, np.pi / 2, max(2, grid // 2) + 1)
                  for u in np.linspace(0.0, 2 * np.pi, grid, endpoint=False)]
    scored = sorted(((value(a), a) for a in starts), key=lambda r: -r[0][0][0])
    (best, f_best), _ = scored[0]
    independent = _cic_given_direction(q, p, T, np.zeros(len(p)))  # r2 ≡ q: one draft independent of Y
    if independent[0] > best[0]:
        best, f_best = independent, np.zeros(len(p))
    if d >= 2:
        for (_, _), a in scored[:refine]:
            res = optimize.minimize(lambda x: -value(x)[0][0], a, method="Nelder-Mead",
                                    options={"maxfev": maxfev, "xatol": 1e-7, "fatol": 1e-13})
            cand, f = value(res.x)
            if cand[0] > best[0]:
                best, f_best = cand, f
    val, r1, r2 = best
    return val, {"r1": r1, "r2": r2, "direction": f_best, "draft_blocks": xs, "target_blocks": ys,
                 "evaluations": seen["n"]}


def cic_value(tree: BlockTree, r1, r2) -> tuple[float, float]:
    """(E[τ] of the coupling p(y) r1(x1|y) r2(x2|y) over the support blocks of ``tree``, the largest
    violation of its constraints: draft marginal q ⊗ q, kernels non-negative and summing to 1)."""
    q, p, T, _, _ = _cic_setup(tree)
    r1, r2 = np.asarray(r1, float), np.asarray(r2, float)
    joint = np.einsum("y,ay,by->ab", p, r1, r2)
    viol = max(float(np.abs(joint - np.outer(q, q)).max()), float(max(0.0, -r1.min(), -r2.min())),
               float(np.abs(r1.sum(axis=0) - 1).max()), float(np.abs(r2.sum(axis=0) - 1).max()))
    return float(np.einsum("y,ay,by,aby->", p, r1, r2, T)), viol
