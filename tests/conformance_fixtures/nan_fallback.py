"""Alg. 1 (torch, batched float32 logits) whose correction is drawn by an exponential race over
the residual max(p − q, 0)/Σ, divided without a guard: when rounding makes p ≤ q at every token (a
rejection that has probability 0 in exact arithmetic) the residual is NaN and argmax falls back to
token 0 — an impossible token wherever token 0 has p = 0. Lossless otherwise."""
import torch


def _race(w):
    e = torch.empty_like(w).exponential_()
    return (w / e).argmax().reshape(1)


def verify(p_logits, q_logits, draft, rng):
    p = p_logits[0].float().softmax(-1)
    q = q_logits[0].float().softmax(-1)
    d = draft[0]
    for i in range(d.shape[0]):
        x = d[i]
        if torch.rand(()) < torch.clamp(p[i, x] / q[i, x], max=1.0):
            continue
        r = torch.clamp(p[i] - q[i], min=0)
        return torch.cat([d[:i], _race(r / r.sum())])
    return torch.cat([d, _race(p[-1])])
