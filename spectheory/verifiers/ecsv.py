"""One ECSV step on explicit distributions: fuse B drafted branches, then verify the fused
draft against the verifier (for real model outputs; checked input).

Source: "Error-Correcting Speculative Decoding via Branch Voting" (ECSV), anonymous
manuscript under revision, 2026. ``p`` target (verifier), ``q`` draft, ``B`` branches.

The caller gives the branches' tokens ``tokens`` (B, d), the drafter rows each token was
drawn from ``q`` (B, d, V) (branch b's row after its own prefix), and the verifier as ``p``:
a mapping or a callable from a prefix (a tuple of token ids after the context) to the
verifier's next-token row. The verifier is asked only for the rows ECSV would compute:
the spot-checked positions (along the first-pass fused prefix) and the fused draft's
positions up to the first mismatch (plus the bonus row). Budget: the caller chooses d with
the equal-budget rule (:meth:`spectheory.rules.ecsv.Method.plan`); here ``min(R, d)`` spot
checks are spent.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_type
from ..distributions import DistributionError, check_distribution
from ..rng import check_random_state
from ..rules.ecsv import ECSV_LITE, LOG_FLOOR, Method

TIE_TOL = 1e-9


@dataclass(frozen=True)
class Fused:
    """The fused draft, the spot-checked positions and the average rows q̄ (d, V)."""

    tokens: tuple
    spot: tuple
    qbar: np.ndarray
    first_pass: tuple


@dataclass(frozen=True)
class StepVerdict:
    """``tau`` fused tokens accepted, then the verifier's token: ``emitted`` (τ + 1 tokens).
    ``positions_parallel``: verifier positions if one forward scores the whole draft
    (spot checks + d + 1); ``positions_sequential``: up to the first mismatch (spot checks +
    τ + 1)."""

    fused: Fused
    tau: int
    emitted: tuple
    positions_parallel: int
    positions_sequential: int


def _row(p, prefix: tuple, V: int) -> np.ndarray:
    try:
        row = p(prefix) if callable(p) else p[prefix]
    except KeyError:
        raise DistributionError(f"p gives no verifier row for the prefix {prefix!r}") from None
    row = check_distribution(np.asarray(row, dtype=np.float64), name=f"p{prefix!r}")
    if row.shape != (V,):
        raise DistributionError(f"p{prefix!r} must be a row of length V = {V}, got shape {row.shape}")
    return row


def _check(tokens, q, method):
    check_type(method, Method, "method", " (spectheory.rules.ecsv)")
    if method.kind != "fusion":
        raise ValueError(f"method {method.name!r} is a {method.kind!r} method; ecsv_step fuses branches "
                         "(kind 'fusion': Vote-unif, ECSV-lite, ECSV-spot, ECSV-soft)")
    q = check_distribution(np.asarray(q, dtype=np.float64), name="q (draft)")
    x = np.asarray(tokens)
    if x.ndim != 2 or x.size == 0 or not np.issubdtype(x.dtype, np.integer):
        raise DistributionError("tokens must be a non-empty (B, d) array of integer token ids")
    B, d = x.shape
    if q.shape[:2] != (B, d) or q.ndim != 3:
        raise DistributionError(f"q must have shape (B, d, V) = ({B}, {d}, V) for {B} branches of depth {d}, "
                                f"got {q.shape}")
    V = q.shape[-1]
    if x.min() < 0 or x.max() >= V:
        raise DistributionError(f"token ids must lie in [0, {V})")
    if (np.take_along_axis(q, x[..., None], axis=-1) <= 0).any():
        raise DistributionError("a branch token has q = 0 under its own row: it cannot have been drafted")
    return x.astype(np.int64), q


def _keep_max(tied, key):
    kk = np.where(tied, key, -np.inf)
    km = kk.max()
    return tied & (key >= km - TIE_TOL * max(1.0, abs(km)))


def _fuse_once(m, x, q, qbar, w, spot_rows):
    B, d, V = q.shape
    out = []
    for j in range(d):
        score = np.zeros(V)
        cand = np.zeros(V, dtype=bool)
        for b in range(B):
            score[x[b, j]] += w[b, j]
            cand[x[b, j]] = True
        if m.lam > 0:
            score = score + m.lam * (w[:, j, None] * q[:, j]).sum(axis=0)
        cand[np.argsort(-qbar[j], kind="stable")[:m.top_m]] = True
        tied = _keep_max(cand, score)
        if m.ties == "verifier" and j in spot_rows:
            tied = _keep_max(tied, spot_rows[j])
        if m.ties != "none":
            tied = _keep_max(tied, qbar[j])
        out.append(int(np.flatnonzero(tied)[0]))
    return out


def _weights(m, r):
    if m.weights == "uniform":
        return np.ones_like(r)
    if m.scope == "branch":
        z = m.gamma * r.mean(axis=1)
        return np.repeat(np.exp(z - z.max())[:, None], r.shape[1], axis=1)
    z = m.gamma * r
    return np.exp(z - z.max(axis=0, keepdims=True))


def fuse(tokens, q, p=None, *, method: Method = ECSV_LITE) -> Fused:
    """Fuse the branches with ``method`` (reliability signals, weights, hard/soft vote,
    tie-breaks); ``p`` (verifier rows by prefix) is needed only for spot checks."""
    x, q = _check(tokens, q, method)
    m = method
    B, d, V = q.shape
    qbar = q.mean(axis=0)
    with np.errstate(divide="ignore"):
        logq = np.maximum(np.log(q), LOG_FLOOR)
        ent = -np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0).sum(axis=-1)
    r = np.zeros((B, d))
    if m.weights == "reliability":
        same = (x[:, None, :] == x[None, :, :]).sum(axis=1) - 1
        agr = same / (B - 1) if B > 1 else np.zeros((B, d))
        r = m.alpha[0] * (-ent) + m.alpha[1] * agr + m.alpha[2] * np.take_along_axis(logq, x[..., None], -1)[..., 0]
    first = _fuse_once(m, x, q, qbar, _weights(m, r), {})
    n_spot = min(m.R, d)
    if n_spot == 0:
        return Fused(tuple(first), (), qbar, tuple(first))
    if p is None:
        raise ValueError(f"{m.name} spends {n_spot} spot check(s): give the verifier rows p")
    D = [1.0 - max(int((x[:, j] == t).sum()) for t in x[:, j]) / B for j in range(d)]
    H = [sum(float(ent[b, j]) for b in range(B)) / B for j in range(d)]
    key = {"disagreement": lambda j: (-D[j], -H[j], j), "entropy": lambda j: (-H[j], -D[j], j),
           "least": lambda j: (D[j], H[j], j)}[m.spot_select]
    spot = sorted(sorted(range(d), key=key)[:n_spot])
    rows = {j: _row(p, tuple(first[:j]), V) for j in spot}
    r2 = r.copy()
    if m.weights == "reliability":
        for j in spot:
            row = rows[j]
            with np.errstate(divide="ignore"):
                lp = np.maximum(np.log(row), LOG_FLOOR)
            second = np.sort(row)[-2] if V > 1 else 0.0
            ls = max(np.log(second), LOG_FLOOR) if second > 0 else LOG_FLOOR
            r2[:, j] += m.alpha[3] * (lp[x[:, j]] - ls)
    fused = _fuse_once(m, x, q, qbar, _weights(m, r2), rows)
    return Fused(tuple(fused), tuple(spot), qbar, tuple(first))


def ecsv_step(tokens, q, p, *, method: Method = ECSV_LITE, seed=None) -> StepVerdict:
    """Fuse, then verify the fused draft: ``method.verify`` ``"match"`` (the verifier's
    sample must equal the fused token), ``"greedy"`` (its argmax must) or ``"rs"`` (accept
    with ``min(1, p/q̄)``, correction from ``norm(max(p − q̄, 0))``). The exact-proposal
    reading needs the fused token's law, which one step cannot know: use
    :mod:`spectheory.exact.ecsv` on a model of the drafter."""
    x, q = _check(tokens, q, method)
    m = method
    if m.verify == "rs_exact":
        raise ValueError("the exact-proposal reading ('rs_exact') needs the fused token's proposal law, "
                         "which one step cannot compute; use spectheory.exact.ecsv")
    rng = check_random_state(seed)
    V = q.shape[-1]
    f = fuse(x, q, p, method=m)
    d = len(f.tokens)
    prefix: tuple = ()
    for j in range(d):
        row = _row(p, prefix, V)
        t = f.tokens[j]
        if m.verify == "greedy":
            y = int(np.argmax(row))
            ok = y == t
        elif m.verify == "match":
            y = int(rng.choice(V, p=row))
            ok = y == t
        else:
            qt = f.qbar[j, t]
            a = (1.0 if row[t] > 0 else 0.0) if qt <= 0 else min(1.0, row[t] / qt)
            ok = rng.random() < a
            if not ok:
                res = np.maximum(row - f.qbar[j], 0.0) if m.residual == "correct" else row
                res = res / res.sum() if res.sum() > 0 else row
                y = int(rng.choice(V, p=res))
        if ok:
            prefix += (t,)
            continue
        y = t if m.on_mismatch == "draft" else y
        n_spot = len(f.spot)
        return StepVerdict(f, j, prefix + (y,), n_spot + d + 1, n_spot + j + 1)
    row = _row(p, prefix, V)
    y = int(np.argmax(row)) if m.verify == "greedy" else int(rng.choice(V, p=row))
    return StepVerdict(f, d, prefix + (y,), len(f.spot) + d + 1, len(f.spot) + d + 1)
