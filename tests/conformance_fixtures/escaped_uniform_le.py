"""torch: the accept/reject uniform from Tensor.uniform_, the correction from torch.multinomial,
and the `u <= ratio` bug (u = 0 accepts a token with p = 0)."""
import torch


def verify(p_logits, q_logits, draft, rng):
    p = p_logits[0].double().softmax(-1)
    q = q_logits[0].double().softmax(-1)
    d = draft[0]
    for i in range(d.shape[0]):
        x = d[i]
        u = torch.empty((), dtype=torch.float64).uniform_()
        if u <= p[i, x] / q[i, x]:
            continue
        r = torch.clamp(p[i] - q[i], min=0)
        r = r if r.sum() > 0 else p[i]
        return torch.cat([d[:i], torch.multinomial(r / r.sum(), 1)])
    return torch.cat([d, torch.multinomial(p[-1], 1)])
