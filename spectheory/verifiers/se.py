"""One Speculative Ensemble verification on explicit distributions (Fu et al., ICML 2025,
Sec. 3.2 Eq. 6), for real model outputs.

The caller gives every member's next-token distributions at the proposed positions
(``members``: (n, γ, V), member order as in the ensemble, e.g. ``(q, p)``), which member
proposed the tokens, the tokens, and the ensemble function. Each token is accepted with
probability ``min(1, r(x)/p_k(x))``, r = E(members) at that position; the first rejection
is resampled from ``norm(max(r − p_k, 0))`` and ends the call. No bonus token is appended
(the verifier's bonus is not drawn from r; Alg. 1 turns it into the next proposal instead).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_int, check_type
from ..distributions import DistributionError, check_distribution
from ..ensembles import Ensemble
from ..rng import check_random_state
from ..rules.se import STANDARD, SERule, other_member


@dataclass(frozen=True)
class EnsembleVerdict:
    """``tau`` accepted proposals, then the emitted tokens (accepted prefix + correction if any)."""

    tau: int
    tokens: tuple
    alpha: tuple  # per position, P(accept) = Σ min(p_k, r) (Eq. 7)


def ensemble_verify(members, proposer: int, tokens, ensemble: Ensemble, *, seed=None,
                    rule: SERule = STANDARD) -> EnsembleVerdict:
    """Verify ``tokens`` (length γ) proposed by member ``proposer`` against the ensemble.

    Raises :class:`DistributionError` for invalid distributions, shapes that do not match,
    token ids outside the vocabulary or a token the proposer gives zero mass.
    """
    check_type(ensemble, Ensemble, "ensemble", " (wrap a function with Ensemble.from_function)")
    check_type(rule, SERule, "rule", " (spectheory.rules.se)")
    m = check_distribution(np.asarray(members, dtype=np.float64), name="member distributions")
    if m.ndim != 3:
        raise DistributionError(f"members must have shape (n, γ, V), got {m.shape}")
    n, gamma, V = m.shape
    if n < 2:
        raise DistributionError(f"members must stack ≥ 2 member distributions (n, γ, V), got n = {n}")
    check_int(gamma, "γ (number of proposed tokens)", min=1)
    k = check_int(proposer, "proposer", min=0, max=n - 1)
    x = np.asarray(tokens)
    if x.ndim != 1 or (x.size and not np.issubdtype(x.dtype, np.integer)):
        raise DistributionError("tokens must be a 1-D array of integer token ids")
    if x.shape[0] != gamma:
        raise DistributionError(f"{x.shape[0]} tokens but distributions for {gamma} positions")
    if gamma and (x.min() < 0 or x.max() >= V):
        raise DistributionError(f"token ids must lie in [0, {V})")
    if gamma and (m[k, np.arange(gamma), x] <= 0).any():
        i = int(np.flatnonzero(m[k, np.arange(gamma), x] <= 0)[0])
        raise DistributionError(f"token {int(x[i])} at position {i} has zero mass under the proposer")
    r = ensemble(m)
    o = m[other_member(k, n)]
    rng = check_random_state(seed)
    alpha = tuple(float(np.minimum(m[k, i], r[i]).sum()) for i in range(gamma))
    for i in range(gamma):
        a = rule.accept_probability(r[i], m[k, i], o[i])[x[i]]
        if not rng.random() < a:
            if rule.residual == "drop":
                return EnsembleVerdict(i, tuple(int(t) for t in x[:i]), alpha)
            y = int(rng.choice(V, p=rule.residual_distribution(r[i], m[k, i], o[i])))
            return EnsembleVerdict(i, tuple(int(t) for t in x[:i]) + (y,), alpha)
    return EnsembleVerdict(gamma, tuple(int(t) for t in x), alpha)
