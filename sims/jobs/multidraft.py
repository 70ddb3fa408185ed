"""Sweep job kinds of multi-draft verification, Lin et al. 2026 (``multidraft.*``).

Both take the pair (:data:`spectheory.sims.jobs.PAIR_SPEC`), ``gamma`` (draft length), ``K`` (drafts) and
``start_state`` (default 0).

* ``multidraft.mc``: ``n_runs`` independent iterations of ``rule`` (``spectr-gbv``, ``gbv``,
  ``k-seq``) from ``start_state`` (Numba kernels, :func:`spectheory.montecarlo.multidraft.simulate`).
  Results: ``mean_tokens`` (block efficiency E[τ] + 1) and ``se_tokens`` (its standard error).
* ``multidraft.exact``: E[τ] of one iteration (``expected_tau``) for ``method``: ``sd``
  (token-level SD, K = 1), ``gbv`` (K = 1), ``k-seq``, ``spectr-gbv`` (exact engine),
  ``lp-optimum`` (the optimum over all couplings of K i.i.d. drafts, HiGHS LP) or
  ``lemma51-bound`` (Lemma 5.1). The seed is unused (exact).
"""
from __future__ import annotations

import numpy as np

from ..sweep import job
from . import PAIR_SPEC, REQUIRED, choice, integer, pair_from, pair_key, parse

RULE_NAMES = ("spectr-gbv", "gbv", "k-seq")
METHODS = ("sd", "lp-optimum", "lemma51-bound") + RULE_NAMES


def _rule(name: str):
    from spectheory.rules import multidraft as R
    return {r.name: r for r in (R.SPECTR_GBV, R.GBV, R.KSEQ)}[name]


def _parse(kind: str, params: dict, **extra) -> dict:
    return parse(kind, params, {**PAIR_SPEC, "gamma": (integer(min=1), REQUIRED), "K": (integer(min=1), REQUIRED),
                                "start_state": (integer(min=0), 0), **extra})


def _check_mc(params: dict) -> None:
    """Every parameter of a ``multidraft.mc`` job, checked before any job runs."""
    pair_key("multidraft.mc", _parse("multidraft.mc", params, rule=(choice(*RULE_NAMES), REQUIRED),
                                     n_runs=(integer(min=2), REQUIRED)))


def _check_exact(params: dict) -> None:
    """Every parameter of a ``multidraft.exact`` job, checked before any job runs."""
    p = _parse("multidraft.exact", params, method=(choice(*METHODS), REQUIRED))
    pair_key("multidraft.exact", p)
    if p["method"] in ("sd", "gbv") and p["K"] != 1:
        raise ValueError(f"multidraft.exact: method {p['method']!r} verifies one draft: K must be 1, got {p['K']}")


@job("multidraft.mc", check=_check_mc)
def multidraft_mc(params: dict, seed) -> dict:
    """Monte Carlo of one multi-draft verification rule (K-SEQ, GBV, SpecTr-GBV, ...): mean tokens per iteration and its standard error."""
    from spectheory.montecarlo import multidraft as mc
    p = _parse("multidraft.mc", params, rule=(choice(*RULE_NAMES), REQUIRED), n_runs=(integer(min=2), REQUIRED))
    res = mc.simulate(pair_from("multidraft.mc", p), p["gamma"], p["K"], p["n_runs"], 1, rule=_rule(p["rule"]),
                      seed=seed, start_state=p["start_state"])
    return {"mean_tokens": float(res.tau.mean() + 1),
            "se_tokens": float(res.tau.std(ddof=1) / np.sqrt(res.tau.size))}


@job("multidraft.exact", check=_check_exact)
def multidraft_exact(params: dict, seed) -> dict:
    """Exact expected tokens of a multi-draft method (SD, K-SEQ, GBV, SpecTr-GBV, the LP optimum or the Lemma 5.1 bound) by enumeration of the block tree."""
    from spectheory.closed_forms import multidraft as cf
    from spectheory.checks import check_state
    p = _parse("multidraft.exact", params, method=(choice(*METHODS), REQUIRED))
    pair = pair_from("multidraft.exact", p)
    tree = cf.block_tree(pair, p["gamma"], check_state(p["start_state"], pair.n_states))
    method, K = p["method"], p["K"]
    if method in ("sd", "gbv") and K != 1:
        raise ValueError(f"multidraft.exact: method {method!r} verifies one draft: K must be 1, got {K}")
    if method == "sd":
        value = cf.sd_expected_tau(tree)
    elif method == "lp-optimum":
        from spectheory.closed_forms.optimum import lp_optimum
        value = lp_optimum(tree, K)
    elif method == "lemma51-bound":
        value = cf.lemma51_bound(tree, K)
    else:
        from spectheory.exact import multidraft as ex
        value = ex.expected_tau(tree, K, _rule(method))
    return {"expected_tau": float(value)}
