"""Closed forms for standard speculative sampling (Leviathan et al. 2023, §3).

``acceptance``            CLAIMS sd.acceptance   β = Σ min(p, q) = 1 − TV(p, q)
``expected_tokens``       CLAIMS sd.expected_tokens  (1 − α^{γ+1}) / (1 − α)   (Leviathan Eq. 1)
``walltime_improvement``  CLAIMS sd.walltime     (1 − α^{γ+1}) / ((1 − α)(γc + 1))  (Thm 3.8)

and the exact dynamic programs over a Markov chain's states (β varies with the state):
``expected_tokens_chain`` (one iteration from a state), ``iteration_kernel`` and
``long_run_block_efficiency`` (the stationary tokens per target call).
"""
from __future__ import annotations

import numpy as np

from ..divergences import overlap
from ..markov import MarkovPair, stationary_distribution, token_to_state_matrix


def acceptance(p, q) -> np.ndarray:
    """β = Σ_x min(p(x), q(x)) (CLAIMS sd.acceptance)."""
    return overlap(p, q)


def expected_tokens(alpha, gamma: int):
    """``(1 − α^{γ+1})/(1 − α)`` tokens per iteration for constant acceptance α (γ + 1 at α = 1)."""
    a = np.asarray(alpha, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where(a < 1, (1 - a ** (gamma + 1)) / (1 - np.where(a < 1, a, 0.0)), gamma + 1.0)
    return val[()] if val.ndim == 0 else val


def walltime_improvement(alpha, gamma: int, c: float):
    """``(1 − α^{γ+1}) / ((1 − α)(γc + 1))``: autoregressive time / speculative time per
    token, when a draft call costs c and a target call costs 1."""
    return expected_tokens(alpha, gamma) / (gamma * c + 1.0)


# --- exact dynamic programs over the chain -------------------------------------------------

def acceptance_matrix(pair: MarkovPair) -> np.ndarray:
    """A[s, s'] = Σ_{x→s'} min(p(x|s), q(x|s)): one accepted draft token, moving s → s'."""
    return token_to_state_matrix(np.minimum(pair.target.table, pair.draft.table), pair.V, pair.n_states)


def tau_tail_chain(pair: MarkovPair, gamma: int) -> np.ndarray:
    """``P(τ ≥ k | start state)`` for k = 0..γ as a (γ+1, S) array: ``(A^k 1)[s]``."""
    A = acceptance_matrix(pair)
    out = np.empty((gamma + 1, pair.n_states))
    v = np.ones(pair.n_states)
    for k in range(gamma + 1):
        out[k] = v
        v = A @ v
    return out


def expected_tokens_chain(pair: MarkovPair, gamma: int, start_state: int | None = None):
    """Exact E[emitted tokens in one iteration] = 1 + Σ_{k=1}^{γ} P(τ ≥ k), per start state
    (or for ``start_state``). Exact for a correct verifier on any Markov pair."""
    tails = tau_tail_chain(pair, gamma)
    e = tails.sum(axis=0)  # k = 0 term is the "+1" (P(τ ≥ 0) = 1)
    return e if start_state is None else float(e[start_state])


def iteration_kernel(pair: MarkovPair, gamma: int) -> np.ndarray:
    """K[s, s']: probability that an iteration starting in state s ends in state s'.

    K = Σ_{k<γ} A^k diag(1 − β) R + A^γ P, with R[s,s'] the residual's and P[s,s'] the
    target's token-to-state matrices.
    """
    V, S = pair.V, pair.n_states
    from ..distributions import residual
    p, q = pair.target.table, pair.draft.table
    A = acceptance_matrix(pair)
    beta = overlap(p, q)
    R = token_to_state_matrix(residual(p, q), V, S)
    P = token_to_state_matrix(p, V, S)
    K = np.zeros((S, S))
    Ak = np.eye(S)
    for _ in range(gamma):
        K += Ak @ (np.clip(1 - beta, 0, None)[:, None] * R)
        Ak = Ak @ A
    return K + Ak @ P


def long_run_block_efficiency(pair: MarkovPair, gamma: int, start_state: int = 0) -> float:
    """Stationary tokens per target call: Σ_s ν(s) e(s) / Σ_s ν(s), ν the stationary law of
    iteration start states (seen from ``start_state`` if the chain is reducible)."""
    nu = stationary_distribution(iteration_kernel(pair, gamma), start=start_state)
    return float(nu @ expected_tokens_chain(pair, gamma))


def stationary_acceptance(pair: MarkovPair, start_state: int = 0) -> float:
    """α = E_π[β(s)] under the target's stationary state distribution."""
    pi = stationary_distribution(pair.target.transition_matrix(), start=start_state)
    return float(pi @ pair.acceptance_by_state())
