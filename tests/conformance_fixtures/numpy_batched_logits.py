"""NumPy, batched float32 logits (leading batch axis), global np.random for the uniforms."""
import numpy as np


def _softmax(z):
    z = z.astype(np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def verify(p_logits, q_logits, draft, rng):
    p, q, d = _softmax(p_logits[0]), _softmax(q_logits[0]), draft[0]
    u = np.random.random(len(d))
    ratio = np.minimum(1.0, p[np.arange(len(d)), d] / q[np.arange(len(d)), d])
    rejected = np.flatnonzero(u >= ratio)
    if rejected.size:
        i = rejected[0]
        r = np.clip(p[i] - q[i], 0, None)
        r = r / r.sum() if r.sum() > 0 else p[i]
        return np.array([np.concatenate([d[:i], [np.random.choice(len(r), p=r)]])])
    return np.array([np.concatenate([d, [np.random.choice(p.shape[1], p=p[-1])]])])
