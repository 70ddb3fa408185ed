"""Alg. 1 whose residual max(p − q, 0) is divided by its sum without a guard."""
import numpy as np


def verify(p, q, draft, rng):
    p, q = p.astype(np.float64), q.astype(np.float64)
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        if rng.random() < min(1.0, p[i, x] / q[i, x]):
            out.append(x)
            continue
        r = np.maximum(p[i] - q[i], 0)
        return out + [int(rng.choice(len(r), p=r / r.sum()))]
    return out + [int(rng.choice(p.shape[1], p=p[-1] / p[-1].sum()))]
