"""Alg. 1 with a leftover debugging check that raises on token 0."""
import numpy as np


def verify(p, q, draft, rng):
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        assert x != 0, "token 0 should never be drafted here"
        if rng.random() < min(1.0, p[i, x] / q[i, x]):
            out.append(x)
            continue
        r = np.maximum(p[i] - q[i], 0)
        r = r / r.sum() if r.sum() > 0 else p[i]
        return out + [int(rng.choice(len(r), p=r))]
    return out + [int(rng.choice(p.shape[1], p=p[-1]))]
