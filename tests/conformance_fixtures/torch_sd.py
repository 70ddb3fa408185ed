"""torch, batched logits, torch.rand for the acceptance and torch.multinomial for the rest."""
import torch


def verify(p_logits, q_logits, draft, rng):
    p = p_logits[0].double().softmax(-1)
    q = q_logits[0].double().softmax(-1)
    d = draft[0]
    for i in range(d.shape[0]):
        x = d[i]
        if torch.rand(()) < torch.clamp(p[i, x] / q[i, x], max=1.0):
            continue
        r = torch.clamp(p[i] - q[i], min=0)
        r = r if r.sum() > 0 else p[i]
        return torch.cat([d[:i], torch.multinomial(r / r.sum(), 1)])
    return torch.cat([d, torch.multinomial(p[-1], 1)])
