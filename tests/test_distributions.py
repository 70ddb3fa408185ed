"""Validated constructors and divergences: bad input fails with a message naming the
problem; divergences are exact and stable at zero entries."""
import numpy as np
import pytest

from spectheory.distributions import (DistributionError, check_distribution, check_pair, normalize,
                                      residual, softmax)
from spectheory.divergences import entropy, harmonic_mean_term, kl_divergence, overlap, total_variation


@pytest.mark.parametrize("bad, message", [
    ([0.5, np.nan, 0.5], "NaN"),
    ([0.5, -0.1, 0.6], "negative"),
    ([0.5, 0.6], "does not sum to 1"),
    ([0.5, np.inf], "infinite"),
    ([], "empty vocabulary"),
    (0.3, "scalar"),
])
def test_bad_distributions_are_rejected_with_a_clear_message(bad, message):
    with pytest.raises(DistributionError, match=message):
        check_distribution(bad)


def test_row_is_named_in_a_table_error():
    with pytest.raises(DistributionError, match=r"row \(1,\)"):
        check_distribution([[0.5, 0.5], [0.2, 0.2]])


def test_distribution_is_renormalised_within_tolerance():
    p = check_distribution([0.5, 0.5 + 1e-9])
    assert p.sum() == pytest.approx(1.0, abs=1e-15)


def test_mismatched_vocabularies():
    with pytest.raises(DistributionError, match="mismatched vocabularies: p has V=2, q has V=3"):
        check_pair([0.5, 0.5], [0.2, 0.3, 0.5])


def test_softmax_stable_and_masked():
    p = softmax([1000.0, 1000.0, -np.inf])
    np.testing.assert_allclose(p, [0.5, 0.5, 0.0])
    with pytest.raises(DistributionError, match="NaN"):
        softmax([0.0, np.nan])
    with pytest.raises(DistributionError, match="every logit is -inf"):
        softmax([-np.inf, -np.inf])
    with pytest.raises(DistributionError, match="temperature"):
        softmax([0.0, 1.0], temperature=0)


def test_normalize_rejects_zero_mass():
    with pytest.raises(DistributionError, match="zero total mass"):
        normalize([0.0, 0.0])


def test_divergences_on_a_worked_example():
    p = np.array([0.7, 0.3, 0.0])
    q = np.array([0.4, 0.0, 0.6])
    assert overlap(p, q) == pytest.approx(0.4)
    assert total_variation(p, q) == pytest.approx(0.6)
    assert overlap(p, q) == pytest.approx(1 - total_variation(p, q))
    assert kl_divergence(p, q) == np.inf  # p puts mass where q has none
    assert kl_divergence(q, p) == np.inf
    assert harmonic_mean_term(p, q) == pytest.approx(0.7 * 0.4 / 1.1)
    assert entropy(p, base=2) == pytest.approx(-(0.7 * np.log2(0.7) + 0.3 * np.log2(0.3)))
    assert kl_divergence(p, p) == 0.0


def test_divergence_identities_on_random_rows():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(7), size=100)
    q = rng.dirichlet(np.ones(7), size=100)
    np.testing.assert_allclose(overlap(p, q), 1 - total_variation(p, q), atol=1e-15)
    assert np.all(kl_divergence(p, q) >= 0)
    # harmonic-mean term ≤ overlap (min(a,b) ≥ ab/(a+b)) — the ersd.lemma3_1 ordering
    assert np.all(harmonic_mean_term(p, q) <= overlap(p, q) + 1e-15)


def test_residual_zero_mass_falls_back_to_p():
    p = np.array([0.2, 0.8])
    np.testing.assert_array_equal(residual(p, p), p)
    np.testing.assert_allclose(residual([0.7, 0.3], [0.4, 0.6]), [1.0, 0.0])


def test_softmax_temperature_and_divergence_bases():
    z = np.array([1.0, 2.0, -0.5])
    np.testing.assert_allclose(softmax(z, temperature=2.0), softmax(z / 2.0), rtol=1e-14)
    e = np.exp(z / 0.5)
    np.testing.assert_allclose(softmax(z, temperature=0.5), e / e.sum(), rtol=1e-14)
    p, q = np.array([0.7, 0.3]), np.array([0.4, 0.6])
    nats = 0.7 * np.log(0.7 / 0.4) + 0.3 * np.log(0.3 / 0.6)
    assert kl_divergence(p, q) == pytest.approx(nats, rel=1e-14)
    assert kl_divergence(p, q, base=2) == pytest.approx(nats / np.log(2), rel=1e-14)
    assert entropy(p) == pytest.approx(-(0.7 * np.log(0.7) + 0.3 * np.log(0.3)), rel=1e-14)
