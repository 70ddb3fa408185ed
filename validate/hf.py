"""Thin torch layer: a causal LM with its KV cache, fed tokens and timed (imported lazily).

Used by :mod:`spectheory.validate.capture` (one forward per position) and :mod:`spectheory.validate.specdec`
(γ one-token draft calls, one target call scoring γ + 1 tokens). Everything returned is NumPy.
"""
from __future__ import annotations

import time

import numpy as np

INSTALL_HINT = "pip install 'spectheory[validate]'"


def require_torch():
    """Import torch and transformers or fail with the install command."""
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as e:
        raise ImportError(f"validate needs torch and transformers: {INSTALL_HINT}") from e
    return torch


def pick_device(device: str | None = None) -> str:
    """``device`` as given, else ``'cuda'`` when a GPU is present, else ``'cpu'``."""
    torch = require_torch()
    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def output_width(model) -> int:
    """Number of logits the model emits per position."""
    emb = model.get_output_embeddings()
    w = getattr(emb, "weight", None) if emb is not None else None
    if callable(w):  # a dynamically quantised Linear exposes its weight as a method
        w = w()
    if w is not None:
        return int(w.shape[0])
    return int(model.config.vocab_size)


def common_vocab(target, draft, tokenizer=None) -> int:
    """Vocabulary V that target and draft logits share (notation: p and q on one V).

    Equal output widths: that width. Different widths (a family padding its output layers
    differently): cut both to ``len(tokenizer)`` when both cover it. Otherwise a clear error.
    """
    wt, wd = output_width(target), output_width(draft)
    if wt == wd:
        return wt
    if tokenizer is not None and len(tokenizer) <= min(wt, wd):
        return len(tokenizer)
    raise ValueError(f"mismatched vocabularies: the target emits {wt} logits per position, the draft "
                     f"{wd}" + ("" if tokenizer is None else f", the tokenizer has {len(tokenizer)} tokens")
                     + ": speculative decoding needs one shared vocabulary")


def cache_keyword(model) -> str:
    """The forward's keyword for the KV cache: ``cache`` (transformers ≥ 5.2x; ``past_key_values``
    is deprecated there) or ``past_key_values``."""
    import inspect
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


class CachedLM:
    """A causal LM plus its KV cache. ``feed(ids)`` appends ids to the cached context and
    returns their logits as (len(ids), V) float64 NumPy rows and the call's seconds
    (device-synchronised). ``crop(n)`` keeps the first n cached positions."""

    def __init__(self, model, vocab_size: int, device: str | None = None):
        self.torch = torch = require_torch()
        from transformers import DynamicCache
        self.model = model.eval()
        self.device = next(model.parameters()).device if device is None else torch.device(device)
        self.V = int(vocab_size)
        if output_width(model) < self.V:
            raise ValueError(f"model emits {output_width(model)} logits per position < V = {self.V}")
        self.cache = DynamicCache()
        self.length = 0
        self._cache_cls = DynamicCache
        self._cache_kw = cache_keyword(model)

    def reset(self):
        self.cache = self._cache_cls()
        self.length = 0

    def _sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def feed(self, ids, rows: int | None = None) -> tuple[np.ndarray, float]:
        """Score ``ids`` after the cached context; return the logits of the last ``rows``
        positions (all by default) and the forward's wall time in seconds."""
        torch = self.torch
        ids = [int(i) for i in ids]
        if not ids:
            raise ValueError("feed() needs at least one token")
        inp = torch.tensor([ids], dtype=torch.long, device=self.device)
        pos = torch.arange(self.length, self.length + len(ids), device=self.device)[None]
        self._sync()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = self.model(input_ids=inp, use_cache=True, position_ids=pos, logits_to_keep=rows or 0,
                             **{self._cache_kw: self.cache})
            z = out.logits[0, -(rows or len(ids)):, : self.V].double().cpu().numpy()
        self._sync()
        dt = time.perf_counter() - t0
        self.length += len(ids)  # the DynamicCache grew in place
        return z, dt

    def crop(self, n: int):
        """Keep the first ``n`` cached positions (rejected draft tokens are dropped)."""
        n = int(n)
        if n < self.length:
            self.cache.crop(n - self.length)  # negative: remove that many (transformers ≥ 4.4x and 5.x)
            self.length = n
