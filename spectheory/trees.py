"""Drafting trees, their acceptance functions and the optimal-tree search of Kobus & Gündüz (§4).

A **drafting tree** is a finite set of vertices, each the path ``(i_1, …, i_d)`` of acceptance
indices (1-based) from the root, closed under taking ancestors (the paper's validity condition,
§4: "any node in this top-k list will have all its ancestors also present"). Vertex
``(i_1, …, i_d)`` is accepted iff the acceptance index at the j-th context of the iteration is
``i_j`` for every j (``spectheory.rules.ersd``). The number of drafted tokens is the number of
vertices k; the iteration emits ``1 + #accepted vertices`` tokens, so (the paper's Eq. 4)

    E[generated tokens] = 1 + Σ_{v ∈ tree} f(v),     f(v) = P(v accepted).

Interpretation (noted where used): the tree need not be *sibling-closed* — a vertex may keep
index 3 without 2 — because at a context every alternative is verified against the target
distribution already computed for that context; only kept vertices are evaluated by the target.
``Tree.sibling_closed`` tells whether a tree also keeps all lower indices of each kept index.

Acceptance functions ``f`` map a path (tuple) to a probability; they must not increase along
paths. :func:`zero_order` builds the 0th-order one ``f(v) = Π_j a(i_j)`` from an acceptance-index
distribution ``a`` (Chen et al. 2025, Sequoia; the paper's §4), :func:`fit_zero_order` fits ``a`` from
observed indices. :func:`optimal_tree` is Alg. 3 (priority queue), :func:`exhaustive_optimal`
the brute force it is checked against, :func:`breadth_first_tree` a deliberately non-greedy
builder (negative control), :func:`specinfer_tree` the SpecInfer baseline of §5.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .checks import check_int, check_int_array, check_subprobability, check_type

Path = tuple


@dataclass(frozen=True)
class Tree:
    """An ancestor-closed set of index paths (the root ``()`` is implicit)."""

    vertices: tuple
    name: str = "tree"

    def __post_init__(self):
        try:
            raw = [tuple(v) for v in self.vertices]
        except TypeError:
            raise TypeError("vertices must be a sequence of index paths (tuples of ints), "
                            f"got {self.vertices!r}") from None
        if all(type(i) is int for v in raw for i in v):  # the common case, checked fast (large trees)
            vs = set(raw)
        else:
            vs = {tuple(check_int(i, f"index in vertex {v}") for i in v) for v in raw}
        vs = tuple(sorted(vs, key=lambda v: (len(v), v)))
        for v in vs:
            if len(v) == 0:
                raise ValueError("the root () is implicit; do not list it as a vertex")
            if min(v) < 1:
                raise ValueError(f"acceptance indices are 1-based; got vertex {v}")
        s = set(vs)
        for v in vs:
            if len(v) > 1 and v[:-1] not in s:
                raise ValueError(f"vertex {v} lacks its parent {v[:-1]}: a drafting tree is ancestor-closed")
        object.__setattr__(self, "vertices", vs)

    @classmethod
    def _trusted(cls, vertices, name: str) -> "Tree":
        """A tree from vertices a builder made ancestor-closed by construction (skips the checks)."""
        tree = object.__new__(cls)
        object.__setattr__(tree, "vertices", tuple(sorted(vertices, key=lambda v: (len(v), v))))
        object.__setattr__(tree, "name", name)
        return tree

    @property
    def k(self) -> int:
        """Number of drafted tokens (vertices)."""
        return len(self.vertices)

    def children(self, v: Path = ()) -> tuple:
        """Indices kept below vertex ``v`` (sorted)."""
        d = len(v)
        return tuple(sorted(w[-1] for w in self.vertices if len(w) == d + 1 and w[:d] == v))

    @property
    def sibling_closed(self) -> bool:
        return all(self.children(v) == tuple(range(1, len(self.children(v)) + 1))
                   for v in ((),) + self.vertices)

    @property
    def depth(self) -> int:
        return max((len(v) for v in self.vertices), default=0)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Kernel layout: vertex 0 is the root, vertex j ≥ 1 is ``vertices[j−1]``.
        ``child[v, i−1]`` is the vertex reached from v by index i (−1 if not kept);
        ``max_index[v]`` the largest index kept below v (0 at a leaf)."""
        ids = {(): 0}
        for j, v in enumerate(self.vertices, start=1):
            ids[v] = j
        width = max((v[-1] for v in self.vertices), default=1)
        child = np.full((self.k + 1, width), -1, dtype=np.int64)
        max_index = np.zeros(self.k + 1, dtype=np.int64)
        for v, j in ids.items():
            if v:
                pid = ids[v[:-1]]
                child[pid, v[-1] - 1] = j
                max_index[pid] = max(max_index[pid], v[-1])
        return child, max_index


def simple_tree() -> Tree:
    """One drafted token (the paper's §2, 'simple' strategy)."""
    return Tree(((1,),), "simple")


def sequence_tree(k: int) -> Tree:
    """k tokens drafted autoregressively, each the first alternative (the paper's §2, 'sequence')."""
    k = check_int(k, "k", min=1)
    return Tree(tuple((1,) * d for d in range(1, k + 1)), f"sequence{k}")


def batch_tree(k: int) -> Tree:
    """k alternatives for the next token (the paper's §2, 'batch', Sun et al. 2024)."""
    k = check_int(k, "k", min=1)
    return Tree(tuple((i,) for i in range(1, k + 1)), f"batch{k}")


def specinfer_tree(k: int) -> Tree:
    """SpecInfer tree of the paper's §5: 3-token sequences whose first two drafted tokens are common,
    i.e. a chain (1), (1,1) and then k − 2 alternatives (1,1,i); a sequence for k ≤ 2."""
    k = check_int(k, "k", min=1)
    if k <= 2:
        return Tree(sequence_tree(k).vertices, f"specinfer{k}")
    return Tree(((1,), (1, 1)) + tuple((1, 1, i) for i in range(1, k - 1)), f"specinfer{k}")


def zero_order(a) -> Callable[[Path], float]:
    """0th-order acceptance function ``f(v) = Π_j a(i_j)``; ``a[i−1]`` = P(index = i). Extra
    entries of ``a`` (e.g. a last 'never accepted' cell) are never used as indices."""
    a = check_subprobability(a, "a (acceptance-index distribution)")

    factors = a.tolist()

    def f(v: Path) -> float:
        out = 1.0
        for i in v:
            out *= factors[i - 1] if i <= len(factors) else 0.0
        return out
    f.a = a
    f.factors = factors  # lets the tree builders extend a path's value by one factor instead of recomputing
    return f


def _child_value(f, v, val, i):
    a = getattr(f, "factors", None)
    if a is None:
        return f(v + (i,))
    return val * (a[i - 1] if i <= len(a) else 0.0)


def fit_zero_order(indices, n_indices: int) -> np.ndarray:
    """Empirical acceptance-index distribution from observed indices (1..n_indices, and
    ``n_indices + 1`` for 'no index accepted'): a vector of length ``n_indices + 1``."""
    idx = check_int_array(indices, "indices").ravel()
    n = check_int(n_indices, "n_indices", min=1)
    if idx.size == 0:
        raise ValueError("no observed indices to fit")
    if idx.min() < 1 or idx.max() > n + 1:
        raise ValueError(f"indices must lie in [1, {n + 1}]")
    return np.bincount(idx - 1, minlength=n + 1) / idx.size


def tree_value(f: Callable[[Path], float], tree: Tree) -> float:
    """``Σ_v f(v)``: expected accepted tokens; E[generated] is one more (the paper's Eq. 4)."""
    _check_f(f)
    check_type(tree, Tree, "tree", " (spectheory.trees)")
    a = getattr(f, "a", None)
    if a is None:
        return float(sum(f(v) for v in tree.vertices))
    val = {(): 1.0}
    for v in tree.vertices:  # sorted by depth: parents first
        val[v] = _child_value(f, v[:-1], val[v[:-1]], v[-1])
    return float(sum(val[v] for v in tree.vertices))


def expected_generated(f: Callable[[Path], float], tree: Tree) -> float:
    """``1 + Σ_v f(v)``: expected generated tokens per target evaluation (the paper's Eq. 4)."""
    return 1.0 + tree_value(f, tree)


def _check_f(f) -> None:
    if not callable(f):
        raise TypeError(f"f (acceptance function) must be callable path -> probability, got {type(f).__name__}")


def optimal_tree(f: Callable[[Path], float], k: int, n_indices: int, *, ordered: bool = False) -> Tree:
    """Seed Alg. 3: grow the tree k times by the candidate vertex with the highest acceptance
    probability, kept in a priority queue; candidates are the children (indices 1..n_indices)
    of the root and of every vertex taken. Optimal when f does not increase along paths (the
    top-k vertices are then ancestor-closed). Ties are broken by the shorter, then the
    lexicographically smaller path. Pushes all children, so the queue holds ≤ k·n_indices
    entries (O(k·n log(k·n))).

    ``ordered=True``: the alternative reading in which trees must be sibling-closed (a vertex
    keeps indices 1..b): the queue starts with (1,) and a taken vertex pushes its first child and
    its next sibling only (queue ≤ k + 1, O(k log k)); optimal among sibling-closed trees when f
    also decreases from a sibling to the next."""
    _check_f(f)
    k = check_int(k, "k", min=0)
    n = check_int(n_indices, "n_indices", min=1)
    if ordered:
        heap = [(-f((1,)), 1, (1,))]
        taken = []
        while len(taken) < k and heap:
            negval, _, v = heapq.heappop(heap)
            taken.append(v)
            w = v + (1,)
            heapq.heappush(heap, (-_child_value(f, v, -negval, 1), len(w), w))
            if v[-1] < n:
                sib = v[:-1] + (v[-1] + 1,)
                heapq.heappush(heap, (-f(sib), len(sib), sib))
        return Tree(tuple(taken), f"alg3-ordered-k{k}")
    return _grow(f, k, n, True, f"alg3-k{k}")


def breadth_first_tree(f: Callable[[Path], float], k: int, n_indices: int) -> Tree:
    """Negative control for ``opt_tree.greedy``: grows the *shallowest* candidate first (ties by
    higher f) — a valid tree builder that is not greedy in f."""
    _check_f(f)
    k = check_int(k, "k", min=0)
    n = check_int(n_indices, "n_indices", min=1)
    return _grow(f, k, n, False, f"bfs-k{k}")


def _grow(f, k: int, n: int, by_value: bool, name: str) -> Tree:
    """Take k vertices from a priority queue of candidates: the root's children 1..n to begin
    with, then the children 1..n of every vertex taken. ``by_value``: the highest f first (ties:
    the shorter, then the lexicographically smaller path; Alg. 3); else the shallowest first
    (ties: the higher f, then the smaller path)."""
    heap = []
    for i in range(1, n + 1):
        val = f((i,))
        heap.append(((-val, 1) if by_value else (1, -val), (i,), val))
    heapq.heapify(heap)
    taken = []
    fac = getattr(f, "factors", None)  # 0th-order f: a child's value is its parent's times a(i)
    push, pop = heapq.heappush, heapq.heappop
    while len(taken) < k and heap:
        _, v, val = pop(heap)
        taken.append(v)
        d = len(v) + 1
        for i in range(1, n + 1):
            w = v + (i,)
            wval = _child_value(f, v, val, i) if fac is None else val * (fac[i - 1] if i <= len(fac) else 0.0)
            push(heap, ((-wval, d) if by_value else (d, -wval), w, wval))
    return Tree._trusted(taken, name)


def sequence_builder(f: Callable[[Path], float], k: int, n_indices: int, cap: int = 256) -> Tree:
    """Negative control for ``opt_tree.log_growth``: the k-sequence (a strategy that plateaus) in
    place of the optimal tree, capped at ``cap`` tokens (its E[generated] has long reached its
    plateau there, and a 4096-chain costs O(k²) in path tuples)."""
    _check_f(f)
    return sequence_tree(min(check_int(k, "k", min=1), check_int(cap, "cap", min=1)))


def random_monotone(seed: int, n_indices: int) -> Callable[[Path], float]:
    """A random acceptance function that decreases along paths and is not of product form: each
    child's value is its parent's times a factor drawn (once, lazily, from ``seed``) uniform on
    [0, 1/n), boosted by 1 + n/2 for index 1."""
    n = check_int(n_indices, "n_indices", min=1)
    rng = np.random.default_rng(check_int(seed, "seed", min=0))
    cache = {(): 1.0}

    def f(v):
        v = tuple(v)
        if v not in cache:
            cache[v] = f(v[:-1]) * float(rng.uniform(0.0, 1.0 / n) * (1.0 + (v[-1] == 1) * n * 0.5))
        return cache[v]
    return f


TREE_BUILDERS = {"alg3": optimal_tree, "breadth_first": breadth_first_tree, "sequence": sequence_builder}


def all_trees(k: int, n_indices: int, *, ordered: bool = False):
    """Every ancestor-closed set of k index paths over indices 1..n_indices, each exactly once
    (include/exclude the first frontier vertex; including one adds its children to the
    frontier). ``ordered=True``: only sibling-closed trees (including a vertex adds its first
    child and its next sibling)."""
    k = check_int(k, "k", min=0)
    n = check_int(n_indices, "n_indices", min=1)

    def grow(v):
        if not ordered:
            return [v + (i,) for i in range(1, n + 1)]
        return [v + (1,)] + ([v[:-1] + (v[-1] + 1,)] if v[-1] < n else [])

    def rec(chosen, frontier):
        if len(chosen) == k:
            yield tuple(chosen)
            return
        if not frontier:
            return
        v, rest = frontier[0], frontier[1:]
        yield from rec(chosen + [v], rest + grow(v))
        yield from rec(chosen, rest)

    yield from rec([], [(i,) for i in range(1, n + 1)] if not ordered else [(1,)])


def exhaustive_optimal(f: Callable[[Path], float], k: int, n_indices: int, *,
                       ordered: bool = False) -> tuple[Tree, float, int]:
    """Brute force over :func:`all_trees`: (best tree, its Σ f, number of trees searched)."""
    _check_f(f)
    best, best_val, count = None, -np.inf, 0
    for vs in all_trees(k, n_indices, ordered=ordered):
        count += 1
        val = sum(f(v) for v in vs)
        if val > best_val + 1e-15:
            best, best_val = vs, val
    return Tree(best, f"exhaustive-k{k}"), float(best_val), count


def optimal_curve(a, ks, n_indices: int) -> np.ndarray:
    """E[generated] of the optimal k-vertex tree under the 0th-order ``a``, for every k in ``ks``,
    without building the trees: for a 0th-order f (``f(v) = Π_j a(i_j)``, which does not increase
    along paths) the optimal tree's value is the sum of the k largest path values (the top k are
    ancestor-closed, the paper's §4 argument behind Alg. 3), so E(k) = 1 + Σ of the k largest
    products. The paths with product ≥ t are enumerated level by level (vectorised), with t moved
    until at least max(ks) of them qualify (the count of paths above t is about 1/(t·H(a)),
    Tunstall's count, which the start and the updates use); ties do not change the sum. Equal to ``expected_generated(f, optimal_tree(f, k,
    n))`` (tests/test_ersd_exact.py); made for k up to ~10^6 (opt_tree.log_growth's windows)."""
    a = check_subprobability(a, "a (acceptance-index distribution)")
    n = check_int(n_indices, "n_indices", min=1)
    ks = check_int_array(ks, "ks").ravel()
    if ks.size == 0 or ks.min() < 1:
        raise ValueError("ks must be a non-empty list of integers ≥ 1")
    k_max = int(ks.max())
    f = a[:n]
    f = f[f > 0]
    if f.size == 0:
        return np.ones(ks.size)
    if f.max() >= 1.0:  # a point mass on one index: every chain of it is accepted, E(k) = 1 + k
        return 1.0 + ks.astype(np.float64)

    def paths_above(t: float, cap: int):
        out, total, level = [], 0, f[f >= t]
        while level.size:
            out.append(level)
            total += level.size
            if total > cap:
                return None, total
            level = (level[:, None] * f[None, :]).ravel()
            level = level[level >= t]
        return (np.concatenate(out) if out else np.zeros(0)), total

    # start where Tunstall's count puts it: about 1/(t·H(a)) paths have value ≥ t (H in nats)
    pos = a[a > 0]
    H = float(-(pos * np.log(pos)).sum())
    t = 0.8 / (k_max * H) if H > 0 else float(f.max()) ** 2
    for _ in range(200):
        vals, total = paths_above(t, 4 * k_max)
        if vals is None:  # too many: raise t (count ∝ 1/t)
            t *= min(4.0, total / (2.0 * k_max)) if total > 2 * k_max else 1.5
        elif total < k_max:  # too few: lower t
            t /= max(1.5, 1.5 * k_max / max(total, 1))
        else:
            break
    else:  # pragma: no cover - the count grows like 1/t, so this converges in a few steps
        raise RuntimeError("optimal_curve: no threshold found")
    if vals.size > k_max:
        vals = np.partition(vals, vals.size - k_max)[vals.size - k_max:]
    top = np.sort(vals)[::-1]
    return 1.0 + np.cumsum(top)[ks - 1]
