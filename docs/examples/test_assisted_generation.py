"""Test a whole generation stack end to end: Hugging Face `transformers`' assisted generation.

spectheory hands your stack two tiny `transformers` models over Markov sources (one shared
vocabulary of 3 token ids, built in memory; nothing is downloaded) and calls it from a fixed
prompt. Whatever it does inside — drafting, verification, temperature/top-k/top-p, cache
rollback after a rejection — a lossless stack generates tokens with the law of the target alone
sampling with the same processors. spectheory knows that law exactly and tests the generated
tokens against it (chi-square on the joint law of the L tokens, and per position given the
state). See docs/conformance.md, "End to end: assisted generation".

To test your own stack, replace `transformers_assisted` by a function with the same signature.
"""
import pytest

from spectheory.testing import assert_lossless

#: one block: temperature 0.7 with top-k 2, γ = 3 drafted tokens, L = 3 new tokens, 6,000 calls
SCOPE = dict(kind="assisted", settings=("T=0.7,top_k=2",), gammas=(3,), max_new_tokens=3, n=6000)


def transformers_assisted(target, draft, prompt, *, max_new_tokens, num_assistant_tokens, temperature, top_k,
                          top_p):
    """The stack under test: target.generate(assistant_model=draft, do_sample=True, ...)."""
    import torch
    draft.generation_config.num_assistant_tokens = num_assistant_tokens  # transformers reads γ here
    draft.generation_config.num_assistant_tokens_schedule = "constant"
    draft.generation_config.assistant_confidence_threshold = 0.0         # draft all γ tokens
    return target.generate(torch.tensor([prompt]), assistant_model=draft, do_sample=True,
                           temperature=temperature, top_k=top_k or 0, top_p=top_p,
                           max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens)[0]


def processors_on_the_draft_only(target, draft, prompt, **kw):
    """A stack with a wiring bug: the draft samples with the processors, the target verifies
    its raw distribution (spectheory's own plain loop with that bug)."""
    from spectheory.conformance.kinds.assisted import target_unprocessed_stack
    return target_unprocessed_stack(target, draft, prompt, **kw)


@pytest.mark.slow  # about 40 s of CPU: 6,000 generate() calls
def test_transformers_assisted_generation_is_lossless():
    assert_lossless(transformers_assisted, budget_s=300, **SCOPE)


def test_a_wiring_bug_fails_in_law():
    with pytest.raises(AssertionError, match=r"LOSSLESS: fails \[law\]") as err:
        assert_lossless(processors_on_the_draft_only, **{**SCOPE, "n": 1000, "controls": False})
    assert "replay_check(" in str(err.value)
