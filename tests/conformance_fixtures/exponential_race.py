"""A serving engine's rejection sampler, pure torch, without its TorchScript: the acceptance
uniform from torch.rand, the correction and the bonus token by an exponential race
(argmax of probs / E with E from Tensor.exponential_), the residual clamped to the smallest
positive float instead of 0 (so tokens with p = 0 keep a tiny key)."""
import torch


def _race(probs):
    e = torch.empty_like(probs).exponential_(1.0)
    return int(probs.div(e).argmax())


def verify(p, q, draft, rng):
    tiny = torch.finfo(p.dtype).tiny
    for i in range(draft.shape[0]):
        x = int(draft[i])
        u = torch.rand((), dtype=p.dtype)
        if u < torch.clamp(p[i, x] / q[i, x], max=1.0):
            continue
        f = torch.clamp(p[i] - q[i], min=tiny)
        return [int(t) for t in draft[:i]] + [_race(f / f.sum())]
    return [int(t) for t in draft] + [_race(p[-1])]
