"""Multi-round rejection on a static token tree, torch tensors, torch.rand/multinomial."""
import torch


def verify(p, q, tokens, parents, rng):
    node, out = -1, []
    while True:
        kids = (parents == node).nonzero().flatten().tolist()
        if not kids:
            return out + [int(torch.multinomial(p[node + 1], 1))]
        r, qr, nxt = p[node + 1].clone(), q[node + 1], None
        for j in kids:
            x = int(tokens[j])
            if torch.rand(()) < torch.clamp(r[x] / qr[x], max=1.0):
                nxt = j
                break
            w = torch.clamp(r - qr, min=0)
            if w.sum() > 0:
                r = w / w.sum()
        if nxt is None:
            return out + [int(torch.multinomial(r, 1))]
        out.append(int(tokens[nxt]))
        node = nxt
