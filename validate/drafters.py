"""Drafters without a draft model: prompt lookup (n-gram matches in the prompt and the text so far).

:class:`PromptLookup` is transformers' ``PromptLookupCandidateGenerator`` (``generate(...,
prompt_lookup_num_tokens=γ)``, Saxena 2023, "Prompt Lookup Decoding") in NumPy: for n from
``max_matching_ngram_size`` (2) down to 1, find the earliest occurrence of the last n tokens
earlier in the sequence whose continuation is non-empty, and propose up to γ tokens of that
continuation (capped at the sequence's end and at ``max_length``, cut before the first stop token);
no match: no draft (the iteration is one target step).

A drafter like this drafts **point masses**: q_j = δ(x_j). Speculative sampling then accepts x_j
with probability min(1, p_j(x_j)/1) = p_j(x_j) and resamples a rejection from
norm(max(p_j − δ_{x_j}, 0)) = p_j restricted to y ≠ x_j — the same law as transformers'
prompt-lookup sampling (sample y_j ~ p_j, keep drafts while y_j = x_j). So β_j = Σ min(p_j, q_j) =
p_j(x_j) = r_j: the drafting law and the verifier law coincide, α = E[p(drafted token)], and, the
drafts being a function of the context, E[τ + 1 | drafts] = 1 + Σ_k Π_{j≤k} p_j(x_j) is the exact
expected length given the context.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spectheory.checks import check_int


@dataclass(frozen=True)
class PromptLookup:
    """transformers' prompt-lookup candidate generator (module docstring). ``num_output_tokens``:
    the most tokens drafted per iteration (γ, ``prompt_lookup_num_tokens``); ``eos_ids``: stop
    tokens (a draft is cut before the first); ``max_length``: total length cap (prompt + new
    tokens; None: none)."""

    num_output_tokens: int
    max_matching_ngram_size: int = 2
    eos_ids: tuple = ()
    max_length: int | None = None

    name = "prompt-lookup"

    def __post_init__(self):
        check_int(self.num_output_tokens, "num_output_tokens", min=1)
        check_int(self.max_matching_ngram_size, "max_matching_ngram_size", min=1)
        if self.max_length is not None:
            check_int(self.max_length, "max_length", min=1)
        object.__setattr__(self, "eos_ids", tuple(int(e) for e in self.eos_ids))

    def with_max_length(self, max_length: int | None) -> "PromptLookup":
        return PromptLookup(self.num_output_tokens, self.max_matching_ngram_size, self.eos_ids, max_length)

    def config(self) -> dict:
        return dict(kind=self.name, num_output_tokens=int(self.num_output_tokens),
                    max_matching_ngram_size=int(self.max_matching_ngram_size))

    def candidates(self, ids) -> list[int]:
        """The drafted tokens for the sequence ``ids`` (prompt and text so far); [] for none."""
        ids = np.asarray(ids, dtype=np.int64)
        L = ids.shape[0]
        cap = L if self.max_length is None else min(L, int(self.max_length))
        if self.max_length is not None and int(self.max_length) == L + 1:
            return []
        for n in range(min(self.max_matching_ngram_size, L - 1), 0, -1):
            win = np.lib.stride_tricks.sliding_window_view(ids, n)          # (L − n + 1, n)
            for idx in np.flatnonzero((win == ids[-n:]).all(axis=1)):     # earliest first
                start = int(idx) + n
                end = min(start + self.num_output_tokens, cap)
                if start < end:
                    chosen = ids[start:end]
                    if self.eos_ids:
                        hit = np.flatnonzero(np.isin(chosen, self.eos_ids))
                        if hit.size:
                            chosen = chosen[:hit[0]]
                    return [int(t) for t in chosen]
        return []


def drafter_from_config(cfg: dict | None, eos_ids=()):
    """The drafter a run directory's ``drafter`` entry names (None: the draft model)."""
    if not cfg or cfg.get("kind", "model") == "model":
        return None
    if cfg["kind"] == PromptLookup.name:
        return PromptLookup(int(cfg["num_output_tokens"]), int(cfg.get("max_matching_ngram_size", 2)),
                            tuple(eos_ids))
    raise ValueError(f"unknown drafter {cfg['kind']!r}; known: model, {PromptLookup.name}")
