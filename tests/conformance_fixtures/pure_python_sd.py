"""Standard speculative sampling (Leviathan et al. 2023, Alg. 1) in plain Python lists."""


def _draw(weights, u):
    total = sum(weights)
    acc = 0.0
    for i, w in enumerate(weights):
        acc += w
        if w > 0 and acc > u * total:
            return i
    return max(i for i, w in enumerate(weights) if w > 0)


def verify(p, q, draft, rng):
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        if rng.random() < min(1.0, p[i][x] / q[i][x]):
            out.append(x)
            continue
        resid = [max(a - b, 0.0) for a, b in zip(p[i], q[i])]
        return out + [_draw(resid if sum(resid) > 0 else list(p[i]), rng.random())]
    return out + [_draw(list(p[len(draft)]), rng.random())]
