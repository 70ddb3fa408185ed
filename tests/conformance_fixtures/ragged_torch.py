"""A batched rejection sampler in the serving layout, pure torch, vectorised over the batch.

Standard speculative sampling (Leviathan et al. 2023, Alg. 1; Chen et al. 2023): accept the
drafted token x with probability min(1, p(x)/q(x)); on the first rejection emit a draw from the
residual norm(max(p − q, 0)); after all γ_b accepts emit the bonus token. The layout is a serving
engine's (the argument names of vLLM's v1 ``rejection_sample``; written from the algorithm, not
from its code): drafts of B requests flattened, request b's at ``cu[b−1]:cu[b]``.

``rejection_sample``: the bonus tokens are given (drawn by the engine's ordinary sampler from each
request's bonus row), ``target_probs`` holds the T drafted positions only.
``rejection_sample_bonus_inside``: ``target_probs`` (T + B, V) holds each request's γ_b + 1 rows
and the sampler draws the bonus itself.

The uniforms come from ``torch.rand`` and the residual draws from an exponential race
(``probs / Exp(1)`` keys, argmax), as serving engines draw them on the GPU; the ``rng``
argument is not used (torch's global generator is what the checker routes).
"""
import torch

PLACEHOLDER = -1


def _layout(cu):
    num = torch.diff(cu, prepend=cu.new_zeros(1))
    starts = cu - num
    T = int(cu[-1]) if cu.numel() else 0
    req = torch.repeat_interleave(torch.arange(cu.numel()), num)  # the request of each drafted position
    pos = torch.arange(T) - starts[req]  # the position within its request
    return num, starts, req, pos


def rejection_sample(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng):
    cu = cu_num_draft_tokens.long()
    B = cu.numel()
    num, starts, req, pos = _layout(cu)
    T = draft_token_ids.numel()
    max_len = int(num.max()) if B else 0
    out = torch.full((B, max_len + 1), PLACEHOLDER, dtype=torch.long)
    tau = num.clone()  # accepted drafts per request (all, until a rejection says otherwise)
    if T:
        t = torch.arange(T)
        p = target_probs.double()
        q = draft_probs.double()
        p_x, q_x = p[t, draft_token_ids], q[t, draft_token_ids]
        u = torch.rand(T, dtype=torch.float64)
        accept = u * q_x < p_x  # u < p(x)/q(x), strict: u = 0 never accepts p(x) = 0
        rej_pos = torch.where(accept, torch.full_like(pos, max_len + 1), pos)
        first_rej = torch.full((B,), max_len + 1, dtype=torch.long).scatter_reduce(0, req, rej_pos, reduce="amin")
        tau = torch.minimum(first_rej, num)
        resid = (p - q).clamp_min(0.0)
        mass = resid.sum(dim=-1, keepdim=True)
        resid = torch.where(mass > 0, resid / mass.clamp_min(torch.finfo(torch.float64).tiny), p)
        keys = torch.empty_like(resid).exponential_()
        recovered = (resid / keys).argmax(dim=-1)
        keep = pos < tau[req]
        out[req[keep], pos[keep]] = draft_token_ids[keep].long()
    rejected = tau < num
    last = bonus_token_ids.long().clone()
    if T and rejected.any():
        last[rejected] = recovered[(starts + tau)[rejected]]
    out[torch.arange(B), tau] = last
    return out


def rejection_sample_bonus_inside(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, rng):
    cu = cu_num_draft_tokens.long()
    B = cu.numel()
    num, starts, req, pos = _layout(cu)
    T = draft_token_ids.numel()
    rows = torch.arange(T) + req  # request b's rows are shifted by b (one bonus row per earlier request)
    bonus_rows = cu + torch.arange(B)
    bonus = torch.multinomial(target_probs[bonus_rows].double(), 1).squeeze(-1)
    return rejection_sample(draft_token_ids, cu, draft_probs, target_probs[rows], bonus, rng)


def rejection_sample_counts(draft_token_ids, num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng):
    """The same with each request's draft length (``--offsets counts``) in place of the cumulative ones."""
    return rejection_sample(draft_token_ids, torch.cumsum(num_draft_tokens.long(), 0), draft_probs, target_probs,
                            bonus_token_ids, rng)
