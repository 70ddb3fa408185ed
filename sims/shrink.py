"""Shrinking a failing claim to its smallest counterexample.

Instances are tried in increasing size — vocabulary V, then Markov order, then draft length
γ, then number of drafts K, then any extra parameters (e.g. multi-draft switches), then
seed — and the first one on which the exact check fails is returned, with everything
needed to rebuild it. ``fails`` may return a fourth item, a dict of details merged into the
entry (for a losslessness failure: the token sequence whose probability is off, with its
claimed and measured probability).

A claim says which settings apply to it (``applies``; a setting that does not apply is searched
at one value and left out of the entry) and how to recompute the failure (``call``): the entry
then carries ``call``, one line of Python that recomputes its claimed and measured values
(:func:`recompute` runs it).
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import itertools
import re
import sys
from typing import Callable

from spectheory.pairs import random_pair

#: the search axes in their documented order (``extra`` axes come between K and seed)
AXES = ("V", "order", "gamma", "K", "seed")


def smallest_counterexample(fails: Callable, *, V_values=(2, 3, 4), orders=(0, 1), gammas=(1, 2, 3),
                            K_values=(1,), seeds=range(10), concentration: float = 1.0,
                            extra: dict | None = None, pair_factory: Callable | None = None,
                            applies=None, call: Callable | None = None, outside: Callable | None = None,
                            found_outside: list | None = None, scope=None) -> dict | None:
    """``fails(pair, gamma, K, **extra_values) -> (bool, claimed, measured[, details])``;
    returns the first failing instance as a dict, or None if none of the grid fails.
    ``extra``: ``{name: values}`` further grid axes, searched after K and before the seed.
    ``pair_factory(V, order, concentration, seed)``: the candidate pairs (default
    :func:`spectheory.pairs.random_pair`), for claims whose failures need edge cases.
    ``applies``: the settings (of V, order, gamma, K, seed and the extra axes) that apply to the
    claim: only they enter the entry, and every other axis must have a single value (default:
    all apply). ``call(source, **settings) -> str``: the one-line call recomputing claimed and
    measured, given the pair's constructor call ``source`` and the applicable algorithm settings
    (gamma, K, extra axes). ``outside(pair, gamma, K, **extra_values) -> reason | None``: the
    claim's scope (issue 24, item 2): a candidate outside it is never returned; the first one
    that fails is appended to ``found_outside`` (the same entry, with ``reason``), so the report
    can say "outside the claim's scope". ``scope``: the claim's :class:`spectheory.sims.registry.Scope` (or a
    ``guard(pair, **settings)``), called with gamma, K and the extra axes, in place of ``outside``."""
    if scope is not None:
        if outside is not None:
            raise ValueError("give the scope or outside, not both")
        guard = getattr(scope, "why_out", scope)
        outside = lambda pair, gamma, K, **kw: guard(pair, gamma=gamma, K=K, **kw)  # noqa: E731
    extra = dict(extra or {})
    keys = list(extra)
    axes = {"V": tuple(V_values), "order": tuple(orders), "gamma": tuple(gammas), "K": tuple(K_values),
            **{k: tuple(extra[k]) for k in keys}, "seed": tuple(seeds)}
    if applies is not None:
        applies = tuple(applies)
        unknown = [a for a in applies if a not in axes]
        if unknown:
            raise ValueError(f"applies names unknown settings {unknown}; the axes are {list(axes)}")
        idle = [a for a, vals in axes.items() if a not in applies and len(vals) != 1]
        if idle:
            raise ValueError(f"settings {idle} do not apply to the claim but are searched over several values; "
                             "give them one value")

    def entry_of(pair, V, order, gamma, K, kw, seed, out):
        _, claimed, measured = out[:3]
        source = (pair.params.get("construction", pair.name) if pair_factory else
                  f"spectheory.pairs.random_pair(V={V}, order={order}, "
                  f"concentration={concentration:g}, seed={seed})")
        entry = {"V": V, "order": order, "gamma": gamma, "K": K, **kw, "seed": int(seed),
                 "source": source, "claimed": float(claimed), "measured": float(measured)}
        if applies is not None:
            entry = {k: v for k, v in entry.items() if k in applies or k not in axes}
        if len(out) > 3 and out[3]:
            entry.update(out[3])
        if call is not None:
            settings = {k: v for k, v in {"gamma": gamma, "K": K, **kw}.items()
                        if applies is None or k in applies}
            entry["call"] = call(source, **settings)
        return entry

    for V, order, gamma, K, *vals, seed in itertools.product(*axes.values()):
        pair = (pair_factory(V, order, concentration, seed) if pair_factory
                else random_pair(V, order, concentration, seed=seed))
        kw = dict(zip(keys, vals))
        why = outside(pair, gamma, K, **kw) if outside is not None else None
        if why and (found_outside is None or found_outside):
            continue  # out of scope, and an out-of-scope failure is already recorded (or not wanted)
        out = fails(pair, gamma, K, **kw)
        if not out[0]:
            continue
        if why:
            found_outside.append({**entry_of(pair, V, order, gamma, K, kw, seed, out), "reason": str(why)})
            continue
        return entry_of(pair, V, order, gamma, K, kw, seed, out)
    return None


# --- one-line calls -----------------------------------------------------------------------------


class Expr(str):
    """Python source text placed as is in a :func:`call_line` (not ``repr``-quoted)."""


_DOTTED = re.compile(r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")


def _module_prefix(dotted: str) -> str | None:
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        try:
            if name in sys.modules or importlib.util.find_spec(name) is not None:
                return name
        except (ImportError, ValueError):
            continue
    return None


def imports_for(text: str) -> list[str]:
    """The modules a Python expression's dotted names need imported (in order of appearance)."""
    out = []
    for dotted in _DOTTED.findall(text):
        mod = _module_prefix(dotted)
        if mod and mod not in out and "." in dotted and mod != dotted:
            out.append(mod)
    return out


def expr_of(obj, *modules: str) -> str | None:
    """A dotted expression naming ``obj``: a module-level global of the module that defines its
    type (or the function's own module), else of ``modules``; None if it has no such name."""
    cands = [getattr(obj, "__module__", None), type(obj).__module__] + list(modules)
    for mod in dict.fromkeys(m for m in cands if m):
        module = sys.modules.get(mod)
        if module is None:
            continue
        for name, val in vars(module).items():
            if val is obj and not name.startswith("__"):
                return f"{mod}.{name}"
    return None


_LITERALS = (int, float, str, bool, type(None), list, tuple, dict)


def source_of(value) -> str:
    """Python source for an argument: :class:`Expr` as is, a literal ``repr``-ed, anything else by
    its module-level name (:func:`expr_of`), else its ``repr``."""
    if isinstance(value, Expr):
        return str(value)
    if isinstance(value, _LITERALS):
        return repr(value)
    return expr_of(value) or repr(value)


def call_line(fn: Callable, *args, **kwargs) -> str:
    """``import a.b, c.d; a.b.fn(arg, key=value)``: one line of Python that recomputes a result.
    Arguments go through :func:`source_of` (:class:`Expr` is source text)."""
    text = source_of
    expr = (f"{fn.__module__}.{fn.__qualname__}(" + ", ".join([text(a) for a in args]
                                                              + [f"{k}={text(v)}" for k, v in kwargs.items()]) + ")")
    mods = imports_for(expr)
    return (f"import {', '.join(mods)}; " if mods else "") + expr


def both_numbers(call: str, claimed: float) -> str:
    """A one-line call that returns ``(claimed, value)`` where ``call`` returns the measured value
    alone (a slack or shortfall encoded as claimed 0): what a counterexample's "recompute both
    numbers" needs."""
    tree = ast.parse(call)
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        raise ValueError(f"the call must end in an expression: {call!r}")
    last = ast.get_source_segment(call, tree.body[-1])
    head = call[:call.rindex(last)]
    return f"{head}({float(claimed)!r}, {last})"


def recompute(call: str):
    """Run a one-line call (as written by :func:`call_line`): every statement but the last is
    executed, the last expression's value returned."""
    tree = ast.parse(call)
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        raise ValueError(f"the call must end in an expression: {call!r}")
    ns: dict = {}
    exec(compile(ast.Module(tree.body[:-1], type_ignores=[]), "<call>", "exec"), ns)
    return eval(compile(ast.Expression(tree.body[-1].value), "<call>", "eval"), ns)
