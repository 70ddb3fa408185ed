"""Sweep job kinds of the claim families (:mod:`spectheory.sims.sweep`), one module per family:
``sims/jobs/<family>.py`` registers ``<family>.*`` kinds (``se.mc``, ``ersd.tree``, ...) and is
imported by :func:`spectheory.sims.sweep.resolve` the first time such a name is asked for, so a worker
process (local pool or Dask) finds a kind without the figure script that built the grid, and
``import spectheory.sims`` loads no Numba kernels.

This module holds what every family shares, and stays light (no kernels):

* :func:`parse` checks a job's parameters against a spec (unknown name, missing required
  value, wrong type or range: a ``ValueError``/``TypeError`` naming the kind and the parameter,
  through :mod:`spectheory.checks`);
* :data:`PAIR_SPEC` / :func:`pair_from` describe the Markov pair a job runs on: either a
  built-in ``instance`` (:mod:`spectheory.instances`) or a noise-mixed pair
  (:func:`spectheory.pairs.perturbed_pair`) given by ``V``, ``order`` (default 0), ``strength``
  (ε) or ``alignment`` (``weak`` ε = 0.7 / ``strong`` ε = 0.1), ``concentration`` (default 1)
  and ``pair_seed``.
"""
from __future__ import annotations

import difflib
import pkgutil
from functools import lru_cache
from typing import Callable

from spectheory.checks import check_int, check_real

from spectheory import instances

REQUIRED = object()


def integer(*, min: int | None = None, max: int | None = None) -> Callable:
    return lambda v, name: check_int(v, name, min=min, max=max)


def real(*, lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> Callable:
    return lambda v, name: check_real(v, name, lo=lo, hi=hi, lo_open=lo_open)


def suggest(word, options) -> str:
    """`` (did you mean 'gamma'?)`` for a close match of ``word`` among ``options``, else ''."""
    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def boolean() -> Callable:
    def check(v, name):
        if not isinstance(v, bool):
            raise TypeError(f"{name} must be true or false, got {v!r}")
        return v
    return check


def choice(*options: str) -> Callable:
    def check(v, name):
        shown = ", ".join(map(repr, options)) if len(options) <= 20 else \
            ", ".join(map(repr, options[:20])) + f", ... ({len(options)} in all)"
        if not isinstance(v, str):
            raise TypeError(f"{name} must be one of {shown}, got {v!r}")
        if v not in options:
            raise ValueError(f"{name} must be one of {shown}, got {v!r}{suggest(v, options)}")
        return v
    return check


def parse(kind: str, params: dict, spec: dict[str, tuple[Callable, object]]) -> dict:
    """``params`` checked against ``spec`` (name → (checker, default or :data:`REQUIRED`));
    returns every name of the spec, defaults filled in (``None`` = not given)."""
    unknown = sorted(set(params) - set(spec))
    if unknown:
        hint = suggest(unknown[0], spec).replace(" (", "; ").rstrip(")")
        raise ValueError(f"{kind}: unknown parameter(s) {', '.join(map(repr, unknown))}; "
                         f"accepted: {', '.join(spec)}{hint}")
    out = {}
    for name, (check, default) in spec.items():
        if name not in params or params[name] is None:
            if default is REQUIRED:
                need = [n for n, (_, d) in spec.items() if d is REQUIRED]
                opt = [f"{n}={d!r}" if d is not None else n for n, (_, d) in spec.items() if d is not REQUIRED]
                raise ValueError(f"{kind}: missing parameter {name!r}; required: {', '.join(need)}"
                                 + (f"; optional: {', '.join(opt)}" if opt else ""))
            out[name] = default
        else:
            out[name] = check(params[name], f"{kind} parameter {name!r}")
    return out


def forbid(kind: str, p: dict, names, why: str):
    """Refuse parameters given where they do not apply (instead of ignoring them)."""
    given = [n for n in names if p.get(n) is not None]
    if given:
        raise ValueError(f"{kind}: parameter(s) {', '.join(map(repr, given))} do not apply {why}")


PAIR_SPEC = {
    "instance": (choice(*instances.names()), None),
    "V": (integer(min=1), None),
    "order": (integer(min=0), None),
    "strength": (real(lo=0.0, hi=1.0), None),
    "alignment": (choice("weak", "strong"), None),
    "concentration": (real(lo=0.0, lo_open=True), None),
    "pair_seed": (integer(min=0), None),
}


def pair_key(kind: str, p: dict) -> tuple:
    """The checked pair parameters of ``p`` (parsed with :data:`PAIR_SPEC`) as a hashable key."""
    if p["instance"] is not None:
        forbid(kind, p, [n for n in PAIR_SPEC if n != "instance"], "with 'instance'")
        return (p["instance"],)
    missing = [n for n in ("V", "pair_seed") if p[n] is None]
    if missing:
        raise ValueError(f"{kind}: give 'instance', or 'V', 'pair_seed' and 'strength' or 'alignment' "
                         f"(missing {', '.join(map(repr, missing))})")
    if (p["strength"] is None) == (p["alignment"] is None):
        raise ValueError(f"{kind}: give exactly one of 'strength' and 'alignment'")
    if p["alignment"] is not None:
        forbid(kind, p, ["concentration"], "with 'alignment' (spectheory.pairs.aligned_pair)")
    order = 0 if p["order"] is None else p["order"]
    conc = 1.0 if p["concentration"] is None else p["concentration"]
    return (p["V"], order, p["strength"], p["alignment"], conc, p["pair_seed"])


@lru_cache(maxsize=32)
def cached_pair(key: tuple):
    """The pair of a :func:`pair_key` key (built once per process)."""
    if len(key) == 1:
        return instances.get(key[0])
    from spectheory.pairs import aligned_pair, perturbed_pair
    V, order, strength, alignment, conc, seed = key
    if alignment is not None:
        return aligned_pair(V, order, alignment, seed=seed)
    return perturbed_pair(V, order, how="mix", strength=strength, concentration=conc, seed=seed)


def pair_from(kind: str, p: dict):
    """The :class:`~spectheory.markov.MarkovPair` the pair parameters of ``p`` describe (cached)."""
    return cached_pair(pair_key(kind, p))


def kinds() -> dict[str, str]:
    """Every built-in job kind, ``{name: first line of its docstring}`` (imports each family's job
    module, which loads no kernels): what ``spectheory sweep --help`` lists."""
    import importlib

    from ..sweep import JOBS
    for fam in families():
        importlib.import_module(f"{__name__}.{fam}")
    return {k: ((JOBS[k].__doc__ or "").strip().splitlines() or [""])[0].rstrip(".").replace("``", "`")
            for k in sorted(JOBS) if JOBS[k].__module__.startswith(("spectheory.sims.sweep", "spectheory.sims.jobs"))}


def families() -> list[str]:
    """Families with a job module here (``se``, ``ersd``, ...), without importing them."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
