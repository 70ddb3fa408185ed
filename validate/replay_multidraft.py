"""Replay of the multi-draft family's block quantities on a :class:`~validate.capture.LogitTrace`.

For each start t and the trace's own token path ``x^γ = tokens[t:t+γ]`` (the path is the
context of every position, as in :mod:`validate.replay`):

* joints ``p(x^i)``, ``q(x^i)``, ``A(x^i) = p(x^i)[1 − (1 − m(x^i))^K]`` (Lemma A.1) and
  GBV's / SpecTr-GBV's sub-block acceptance ``h(x^i)`` (Eq. 2/3), for K = 1 (GBV) and K;
* per position, the γ = 1 quantities for K drafts: the true optimum
  ``min_H p(H) + 1 − q(H)^K`` (:func:`spectheory.closed_forms.optimum.gamma1_optimum_fast`,
  O(V log V)), Lemma 5.1's bound ``Σ_x A(x)`` and K-SEQ's acceptance ``ρβ(ρ)``.

The path contribution ``Σ_i A(x^i)`` is not E[τ] (that sums over all blocks, which a trace
does not have); it is reported as the trace's sample of the block quantities only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spectheory.checks import check_int
from spectheory.closed_forms import multidraft as cf
from spectheory.closed_forms.optimum import gamma1_optimum_fast
from spectheory.verifiers.multidraft import block_h

from .capture import LogitTrace


@dataclass(frozen=True, eq=False)
class MultiDraftReplay:
    """h_gbv, h_sgbv, A_gbv, A_sgbv: (T−γ+1, γ) block quantities along the path;
    opt1, bound1, kseq1: (T,) γ = 1 optimum, Lemma 5.1 bound and K-SEQ acceptance for K drafts."""

    name: str
    gamma: int
    K: int
    h_gbv: np.ndarray
    h_sgbv: np.ndarray
    A_gbv: np.ndarray
    A_sgbv: np.ndarray
    opt1: np.ndarray
    bound1: np.ndarray
    kseq1: np.ndarray

    def summary(self) -> dict:
        return {"name": self.name, "gamma": self.gamma, "K": self.K,
                "mean_h_gbv": self.h_gbv.mean(axis=0).tolist(), "mean_h_spectr_gbv": self.h_sgbv.mean(axis=0).tolist(),
                "mean_path_A_gbv": float(self.A_gbv.sum(axis=1).mean()),
                "mean_path_A_spectr_gbv": float(self.A_sgbv.sum(axis=1).mean()),
                "gamma1_optimum": float(self.opt1.mean()), "gamma1_bound": float(self.bound1.mean()),
                "gamma1_kseq": float(self.kseq1.mean()),
                "gamma1_gap_optimum_minus_bound": float((self.opt1 - self.bound1).mean())}


def replay_multidraft(trace: LogitTrace, gamma: int, K: int, *, temperature: float | None = None) -> MultiDraftReplay:
    gamma = check_int(gamma, "gamma", min=1)
    K = check_int(K, "K", min=1)
    p, q = trace.probs(temperature)
    T = p.shape[0]
    if gamma >= T:
        raise ValueError(f"γ = {gamma} needs a trace longer than γ + 1 positions (T = {T})")
    toks = trace.tokens
    n = T - gamma
    hg, hs, ag, as_ = (np.empty((n, gamma)) for _ in range(4))
    for t in range(n):
        pp = p[t:t + gamma + 1][None]
        qq = q[t:t + gamma][None]
        x = toks[t:t + gamma][None]
        for K_, h_out, a_out in ((1, hg, ag), (K, hs, as_)):
            h, P, Q = block_h(pp, qq, x, K_)
            h_out[t] = h[0]
            a_out[t] = cf.A(P[0, 1:], Q[0, 1:], K_)
    opt1 = np.array([gamma1_optimum_fast(p[t], q[t], K) for t in range(T)])
    bound1 = np.array([cf.A(p[t], q[t], K).sum() for t in range(T)])
    kseq1 = np.array([cf.kseq_acceptance(p[t], q[t], K) for t in range(T)])
    return MultiDraftReplay(trace.name, gamma, K, hg, hs, ag, as_, opt1, bound1, kseq1)
