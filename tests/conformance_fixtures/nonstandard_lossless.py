"""Lossless, not Alg. 1: treat the drafted token as if it were deterministic: keep it with
probability p(x), otherwise resample from p with x removed."""
import numpy as np


def verify(p, q, draft, rng):
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        if rng.random() < p[i, x]:
            out.append(x)
            continue
        rest = p[i].copy()
        rest[x] = 0.0
        return out + [int(rng.choice(len(rest), p=rest / rest.sum()))]
    return out + [int(rng.choice(p.shape[1], p=p[-1]))]
