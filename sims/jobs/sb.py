"""Sweep job kinds of SpecBranch's pipeline model (``sb.*``).

Both kinds take the pair — ``pair`` (a SpecBranch instance of :mod:`spectheory.sims.claims.sb` or a built-in
instance) or ``alpha`` (a two-token i.i.d. pair with Σ min(p, q) = α) — the ``method`` (``ar``,
``sps``, ``psd``, ``pearl``, ``specbranch``, ``specbranch:no-branch``, ``specbranch:no-hrad``),
``gamma``, ``c`` (target/draft call-time ratio), and SpecBranch's ``k_max`` (default 4), ``eps``
(default 0.3) and ``sigma`` (H-RAD's target-feature noise, default 0.1; H-RAD is trained on the
pair at that γ, seed 1).

* ``sb.exact``: the exact long-run rates (renewal-reward over the round chain). Results:
  ``latency``, ``speedup_ar``, ``rollback_rate``, ``tokens_per_call``, ``target_idle``,
  ``draft_idle``. The seed is unused.
* ``sb.mc``: the Numba pipeline kernel, ``n_streams`` (default 16) × ``n_rounds`` rounds.
  Results: the same rates and their standard errors ``se_<rate>`` (delta method over streams).
"""
from __future__ import annotations

from ..sweep import job
from . import REQUIRED, choice, forbid, integer, parse, real

METHOD_NAMES = ("ar", "sps", "psd", "pearl", "specbranch", "specbranch:no-branch", "specbranch:no-hrad")
RATES = ("latency", "speedup_ar", "rollback_rate", "tokens_per_call", "target_idle", "draft_idle")


def _spec(**extra) -> dict:
    from ..claims import sb as claims
    from spectheory import instances
    names = tuple(claims._BUILDERS) + tuple(instances.names())
    return {"pair": (choice(*names), None), "alpha": (real(lo=0.0, hi=1.0), None),
            "method": (choice(*METHOD_NAMES), REQUIRED), "gamma": (integer(min=1, max=32), REQUIRED),
            "c": (real(lo=0.0, lo_open=True), REQUIRED), "k_max": (integer(min=1), 4),
            "eps": (real(lo=0.0, hi=1.0), 0.3), "sigma": (real(lo=0.0), 0.1), **extra}


def _setup(kind: str, params: dict, **extra):
    from ..claims import sb as claims
    from spectheory.rules import sb as R
    p = parse(kind, params, _spec(**extra))
    if (p["pair"] is None) == (p["alpha"] is None):
        raise ValueError(f"{kind}: give exactly one of 'pair' and 'alpha'")
    src = claims.pair(p["pair"]) if p["pair"] is not None else claims.iid_pair(p["alpha"])
    method = {m.name: m for m in R.METHODS}[p["method"]]
    if not method.is_pipeline:
        forbid(kind, {k: params.get(k) for k in ("k_max", "eps", "sigma")}, ("k_max", "eps", "sigma"),
               f"to {method.name!r} (SpecBranch knobs)")
    pol = (claims.hrad_policy(src, p["gamma"], p["sigma"]) if method.policy == "hrad" else None)
    pipe = R.Pipeline(p["gamma"], c=p["c"], k_max=p["k_max"], eps=p["eps"], policy_table=pol)
    return p, src, method, pipe


@job("sb.exact")
def sb_exact(params: dict, seed) -> dict:
    """Exact long-run rates of one SpecBranch-family pipeline (SpecBranch, PEARL, SpS): latency, speedup over autoregressive decoding, rollback rate, tokens per target call, idle fractions."""
    from spectheory.exact import sb as ex
    _, src, method, pipe = _setup("sb.exact", params)
    r = ex.long_run_rates(src, method, pipe)
    return {k: float(getattr(r, k)) for k in RATES}


@job("sb.mc")
def sb_mc(params: dict, seed) -> dict:
    """Monte Carlo of one SpecBranch-family pipeline over ``n_rounds`` rounds: the same rates with standard errors."""
    from spectheory.montecarlo import sb as mc
    p, src, method, pipe = _setup("sb.mc", params, n_rounds=(integer(min=1), REQUIRED),
                                  n_streams=(integer(min=2, max=4096), 16))
    res = mc.simulate(src, method, pipe, p["n_rounds"], n_streams=p["n_streams"], seed=seed)
    out = {}
    for k in RATES:
        est, se = res.estimate(k)
        out[k], out[f"se_{k}"] = float(est), float(se)
    return out
