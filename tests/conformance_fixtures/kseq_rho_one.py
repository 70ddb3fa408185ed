"""K-SEQ with ρ fixed to 1 (every candidate tested as in plain speculative sampling, the
correction from norm(max(p − q, 0))): lossy for K ≥ 2."""
import numpy as np


def verify(p, q, drafts, rng):
    K, g = drafts.shape
    alive, out = list(range(K)), []
    for i in range(g):
        pr, qr = p[alive[0], i], q[alive[0], i]
        hit = None
        for k in alive:
            x = int(drafts[k, i])
            if rng.random() < min(1.0, pr[x] / qr[x]):
                hit = x
                break
        if hit is None:
            w = np.maximum(pr - qr, 0)
            w = w / w.sum() if w.sum() > 0 else pr
            return out + [int(rng.choice(len(w), p=w))]
        out.append(hit)
        alive = [k for k in alive if int(drafts[k, i]) == hit]
    return out + [int(rng.choice(p.shape[-1], p=p[alive[0], g]))]
