"""Copy this file into your test suite and replace `verify` by an import of your sampler.

`assert_lossless` runs spectheory's conformance checks on it (seeded: the same verdict on every
machine) and fails the test with a one-paragraph summary — the kind of failure (law, boundary,
crash) — and one rerunnable line of Python per failure. `assert_standard` also asks for standard
speculative sampling (Leviathan et al. 2023, Alg. 1). See docs/conformance.md.
"""
import numpy as np
import pytest

from spectheory.testing import assert_lossless, assert_standard

#: the work of each check: two instances (a Markov pair, disjoint supports), 2 drafted tokens
SCOPE = dict(instances=("markov1-V3-mix0.4", "iid-V3-disjoint"), gammas=(2,))


def verify(p, q, draft, rng):
    """Your sampler: p (γ+1, V) target probabilities, q (γ, V) draft probabilities, the γ
    drafted ids and a numpy Generator -> the emitted ids (accepted prefix + one token)."""
    for i, x in enumerate(draft):
        if rng.random() < min(1.0, p[i, x] / q[i, x]):
            continue
        r = np.maximum(p[i] - q[i], 0.0)
        r = r if r.sum() > 0 else p[i]  # p = q up to rounding: a zero-mass residual
        return list(draft[:i]) + [int(rng.choice(len(r), p=r / r.sum()))]
    return list(draft) + [int(rng.choice(p.shape[1], p=p[-1]))]


def verify_le(p, q, draft, rng):
    """The same with `u <= ratio`: lossless in law, wrong when u = 0.0 exactly (2^-53 per draw)."""
    for i, x in enumerate(draft):
        if rng.random() <= min(1.0, p[i, x] / q[i, x]):
            continue
        r = np.maximum(p[i] - q[i], 0.0)
        r = r if r.sum() > 0 else p[i]  # p = q up to rounding: a zero-mass residual
        return list(draft[:i]) + [int(rng.choice(len(r), p=r / r.sum()))]
    return list(draft) + [int(rng.choice(p.shape[1], p=p[-1]))]


def test_my_sampler_is_lossless():
    assert_lossless(verify, budget_s=120, **SCOPE)


def test_my_sampler_is_standard_speculative_sampling():
    assert_standard(verify, budget_s=120, **SCOPE)


def test_a_boundary_bug_fails_with_its_kind_and_a_rerunnable_call():
    with pytest.raises(AssertionError, match=r"LOSSLESS: fails \[boundary\]") as err:
        assert_lossless(verify_le, **SCOPE)
    assert "spectheory.conformance.rerun(" in str(err.value)
