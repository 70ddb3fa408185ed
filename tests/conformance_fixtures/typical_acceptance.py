"""Medusa-style "typical acceptance": keep a drafted token whose target probability exceeds
min(ε, δ·exp(−H(p))); deterministic and lossy."""
import numpy as np


def verify(p, q, draft, rng, eps=0.3, delta=0.09):
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        row = p[i]
        h = -np.sum(row[row > 0] * np.log(row[row > 0]))
        if row[x] > min(eps, delta * np.exp(-h)):
            out.append(x)
            continue
        return out + [int(np.argmax(row))]
    return out + [int(rng.choice(p.shape[1], p=p[-1]))]
