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


def transformers_assisted(target, draft, prompt, *, max_new_tokens, num_assistant_tokens, temperature, top_k, top_p,
                          confidence_threshold=0.0):
    """Hugging Face ``transformers``' assisted generation end to end (``--kind assisted``):
    ``target.generate(prompt, assistant_model=draft, do_sample=True, temperature=…, top_k=…,
    top_p=…, max_new_tokens=L)`` with γ = ``num_assistant_tokens`` drafted tokens per round.
    ``transformers`` reads γ from the *assistant's* generation config (a ``num_assistant_tokens``
    passed to ``generate`` is not used by it), so it is set there, with the ``"constant"``
    schedule and the assistant's confidence threshold at ``confidence_threshold`` (0: off, so
    that every round drafts γ tokens; ``transformers``' default is 0.4, see
    :func:`transformers_assisted_defaults`). Returns the prompt and the L new ids."""
    import torch
    cfg = draft.generation_config
    cfg.num_assistant_tokens = int(num_assistant_tokens)
    cfg.num_assistant_tokens_schedule = "constant"
    cfg.assistant_confidence_threshold = confidence_threshold
    out = target.generate(torch.tensor([list(prompt)]), assistant_model=draft, do_sample=True,
                          temperature=temperature, top_k=top_k if top_k is not None else 0, top_p=top_p,
                          max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens)
    return out[0]


def transformers_assisted_defaults(target, draft, prompt, *, max_new_tokens, num_assistant_tokens, temperature,
                                   top_k, top_p):
    """:func:`transformers_assisted` with ``transformers``' default assistant confidence
    threshold (0.4: a round stops drafting early when the draft's probability of its drafted
    token falls below it)."""
    return transformers_assisted(target, draft, prompt, max_new_tokens=max_new_tokens,
                                 num_assistant_tokens=num_assistant_tokens, temperature=temperature, top_k=top_k,
                                 top_p=top_p, confidence_threshold=0.4)


def transformers_target_only(target, draft, prompt, *, max_new_tokens, num_assistant_tokens, temperature, top_k,
                             top_p):
    """The control that the harness works: ``target.generate(do_sample=True, …)`` without an
    assistant (its law is the reference by definition)."""
    import torch
    return target.generate(torch.tensor([list(prompt)]), do_sample=True, temperature=temperature,
                           top_k=top_k if top_k is not None else 0, top_p=top_p, max_new_tokens=max_new_tokens,
                           min_new_tokens=max_new_tokens)[0]
