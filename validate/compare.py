"""Evidence records (mode ``logits``, CLAIMS "Evidence modes") from a replayed trace.

Each row is ``{"claim", "mode": "logits", "instance", "claimed", "measured", "ci_low",
"ci_high", "p_value", "n", "test", "note"}``; rows that are deterministic functions of the
trace (no sampling) carry ``ci_low = ci_high = p_value = None``.
"""
from __future__ import annotations

import math

from spectheory.closed_forms.sd import walltime_improvement
from spectheory.rules.sd import STANDARD, SDRule

from .capture import LogitTrace
from .replay import DEFAULT_N_MC, ReplayReport, replay

#: Two-sided normal quantile for the reported intervals.
Z95 = 1.959963984540054


def z_test(measured: float, claimed: float, se: float) -> tuple[float, float]:
    """Two-sided z-test: ``(z, p_value)``. With ``se == 0`` the claim is a point mass:
    p = 1 if measured == claimed, else 0."""
    if se == 0:
        return (0.0, 1.0) if measured == claimed else (math.copysign(math.inf, measured - claimed), 0.0)
    z = (measured - claimed) / se
    return z, math.erfc(abs(z) / math.sqrt(2.0))


def rows_from_report(rep: ReplayReport, c: float) -> dict[str, dict]:
    """The three records (sd.acceptance, sd.expected_tokens, sd.walltime) of one replay."""
    if not (c >= 0 and math.isfinite(c)):
        raise ValueError(f"cost ratio c must be finite and ≥ 0, got {c!r}")
    base = {"mode": "logits", "instance": rep.name}
    _, p_acc = z_test(rep.mc_acceptance, rep.alpha_hat, rep.mc_acceptance_se_null)
    _, p_tok = z_test(rep.mc_tokens, rep.exact_tokens, rep.mc_tokens_se)
    denom = rep.gamma * c + 1.0
    ctx = f"T={rep.T}, gamma={rep.gamma}, temperature={rep.temperature:g}, rule={rep.rule}"
    return {
        "sd.acceptance": {
            "claim": "sd.acceptance", **base,
            "claimed": rep.alpha_hat, "measured": rep.mc_acceptance,
            "ci_low": rep.mc_acceptance - Z95 * rep.mc_acceptance_se,
            "ci_high": rep.mc_acceptance + Z95 * rep.mc_acceptance_se,
            "p_value": p_acc, "n": rep.mc_attempts,
            "test": "two-sided z-test of the first-draft acceptance frequency (n_mc draws at each of T "
                    "positions) against mean_t Σmin(p_t,q_t); null variance Σβ_t(1−β_t)/(T²·n_mc)",
            "note": f"{ctx}, seed={rep.seed!r}",
        },
        "sd.expected_tokens": {
            "claim": "sd.expected_tokens", **base,
            "claimed": rep.predicted_tokens, "measured": rep.exact_tokens,
            "ci_low": None, "ci_high": None, "p_value": None, "n": rep.n_starts,
            "test": "none: both values are deterministic on the trace; measured − claimed is the "
                    "constant-α formula's error where β varies along the text",
            "note": f"{ctx}; measured = mean over starts of 1 + Σ_k Π_(j<k) β_(t+j) (trace path as "
                    f"context); MC replay {rep.mc_tokens:.6g} ± {rep.mc_tokens_se:.2g} "
                    f"(n={rep.mc_iterations}, consistency p={p_tok:.3g})",
            "mc_measured": rep.mc_tokens, "mc_se": rep.mc_tokens_se, "mc_p_value": p_tok,
        },
        "sd.walltime": {
            "claim": "sd.walltime", **base,
            "claimed": float(walltime_improvement(rep.alpha_hat, rep.gamma, c)),
            "measured": rep.exact_tokens / denom,
            "ci_low": None, "ci_high": None, "p_value": None, "n": rep.n_starts,
            "test": "none: deterministic on the trace (trace-exact tokens / (γc + 1))",
            "note": f"{ctx}, c={c:g}",
        },
    }


def compare(trace: LogitTrace, gamma: int, c: float, *, temperature: float | None = None,
            n_mc: int = DEFAULT_N_MC, seed=0, rule: SDRule = STANDARD) -> dict[str, dict]:
    """Replay ``trace`` (:func:`validate.replay.replay`) and return evidence rows keyed by
    claim id: ``sd.acceptance`` (mean β vs MC acceptance, z-test), ``sd.expected_tokens``
    (constant-α formula vs trace-exact) and ``sd.walltime`` (cost ratio ``c``)."""
    rep = replay(trace, gamma, temperature=temperature, n_mc=n_mc, seed=seed, rule=rule)
    return rows_from_report(rep, c)
