"""One SpecBranch branch point on explicit distributions (Shen et al., ICLR 2026), for real model
outputs: fork the branch tokens from the draft's distribution and choose the survivor against
the target's distribution at the branch point, with any :class:`~spectheory.rules.sb.BranchRule`.

``p`` is the target's next-token distribution at the branch point (from the verification
call that checks the block before it), ``q`` the draft's. The K-SEQ rule uses the
multi-draft family's closed forms (ρ, residual).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_int, check_type
from ..closed_forms import multidraft as cf_md
from ..distributions import DistributionError, check_pair, residual
from ..rng import check_random_state, sample_index
from ..rules import sb as R


@dataclass(frozen=True)
class BranchVerdict:
    """The token emitted at the branch point; ``branch`` is the surviving branch's index in
    the branch tokens, or −1 when no branch survived (``token`` is then the correction)."""

    token: int
    branch: int

    @property
    def survived(self) -> bool:
        return self.branch >= 0


def _rows(p, q):
    p, q = check_pair(p, q, names=("p (target)", "q (draft)"))
    if p.ndim != 1:
        raise DistributionError(f"p and q must be 1-D distributions over the vocabulary, got shape {p.shape}")
    return p, q


def _rule(rule):
    return check_type(rule, R.BranchRule, "rule", " (spectheory.rules.sb)")


def n_branches(q, k_max: int, rule: R.BranchRule = R.SEED_MATCH) -> int:
    """``k = max(1, ⌊k_max (1 − max q)⌋)``, capped at q's support for rules needing distinct tokens."""
    q = _rows(q, q)[1]
    _rule(rule)
    k = R.n_branches(float(q.max()), k_max)
    if rule.tokens in ("topk", "sample_wor"):
        k = min(k, int(np.count_nonzero(q)))
    return int(k)


def fork_branches(q, k: int, *, rule: R.BranchRule = R.SEED_MATCH, seed=None) -> np.ndarray:
    """The k branch tokens of ``rule`` from the draft distribution q (top-k; k draws without
    replacement, in draw order; or k i.i.d. draws)."""
    q = _rows(q, q)[1]
    _rule(rule)
    k = check_int(k, "k (branches)", min=1)
    if rule.tokens in ("topk", "sample_wor") and k > np.count_nonzero(q):
        raise ValueError(f"k = {k} distinct branch tokens need at least k tokens with q > 0 "
                         f"(q has {np.count_nonzero(q)})")
    if rule.tokens == "topk":
        return np.argsort(-q, kind="stable")[:k].astype(np.int64)
    rng = check_random_state(seed)
    if rule.tokens == "iid":
        return rng.choice(q.shape[0], size=k, p=q).astype(np.int64)
    return rng.choice(q.shape[0], size=k, replace=False, p=q).astype(np.int64)


def branch_verify(p, q, branch_tokens, *, rule: R.BranchRule = R.SEED_MATCH, seed=None) -> BranchVerdict:
    """Choose the survivor among ``branch_tokens`` (1-D int ids, in fork order) against the
    target's p at the branch point, as ``rule`` does (:mod:`spectheory.rules.sb`)."""
    p, q = _rows(p, q)
    _rule(rule)
    B = np.asarray(branch_tokens)
    if B.ndim != 1 or B.size == 0 or not np.issubdtype(B.dtype, np.integer):
        raise DistributionError("branch_tokens must be a non-empty 1-D array of integer token ids")
    V = p.shape[0]
    if B.min() < 0 or B.max() >= V:
        raise DistributionError(f"branch token ids must lie in [0, {V}), got {B.min()}..{B.max()}")
    if rule.tokens in ("topk", "sample_wor") and np.unique(B).size != B.size:
        raise DistributionError(f"rule {rule.name!r} forks distinct branch tokens; got repeats {B.tolist()}")
    if (q[B] <= 0).any():
        raise DistributionError("a branch token has q = 0: the draft cannot have proposed it")
    B = [int(x) for x in B]
    rng = check_random_state(seed)
    if rule.verify == "first":
        return BranchVerdict(B[0], 0)
    if rule.verify == "match":
        y = sample_index(rng, p)
        return BranchVerdict(y, B.index(y) if y in B else -1)
    if rule.verify == "best_p":
        b = int(np.argmax(p[B]))
        y = B[b]
        if rng.random() < min(1.0, p[y] / q[y]):
            return BranchVerdict(y, b)
        r = residual(p, q)
        return BranchVerdict(int(np.argmax(r)) if rule.residual == "argmax" else sample_index(rng, r), -1)
    if rule.verify == "kseq":
        rho = cf_md.kseq_rho(p, q, len(B))
        for i, y in enumerate(B):
            if rng.random() < min(1.0, p[y] / (rho * q[y])):
                return BranchVerdict(y, i)
        return BranchVerdict(sample_index(rng, cf_md.kseq_residual(p, q, rho)), -1)
    # recursive rejection (without replacement unless the branches are i.i.d.)
    pc = p.copy()
    removed = np.zeros(V, dtype=bool)
    for i, y in enumerate(B):
        qi = q if rule.tokens == "iid" else np.where(removed, 0.0, q) / q[~removed].sum()
        a = min(1.0, pc[y] / qi[y]) if qi[y] > 0 else float(pc[y] > 0)
        if rng.random() < a:
            return BranchVerdict(y, i)
        d = np.maximum(pc - qi, 0.0)
        if d.sum() > 0:
            pc = d / d.sum()
        removed[y] = True
    return BranchVerdict(int(np.argmax(pc)) if rule.residual == "argmax" else sample_index(rng, pc), -1)
