"""Correct Alg. 1, but every uniform comes from a generator kept inside a registry object, where
no routing reaches it: the checker cannot force or reproduce it."""
import numpy as np


class _Registry:
    def __init__(self):
        self.streams = {"verify": np.random.default_rng(2024)}  # seeded here, not by the checker


REGISTRY = _Registry()


def verify(p, q, draft, rng):
    g = REGISTRY.streams["verify"]
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        if g.random() < min(1.0, p[i, x] / q[i, x]):
            out.append(x)
            continue
        r = np.maximum(p[i] - q[i], 0)
        r = r / r.sum() if r.sum() > 0 else p[i]
        return out + [int(g.choice(len(r), p=r))]
    return out + [int(g.choice(p.shape[1], p=p[-1]))]
