"""Multi-round rejection (SpecInfer) on K independent drafts, NumPy."""
import numpy as np


def verify(p, q, drafts, rng):
    K, g = drafts.shape
    alive = list(range(K))
    out = []
    for i in range(g):
        r, qi = p[alive[0], i].copy(), q[alive[0], i]
        hit = None
        for k in alive:
            x = int(drafts[k, i])
            if rng.random() < min(1.0, r[x] / qi[x]):
                hit = x
                break
            w = np.maximum(r - qi, 0)
            if w.sum() > 0:
                r = w / w.sum()
        if hit is None:
            return out + [int(rng.choice(len(r), p=r))]
        out.append(hit)
        alive = [k for k in alive if int(drafts[k, i]) == hit]
    return out + [int(rng.choice(p.shape[-1], p=p[alive[0], g]))]
