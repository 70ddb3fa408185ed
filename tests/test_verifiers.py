"""speculative_verify on explicit distributions: input errors and the emitted law."""
import numpy as np
import pytest

from spectheory.judge import stats
from spectheory.distributions import DistributionError
from spectheory.exact import sd as ex
from spectheory.pairs import pair_from_tables
from spectheory.rng import sample_index
from spectheory.rules.sd import BROKEN_NO_BONUS, BROKEN_RESIDUAL_P, BROKEN_SWAPPED_RATIO, STANDARD
from spectheory.verifiers.sd import Verdict, speculative_verify, speculative_verify_unchecked

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


# Position-dependent rows (γ = 2): the target's rows differ from position to position and
# from the draft's, and the bonus row P[2] is far from every q row, so reading the ratio from
# another position's row, drawing the bonus from q, or a wrong residual all move the block law.
# The residual at position 0 has two tokens and differs from norm(max(P[0] − Q[1], 0)).
P_ROWS = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.1, 0.1, 0.8]])
Q_ROWS = np.array([[0.3, 0.2, 0.5], [0.2, 0.5, 0.3]])


def _block_law(P, Q, residual_p=False):
    """Exact law of the emitted block, written out independently of the library: draft
    x_i ~ Q[i]; accept w.p. min(1, P[i,x]/Q[i,x]); on the first rejection emit
    y ~ norm(max(P[i] − Q[i], 0)) (``residual_p``: y ~ P[i], the broken control); after γ
    accepts emit a bonus y ~ P[γ]."""
    gamma, V = Q.shape
    law = {}

    def walk(i, prefix, prob):
        if i == gamma:
            for y in range(V):
                law[prefix + (y,)] = law.get(prefix + (y,), 0.0) + prob * P[gamma, y]
            return
        res = np.maximum(P[i] - Q[i], 0.0)
        reject = res.sum()  # = Σ_x Q(x)(1 − min(1, P/Q))
        dist = P[i] if residual_p else res / max(reject, 1e-300)
        for y in range(V):
            if reject > 0 and dist[y] > 0:
                law[prefix + (y,)] = law.get(prefix + (y,), 0.0) + prob * reject * dist[y]
        for x in range(V):
            acc = Q[i, x] * min(1.0, P[i, x] / Q[i, x]) if Q[i, x] > 0 else 0.0
            if acc > 0:
                walk(i + 1, prefix + (x,), prob * acc)

    walk(0, (), 1.0)
    return law


def _block_counts(rule, n, seed, law):
    rng = np.random.default_rng(seed)
    keys = {k: j for j, k in enumerate(law)}
    counts = np.zeros(len(keys) + 1)  # last cell: blocks the exact law calls impossible
    drafts = np.stack([rng.choice(3, size=n, p=q) for q in Q_ROWS], axis=1)
    for x in drafts:
        v = speculative_verify(P_ROWS, Q_ROWS, x, seed=rng, rule=rule)
        assert v.tau == len(v.tokens) - 1 and tuple(v.tokens[:v.tau]) == tuple(x[:v.tau])
        counts[keys.get(v.tokens, len(keys))] += 1
    return counts


def test_block_law_with_position_dependent_rows():
    """γ = 2, rows that differ by position: chi-square GOF of the whole emitted block
    (accepted drafts, then correction or bonus; 39 possible blocks, pooled to ≥ 5 expected)
    over 8,000 verifications against the exact law written out above; α = 1e-3; power 0.9 at
    Cohen's w ≤ 0.09 (asserted). Control: the residual=norm(p) rule, whose exact block law is
    ≥ 0.05 away in TV, must be rejected by the same test."""
    law = _block_law(P_ROWS, Q_ROWS)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
    probs = np.append(list(law.values()), 0.0)
    ok = stats.chisquare_gof("t", _block_counts(STANDARD, 8_000, 1, law), probs, alpha=1e-3, tolerance_w=0.09)
    assert ok.outcome == "pass", ok
    assert ok.detectable <= 0.09
    bad = stats.chisquare_gof("t", _block_counts(BROKEN_RESIDUAL_P, 8_000, 2, law), probs, alpha=1e-3,
                              tolerance_w=0.09)
    assert bad.outcome == "fail", bad
    # the control's deviation is real: its exact block law is ≥ 0.05 away in TV
    broken = _block_law(P_ROWS, Q_ROWS, residual_p=True)
    assert 0.5 * sum(abs(broken.get(k, 0.0) - law.get(k, 0.0)) for k in {*law, *broken}) >= 0.05


def test_first_emitted_token_follows_p():
    """γ = 1, identical rows at both positions, first emitted token only: chi-square GOF
    (3 cells), n = 6,000, α = 1e-3: detectable w ≈ 0.06 at power 0.9 (asserted ≤ 0.07).
    Control: residual=norm(p) (exact first-token TV to p = 0.12) must be rejected."""
    def counts(rule, seed):
        rng = np.random.default_rng(seed)
        out = [speculative_verify([P, P], [Q], [x], seed=rng, rule=rule).tokens[0]
               for x in rng.choice(3, size=6_000, p=Q)]
        return np.bincount(out, minlength=3)
    ok = stats.chisquare_gof("t", counts(STANDARD, 1), P, alpha=1e-3, tolerance_w=0.07)
    assert ok.outcome == "pass" and ok.detectable <= 0.07, ok
    bad = stats.chisquare_gof("t", counts(BROKEN_RESIDUAL_P, 1), P, alpha=1e-3, tolerance_w=0.07)
    assert bad.outcome == "fail", bad
    pair = pair_from_tables(P, Q)
    assert 0.5 * np.abs(ex.first_tokens_distribution(pair, 1, 1, BROKEN_RESIDUAL_P) - P).sum() > 0.1


def test_empty_draft_emits_one_token_from_p():
    """γ = 0: no draft, one token from p[0]. Point mass: always that token. Otherwise a
    chi-square GOF (3 cells, n = 4,000, α = 1e-3, detectable w ≈ 0.075) against p[0]."""
    empty_q = np.zeros((0, 3))
    none = np.zeros(0, dtype=int)
    for seed in range(20):
        assert speculative_verify([[0.0, 1.0, 0.0]], empty_q, none, seed=seed) == Verdict(0, (1,))
    rng = np.random.default_rng(3)
    toks = [speculative_verify([P], empty_q, none, seed=rng).tokens for _ in range(4_000)]
    assert all(len(t) == 1 for t in toks)
    ev = stats.chisquare_gof("t", np.bincount([t[0] for t in toks], minlength=3), P, alpha=1e-3, tolerance_w=0.08)
    assert ev.outcome == "pass", ev


def test_sample_index_is_generator_choice():
    """sample_index(rng, p) is rng.choice(V, p=p) without its checks: the same index and the
    same generator state afterwards, for peaked, flat, sparse and one-hot rows."""
    rng = np.random.default_rng(0)
    for trial in range(300):
        V = int(rng.choice([1, 2, 7, 5000]))
        z = rng.normal(0.0, float(rng.choice([0.1, 3.0, 20.0])), V)
        if trial % 3 == 0:
            z[rng.random(V) < 0.7] = -np.inf
            z[rng.integers(V)] = 0.0
        p = np.exp(z - z.max())
        p /= p.sum()
        seed = int(rng.integers(2**32))
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        assert [int(a.choice(V, p=p)) for _ in range(3)] == [sample_index(b, p) for _ in range(3)]
        assert a.random() == b.random()


@pytest.mark.parametrize("rule", [STANDARD, BROKEN_RESIDUAL_P, BROKEN_SWAPPED_RATIO, BROKEN_NO_BONUS],
                         ids=lambda r: r.name)
def test_unchecked_entry_gives_the_checked_verdict(rule):
    """speculative_verify_unchecked (spectheory.validate.specdec's entry, no validation, lazy row
    normalisation) returns the same verdict as speculative_verify and leaves the generator
    in the same state, on rows that sum to 1 only up to rounding (softmax of random logits)."""
    rng = np.random.default_rng(1)
    for trial in range(200):
        gamma, V = int(rng.integers(1, 5)), int(rng.choice([3, 50, 4000]))
        scale = float(rng.choice([0.3, 2.0, 8.0]))
        zp, zq = rng.normal(0, scale, (gamma + 1, V)), rng.normal(0, scale, (gamma, V))
        p, q = np.exp(zp - zp.max(1, keepdims=True)), np.exp(zq - zq.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        q /= q.sum(1, keepdims=True)
        if trial % 4 == 0:
            q[:, 1:] = p[:gamma, 1:]  # near-equal rows: frequent acceptance and bonus tokens
            q /= q.sum(1, keepdims=True)
        x = np.array([rng.choice(V, p=row) for row in q])
        seed = int(rng.integers(2**32))
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        assert speculative_verify(p, q, x, seed=a, rule=rule) == speculative_verify_unchecked(p, q, x, b, rule=rule)
        assert a.random() == b.random()
