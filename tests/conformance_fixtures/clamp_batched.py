"""A serving engine's batched rejection sampler (torch, batched float32 logits) that clamps the
residual from below, ``(p − q).clamp(min=1e-5)``, to keep ``multinomial`` away from an all-zero
row: every token, those with p = 0 included, keeps mass 1e-5 in the correction, ~V·1e-5 in all.
Lossy: it emits tokens the target cannot (with certainty on a large vocabulary)."""
import torch


def verify(p_logits, q_logits, draft, rng):
    p = p_logits[0].float().softmax(-1)
    q = q_logits[0].float().softmax(-1)
    d = draft[0]
    g = d.shape[0]
    pos = torch.arange(g)
    ratio = (p[pos, d] / q[pos, d]).clamp(max=1.0)
    accept = torch.rand(g) < ratio
    rejected = (~accept).nonzero().flatten()
    if rejected.numel() == 0:
        return torch.cat([d, torch.multinomial(p[g], 1)])
    tau = int(rejected[0])
    residual = (p[tau] - q[tau]).clamp(min=1e-5)
    return torch.cat([d[:tau], torch.multinomial(residual / residual.sum(), 1)])
