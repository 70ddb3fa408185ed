"""Closed forms for standard speculative sampling (Leviathan et al. 2023, §3).

``acceptance``            claim sd.acceptance   β = Σ min(p, q) = 1 − TV(p, q)
``expected_tokens``       claim sd.expected_tokens  (1 − α^{γ+1}) / (1 − α)   (Leviathan Eq. 1)
``walltime_improvement``  claim sd.walltime     (1 − α^{γ+1}) / ((1 − α)(γc + 1))  (Thm 3.8)

and the exact dynamic programs over a Markov chain's states (β varies with the state):
``expected_tokens_chain`` (one iteration from a state), ``iteration_kernel`` and
``long_run_block_efficiency`` (the stationary tokens per target call).

Every public function validates its arguments (``spectheory.checks``): α outside [0, 1],
NaN or inf, γ < 1, c < 0, a start state outside the chain or mismatched vocabularies raise
instead of returning a number.
"""
from __future__ import annotations

import numpy as np

from ..checks import check_int, check_real_array, check_state
from ..distributions import check_pair
from ..divergences import overlap
from ..markov import MarkovPair, stationary_distribution, token_to_state_matrix


def _check_pair_obj(pair) -> MarkovPair:
    if not isinstance(pair, MarkovPair):
        raise TypeError(f"pair must be a MarkovPair, got {type(pair).__name__}")
    return pair


def _check_gamma(gamma) -> int:
    return check_int(gamma, "gamma (draft length)", min=1)


def acceptance(p, q) -> np.ndarray:
    """β = Σ_x min(p(x), q(x)) (claim sd.acceptance); p and q must be distributions over
    the same vocabulary and of the same shape (no broadcasting of mismatched tables)."""
    check_pair(p, q)
    return overlap(np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64))


def expected_tokens(alpha, gamma: int):
    """``(1 − α^{γ+1})/(1 − α)`` tokens per iteration for constant acceptance α (γ + 1 at α = 1).

    Evaluated as ``−expm1((γ+1)·log1p(−(1−α))) / (1−α)``, which keeps full relative
    precision as α → 1 (the textbook quotient loses ~|log10(1 − α)| digits there)."""
    a = check_real_array(alpha, "alpha (acceptance rate)", lo=0.0, hi=1.0)
    g = _check_gamma(gamma)
    d = 1.0 - a  # exact for a in [0.5, 1] (Sterbenz); the quotient is well conditioned below
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where(d > 0, -np.expm1((g + 1) * np.log1p(-d)) / np.where(d > 0, d, 1.0), g + 1.0)
    return val[()] if val.ndim == 0 else val


def walltime_improvement(alpha, gamma: int, c):
    """``(1 − α^{γ+1}) / ((1 − α)(γc + 1))``: autoregressive time / speculative time per
    token, when a draft call costs c ≥ 0 and a target call costs 1."""
    cost = check_real_array(c, "c (draft/target call-time ratio)", lo=0.0)
    g = _check_gamma(gamma)
    val = expected_tokens(alpha, g) / (g * cost + 1.0)
    return val[()] if np.ndim(val) == 0 else val


# --- exact dynamic programs over the chain -------------------------------------------------

def acceptance_matrix(pair: MarkovPair) -> np.ndarray:
    """A[s, s'] = Σ_{x→s'} min(p(x|s), q(x|s)): one accepted draft token, moving s → s'."""
    _check_pair_obj(pair)
    return token_to_state_matrix(np.minimum(pair.target.table, pair.draft.table), pair.V, pair.n_states)


def tau_tail_chain(pair: MarkovPair, gamma: int) -> np.ndarray:
    """``P(τ ≥ k | start state)`` for k = 0..γ as a (γ+1, S) array: ``(A^k 1)[s]``."""
    gamma = _check_gamma(gamma)
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
    _check_pair_obj(pair)
    if start_state is not None:
        start_state = check_state(start_state, pair.n_states)
    tails = tau_tail_chain(pair, gamma)
    e = tails.sum(axis=0)  # k = 0 term is the "+1" (P(τ ≥ 0) = 1)
    return e if start_state is None else float(e[start_state])


def iteration_kernel(pair: MarkovPair, gamma: int) -> np.ndarray:
    """K[s, s']: probability that an iteration starting in state s ends in state s'.

    K = Σ_{k<γ} A^k diag(1 − β) R + A^γ P, with R[s,s'] the residual's and P[s,s'] the
    target's token-to-state matrices.
    """
    _check_pair_obj(pair)
    gamma = _check_gamma(gamma)
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
    _check_pair_obj(pair)
    start_state = check_state(start_state, pair.n_states)
    nu = stationary_distribution(iteration_kernel(pair, gamma), start=start_state)
    return float(nu @ expected_tokens_chain(pair, gamma))


def stationary_acceptance(pair: MarkovPair, start_state: int = 0) -> float:
    """α = E_π[β(s)] under the target's stationary state distribution (seen from
    ``start_state`` if the target chain is reducible)."""
    _check_pair_obj(pair)
    start_state = check_state(start_state, pair.n_states)
    pi = stationary_distribution(pair.target.transition_matrix(), start=start_state)
    return float(pi @ pair.acceptance_by_state())
