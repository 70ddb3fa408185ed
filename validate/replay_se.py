"""Replay Speculative Ensemble's estimators on real logits (CLAIMS ``se.acceptance``,
``se.thm3_2``; seed 002).

For each position t of a :class:`~validate.capture.LogitTrace` the draft (q_t, the proposer)
and the target (p_t) give an ensemble r_t: weighted ``λ q_t + (1 − λ) p_t`` for every λ of
the grid, contrastive ``softmax((l_p − μ l_q)/T)`` for every μ (on the raw logits divided by
the replay temperature). Per setting:

* α_t = Σ min(q_t, r_t) = 1 − ½ Σ|q_t − r_t| (Eq. 7) and α̂ = mean α_t;
* expected tokens per cycle of the speculative-based ensemble (no bonus), the constant-α
  formula ``(1 − α̂^γ)/(1 − α̂)`` (Thm 3.1) and the trace-exact ``e_t = Σ_{k<γ} Π_{j<k} α_{t+j}``
  (the trace's token path as the context of every proposal, as in :mod:`validate.replay`);
* Monte Carlo: ``n_mc`` proposals x ~ q_t at every position, each accepted with the rule's
  probability (min(1, r/q) for the correct rule): the acceptance frequency against α̂.

:func:`evidence` turns a replay into ``logits`` evidence rows for ``se.acceptance`` (z-test of
the frequency against α̂, standard error under the claim) and ``se.thm3_2`` (for every λ:
min_t α_t ≥ λ on the trace, exact, and a one-sided z-test of the frequency ≥ λ).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims import stats
from sims.evidence import Evidence
from spectheory.checks import check_int, check_real
from spectheory.ensembles import contrastive, weighted
from spectheory.rng import check_random_state
from spectheory.rules.se import STANDARD, SERule

from .capture import LogitTrace

DEFAULT_LAMBDAS = (0.1, 0.3, 0.5, 0.7, 0.9)
DEFAULT_MUS = (0.1, 0.3, 0.5)


@dataclass(frozen=True, eq=False)
class SESetting:
    """Replay of one ensemble setting (``kind`` "WE" with weight λ or "CD" with μ)."""

    kind: str
    weight: float
    alpha: np.ndarray            # (T,) α_t, q proposing
    alpha_hat: float
    predicted_tokens: float      # (1 − α̂^γ)/(1 − α̂)
    exact_tokens: float          # mean_t e_t along the trace
    mc_attempts: int
    mc_accepts: int
    mc_se_null: float            # sqrt(Σ α_t(1 − α_t)/n_mc)/T

    @property
    def label(self) -> str:
        return f"{self.kind} {'λ' if self.kind == 'WE' else 'μ'}={self.weight:g}"

    @property
    def mc_acceptance(self) -> float:
        return self.mc_accepts / self.mc_attempts


@dataclass(frozen=True, eq=False)
class SEReplay:
    name: str
    gamma: int
    temperature: float
    rule: str
    T: int
    n_mc: int
    seed: object
    settings: tuple


def trace_exact_tokens_no_bonus(alpha, gamma: int) -> np.ndarray:
    """``e_t = Σ_{k=0}^{γ−1} Π_{j<k} α_{t+j}`` for t = 0..T−γ (no bonus token)."""
    a = np.asarray(alpha, dtype=np.float64)
    g = check_int(gamma, "γ", min=1, max=a.shape[0])
    win = np.lib.stride_tricks.sliding_window_view(a, g)[:, :g - 1]
    return 1.0 + np.cumprod(win, axis=1).sum(axis=1) if g > 1 else np.ones(a.shape[0])


def replay_se(trace: LogitTrace, *, lambdas=DEFAULT_LAMBDAS, mus=DEFAULT_MUS, gamma: int = 4,
              temperature: float | None = None, n_mc: int = 1000, seed=0, rule: SERule = STANDARD) -> SEReplay:
    """SE's α and expected tokens for a grid of λ (WE) and μ (CD) on ``trace``."""
    if not isinstance(trace, LogitTrace):
        raise TypeError(f"expected a LogitTrace, got {type(trace).__name__}")
    g = check_int(gamma, "γ", min=1, max=trace.T)
    n = check_int(n_mc, "n_mc", min=1)
    temp = trace.temperature if temperature is None else check_real(temperature, "temperature", lo=0.0, lo_open=True)
    P, Q = trace.probs(temp)
    rng = check_random_state(seed)
    settings = []
    grid = [("WE", check_real(x, "λ", lo=0.0, hi=1.0)) for x in lambdas] + \
           [("CD", check_real(x, "μ", lo=0.0)) for x in mus]
    cdf = np.cumsum(Q, axis=1)
    cdf /= cdf[:, -1:]
    for kind, w in grid:
        if kind == "WE":
            R = weighted(Q, P, w)
        else:
            R = contrastive(trace.target_logits / temp, trace.draft_logits / temp, w, 1.0)
        alpha = np.minimum(Q, R).sum(axis=1)
        a_hat = float(alpha.mean())
        pred = (1 - a_hat ** g) / (1 - a_hat) if a_hat < 1 else float(g)
        exact = float(trace_exact_tokens_no_bonus(alpha, g).mean())
        acc_prob = rule.accept_probability(R, Q, P)                  # (T, V)
        u = rng.random((trace.T, n))
        x = np.minimum((cdf[:, None, :] <= u[:, :, None]).sum(axis=2), trace.V - 1)   # x ~ q_t
        accepted = rng.random((trace.T, n)) < np.take_along_axis(acc_prob, x, axis=1)
        se_null = float(np.sqrt(np.sum(alpha * (1 - alpha)) / n) / trace.T)
        settings.append(SESetting(kind, w, alpha, a_hat, float(pred), exact, trace.T * n, int(accepted.sum()), se_null))
    return SEReplay(trace.name, g, float(temp), rule.name, trace.T, n, seed, tuple(settings))


def evidence(rep: SEReplay, *, alpha: float = 1e-3, tolerance: float = 0.01) -> dict[str, list[Evidence]]:
    """``logits`` evidence for se.acceptance and se.thm3_2 (plus Thm 3.1 rows as info)."""
    ctx = f"T={rep.T}, γ={rep.gamma}, temperature={rep.temperature:g}, rule={rep.rule}, n_mc={rep.n_mc}"
    acc, thm32, thm31 = [], [], []
    for s in rep.settings:
        name = f"{rep.name} {s.label}"
        acc.append(stats.z_test_mean(name, s.alpha_hat, mean=s.mc_acceptance, se=s.mc_se_null, n=s.mc_attempts,
                                     alpha=alpha, tolerance=tolerance, what="acceptance frequency of q's proposals",
                                     mode="logits", note=f"{ctx}; claimed = mean_t (1 − ½Σ|q_t − r_t|)"))
        thm31.append(stats.info("logits", f"{name} γ={rep.gamma}", s.predicted_tokens, s.exact_tokens, n=rep.T,
                                test="Thm 3.1 tokens per cycle at α̂ vs trace-exact Σ_k Π_(j<k) α_(t+j)",
                                note="α varies along the text: the gap is the constant-α formula's error"))
        if s.kind != "WE":
            continue
        lo = float(s.alpha.min())
        thm32.append(Evidence("logits", f"{name} (every position)", s.weight, lo,
                              test="exact on the trace: min_t α_t ≥ λ", tolerance=1e-12,
                              outcome="pass" if lo >= s.weight - 1e-12 else "fail", note=ctx))
        p_hat = s.mc_acceptance
        thm32.append(stats.z_test_bound(name, s.weight, mean=p_hat,
                                        se=float(np.sqrt(max(p_hat * (1 - p_hat), 1e-12) / s.mc_attempts)),
                                        n=s.mc_attempts, alpha=alpha, tolerance=tolerance, side="ge",
                                        what="acceptance frequency", mode="logits", note=ctx))
    return {"se.acceptance": acc, "se.thm3_2": thm32, "se.thm3_1": thm31}
