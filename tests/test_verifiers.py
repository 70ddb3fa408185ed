"""speculative_verify on explicit distributions: input errors and the emitted law."""
import numpy as np
import pytest

from sims import stats
from spectheory.distributions import DistributionError
from spectheory.exact import sd as ex
from spectheory.pairs import pair_from_tables
from spectheory.rules.sd import BROKEN_RESIDUAL_P, STANDARD
from spectheory.verifiers.sd import speculative_verify

P = np.array([0.6, 0.3, 0.1])
Q = np.array([0.2, 0.3, 0.5])


@pytest.mark.parametrize("p, q, x, message", [
    ([P, P], [Q], [3], "draft token ids"),
    ([P, P], [Q], [0.5], "integer token ids"),
    ([P, P], [[0.5, 0.5, 0.0]], [2], "has q = 0"),
    ([P], [Q], [0], "p 1"),
    ([P, P], [[0.5, 0.5]], [0], "mismatched vocabularies"),
    ([P, [0.5, np.nan, 0.5]], [Q], [0], "NaN"),
    ([P, P], [[0.2, 0.3, 0.6]], [0], "does not sum to 1"),
])
def test_bad_input(p, q, x, message):
    with pytest.raises(DistributionError, match=message):
        speculative_verify(p, q, x, seed=0)


def _emitted_first_token(rule, n, seed):
    """Draw the draft token from q, verify, record the first emitted token (γ = 1)."""
    rng = np.random.default_rng(seed)
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        x = rng.choice(3, p=Q)
        out[i] = speculative_verify([P, P], [Q], [x], seed=rng, rule=rule).tokens[0]
    return np.bincount(out, minlength=3)


def test_first_emitted_token_follows_p():
    """Chi-square GOF (3 cells), n = 20,000, α = 1e-3: detectable w ≈ 0.032 at power 0.9
    (the tolerance 0.05). Control: the residual=norm(p) rule (exact first-token TV to p = 0.12)
    must be rejected by the same test."""
    ok = stats.chisquare_gof("t", _emitted_first_token(STANDARD, 20_000, 1), P, alpha=1e-3, tolerance_w=0.05)
    assert ok.outcome == "pass", ok
    bad = stats.chisquare_gof("t", _emitted_first_token(BROKEN_RESIDUAL_P, 20_000, 1), P, alpha=1e-3,
                              tolerance_w=0.05)
    assert bad.outcome == "fail", bad
    pair = pair_from_tables(P, Q)
    assert 0.5 * np.abs(ex.first_tokens_distribution(pair, 1, 1, BROKEN_RESIDUAL_P) - P).sum() > 0.1


def test_empty_draft_emits_one_token_from_p():
    v = speculative_verify([P], np.zeros((0, 3)) + 1 / 3, np.zeros(0, dtype=int), seed=0)
    assert v.tau == 0 and len(v.tokens) == 1
