"""Alg. 1 (torch, batched float32 logits) whose correction and bonus are drawn by Gumbel-max over
the whole vocabulary, log w + G with G = −log(−log u), u = torch.rand(V), guarded by a check that
raises on non-finite noise. Its only bug: u = 0.0 exactly (2⁻²⁴ per float32 draw, V draws per
token) gives G = −inf, harmless (that token loses) but the check raises. A batched run draws
millions of uniforms, so the event shows in some runs and not in others."""
import torch


def _gumbel_argmax(w):
    u = torch.rand(w.shape, dtype=torch.float32)
    g = -torch.log(-torch.log(u))
    if not torch.isfinite(g).all():
        raise FloatingPointError("non-finite Gumbel noise")
    return (w.log() + g).argmax().reshape(1)


def verify(p_logits, q_logits, draft, rng):
    p = p_logits[0].float().softmax(-1)
    q = q_logits[0].float().softmax(-1)
    d = draft[0]
    for i in range(d.shape[0]):
        x = d[i]
        if torch.rand(()) < torch.clamp(p[i, x] / q[i, x], max=1.0):
            continue
        r = torch.clamp(p[i] - q[i], min=0)
        r = r if r.sum() > 0 else p[i]
        return torch.cat([d[:i], _gumbel_argmax(r / r.sum())])
    return torch.cat([d, _gumbel_argmax(p[-1])])
