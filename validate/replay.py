"""Replay spectheory's SD estimators on a :class:`~spectheory.validate.capture.LogitTrace`.

For each position t of the trace, p_t and q_t are the target's and draft's next-token
distributions (softmax of the logits at one temperature). The report gives

* β_t = Σ_x min(p_t, q_t) (claim ``sd.acceptance``) and α̂ = mean β_t with its standard error;
* the constant-α prediction ``(1 − α̂^{γ+1})/(1 − α̂)`` (claim ``sd.expected_tokens``);
* the "exact along the trace" expected emitted tokens of an iteration starting at t,
  ``e_t = 1 + Σ_{k=1}^{γ} Π_{j<k} β_{t+j}``, averaged over t = 0..T−γ;
* a Monte Carlo replay of token-level speculative sampling on the trace.

Interpretation (read before quoting the exact-along-trace number): the trace's token path is
taken as the context of every drafted position, i.e. the k-th draft token of an iteration
starting at t is verified against (p_{t+k−1}, q_{t+k−1}) whatever tokens were drafted before
it. In real speculative decoding the context after an accepted draft token is that token
(distributed as min(p,q)/β, not as p), so ``e_t`` is exact only where β depends on the
position and not on the drafted tokens; it is the trace analogue of the chain DP
(``closed_forms.sd.expected_tokens_chain``), not a measurement of a real decoding run.
The Monte Carlo replay simulates exactly this model, so it must agree with ``e_t``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spectheory.judge import stats
from spectheory.closed_forms.sd import acceptance, expected_tokens
from spectheory.checks import check_real, check_real_array, check_type
from spectheory.rng import check_random_state
from spectheory.rules.sd import STANDARD, SDRule

from .capture import LogitTrace
from .trace import CompactTrace

#: Default Monte Carlo replications per start position.
DEFAULT_N_MC = 1000


@dataclass(frozen=True, eq=False)
class ReplayReport:
    """Estimators on one trace (see the module docstring for the interpretation).

    beta: (T,) per-position acceptance β_t. alpha_hat, alpha_se: mean of β_t and its
    standard error std(β)/√T (treats positions as independent; β along a text is
    autocorrelated, so this understates the uncertainty about a population α).
    predicted_tokens: constant-α formula at α̂. exact_tokens_by_start: (T−γ+1,) e_t;
    exact_tokens: their mean.

    Monte Carlo (``n_mc`` replications per position, seeded Generator): mc_attempts /
    mc_accepts count first-draft verifications at every one of the T positions (so
    E[mc_acceptance] = α̂ exactly for the correct rule); mc_acceptance_se_null is the exact
    standard error of that frequency if P(accept at t) = β_t, sqrt(Σβ_t(1−β_t)/(T²·n_mc)).
    mc_tokens: mean emitted tokens of full iterations from t = 0..T−γ, with its standard error.

    On a :class:`~spectheory.validate.trace.CompactTrace` the Monte Carlo runs on the stored top-k slice
    plus one bucket for the leftover mass: its acceptance is beta_mc = Σ min over that lumped
    pair (β ≤ beta_mc ≤ β + min(p_rest, q_rest)), so the Monte Carlo tests compare with
    alpha_mc = mean beta_mc and mc_tokens_claimed = trace-exact tokens at beta_mc, while beta,
    alpha_hat and exact_tokens stay exact (from the full distributions).
    """

    name: str
    gamma: int
    temperature: float
    rule: str
    T: int
    beta: np.ndarray
    alpha_hat: float
    alpha_se: float
    predicted_tokens: float
    exact_tokens_by_start: np.ndarray
    exact_tokens: float
    n_mc: int
    seed: object
    beta_mc: np.ndarray
    alpha_mc: float
    mc_tokens_claimed: float
    mc_attempts: int
    mc_accepts: int
    mc_acceptance: float
    mc_acceptance_se_null: float
    mc_acceptance_se: float
    mc_tokens: float
    mc_tokens_se: float
    mc_iterations: int

    @property
    def n_starts(self) -> int:
        return self.exact_tokens_by_start.shape[0]


def trace_exact_tokens(beta, gamma: int) -> np.ndarray:
    """``e_t = 1 + Σ_{k=1}^{γ} Π_{j=0}^{k−1} β_{t+j}`` for t = 0..T−γ (claim sd.expected_tokens,
    with β varying along the trace; see the module docstring)."""
    if np.ndim(beta) != 1:
        raise ValueError(f"beta must be a 1-D array of per-position acceptances, got shape {np.shape(beta)}")
    b = check_real_array(beta, "beta", lo=0.0, hi=1.0)
    _check_gamma(gamma, b.shape[0])
    win = np.lib.stride_tricks.sliding_window_view(b, gamma)  # (T−γ+1, γ)
    return 1.0 + np.cumprod(win, axis=1).sum(axis=1)


def _check_gamma(gamma, T):
    if int(gamma) != gamma or gamma < 1:
        raise ValueError(f"gamma (draft length) must be an integer ≥ 1, got {gamma!r}")
    if gamma > T:
        raise ValueError(f"gamma = {gamma} exceeds the trace length T = {T}")


def _draw(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws; ``cdf`` is exactly 1 from the last positive-mass token on and
    u ∈ [0,1), so zero-mass tokens are never hit."""
    return np.searchsorted(cdf, u, side="right")


def replay(trace: LogitTrace | CompactTrace, gamma: int, *, temperature: float | None = None, n_mc: int = DEFAULT_N_MC,
           seed=0, rule: SDRule = STANDARD) -> ReplayReport:
    """Replay speculative sampling on ``trace`` (claim sd.acceptance, sd.expected_tokens).

    temperature: applied to both models' logits (default: the trace's sampling temperature).
    Monte Carlo: at every position t, ``n_mc`` draft tokens x ~ q_t, each accepted with
    probability ``rule.accept_probability(p_t, q_t)[x]`` (min(1, p/q) for the correct rule);
    for t ≤ T−γ these are the first drafts of iterations that go on at t+1, …, t+γ−1 with
    fresh draws (all drafts are drawn, τ counts the leading accepts: same law as stopping).
    An iteration emits τ + 1 tokens (correction or bonus), τ = γ without bonus for a no-bonus rule.
    """
    check_type(rule, SDRule, "rule", " (spectheory.rules.sd)")
    if temperature is not None:
        temperature = check_real(temperature, "temperature", lo=0.0, lo_open=True)
    if isinstance(trace, LogitTrace):
        trace = trace.compact(temperature)
    elif not isinstance(trace, CompactTrace):
        raise TypeError(f"expected a LogitTrace or CompactTrace, got {type(trace).__name__}")
    elif temperature is not None and float(temperature) != trace.temperature:
        raise ValueError(f"a CompactTrace holds statistics at temperature {trace.temperature:g} only; "
                         f"cannot replay it at {temperature!r}")
    T = trace.T
    _check_gamma(gamma, T)
    gamma = int(gamma)
    if int(n_mc) != n_mc or n_mc < 1:
        raise ValueError(f"n_mc must be an integer ≥ 1, got {n_mc!r}")
    n_mc = int(n_mc)
    temp = trace.temperature if temperature is None else float(temperature)
    rng = check_random_state(seed)
    last_start = T - gamma  # full iterations start at 0..last_start

    beta = trace.beta  # exact, from the full distributions
    P, Q = trace.lumped()  # slice + leftover bucket (exact when the slice is the vocabulary)
    # a probability: rounding can put Σ min(p, q) a few ulps above 1 when p = q (a draft identical
    # to the target), which made the null standard error below sqrt(negative) = NaN
    beta_mc = np.clip(acceptance(P, Q), 0.0, 1.0)
    acc = np.zeros((T, gamma, n_mc), dtype=bool)  # acc[s, k, r]: draft k of iteration (s, r) accepted
    for t in range(T):
        p, q = P[t], Q[t]
        # depth k at position t belongs to start s = t − k; depth ≥ 1 only for full iterations
        ks = [k for k in range(min(gamma, t + 1)) if k == 0 or t - k <= last_start]
        cdf = np.cumsum(q)
        cdf /= cdf[-1]
        cdf[np.flatnonzero(q)[-1]:] = 1.0  # trailing zero-mass tokens keep zero width
        x = _draw(cdf, rng.random((len(ks), n_mc)))
        a = rule.accept_probability(p, q)[x]
        acc[t - np.asarray(ks), ks, :] = rng.random((len(ks), n_mc)) < a

    alpha_hat = float(beta.mean())
    alpha_se = float(beta.std(ddof=1) / np.sqrt(T)) if T > 1 else float("nan")
    e = trace_exact_tokens(beta, gamma)

    first = acc[:, 0, :]
    n_att = T * n_mc
    n_acc = int(first.sum())
    f_t = first.mean(axis=1)
    se_null = stats.bernoulli_mean_se(beta_mc, n_mc)
    se_hat = stats.bernoulli_mean_se(f_t, n_mc)

    full = acc[: last_start + 1]
    tau = np.cumprod(full, axis=1).sum(axis=1)  # (n_starts, n_mc)
    emitted = tau + np.where((tau == gamma) & (not rule.bonus), 0, 1)
    per_start_var = emitted.var(axis=1, ddof=1) if n_mc > 1 else np.full(emitted.shape[0], np.nan)
    mc_tokens_se = float(np.sqrt(per_start_var.sum() / n_mc) / emitted.shape[0])

    return ReplayReport(
        name=trace.name, gamma=gamma, temperature=temp, rule=rule.name, T=T, beta=beta,
        alpha_hat=alpha_hat, alpha_se=alpha_se,
        predicted_tokens=float(expected_tokens(alpha_hat, gamma)),
        exact_tokens_by_start=e, exact_tokens=float(e.mean()),
        n_mc=n_mc, seed=seed, beta_mc=beta_mc, alpha_mc=float(beta_mc.mean()),
        mc_tokens_claimed=float(trace_exact_tokens(beta_mc, gamma).mean()), mc_attempts=n_att, mc_accepts=n_acc, mc_acceptance=n_acc / n_att,
        mc_acceptance_se_null=se_null, mc_acceptance_se=se_hat,
        mc_tokens=float(emitted.mean()), mc_tokens_se=mc_tokens_se, mc_iterations=int(emitted.size))
