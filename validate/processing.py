"""The next-token distributions transformers samples from: temperature, top-k and top-p as its
``generate(do_sample=True, ...)`` applies them, so that the theory is evaluated on the processed
distributions p̃ and q̃ that real decoding uses (Leviathan et al. 2023, Sec. 3.4: speculative
sampling is lossless for any such transform applied to both models).

transformers (``GenerationMixin._get_logits_processor``) takes the logits in float32 and applies, in
this order: ``TemperatureLogitsWarper`` (scores / T, float32), ``TopKLogitsWarper`` (scores below
the k-th largest set to −inf: ties at the k-th value kept), ``TopPLogitsWarper``; then samples
from softmax(scores). ``TopPLogitsWarper`` sorts the scores ascending with ``torch.sort`` (not a
stable sort: tied scores come out in an order of its own), takes the float32 cumulative softmax
in that order and removes every token whose cumulative mass is ≤ 1 − top_p, keeping at least
``min_tokens_to_keep`` (1 in sampling) of the largest. In exact arithmetic a token is kept iff the
mass of the tokens before it in descending order is < top_p.

:func:`sampling_probs` reproduces that mask exactly and fast: per row, the candidates above the
m-th largest probability are ordered descending (m = 1024, 16384, … until their mass reaches top_p)
and the cut is taken in float64. Two things can make float64 and transformers' float32 disagree,
and both are detected: a **tie at the cut** (the last kept and the first removed token have equal
scores: which of the tied tokens survive is decided by torch's sort order), and a cumulative mass
within ``CUT_MARGIN`` of the threshold (float32 rounding decides). Such a row is processed by
transformers' own ``TopPLogitsWarper`` on its float32 scores, one row at a time as ``generate`` does
(``_assisted_decoding`` processes each position's row separately). Everything else is NumPy.

The distribution returned is the float64 softmax of the float32 scores transformers computes,
restricted to the kept tokens (transformers' own float32 softmax differs by rounding, ~1e-7).
Temperature 0 is greedy decoding: one-hot on the first argmax (``torch.argmax``'s choice).
"""
from __future__ import annotations

import numpy as np

from spectheory.checks import check_int, check_real
from spectheory.distributions import DistributionError

#: Distance of a cumulative mass from 1 − top_p within which float32 rounding could flip
#: transformers' decision (measured discrepancy of its float32 cumulative sums at the cut on
#: rows of V = 151,936: 1.2e-7; the margin is 80 times that).
CUT_MARGIN = 1e-5
#: ``min_tokens_to_keep`` of generate's warpers when sampling (2 or more only in beam search).
MIN_TOKENS_TO_KEEP = 1


def check_sampling(temperature, top_k=None, top_p=None) -> None:
    """The sampling setup shared by capture, real SD and replay: temperature finite and ≥ 0
    (0 = greedy), top_k an integer ≥ 1, top_p in (0, 1] (None: no filter)."""
    if isinstance(temperature, (bool, np.bool_)) or not isinstance(temperature, (int, float, np.number)) \
            or not (temperature >= 0 and np.isfinite(temperature)):
        raise ValueError(f"temperature must be finite and ≥ 0, got {temperature!r}")
    if top_k is not None:
        check_int(top_k, "top_k", min=1)
    if top_p is not None:
        check_real(top_p, "top_p", lo=0.0, hi=1.0, lo_open=True)


def processed_scores(logits, temperature: float = 1.0, top_k: int | None = None) -> np.ndarray:
    """float32 scores after transformers' temperature and top-k warpers (−inf where removed):
    ``logits.astype(float32) / float32(T)`` (bit for bit ``TemperatureLogitsWarper``), then every
    score below the k-th largest set to −inf (``TopKLogitsWarper``: ties at the k-th value kept)."""
    s = np.asarray(logits).astype(np.float32)
    if temperature != 1:
        s = s / np.float32(temperature)
    if top_k is not None and top_k < s.shape[-1]:
        kth = -np.partition(-s, int(top_k) - 1, axis=-1)[..., int(top_k) - 1:int(top_k)]
        s = np.where(s >= kth, s, np.float32(-np.inf))
    return s


def sampling_probs(logits, temperature: float = 1.0, *, top_k: int | None = None,
                   top_p: float | None = None) -> np.ndarray:
    """Sampling distribution(s) from logits, float64 rows of shape (..., V): what transformers'
    ``generate(do_sample=True, temperature=T, top_k=k, top_p=p)`` samples from (module docstring);
    temperature 0: one-hot on the first argmax (greedy). The same transform is applied to target and
    draft (the distributions speculative decoding verifies)."""
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim == 0 or z.shape[-1] == 0:
        raise DistributionError(f"logits must be a non-empty array over the vocabulary (..., V), got shape {z.shape}")
    if z.ndim == 1:
        return sampling_probs(z[None], temperature, top_k=top_k, top_p=top_p)[0]
    check_sampling(temperature, top_k, top_p)
    # a row's max is finite iff the row has no NaN, no +inf and is not entirely -inf
    zmax = z.max(axis=-1, keepdims=True)
    if not np.isfinite(zmax).all():
        if np.isnan(z).any() or np.isposinf(z).any():
            raise DistributionError("logits contain NaN or +inf")
        if np.isneginf(z).all(axis=-1).any():
            raise DistributionError("a row of logits is entirely -inf")
    if temperature == 0:
        out = np.zeros_like(z)
        np.put_along_axis(out, z.argmax(axis=-1)[..., None], 1.0, axis=-1)
        return out
    if temperature == 1 and top_k is None:
        # the float32 scores are the logits themselves when these came from a float32 or bfloat16
        # model (every such logit is a float32); softmax in place on one fresh array
        s = None
        p = z - zmax
    else:
        s = processed_scores(z, temperature, top_k)
        p = s.astype(np.float64)
        p -= p.max(axis=-1, keepdims=True)
    p = np.exp(p, out=p)
    p /= p.sum(axis=-1, keepdims=True)
    if top_p is not None and top_p < 1.0:
        if s is None:
            s = z.astype(np.float32)
        keep = np.empty(p.shape, dtype=bool)
        for r in np.ndindex(p.shape[:-1]):
            keep[r] = top_p_keep(s[r], p[r], top_p)
        p = np.where(keep, p, 0.0)
        p /= p.sum(axis=-1, keepdims=True)
    return p


def top_p_keep(scores: np.ndarray, p: np.ndarray, top_p: float,
               min_tokens_to_keep: int = MIN_TOKENS_TO_KEEP) -> np.ndarray:
    """The tokens transformers' ``TopPLogitsWarper(top_p, min_tokens_to_keep)`` keeps in one row
    of float32 ``scores`` (p: their float64 softmax): the fast float64 cut, or transformers' own
    warper where a tie or rounding decides (module docstring)."""
    cut = _fast_cut(scores, p, top_p, min_tokens_to_keep)
    if cut is None:
        return transformers_top_p_keep(scores, top_p, min_tokens_to_keep)
    return cut


def _fast_cut(scores, p, top_p, min_keep):
    """The kept mask from the descending order of the candidates, or None when the row is
    ambiguous (a tie at the cut, a cumulative mass within CUT_MARGIN of the threshold)."""
    V = p.shape[0]
    m = 1024
    while True:
        if m < V:
            thr = np.partition(p, V - m)[V - m]
            cand = np.flatnonzero(p >= thr) if thr > 0 else np.flatnonzero(p > 0)
        else:
            cand = np.flatnonzero(p > 0)
        order = cand[np.argsort(-p[cand], kind="stable")]
        ps = p[order]
        before = np.cumsum(ps) - ps          # mass strictly before each candidate (descending)
        total = before[-1] + ps[-1]
        covers = cand.size == np.count_nonzero(p > 0)
        if total >= top_p + CUT_MARGIN or covers:
            break
        m *= 16
    n_keep = max(int(np.count_nonzero(before < top_p)), int(min_keep))
    if n_keep > order.size:
        return None                           # min_tokens_to_keep reaches zero-probability tokens
    # the tokens after the candidates (if any) have at least `total` ≥ top_p + CUT_MARGIN before them
    near = before[n_keep - 1:n_keep + 1]
    if np.abs(near - top_p).min() <= CUT_MARGIN:
        return None                           # float32 rounding decides at the cut
    if n_keep < order.size and scores[order[n_keep - 1]] == scores[order[n_keep]]:
        return None                           # tied scores straddle the cut: torch's sort order decides
    # (zero-probability tokens are removed by transformers too: their cumulative mass is ≤ 1 − top_p)
    keep = np.zeros(V, dtype=bool)
    keep[order[:n_keep]] = True
    return keep


def transformers_top_p_keep(scores: np.ndarray, top_p: float, min_tokens_to_keep: int = MIN_TOKENS_TO_KEEP):
    """transformers' ``TopPLogitsWarper`` itself on one row of float32 scores (1, V), as
    ``generate`` calls it: the kept mask."""
    import torch
    from transformers.generation.logits_process import TopPLogitsWarper
    s = torch.from_numpy(np.ascontiguousarray(scores, dtype=np.float32))[None]
    out = TopPLogitsWarper(top_p=float(top_p), min_tokens_to_keep=int(min_tokens_to_keep))(None, s)
    return np.isfinite(out[0].numpy())
