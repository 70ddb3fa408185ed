"""Sweep job kinds of ECSV branch voting (``ecsv.*``; "Error-Correcting Speculative Decoding via
Branch Voting" (ECSV), anonymous manuscript under revision, 2026).

Both run one point of the falsification harness: a ``method`` of the plan (``SD-1``,
``SD-multi``, ``Vote-unif``, ``Oracle-Top1``, ``ECSV-lite``, ``ECSV-spot(R=1..4)``, ``ECSV-soft``,
the paper's default coefficients unless ``gamma`` is given) with ``B`` branches at SD-1 depth
``k``, the ``drafter`` (``clean`` or ``noisy``), and ``reading`` — how fused drafts are verified
(``match``: the verifier's own sample; ``rs``: min(1, p/q̄)). The source is one of the harness's
alignment levels (``source``: ``aligned``, ``medium``, ``weak``).

* ``ecsv.mc``: the Numba kernel on the V = 8 sources (:func:`spectheory.montecarlo.ecsv.default_sources`,
  ``source_seed``): ``n_steps`` steps (16 chains). Results: ``accepted_length`` and
  ``se_accepted``, ``tokens_per_step``, ``vtpo_parallel`` (verifier positions per output token,
  one forward per step) and ``vtpo_sequential`` with their se, ``ce_per_token`` (cross-entropy to
  p, nats) and ``se_ce``; with ``tv_runs`` > 0 also ``tv`` (plug-in TV of the first 2 emitted
  tokens against p², ``tv_runs`` runs), ``tv_null`` (its expected value for exact draws) and
  ``tv_chi2_p``.
* ``ecsv.exact``: the exact engine on the V = 3 sources of the claim (``spectheory.exact.ecsv``):
  ``accepted_length``, ``vtpo_parallel``, ``vtpo_sequential``, ``ce_per_token`` (long run) and
  ``tv`` (TV of the first 3 emitted tokens from state 0). The seed is unused (exact).
"""
from __future__ import annotations

from dataclasses import replace

from ..sweep import job
from . import REQUIRED, choice, integer, parse, real

SOURCES = ("aligned", "medium", "weak")
DRAFTERS = ("clean", "noisy")
READINGS = ("match", "rs")


def _methods() -> dict:
    from spectheory.rules import ecsv as R
    return {m.name: m for m in R.PLAN}


def _spec(extra: dict) -> dict:
    return {"source": (choice(*SOURCES), REQUIRED), "drafter": (choice(*DRAFTERS), "clean"),
            "method": (choice(*_methods()), REQUIRED), "B": (integer(min=1, max=64), REQUIRED),
            "k": (integer(min=1, max=64), REQUIRED), "reading": (choice(*READINGS), "match"),
            "gamma": (real(), None), **extra}


def _setup(p: dict, pair):
    from spectheory.rules import ecsv as R
    m = _methods()[p["method"]]
    if p["gamma"] is not None:
        if m.kind != "fusion" or m.weights == "uniform":
            raise ValueError(f"gamma applies to the reliability-weighted ECSV variants, not {m.name!r}")
        m = replace(m, gamma=p["gamma"])
    m = m.regime("sampling")
    if m.kind == "fusion":
        m = m.with_verify(p["reading"])
    return R.Setup(pair, m, p["B"], p["k"], R.CLEAN if p["drafter"] == "clean" else R.NOISY)


@job("ecsv.mc")
def ecsv_mc(params: dict, seed) -> dict:
    """Monte Carlo of one ECSV method on a default source: accepted length, verified tokens per target call, cross-entropy (and TV to p with ``tv_runs``)."""
    from spectheory.montecarlo import ecsv as mc
    p = parse("ecsv.mc", params, _spec({"n_steps": (integer(min=16), REQUIRED), "tv_runs": (integer(min=0), 0),
                                        "source_seed": (integer(min=0), 20260)}))
    pair = mc.default_sources(seed=p["source_seed"])[p["source"]]
    setup = _setup(p, pair)
    ss = seed.spawn(2)
    e = mc.simulate(setup, p["n_steps"], seed=ss[0]).estimates()
    out = {"accepted_length": e["accepted_length"].value, "se_accepted": e["accepted_length"].se,
           "tokens_per_step": e["tokens_per_step"].value,
           "vtpo_parallel": e["vtpo_parallel"].value, "se_vtpo_parallel": e["vtpo_parallel"].se,
           "vtpo_sequential": e["vtpo_sequential"].value, "se_vtpo_sequential": e["vtpo_sequential"].se,
           "ce_per_token": e["ce_per_token"].value, "se_ce": e["ce_per_token"].se,
           "R_used": setup.R_used, "d": setup.d}
    if p["tv_runs"]:
        ft = mc.sample_first_tokens(setup, p["tv_runs"], 2, seed=ss[1])
        pN = pair.target.sequence_probs(2)
        counts = mc.sequence_counts(ft.tokens, pair.V)
        out.update(tv=mc.plugin_tv(counts, pN), tv_null=mc.plugin_tv_null(pN, p["tv_runs"]),
                   tv_chi2_p=mc.chi2_pvalue(counts, pN))
    return out


@job("ecsv.exact")
def ecsv_exact(params: dict, seed) -> dict:
    """Exact long-run rates of one ECSV method (chain DP on the V = 3 source): accepted length, verified tokens per target call, TV to p."""
    from spectheory.exact import ecsv as ex
    from spectheory.pairs import perturbed_pair
    p = parse("ecsv.exact", params, _spec({}))
    eps = {"aligned": 0.1, "medium": 0.4, "weak": 0.7}[p["source"]]
    pair = perturbed_pair(3, 1, concentration=0.3, how="mix", strength=eps, seed=11)
    setup = _setup(p, pair)
    lr = ex.long_run(setup)
    return {"accepted_length": lr["accepted_length"], "vtpo_parallel": lr["vtpo_parallel"],
            "vtpo_sequential": lr["vtpo_sequential"], "ce_per_token": lr["ce_per_token"],
            "tv": ex.tv_to_target(setup, 3), "R_used": setup.R_used, "d": setup.d}
