"""Alg. 1 with the bonus token drawn from the last drafted position's row (off by one)."""
import numpy as np


def verify(p, q, draft, rng):
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        if rng.random() < min(1.0, p[i, x] / q[i, x]):
            out.append(x)
            continue
        r = np.maximum(p[i] - q[i], 0)
        r = r / r.sum() if r.sum() > 0 else p[i]
        return out + [int(rng.choice(len(r), p=r))]
    return out + [int(rng.choice(p.shape[1], p=p[len(draft) - 1]))]
