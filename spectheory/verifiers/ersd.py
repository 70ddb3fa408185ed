"""One batch verification of GSD or ERSD on explicit distributions (Kobus & Gündüz; real logits).

``ersd_verify`` draws the exponential race itself (the draft's k first arrivals are the drafted
alternatives; Alg. 2 / Alg. 5 at one vertex). ``gsd_verify`` takes alternatives the caller drew
from q without replacement and runs recursive rejection (Alg. 4 at one vertex).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_int, check_type
from ..distributions import DistributionError, check_pair
from ..rng import check_random_state
from ..rules.ersd import ERSD, GSD, ERSDRule, GSDRule


@dataclass(frozen=True)
class BatchVerdict:
    """drafts: the drafted alternatives in order; index: 1-based position of the accepted one
    (None if none accepted); token: the emitted token (always distributed as p)."""

    drafts: tuple
    index: int | None
    token: int


def ersd_verify(p, q, k: int = 1, *, seed=None, rule: ERSDRule = ERSD) -> BatchVerdict:
    """Draft the k first arrivals of an exponential race under q; emit the target race's winner
    X_p = argmin E/p; accepted iff X_p is among the drafts (shared exponentials; ``rule.shared``
    False draws the draft race independently)."""
    p, q = check_pair(np.asarray(p), np.asarray(q), names=("p (target)", "q (draft)"))
    if p.ndim != 1:
        raise DistributionError("p and q must be 1-D distributions over the vocabulary")
    k = check_int(k, "k", min=1)
    check_type(rule, ERSDRule, "rule", " (spectheory.rules.ersd)")
    rng = check_random_state(seed)
    E = rng.exponential(size=p.shape[0])
    E2 = E if rule.shared else rng.exponential(size=p.shape[0])
    with np.errstate(divide="ignore"):
        tq = np.where(q > 0, E2 / np.where(q > 0, q, 1.0), np.inf)
        tp = np.where(p > 0, E / np.where(p > 0, p, 1.0), np.inf)
    order = np.argsort(tq, kind="stable")[:min(k, int(np.count_nonzero(q)))]
    x = int(np.argmin(tp))
    hit = np.flatnonzero(order == x)
    drafts = tuple(int(t) for t in order)
    if hit.size:
        return BatchVerdict(drafts, int(hit[0]) + 1, x)
    if rule.on_reject == "resample":
        return BatchVerdict(drafts, None, int(rng.choice(p.shape[0], p=p)))
    return BatchVerdict(drafts, None, x)


def gsd_verify(p, q, drafts, *, seed=None, rule: GSDRule = GSD) -> BatchVerdict:
    """Recursive rejection of ``drafts`` (distinct tokens drawn from q without replacement, in
    draw order): alternative i accepted w.p. min(1, r_i(x_i)/q_i(x_i)); on rejection
    r ← norm(max(r − q_i, 0)) and x_i leaves q_i; all rejected → emit a draw from r."""
    p, q = check_pair(np.asarray(p), np.asarray(q), names=("p (target)", "q (draft)"))
    if p.ndim != 1:
        raise DistributionError("p and q must be 1-D distributions over the vocabulary")
    check_type(rule, GSDRule, "rule", " (spectheory.rules.ersd)")
    x = np.asarray(drafts)
    if x.ndim != 1 or (x.size and not np.issubdtype(x.dtype, np.integer)):
        raise DistributionError("drafts must be a 1-D array of integer token ids")
    V = p.shape[0]
    if x.size and (x.min() < 0 or x.max() >= V):
        raise DistributionError(f"draft token ids must lie in [0, {V})")
    if len(set(x.tolist())) != x.size:
        raise DistributionError("drafts must be distinct (drawn without replacement)")
    if x.size and np.any(q[x] <= 0):
        raise DistributionError("a draft token has q = 0: it cannot have been drafted from q")
    rng = check_random_state(seed)
    drafts_t = tuple(int(t) for t in x)
    if rule.accept == "always_first" and x.size:
        return BatchVerdict(drafts_t, 1, drafts_t[0])
    r = p.copy()
    qi = q.copy()
    for i, t in enumerate(drafts_t):
        if rule.q_update == "without_replacement":
            qi = qi / qi.sum()
        if rng.random() * qi[t] < r[t]:
            return BatchVerdict(drafts_t, i + 1, t)
        res = np.maximum(r - qi, 0.0)
        if res.sum() > 0:
            r = res / res.sum()
        if rule.q_update == "without_replacement":
            qi = qi.copy()
            qi[t] = 0.0
    return BatchVerdict(drafts_t, None, int(rng.choice(V, p=r)))
