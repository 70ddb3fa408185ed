"""Alg. 1 as a torch.nn.Module whose correction and bonus come from an exponential race compiled
with TorchScript and kept as a module attribute (``self.race``): the sampler calls torch's global
functions, but the race's ``exponential_`` runs below Python, out of the checker's reach. Run as
the module itself (``compiled_module.py:verify``) or its bound method (``:bound``)."""
import torch


def _race(probs: torch.Tensor) -> int:
    e = torch.empty_like(probs).exponential_(1.0)
    return int(probs.div(e).argmax())


class Sampler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.race = torch.jit.script(_race)

    def forward(self, p, q, draft, rng):
        for i in range(draft.shape[0]):
            x = int(draft[i])
            if torch.rand((), dtype=p.dtype) < torch.clamp(p[i, x] / q[i, x], max=1.0):
                continue
            r = torch.clamp(p[i] - q[i], min=0)
            r = r if r.sum() > 0 else p[i]
            return [int(t) for t in draft[:i]] + [self.race(r / r.sum())]
        return [int(t) for t in draft] + [self.race(p[-1])]

    def verify_method(self, p, q, draft, rng):
        return self.forward(p, q, draft, rng)


verify = Sampler()
bound = Sampler().verify_method
