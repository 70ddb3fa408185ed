"""Plausible bugs of a batched rejection sampler in the serving layout (ragged_torch.py's
layout: drafts flattened, cumulative offsets, bonus tokens given), one function each, for
``spectheory conformance FILE:FN --kind ragged --framework torch``:

* ``padded_offsets``  — request b's drafts read at b·max γ (the flattened drafts taken for a
                        padded (B, max γ) array): rows of other requests are mixed in (law);
* ``cu_off_by_one``   — request b ≥ 1 starts at cu[b−1] + 1 (one past its first draft, clamped
                        to the last row): an off-by-one in the cumulative offsets (law);
* ``bonus_after_rejection`` — the bonus token also emitted after a correction (law);
* ``draft_row_of_next_request`` — q(x) and the residual taken from the draft rows of the next
                        request that drafted (law);
* ``shared_uniforms`` — one row of uniforms (and one set of race keys) per call, shared by every
                        request: each request's law is right, the requests of a call are not
                        independent (law: the joint law of the batch);
* ``accept_le``       — accept on u ≤ p(x)/q(x): u = 0 accepts a drafted token with p = 0 (boundary);
* ``reused_uniform``  — the correction drawn by inverse CDF of the residual at the uniform that
                        rejected the draft (u ≥ p(x)/q(x): its law is biased to the last tokens),
                        no fresh draw (law);
* ``first_draft_lookup`` — a leftover read of each request's first drafted id,
                        ``draft_token_ids[cu − num]``, out of range when the batch ends with a
                        request that drafted nothing (crash).
"""
import torch

PLACEHOLDER = -1


def _sample(draft_token_ids, cu, draft_probs, target_probs, bonus_token_ids, bug=None):
    cu = cu.long()
    B = cu.numel()
    num = torch.diff(cu, prepend=cu.new_zeros(1))
    starts = cu - num
    T = draft_token_ids.numel()
    max_len = int(num.max()) if B else 0
    if bug == "first_draft_lookup":
        draft_token_ids[starts]  # a leftover lookup: IndexError when the last request drafted nothing
    req = torch.repeat_interleave(torch.arange(B), num)
    pos = torch.arange(T) - starts[req]
    rows = torch.arange(T)
    if bug == "padded_offsets":
        rows = (req * max_len + pos).clamp(max=max(T - 1, 0))
    elif bug == "cu_off_by_one":
        rows = (starts[req] + (req > 0).long() + pos).clamp(max=max(T - 1, 0))
    q_rows = rows
    if bug == "draft_row_of_next_request" and T:
        other = []
        for b in range(B):
            o = next(((b + k) % B for k in range(1, B + 1) if int(num[(b + k) % B]) > 0), b)
            other.append(o)
        other = torch.tensor(other)
        o = other[req]
        q_rows = starts[o] + torch.minimum(pos, num[o] - 1)
    out = torch.full((B, max_len + 1), PLACEHOLDER, dtype=torch.long)
    tau = num.clone()
    ids = draft_token_ids.long()[rows] if T else draft_token_ids.long()
    if T:
        t = torch.arange(T)
        p = target_probs.double()[rows]
        q = draft_probs.double()[q_rows]
        p_x, q_x = p[t, ids], q[t, ids]
        if bug == "shared_uniforms":
            u = torch.rand(max_len, dtype=torch.float64)[pos]
        else:
            u = torch.rand(T, dtype=torch.float64)
        accept = (u * q_x <= p_x) if bug == "accept_le" else (u * q_x < p_x)
        rej_pos = torch.where(accept, torch.full_like(pos, max_len + 1), pos)
        first_rej = torch.full((B,), max_len + 1, dtype=torch.long).scatter_reduce(0, req, rej_pos, reduce="amin")
        tau = torch.minimum(first_rej, num)
        resid = (p - q).clamp_min(0.0)
        mass = resid.sum(dim=-1, keepdim=True)
        resid = torch.where(mass > 0, resid / mass.clamp_min(torch.finfo(torch.float64).tiny), p)
        if bug == "reused_uniform":
            cdf = resid.cumsum(dim=-1)
            recovered = (cdf <= (u * cdf[:, -1])[:, None]).sum(dim=-1).clamp(max=resid.shape[-1] - 1)
        else:
            if bug == "shared_uniforms":
                keys = torch.empty(resid.shape[-1], dtype=torch.float64).exponential_().expand_as(resid)
            else:
                keys = torch.empty_like(resid).exponential_()
            recovered = (resid / keys).argmax(dim=-1)
        keep = pos < tau[req]
        out[req[keep], pos[keep]] = ids[keep]
    rejected = tau < num
    last = bonus_token_ids.long().clone()
    if T and rejected.any():
        last[rejected] = recovered[(starts + tau)[rejected]]
    out[torch.arange(B), tau] = last
    if bug == "bonus_after_rejection":
        r = torch.nonzero(rejected).flatten()
        out[r, tau[r] + 1] = bonus_token_ids.long()[r]
    return out


def padded_offsets(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng):
    return _sample(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, "padded_offsets")


def cu_off_by_one(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng):
    return _sample(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, "cu_off_by_one")


def bonus_after_rejection(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng):
    return _sample(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids,
                   "bonus_after_rejection")


def draft_row_of_next_request(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng):
    return _sample(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids,
                   "draft_row_of_next_request")


def shared_uniforms(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng):
    return _sample(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, "shared_uniforms")


def accept_le(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng):
    return _sample(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, "accept_le")


def reused_uniform(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng):
    return _sample(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, "reused_uniform")


def first_draft_lookup(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng):
    return _sample(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids,
                   "first_draft_lookup")


def block_signature(p, q, draft_tokens, rng):
    """A usage mistake: a block verifier's signature run as --kind ragged (exit 2)."""
    return list(draft_tokens[:0]) + [0]
