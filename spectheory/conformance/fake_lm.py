"""Markov sources dressed as language models, for testing decoding code that drafts by itself.

:class:`MarkovLM` is a callable: ``lm(contexts)`` takes a batch of contexts (a (B, T) integer
array, or a list of token lists) and returns (B, V) next-token logits (log-probabilities with
``-inf`` where the source gives probability 0, in ``dtype``). :func:`markov_torch_lm` returns a
``torch.nn.Module`` whose ``forward(input_ids)`` returns an object with ``.logits`` of shape
(B, T, V), the next-token logits after every prefix, as a Hugging Face causal LM does
(torch is optional; importing this module does not need it). ``lm="hf"`` gives a
``transformers`` ``PreTrainedModel`` with ``generate`` and a real cache
(:mod:`.hf_models`). A context shorter than the source's order is left-padded with token 0.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..markov import MarkovSource, next_state
from .adapters import DTYPES


def _logits_table(source: MarkovSource, dtype) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(source.table).astype(DTYPES[dtype])


def _check_source(source, dtype) -> None:
    if not isinstance(source, MarkovSource):
        raise TypeError(f"source must be a MarkovSource, got {type(source).__name__}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")


class MarkovLM:
    """Callable fake LM over a :class:`~spectheory.markov.MarkovSource` (see module docstring)."""

    def __init__(self, source: MarkovSource, dtype: str = "float32"):
        _check_source(source, dtype)
        self.source = source
        self.vocab_size = source.V
        self.logits_table = _logits_table(source, dtype)
        self.calls = 0

    def state(self, context) -> int:
        return self.source.state_of_context([int(t) for t in context])

    def __call__(self, contexts) -> np.ndarray:
        self.calls += 1
        ctxs = contexts.tolist() if hasattr(contexts, "tolist") else list(contexts)
        if ctxs and not hasattr(ctxs[0], "__len__"):
            raise ValueError("contexts must be a batch: a (B, T) array or a list of token lists")
        return self.logits_table[[self.state(c) for c in ctxs]]


def markov_torch_lm(source: MarkovSource, dtype: str = "float32"):
    """A ``torch.nn.Module`` fake causal LM: ``model(input_ids).logits`` is (B, T, V)."""
    _check_source(source, dtype)
    import torch

    table = torch.as_tensor(_logits_table(source, "float64")).to(
        {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16}[dtype])

    class MarkovCausalLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.source = source
            self.vocab_size = source.V
            self.register_buffer("logits_table", table)

        def forward(self, input_ids, **kwargs):
            ids = input_ids.detach().cpu().numpy()
            B, T = ids.shape
            V, S = source.V, source.n_states
            states = np.zeros((B, T), dtype=np.int64)
            s = np.zeros(B, dtype=np.int64)
            for t in range(T):  # state after the prefix ids[:, :t+1] (left-padded with 0)
                s = next_state(s, ids[:, t], V, S)
                states[:, t] = s
            return SimpleNamespace(logits=self.logits_table[torch.as_tensor(states)])

    return MarkovCausalLM()


def fake_lm(source: MarkovSource, lm: str = "callable", dtype: str = "float32"):
    """The fake LM of kind ``lm`` (``"callable"``, ``"torch"`` or ``"hf"``) over ``source``."""
    if lm == "callable":
        return MarkovLM(source, dtype)
    if lm == "torch":
        return markov_torch_lm(source, dtype)
    if lm == "hf":
        _check_source(source, dtype)
        from .hf_models import markov_hf_lm
        return markov_hf_lm(source, dtype)
    raise ValueError(f"lm must be 'callable', 'torch' or 'hf', got {lm!r}")
