"""Samplers run with the wrong options or the wrong contract: each must end in a usage error
(exit status 2) with a hint."""
import numpy as np


def _sd(p, q, draft, rng):
    """Standard speculative sampling on probability rows (correct when called correctly)."""
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        if rng.random() < min(1.0, p[i][x] / q[i][x]):
            out.append(x)
            continue
        r = np.maximum(np.asarray(p[i], float) - np.asarray(q[i], float), 0)
        r = r / r.sum() if r.sum() > 0 else np.asarray(p[i], float)
        return out + [int(rng.choice(len(r), p=r))]
    return out + [int(rng.choice(len(p[-1]), p=np.asarray(p[-1], float)))]


def _softmax(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def batched(p, q, draft, rng):          # written for (1, γ+1, V) inputs
    return np.array([_sd(p[0], q[0], list(draft[0]), rng)])


def logits(p, q, draft, rng):           # written for logits
    return _sd(_softmax(p), _softmax(q), list(draft), rng)


def torch_only(p, q, draft, rng):       # written for tensors
    return _sd(p.softmax(-1).tolist(), q.softmax(-1).tolist(), draft.tolist(), rng)


def with_count(p, q, draft, rng):       # returns (tokens, number accepted), as some samplers do
    out = _sd(p, q, draft, rng)
    return np.array(out), len(out) - 1


def no_rng(p, q, draft):                # forgot the random source
    return [int(draft[0])]


def prints(p, q, draft, rng):           # returns nothing
    print(_sd(p, q, draft, rng))


def draft_first(draft, p, q, rng):      # its own argument order: the drafted ids first
    return _sd(p, q, draft, rng)


def q_before_p(q, p, draft, rng):       # draft rows before target rows
    return _sd(p, q, draft, rng)


def never_runs(p, q, draft, rng):       # every call raises: unfinished code
    raise NotImplementedError("verify() is not written yet")
