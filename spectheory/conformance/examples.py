"""Ready-made wrappers of third-party samplers into the block-verifier shape, for
``spectheory conformance`` (e.g. ``spectheory.conformance.examples:transformers_sampler``)."""
from __future__ import annotations


def transformers_sampler(p, q, draft, rng):
    """Hugging Face ``transformers``' rejection sampler
    (``transformers.generation.utils._speculative_sampling``, the sampling path of assisted
    generation). Run with ``adapter="logits", dtype="float32", batched=True,
    framework="torch"``: ``p`` (1, γ+1, V) target logits, ``q`` (1, γ, V) draft logits,
    ``draft`` (1, γ) ids. It draws its uniforms with ``torch.rand_like`` and
    ``torch.multinomial``, which the torch framework routes through ``rng``."""
    from transformers.generation.utils import _speculative_sampling
    return _speculative_sampling(draft, q, draft.shape[1], p)[0]
