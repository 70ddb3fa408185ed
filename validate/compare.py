"""Evidence (mode ``logits``, "Evidence modes") from a replayed trace, built with the
same statistical method as every other check (:mod:`spectheory.judge.stats`), so the records drop
straight into a report.
"""
from __future__ import annotations

import math

from spectheory.judge import stats
from spectheory.judge.evidence import Evidence
from spectheory.checks import check_level, check_real
from spectheory.closed_forms.sd import walltime_improvement
from spectheory.rules.sd import STANDARD, SDRule

from .capture import LogitTrace
from .replay import DEFAULT_N_MC, ReplayReport, replay


def _part(part: str, e: Evidence) -> Evidence:
    e.part = part
    return e


def evidence_from_report(rep: ReplayReport, c: float, *, alpha: float = 1e-3,
                         tolerance: float = 0.01) -> dict[str, list[Evidence]]:
    """Evidence for sd.acceptance, sd.expected_tokens and sd.walltime from one replay.

    sd.acceptance: z-test of the first-draft acceptance frequency (n_mc draws at each of the T
    positions) against mean_t Σmin(p_t, q_t), with the exact null standard error.
    sd.expected_tokens: the constant-α formula vs the trace-exact value (deterministic on the
    trace: reported as info, the gap is the formula's error where β varies along the text),
    and a z-test of the Monte Carlo replay against the trace-exact value.
    sd.walltime: formula vs trace-exact tokens / (γc + 1) (info).
    """
    if not isinstance(rep, ReplayReport):
        raise TypeError(f"rep must be a ReplayReport (from spectheory.validate.replay.replay), got {type(rep).__name__}")
    if not (c >= 0 and math.isfinite(c)):
        raise ValueError(f"cost ratio c must be finite and ≥ 0, got {c!r}")
    check_level(alpha)
    check_real(tolerance, "tolerance", lo=0.0, lo_open=True)
    ctx = f"T={rep.T}, γ={rep.gamma}, temperature={rep.temperature:g}, rule={rep.rule}, seed={rep.seed!r}"
    name = f"{rep.name} γ={rep.gamma}"
    return {
        "sd.acceptance": [stats.z_test_mean(
            name, rep.alpha_mc, mean=rep.mc_acceptance, se=rep.mc_acceptance_se_null, n=rep.mc_attempts,
            alpha=alpha, tolerance=tolerance, what="first-draft acceptance frequency", mode="logits",
            note=f"{ctx}; claimed = mean_t Σmin(p_t,q_t) over the replayed distributions "
                 f"(exact α̂ = {rep.alpha_hat:.6f}), se under the claim")],
        "sd.expected_tokens": [  # tagged with the parts of sims/claims/sd.py's sd.expected_tokens
            _part("formula-on-markov", stats.info(
                "logits", name, rep.predicted_tokens, rep.exact_tokens, n=rep.n_starts,
                test="constant-α formula at α̂ vs trace-exact 1 + Σ_k Π_(j<k) β_(t+j), mean over starts",
                note=f"{ctx}; deterministic on the trace (trace path as context)")),
            _part("chain", stats.z_test_mean(
                name, rep.mc_tokens_claimed, mean=rep.mc_tokens, se=rep.mc_tokens_se, n=rep.mc_iterations,
                alpha=alpha, tolerance=tolerance * rep.gamma, what="replayed tokens per iteration", mode="logits",
                note=f"{ctx}; claimed = trace-exact value"))],
        "sd.walltime": [stats.info(
            "logits", f"{name} c={c:g}", float(walltime_improvement(rep.alpha_hat, rep.gamma, c)),
            rep.exact_tokens / (rep.gamma * c + 1.0), n=rep.n_starts,
            test="formula at α̂ vs trace-exact tokens / (γc + 1)", note=ctx)],
    }


def compare(trace: LogitTrace, gamma: int, c: float, *, temperature: float | None = None,
            n_mc: int = DEFAULT_N_MC, seed=0, rule: SDRule = STANDARD,
            alpha: float = 1e-3) -> dict[str, list[Evidence]]:
    """Replay ``trace`` (:func:`spectheory.validate.replay.replay`) and return its evidence keyed by claim id."""
    check_level(alpha)
    rep = replay(trace, gamma, temperature=temperature, n_mc=n_mc, seed=seed, rule=rule)
    return evidence_from_report(rep, c, alpha=alpha)
