"""SpecInfer-style multi-round rejection on a static token tree (NumPy) whose running residual is
renormalised without a guard and whose last token is drawn by an exponential race
(argmax of w / E): a zero-mass residual (p ≤ q everywhere after rounding) is NaN, and argmax
returns token 0 — an impossible token wherever token 0 has p = 0."""
import numpy as np


def _race(w, rng):
    return int(np.argmax(w / rng.exponential(size=w.shape)))


def verify(p, q, tokens, parents, rng):
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    node, out = -1, []
    while True:
        kids = np.flatnonzero(parents == node)
        if kids.size == 0:
            return out + [_race(p[node + 1], rng)]
        r, qr, nxt = p[node + 1], q[node + 1], None
        for j in kids:
            x = int(tokens[j])
            if rng.random() < min(1.0, r[x] / qr[x]):
                nxt = int(j)
                break
            w = np.maximum(r - qr, 0.0)
            with np.errstate(invalid="ignore"):
                r = w / w.sum()
        if nxt is None:
            return out + [_race(r, rng)]
        out.append(int(tokens[nxt]))
        node = nxt
