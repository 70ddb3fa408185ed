"""The least-slack search, shared by every inequality-type claim (≤ ≥ < > ordering monotone).

A bound that holds by a wide margin on a few default instances cannot catch a wrong constant:
the instance where it is tightest can. Given ``slack(...) -> float`` (≥ 0 while the bound holds;
the smaller, the tighter) this module finds the instance with the least slack:

* :func:`exhaustive` over a finite grid (every point evaluated) where the space allows;
* :func:`search_pairs` over the tables of a small Markov pair (target and draft rows as
  softmax of logits), and any continuous settings given as ``params`` (an ensemble weight, a
  cost ratio): seeded random restarts plus local optimisation (``scipy.optimize``, Nelder–Mead
  by default) inside a stated budget of slack evaluations.

Both return a :class:`LeastSlack`: the value, the instance (a description from which it is
rebuilt), the one-line Python call that recomputes the value (:func:`spectheory.sims.shrink.recompute`
runs it) and how it was searched. Seeded: the same call gives the same record.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from spectheory.pairs import pair_from_tables

from .shrink import Expr, call_line, source_of


@dataclass
class LeastSlack:
    value: float
    instance: dict
    call: str
    search: str
    evaluations: int = 0
    #: a few of the next-tightest values found (restarts' optima, or the grid's smallest)
    runner_up: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"value": float(self.value), "instance": self.instance, "call": self.call, "search": self.search,
                "evaluations": int(self.evaluations)}


def _points(grid) -> list[dict]:
    if isinstance(grid, dict):
        keys = list(grid)
        return [dict(zip(keys, vals)) for vals in itertools.product(*(tuple(grid[k]) for k in keys))]
    return [dict(p) for p in grid]


def exhaustive(slack: Callable[..., float], grid, *, call: Callable[..., str] | None = None,
               describe: Callable[[dict], dict] | None = None) -> LeastSlack:
    """Evaluate ``slack(**point)`` at every point of a finite grid (``{name: values}``, the
    Cartesian product in the given order, or a list of dicts) and return the least.
    Ties keep the first point in grid order. ``call(**point)``: the one-line call (default:
    ``slack`` itself with the point as keyword arguments; points must then be literals);
    ``describe(point)``: the instance description (default: the point)."""
    pts = _points(grid)
    if not pts:
        raise ValueError("exhaustive: the grid is empty")
    vals = [float(slack(**p)) for p in pts]
    i = int(np.argmin(vals))
    best = pts[i]
    line = call(**best) if call else call_line(slack, **best)
    order = np.argsort(vals, kind="stable")[1:4]
    inst = describe(best) if describe else {k: (v if isinstance(v, (int, float, str, bool)) else source_of(v))
                                            for k, v in best.items()}
    return LeastSlack(vals[i], inst, line,
                      f"exhaustive over {len(pts)} points", len(pts), [vals[j] for j in order])


@dataclass(frozen=True)
class PairSpace:
    """Small Markov pairs (target p, draft q) of vocabulary ``V`` and Markov ``order``,
    parameterised by logits: each row is softmax(z), z clipped to ±``bound`` (so every
    probability stays ≥ e^{-2·bound}/V: near-disjoint supports and near-deterministic rows are
    reachable, exact zeros are not)."""

    V: int
    order: int = 0
    bound: float = 12.0

    @property
    def rows(self) -> int:
        return self.V ** self.order

    @property
    def dim(self) -> int:
        return 2 * self.rows * self.V

    def tables(self, x) -> tuple[np.ndarray, np.ndarray]:
        z = np.clip(np.asarray(x, dtype=np.float64), -self.bound, self.bound).reshape(2, self.rows, self.V)
        z = z - z.max(axis=2, keepdims=True)
        e = np.exp(z)
        t = e / e.sum(axis=2, keepdims=True)
        return t[0], t[1]

    def source(self, x) -> str:
        p, q = self.tables(x)
        pl, ql = (t[0].tolist() if self.order == 0 else t.tolist() for t in (p, q))
        return f"spectheory.pairs.pair_from_tables({pl!r}, {ql!r}, order={self.order})"

    def pair(self, x):
        p, q = self.tables(x)
        if self.order == 0:
            p, q = p[0], q[0]
        return pair_from_tables(p.tolist(), q.tolist(), order=self.order)


class _Budget(Exception):
    pass


def _options(method: str, share: int) -> dict:
    """Solver options that cap one restart at ``share`` evaluations (as far as the solver can:
    gradient-based ones may overshoot, which the budget check in the objective stops)."""
    if method == "Nelder-Mead":
        return {"maxfev": share, "maxiter": share, "xatol": 1e-9, "fatol": 1e-13}
    if method == "Powell":
        return {"maxfev": share, "maxiter": share}
    return {"maxfun": share, "maxiter": share}


def search_pairs(slack: Callable[..., float], space: PairSpace, *, budget: int = 2000, restarts: int = 8,
                 seed: int = 0, method: str = "Nelder-Mead", settings: dict | None = None,
                 params: dict | None = None, start_scale: float = 2.0, scope=None) -> LeastSlack:
    """Least ``slack(pair, **settings, **params)`` over the pairs of ``space``: ``restarts`` seeded
    random starting tables (logits ~ N(0, start_scale²)), each locally optimised with
    ``scipy.optimize.minimize(method=...)``; at most ``budget`` slack evaluations in all (the
    budget is split evenly over the restarts; a restart that converges early leaves its share to
    the next). ``params``: ``{name: (lo, hi)}``, continuous settings searched together with the
    tables (each one more coordinate, started from N(0, 1) and mapped onto the open interval
    (lo, hi) by a logistic function; e.g. an ensemble weight or a cost ratio); the instance and
    the call give the values found. Returns the least slack found (an upper bound on the true
    least slack: a heuristic search, stated as such in ``search``). ``scope``: the claim's
    :class:`spectheory.sims.registry.Scope` (or a ``guard(pair, **settings)``): pairs outside it score +inf,
    so the least slack found is in scope (issue 24, item 2)."""
    from scipy import optimize
    guard = getattr(scope, "why_out", scope)
    if budget < 1 or restarts < 1:
        raise ValueError("budget and restarts must be ≥ 1")
    settings = dict(settings or {})
    box = {k: (float(lo), float(hi)) for k, (lo, hi) in (params or {}).items()}
    if any(not hi > lo for lo, hi in box.values()) or set(box) & set(settings):
        raise ValueError(f"params must be {{name: (lo, hi)}} with lo < hi, none of them in settings; got {params!r}")
    rng = np.random.default_rng(seed)
    used = 0
    best = (np.inf, None)
    optima = []

    def values(x):
        u = np.asarray(x[space.dim:], dtype=np.float64)
        return {k: lo + (hi - lo) / (1.0 + np.exp(-np.clip(ui, -500, 500)))
                for (k, (lo, hi)), ui in zip(box.items(), u)}

    def f(x):
        nonlocal used, best
        if used >= budget:
            raise _Budget
        used += 1
        pair = space.pair(x[:space.dim])
        found = {k: float(w) for k, w in values(x).items()}
        if guard is not None and guard(pair, **settings, **found):
            return np.inf
        v = float(slack(pair, **settings, **found))
        if not np.isfinite(v):
            v = np.inf
        if v < best[0]:
            best = (v, np.array(x, dtype=np.float64))
        return v

    for r in range(restarts):
        if used >= budget:
            break
        x0 = rng.normal(0.0, start_scale, space.dim + len(box))
        x0[space.dim:] /= start_scale  # params start in the logistic's central region, N(0, 1)
        share = max(1, (budget - used) // (restarts - r))
        try:
            with np.errstate(invalid="ignore"):  # an out-of-scope point is +inf: Nelder–Mead's convergence
                res = optimize.minimize(f, x0, method=method, options=_options(method, share))  # test takes inf − inf
            optima.append(float(res.fun))
        except _Budget:
            break
    value, x = best
    if x is None:
        raise RuntimeError("search_pairs: no slack evaluation finished inside the budget")
    src = space.source(x[:space.dim])
    p, q = space.tables(x[:space.dim])
    found = {k: float(w) for k, w in values(x).items()}
    inst = {"kind": "pair_from_tables", "V": space.V, "order": space.order,
            "p": (p[0] if space.order == 0 else p).tolist(), "q": (q[0] if space.order == 0 else q).tolist(),
            **{k: (v if isinstance(v, (int, float, str, bool)) else source_of(v)) for k, v in settings.items()},
            **found}
    over = "".join(f" and {k} ∈ ({lo:g}, {hi:g})" for k, (lo, hi) in box.items())
    how = (f"{restarts} seeded random restarts (seed {seed}) + scipy.optimize {method} over softmax logits of "
           f"the V={space.V}, order-{space.order} tables (|z| ≤ {space.bound:g}){over}; {used} of {budget} "
           "evaluations; heuristic: the true least slack is at most this")
    return LeastSlack(value, inst, call_line(slack, Expr(src), **settings, **found), how, used, sorted(optima)[:3])
