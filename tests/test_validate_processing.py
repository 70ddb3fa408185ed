"""The processed distributions real decoding samples from (spectheory.validate.processing): transformers'
own warpers (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper in generate's order) are
the reference, row by row as generate applies them, on random rows, bfloat16-rounded rows (tied
scores), rows built to put a tie or a rounding-close cumulative mass exactly at the cut, and
-inf logits; and end to end, the scores transformers' generate itself reports for a tiny model."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers.generation.logits_process import (  # noqa: E402
    TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper)

import spectheory.validate.processing as proc  # noqa: E402
from spectheory.validate.processing import sampling_probs, top_p_keep  # noqa: E402


def transformers_probs(z, temperature, top_k=None, top_p=None):
    """softmax of the scores transformers' warpers leave, generate's order, one row at a time."""
    out = []
    for row in np.atleast_2d(z):
        s = torch.tensor(row, dtype=torch.float32)[None]
        if temperature != 1.0:
            s = TemperatureLogitsWarper(temperature)(None, s)
        if top_k:
            s = TopKLogitsWarper(top_k)(None, s)
        if top_p is not None and top_p < 1.0:
            s = TopPLogitsWarper(top_p)(None, s)
        out.append(s.double().softmax(-1)[0].numpy())
    return np.array(out)


def _rows(rng, V, kind):
    z = rng.normal(0.0, float(rng.choice([1.0, 3.0, 6.0])), (3, V)) + 10.0
    if kind == "bf16":     # the default pair's logits are bfloat16: ties everywhere
        z = torch.tensor(z, dtype=torch.float32).to(torch.bfloat16).double().numpy()
    elif kind == "int":    # coarse ties
        z = np.round(z)
    elif kind == "ninf":
        z[:, rng.integers(0, V, V // 3)] = -np.inf
    return z


@pytest.mark.parametrize("temperature,top_k,top_p", [(0.7, None, 0.9), (1.0, None, 0.9), (0.7, None, 0.5),
                                                     (1.3, 40, 0.95), (0.5, 5, None), (0.9, None, 0.99)])
def test_sampling_probs_equal_transformers_warpers(temperature, top_k, top_p):
    """Same kept tokens as transformers on every row, probabilities equal to float32 rounding."""
    rng = np.random.default_rng(11)
    for trial in range(24):
        V = int(rng.choice([50, 3000, 151_936 if trial % 8 == 0 else 20_000]))
        z = _rows(rng, V, ("bf16", "int", "ninf", "plain")[trial % 4])
        got = sampling_probs(z, temperature, top_k=top_k, top_p=top_p)
        ref = transformers_probs(z, temperature, top_k, top_p)
        assert ((got > 0) == (ref > 0)).all(), (trial, V)
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6)


def test_a_tie_at_the_cut_is_decided_by_transformers_sort():
    """Three tokens of one score straddle the top-p cut: the float64 order cannot say which survive;
    the row goes to transformers' warper, whose (unstable) sort decides, and we keep what it keeps."""
    V = 5000
    z = np.full(V, -30.0)
    z[[10, 20]] = 5.0
    z[[3, 4000, 77]] = 3.0             # the tie: the cut falls inside this group
    s = z.astype(np.float32)
    p = np.exp(z - z.max())
    p /= p.sum()
    mass_top = p[[10, 20]].sum()
    top_p = mass_top + 1.5 * p[3]      # needs two of the three tied tokens
    assert proc._fast_cut(s, p, top_p, 1) is None
    ref = np.isfinite(TopPLogitsWarper(top_p)(None, torch.tensor(s)[None])[0].numpy())
    assert ref[[3, 4000, 77]].sum() == 2
    np.testing.assert_array_equal(top_p_keep(s, p, top_p), ref)
    np.testing.assert_array_equal(sampling_probs(z, 1.0, top_p=top_p) > 0, ref)


def test_a_cut_within_rounding_goes_to_transformers():
    """A cumulative mass within CUT_MARGIN of top_p: float32 rounding decides, so transformers does."""
    z = np.log(np.array([0.5, 0.4, 0.1]))
    s, p = z.astype(np.float32), np.array([0.5, 0.4, 0.1])
    assert proc._fast_cut(s, p, 0.9, 1) is None
    assert proc._fast_cut(s, p, 0.85, 1) is not None
    for top_p in (0.9, 0.9 + 1e-9, 0.5):
        ref = np.isfinite(TopPLogitsWarper(top_p)(None, torch.tensor(s)[None])[0].numpy())
        np.testing.assert_array_equal(top_p_keep(s, p, top_p), ref)


def test_min_tokens_to_keep_and_the_top_token():
    """top_p below the largest probability keeps the top token alone (min_tokens_to_keep = 1), and
    min_tokens_to_keep = 3 keeps three, as transformers does."""
    z = np.array([2.0, 1.0, 0.5, 0.0, -1.0])
    s = z.astype(np.float32)
    p = np.exp(z) / np.exp(z).sum()
    for k in (1, 3):
        ref = np.isfinite(TopPLogitsWarper(0.05, min_tokens_to_keep=k)(None, torch.tensor(s)[None])[0].numpy())
        np.testing.assert_array_equal(top_p_keep(s, p, 0.05, k), ref)
        assert ref.sum() == k


def test_the_fast_path_does_the_work():
    """On rows shaped like a language model's (a few dozen plausible tokens above a long bfloat16
    tail; on the default pair's real rows at T = 0.7, top-p 0.9: 2 of 160 rows) the float64 cut
    decides most rows, and transformers' sort is called only for the ambiguous ones."""
    rng = np.random.default_rng(3)
    V = 151_936
    z = rng.normal(0.0, 1.5, (20, V))
    for r in range(20):
        z[r, rng.choice(V, 40, replace=False)] += rng.uniform(8, 16, 40)
    z = torch.tensor(z, dtype=torch.float32).to(torch.bfloat16).double().numpy()
    calls = []
    real = proc.transformers_top_p_keep

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)
    proc.transformers_top_p_keep = counting
    try:
        got = sampling_probs(z, 0.7, top_p=0.9)
    finally:
        proc.transformers_top_p_keep = real
    assert len(calls) <= 5, len(calls)
    np.testing.assert_array_equal(got > 0, transformers_probs(z, 0.7, None, 0.9) > 0)


def test_greedy_is_the_first_argmax():
    z = np.array([[1.0, 3.0, 3.0, 0.0]])
    np.testing.assert_array_equal(sampling_probs(z, 0.0), [[0.0, 1.0, 0.0, 0.0]])
    assert int(torch.tensor(z).argmax()) == 1


def test_generate_samples_from_these_distributions():
    """End to end: transformers' generate(do_sample=True, temperature=0.7, top_p=0.9) reports the
    processed scores (output_scores) next to the raw logits (output_logits); sampling_probs of the
    raw logits equals the softmax of the processed scores at every step."""
    from test_validate_models import tiny_model
    m = tiny_model()
    torch.manual_seed(0)
    ids = torch.tensor([[1, 4, 10, 11, 12, 2, 1, 5]])
    out = m.generate(ids, do_sample=True, temperature=0.7, top_p=0.9, top_k=None, max_new_tokens=12,
                     output_scores=True, output_logits=True, return_dict_in_generate=True, pad_token_id=0)
    for raw, processed in zip(out.logits, out.scores):
        got = sampling_probs(raw.double().numpy(), 0.7, top_p=0.9)
        ref = processed.double().softmax(-1).numpy()
        assert ((got > 0) == (ref > 0)).all()
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6)


def test_a_mass_within_rounding_just_past_the_candidates_is_ambiguous():
    """The 1,024 candidates carry top_p + 5e-6: the next token's cumulative mass lies within the
    rounding margin of the cut, so the row is transformers' to decide, not the candidates'."""
    V, m = 2000, 1024
    p = np.empty(V)
    p[:m] = (0.9 + 5e-6) / m
    p[m:] = (1 - 0.9 - 5e-6) / (V - m)
    s = np.log(p).astype(np.float32)
    q = np.exp(s.astype(np.float64) - s.max())
    q /= q.sum()
    assert abs(np.sort(q)[::-1][:m].sum() - 0.9) < proc.CUT_MARGIN
    assert proc._fast_cut(s, q, 0.9, 1) is None
    ref = np.isfinite(TopPLogitsWarper(0.9)(None, torch.tensor(s)[None])[0].numpy())
    np.testing.assert_array_equal(top_p_keep(s, q, 0.9), ref)
