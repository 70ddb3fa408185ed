"""SpecInfer-style multi-round rejection on a static token tree that draws its acceptance
uniforms once (one per node, on its first call) and reuses them on every later call, as a
tree-decoding framework does per prompt; the correction from torch.multinomial."""
import torch

_UNIFORMS = {}


def verify(p, q, tokens, parents, rng):
    n = int(tokens.shape[0])
    if n not in _UNIFORMS:
        _UNIFORMS[n] = torch.rand(n, dtype=torch.float64)
    u = _UNIFORMS[n]
    node, out = -1, []
    while True:
        kids = (parents == node).nonzero().flatten().tolist()
        if not kids:
            return out + [int(torch.multinomial(p[node + 1], 1))]
        r, qr, nxt = p[node + 1].clone(), q[node + 1], None
        for j in kids:
            x = int(tokens[j])
            if u[j] < torch.clamp(r[x] / qr[x], max=1.0):
                nxt = j
                break
            w = torch.clamp(r - qr, min=0)
            if w.sum() > 0:
                r = w / w.sum()
        if nxt is None:
            return out + [int(torch.multinomial(r, 1))]
        out.append(int(tokens[nxt]))
        node = nxt
