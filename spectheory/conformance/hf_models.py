"""Markov sources as Hugging Face ``transformers`` causal language models, built in memory.

:func:`markov_hf_lm` returns a tiny ``PreTrainedModel`` (with ``GenerationMixin``: it has
``generate``) whose ``forward(input_ids, cache=None, attention_mask=None, ...)`` returns, at
every position, the log-probabilities of a :class:`~spectheory.markov.MarkovSource` in the state
reached after that prefix (``-inf`` where the source gives probability 0). Target and draft share
the source's vocabulary of ``V`` token ids: no tokenizer, nothing downloaded.

**A real cache.** The model keeps its history in a ``transformers`` ``DynamicCache`` (one layer;
the "keys" are the token ids seen so far), and computes the state of a new position from the
cached tokens followed by the new ``input_ids`` — as a transformer attends to its cached keys. So
a generation stack that does not crop the cache after a rejected draft (or crops it wrongly)
computes the next rows from a history holding the rejected tokens: on a source of order ≥ 2
the rows are wrong and the output law shows it. On an order-1 source the state is the last
token itself and the cache cannot matter.

The state of a context follows :meth:`MarkovSource.state_of_context` (a context shorter than
the order is left-padded with token 0), so ``model(ids).logits[0, t]`` equals
``log(source.conditional(source.state_of_context(ids[0, :t+1])))``.
"""
from __future__ import annotations

import numpy as np
import torch
from transformers import DynamicCache, GenerationMixin, PreTrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from ..markov import MarkovSource
from .adapters import DTYPES

_TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16}


class MarkovLMConfig(PreTrainedConfig):
    """Config of :class:`MarkovForCausalLM`: the source's rows, order and row map."""

    model_type = "spectheory-markov"

    def __init__(self, rows=None, order: int = 0, row_of_state=None, vocab_size: int = 1,
                 logits_dtype: str = "float32", **kwargs):
        self.rows = rows if rows is not None else [[1.0]]
        self.order = int(order)
        self.row_of_state = row_of_state if row_of_state is not None else [0]
        self.vocab_size = int(vocab_size)
        self.logits_dtype = logits_dtype
        self.num_hidden_layers = 1
        kwargs.setdefault("pad_token_id", None)
        kwargs.setdefault("bos_token_id", None)
        kwargs.setdefault("eos_token_id", None)
        super().__init__(**kwargs)


class MarkovForCausalLM(PreTrainedModel, GenerationMixin):
    """A causal LM whose logits are a Markov source's log-probabilities (module docstring)."""

    config_class = MarkovLMConfig
    base_model_prefix = "markov"
    _supports_cache_class = True

    def __init__(self, config: MarkovLMConfig):
        super().__init__(config)
        rows = np.asarray(config.rows, dtype=np.float64)
        ros = np.asarray(config.row_of_state, dtype=np.int64)
        with np.errstate(divide="ignore"):
            table = np.log(rows[ros])
        # a parameter (not a buffer): generate() reads the model's device from its parameters
        self.logits_table = torch.nn.Parameter(torch.as_tensor(table).to(_TORCH_DTYPES[config.logits_dtype]),
                                               requires_grad=False)
        self.V, self.S = rows.shape[1], ros.shape[0]
        self.forward_calls = 0
        self.post_init()

    def _init_weights(self, module):  # the table is the model: nothing to initialise
        pass

    def get_input_embeddings(self):
        return None

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, cache=None, use_cache=None,
                **kwargs):
        if input_ids is None:
            raise ValueError("MarkovForCausalLM needs input_ids (token ids in [0, V))")
        self.forward_calls += 1
        ids = input_ids.detach().cpu()
        B, T = ids.shape
        if use_cache and cache is None:
            cache = DynamicCache(config=self.config)
        past = None
        if cache is not None and cache.get_seq_length() > 0:
            past = cache.layers[0].keys[:, 0, :, 0].to(torch.int64).cpu()
        if cache is not None:
            k = ids[:, None, :, None].to(torch.float32)
            cache.update(k, k, 0)
        full = (ids if past is None else torch.cat([past, ids], 1)).numpy()
        if full.size and (full.min() < 0 or full.max() >= self.V):
            raise ValueError(f"token ids outside the vocabulary [0, {self.V}): {full.tolist()}")
        s = np.zeros(B, dtype=np.int64)
        states = np.empty((B, full.shape[1]), dtype=np.int64)
        for t in range(full.shape[1]):  # state after each prefix, from state 0 (left-padded with 0)
            s = (s * self.V + full[:, t]) % self.S
            states[:, t] = s
        logits = self.logits_table[torch.as_tensor(states[:, full.shape[1] - T:])]
        return CausalLMOutputWithPast(logits=logits.to(input_ids.device), cache=cache)


def markov_hf_lm(source: MarkovSource, dtype: str = "float32") -> MarkovForCausalLM:
    """A ``transformers`` causal LM over ``source`` (module docstring); ``dtype`` of its logits."""
    if not isinstance(source, MarkovSource):
        raise TypeError(f"source must be a MarkovSource, got {type(source).__name__}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    config = MarkovLMConfig(rows=source.rows.tolist(), order=source.order, row_of_state=source.row_of_state.tolist(),
                            vocab_size=source.V, logits_dtype=dtype)
    model = MarkovForCausalLM(config)
    model.source = source
    model.eval()
    return model
