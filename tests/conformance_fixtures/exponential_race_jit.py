"""The same exponential-race rejection sampler with its race under @torch.jit.script: the
compiled function calls torch's generator directly, below the Python-level routing."""
import torch


@torch.jit.script
def _race(probs: torch.Tensor) -> int:
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
