"""One SpecTr-GBV verification (Lin et al. 2026, Alg. 1 with Eq. 2-4) on explicit distributions,
for real model outputs.

The caller supplies, for each of the K drafts ``drafts[k] = x_k^γ``, the target's
next-token distributions after every prefix of it, ``p[k, i] = p(· | x_k^i)`` for i = 0..γ,
and the draft's ``q[k, i] = q(· | x_k^i)`` for i = 0..γ−1. Joint block probabilities are
products along each draft's path; Eq. 2 needs, at each sub-block, the sum over its one-token
extensions, which these rows give in O(V) (the "selection step"). Alg. 2's modification for
the next iteration needs the models' rows after (t, y, …), i.e. new forward passes: it is
not part of this call (see docs/multidraft.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace as dataclass_replace

import numpy as np

from ..checks import check_int, check_type
from ..closed_forms import multidraft as cf
from ..distributions import DistributionError, check_distribution
from ..rng import check_random_state
from ..rules.multidraft import SPECTR_GBV, MultiDraftRule


@dataclass(frozen=True)
class BlockVerdict:
    """``tau`` accepted tokens ``tokens[:tau]`` (from draft ``draft``, −1 if τ = 0), then the
    correction/bonus ``tokens[tau]``; ``h``: (K, γ) acceptance probabilities used."""

    tau: int
    draft: int
    tokens: tuple
    h: np.ndarray


def block_h(p, q, drafts, K: int, rule: MultiDraftRule = SPECTR_GBV) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(h, P, Q): Eq. 2/3 acceptance of every sub-block x_k^i (shape (K', γ)) and the joints
    p(x_k^i), q(x_k^i) (shape (K', γ+1)); K is the number of drafts in the formulas."""
    p, q, drafts = _check_block(p, q, drafts, rule, drafted=False)
    K = check_int(K, "K", min=1)
    Kd, g1, V = p.shape
    g = g1 - 1
    e = rule.exponent(K)
    idx = np.arange(Kd)
    P = np.ones((Kd, g + 1))
    Q = np.ones((Kd, g + 1))
    for i in range(g):
        P[:, i + 1] = P[:, i] * p[idx, i, drafts[:, i]]
        Q[:, i + 1] = Q[:, i] * q[idx, i, drafts[:, i]]
    h = np.empty((Kd, g))
    for i in range(1, g + 1):
        # the rule's h_form, as cf.h_tables reads it ("one": the broken accept-all; "sec3.3": the
        # printed single-draft formula); before, this entry ignored it and always used Eq. 2/3
        if rule.h_form == "one":
            h[:, i - 1] = 1.0
            continue
        if rule.h_form == "sec3.3":
            if i == g:
                with np.errstate(divide="ignore", invalid="ignore"):
                    h[:, i - 1] = np.clip(np.where(Q[:, i] > 0, P[:, i] / np.where(Q[:, i] > 0, Q[:, i], 1.0), 0.0),
                                          0.0, 1.0)
                continue
            Pc, Qc = P[:, i, None] * p[:, i], Q[:, i, None] * q[:, i]
            h[:, i - 1] = cf._ratio(np.maximum(Pc - Qc, 0.0).sum(axis=1), np.maximum(Qc - Pc, 0.0).sum(axis=1))
            continue
        if i == g:
            h[:, i - 1] = cf._ratio(cf.A(P[:, i], Q[:, i], e), cf.has_prob(Q[:, i], K))
            continue
        Wc = cf.W(P[:, i, None] * p[:, i], Q[:, i, None] * q[:, i], e).sum(axis=1)
        h[:, i - 1] = cf._ratio(Wc - cf.W(P[:, i], Q[:, i], e), cf.has_prob(Q[:, i], K) - P[:, i] + Wc)
    return h, P, Q


def _check_block(p, q, drafts, rule, *, drafted: bool = True):
    """Validated (p, q, drafts) of one multi-draft verification (see :func:`spectr_gbv_verify`)."""
    check_type(rule, MultiDraftRule, "rule", " (spectheory.rules.multidraft)")
    if rule.algorithm != "spectr_gbv":
        raise ValueError(f"rule {rule.name!r} is a {rule.algorithm!r} rule; spectr_gbv_verify runs SpecTr-GBV")
    p = check_distribution(np.asarray(p, dtype=np.float64), name="p (target)")
    q = check_distribution(np.asarray(q, dtype=np.float64), name="q (draft)")
    x = np.asarray(drafts)
    if x.ndim != 2 or not np.issubdtype(x.dtype, np.integer):
        raise DistributionError("drafts must be a (K, γ) array of integer token ids")
    K, g = x.shape
    check_int(K, "K (number of drafts)", min=1)
    check_int(g, "γ (draft length)", min=1)
    if p.shape != (K, g + 1, q.shape[-1]) or q.shape != (K, g, p.shape[-1]):
        raise DistributionError(f"for {K} drafts of length {g}: p must be (K, γ+1, V) and q (K, γ, V); "
                                f"got p {p.shape}, q {q.shape}")
    V = p.shape[-1]
    if x.min() < 0 or x.max() >= V:
        raise DistributionError(f"token ids must lie in [0, {V})")
    if drafted and (q[np.arange(K)[:, None], np.arange(g)[None, :], x] <= 0).any():
        raise DistributionError("a drafted token has q = 0: it cannot have been drafted from q")
    return p, q, x.astype(np.int64)


def spectr_gbv_verify(p, q, drafts, *, seed=None, rule: MultiDraftRule = SPECTR_GBV) -> BlockVerdict:
    """Alg. 1 on K drafts. p: (K, γ+1, V); q: (K, γ, V); drafts: (K, γ) int token ids."""
    p, q, x = _check_block(p, q, drafts, rule)
    K, g = x.shape
    V = p.shape[-1]
    rng = check_random_state(seed)
    h, P, Q = block_h(p, q, x, K, rule)
    tau, f = 0, -1
    H: set = set()
    for k in range(K):
        for i in range(tau + 1, g + 1):
            key = tuple(int(t) for t in x[k, :i])
            eta = rng.random()
            if (key not in H or rule.h_in_H == "ignore_H") and eta < h[k, i - 1]:
                tau, f = i, k
            else:
                H.add(key)
        if tau == g:
            break
    if tau == g:
        dist = p[f, g]
    else:
        kk = max(f, 0)
        if rule.residual == "p":
            dist = p[kk, tau]
        else:
            w = cf.W(P[kk, tau] * p[kk, tau], Q[kk, tau] * q[kk, tau], rule.exponent(K))
            dist = w / w.sum() if w.sum() > 0 else p[kk, tau]
    y = int(rng.choice(V, p=dist / dist.sum()))
    head = tuple(int(t) for t in x[f, :tau]) if tau else ()
    return BlockVerdict(tau, f, head + (y,), h)


def kseq_verify(p, q, drafts, *, seed=None, rule: MultiDraftRule = None) -> BlockVerdict:
    """One K-SEQ iteration (SpecTr, Sun et al. 2023, as summarised in Lin et al. 2026, Sec. 3.2) on K drafts.

    p: (K, γ+1, V) target rows along each draft, q: (K, γ, V) draft rows, drafts: (K, γ) ids, as
    for :func:`spectr_gbv_verify`. Depth by depth, the drafts still alive (all K at depth 0) share
    one context, so one (p, q) pair; ρ solves ``1 − (1 − β(ρ))^n = ρβ(ρ)`` for the n alive (or the
    initial K, ``rule.rho_k == "initial"``; 1 for ``rule.rho == "one"``); their tokens are tried in
    draft order, each accepted with probability min(1, p(x)/(ρ q(x))), the first accepted wins and
    the drafts carrying it stay alive. No acceptance: a correction from norm(max(p − ρq, 0))
    (``rule.residual == "p"``: from p) ends the iteration; all γ depths accepted: a bonus from
    the target's next row. ``h[k, i]``: the acceptance probability of draft k's token at depth i
    when it was tried (NaN if not tried). The same law as :func:`spectheory.exact.multidraft.kseq_outcomes`
    (tested)."""
    from ..rules.multidraft import KSEQ
    rule = KSEQ if rule is None else rule
    check_type(rule, MultiDraftRule, "rule", " (spectheory.rules.multidraft)")
    if rule.algorithm != "kseq":
        raise ValueError(f"rule {rule.name!r} is a {rule.algorithm!r} rule; kseq_verify runs K-SEQ")
    p, q, x = _check_block(p, q, drafts, dataclass_replace(rule, algorithm="spectr_gbv"))
    K, g = x.shape
    V = p.shape[-1]
    rng = check_random_state(seed)
    h = np.full((K, g), np.nan)
    alive = list(range(K))
    for i in range(g):
        k0 = alive[0]
        pi, qi = p[k0, i], q[k0, i]
        rho = 1.0 if rule.rho == "one" else cf.kseq_rho(pi, qi, K if rule.rho_k == "initial" else len(alive))
        won = None
        for k in alive:
            t = x[k, i]
            h[k, i] = min(1.0, pi[t] / (rho * qi[t])) if qi[t] > 0 else 0.0
            if rng.random() < h[k, i]:
                won = t
                break
        if won is None:
            res = pi if rule.residual == "p" else cf.kseq_residual(pi, qi, rho)
            y = int(rng.choice(V, p=res / res.sum()))
            head = tuple(int(t) for t in x[k0, :i])
            return BlockVerdict(i, k0 if i else -1, head + (y,), h)
        alive = [k for k in alive if x[k, i] == won]
    f = alive[0]
    y = int(rng.choice(V, p=p[f, g] / p[f, g].sum()))
    return BlockVerdict(g, f, tuple(int(t) for t in x[f]) + (y,), h)
