"""Sweep job kinds of Speculative Ensemble (``se.*``).

``se.mc``: Numba Monte Carlo of Alg. 1 (``alt``, two members ``(q, p)``) over independent
streams (:func:`spectheory.montecarlo.se.simulate_streams`); the speedup over the vanilla
ensemble with costs t_q = c, t_p = 1, per stream. Parameters: the pair (:data:`spectheory.sims.jobs.PAIR_SPEC`),
``ensemble`` (``we``: r = λq + (1 − λ)p with ``lam``; ``cd``: r = softmax((l_p − μ l_q)/T) with
``mu`` and ``temperature``, default 1, 0 = argmax limit), ``gamma_q``, ``gamma_p``, ``first``
(``q`` or ``p``, the default proposer; default ``q``), ``c``, ``n_streams`` (≥ 2),
``tokens_per_stream``. Results: ``mean_speedup`` and ``se_speedup`` (mean over streams and its
standard error).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..sweep import job
from . import PAIR_SPEC, REQUIRED, cached_pair, choice, forbid, integer, pair_key, parse, real

SPEC = {
    **PAIR_SPEC,
    "ensemble": (choice("we", "cd"), REQUIRED),
    "lam": (real(lo=0.0, hi=1.0), None),
    "mu": (real(lo=0.0), None),
    "temperature": (real(lo=0.0), None),
    "gamma_q": (integer(min=1), REQUIRED),
    "gamma_p": (integer(min=1), REQUIRED),
    "first": (choice("q", "p"), "q"),
    "c": (real(lo=0.0, lo_open=True), REQUIRED),
    "n_streams": (integer(min=2), REQUIRED),
    "tokens_per_stream": (integer(min=1), REQUIRED),
}


def ensemble_key(kind: str, p: dict) -> tuple:
    """``("we", λ)`` or ``("cd", μ, T)`` from checked parameters (refusing the other's)."""
    if p["ensemble"] == "we":
        forbid(kind, p, ("mu", "temperature"), "to ensemble 'we'")
        if p["lam"] is None:
            raise ValueError(f"{kind}: ensemble 'we' needs 'lam'")
        return ("we", p["lam"])
    forbid(kind, p, ("lam",), "to ensemble 'cd'")
    if p["mu"] is None:
        raise ValueError(f"{kind}: ensemble 'cd' needs 'mu'")
    return ("cd", p["mu"], 1.0 if p["temperature"] is None else p["temperature"])


@lru_cache(maxsize=64)
def _models(pkey: tuple, ekey: tuple):
    from spectheory.ensembles import contrastive_ensemble, weighted_ensemble
    from spectheory.exact.se import SEModels
    pair = cached_pair(pkey)
    ens = weighted_ensemble(ekey[1]) if ekey[0] == "we" else contrastive_ensemble(ekey[1], ekey[2])
    return SEModels.build([pair.draft, pair.target], ens, ens.name)


def models(params: dict, kind: str = "se.mc"):
    """The :class:`~spectheory.exact.se.SEModels` (members (q, p), the ensemble) that a job's
    parameters describe; only the pair and ensemble parameters are needed here."""
    p = parse(kind, params, {n: (chk, None) for n, (chk, _) in SPEC.items()})
    if p["ensemble"] is None:
        raise ValueError(f"{kind}: missing parameter 'ensemble'")
    return _models(pair_key(kind, p), ensemble_key(kind, p))


def check(params: dict) -> None:
    """Every parameter of an ``se.mc`` job, checked before any job runs (:func:`spectheory.sims.sweep.grid`)."""
    p = parse("se.mc", params, SPEC)
    pair_key("se.mc", p)
    ensemble_key("se.mc", p)


@job("se.mc", check=check)
def se_mc(params: dict, seed) -> dict:
    """Monte Carlo of speculative ensemble (alternate proposers): mean speedup over ``n_streams`` streams and its standard error."""
    from spectheory.exact.se import Algorithm
    from spectheory.montecarlo.se import simulate_streams
    p = parse("se.mc", params, SPEC)
    M = _models(pair_key("se.mc", p), ensemble_key("se.mc", p))
    first = 0 if p["first"] == "q" else 1
    res = simulate_streams(M, Algorithm("alt", (p["gamma_q"], p["gamma_p"]), first=first),
                           p["n_streams"], p["tokens_per_stream"], seed=seed)
    sp = res.speedup([p["c"], 1.0])
    return {"mean_speedup": float(sp.mean()), "se_speedup": float(sp.std(ddof=1) / np.sqrt(sp.size))}
