"""Closed forms and small exact models behind the ECSV claims (``ecsv.map``,
``ecsv.majority``, ``ecsv.prefix_length``, ``ecsv.budget``).

Source: "Error-Correcting Speculative Decoding via Branch Voting" (ECSV), anonymous
manuscript under revision, 2026. ``p`` target (verifier), ``q`` draft, ``B`` branches.

Two models are kept apart:

* **The paper's channel model** (its "coding-theoretic view"): the true symbol ``y`` has a
  prior ``π``; branch b reports ``t̂_b = y`` with probability ``1 − ε_b``, otherwise a token
  uniform over the other ``V − 1``; branches independent given y (or, for the
  counterexamples, correlated: :func:`channel_law` with ``rho``). Here MAP decoding and
  the weighted vote with ``log((1−ε)(V−1)/ε)`` are compared (they agree exactly when π is
  uniform), and the majority sentences are given precise readings.
* **The drafting model** (what speculative decoding does): branches are samples from the
  drafter q, *independent* of the verifier's sample ``y ~ p`` given the context, so
  ``P(t̂ = y) = Σ_t q(t) p(t)`` and a fused token ``t*`` matches with probability
  ``p(t*)``. :func:`vote_match_iid` gives the plurality vote's match probability exactly.

Everything here is exact (enumeration in float64) and small: V ≤ 8, B ≤ 8.
"""
from __future__ import annotations

import itertools
from functools import lru_cache
from math import factorial

import numpy as np

from ..checks import check_int, check_real, check_real_array
from ..distributions import check_distribution, check_pair

#: Largest joint law (V^{B+1} cells) the channel-model functions enumerate.
MAX_CELLS = 1 << 22
TIE_TOL = 1e-12


# --- the channel model -------------------------------------------------------------------------

def _check_eps(eps, V: int) -> np.ndarray:
    e = check_real_array(np.atleast_1d(eps), "eps (branch error rates)", lo=0.0, hi=1.0)
    if e.ndim != 1 or e.size == 0:
        raise ValueError(f"eps must be a non-empty 1-D vector of error rates, got {eps!r}")
    if ((e <= 0) | (e >= 1)).any():
        raise ValueError(f"eps must lie in the open interval (0, 1) (the weights log((1−ε)(V−1)/ε) are "
                         f"infinite at 0 and 1), got {eps!r}")
    return e


def _check_V(V) -> int:
    return check_int(V, "V (vocabulary size)", min=2)


def _check_size(V: int, B: int) -> None:
    if V ** (B + 1) > MAX_CELLS:
        raise ValueError(f"V^(B+1) = {V}^{B + 1} cells is too many to enumerate (limit {MAX_CELLS})")


def map_weights(eps, V: int) -> np.ndarray:
    """The paper's MAP weights ``log((1 − ε_b)(V − 1)/ε_b)`` (natural log)."""
    V = _check_V(V)
    e = _check_eps(eps, V)
    return np.log((1.0 - e) * (V - 1) / e)


def binary_weights(eps, V: int | None = None) -> np.ndarray:
    """``log((1 − ε)/ε)``: the two-symbol weights, a plausible slip for V > 2 (control)."""
    e = _check_eps(eps, 2)
    return np.log((1.0 - e) / e)


def channel_law(eps, V: int, prior=None, rho: float = 0.0) -> np.ndarray:
    """Joint law ``P(y, t̂_1, …, t̂_B)`` (an array of shape (V,)*(B+1)).

    With probability ``1 − rho`` branches report independently through their symmetric
    channels (error ``ε_b``, uniform over the other V − 1 tokens); with probability ``rho``
    all branches report one common token, ``y`` with probability ``1 − mean(ε)`` else a common
    wrong token uniform over the other V − 1 (a shared drafter bias). ``prior``: law of y
    (default uniform)."""
    V = _check_V(V)
    e = _check_eps(eps, V)
    B = e.size
    _check_size(V, B)
    rho = check_real(rho, "rho (correlation)", lo=0.0, hi=1.0)
    pi = np.full(V, 1.0 / V) if prior is None else check_distribution(prior, name="prior")
    if pi.shape != (V,):
        raise ValueError(f"prior must have length V = {V}, got shape {pi.shape}")
    eye = np.eye(V)
    law = pi.reshape((V,) + (1,) * B).copy()
    for b in range(B):
        ch = (1.0 - e[b]) * eye + e[b] / (V - 1) * (1.0 - eye)   # ch[y, t]
        shape = [1] * (B + 1)
        shape[0] = V
        shape[b + 1] = V
        law = law * ch.reshape(shape)
    if rho > 0:
        eb = float(e.mean())
        common = np.zeros((V,) * (B + 1))
        for y in range(V):
            for z in range(V):
                idx = (y,) + (z,) * B
                common[idx] = pi[y] * ((1.0 - eb) if z == y else eb / (V - 1))
        law = (1.0 - rho) * law + rho * common
    return law


def pattern_law(pattern_probs, V: int, prior=None) -> np.ndarray:
    """Joint law ``P(y, t̂_1, …, t̂_B)`` of correlated branches: an error pattern ``e ∈ {0,1}^B``
    is drawn from ``pattern_probs`` (an array of shape (2,)*B, 1 = branch errs) independently of
    y, and every erring branch reports the *same* wrong token, uniform over the other V − 1
    (errors that coalesce, the paper's "shared drafter bias")."""
    V = _check_V(V)
    pp = np.asarray(pattern_probs, dtype=np.float64)
    B = pp.ndim
    if B == 0 or pp.shape != (2,) * B or (pp < 0).any() or abs(pp.sum() - 1.0) > 1e-9:
        raise ValueError("pattern_probs must be a probability array of shape (2,)*B")
    _check_size(V, B)
    pi = np.full(V, 1.0 / V) if prior is None else check_distribution(prior, name="prior")
    law = np.zeros((V,) * (B + 1))
    for pat in itertools.product((0, 1), repeat=B):
        w = pp[pat]
        if w == 0:
            continue
        for y in range(V):
            if not any(pat):
                law[(y,) + (y,) * B] += pi[y] * w
                continue
            for z in range(V):
                if z == y:
                    continue
                idx = (y,) + tuple(z if e else y for e in pat)
                law[idx] += pi[y] * w / (V - 1)
    return law


def coalescing_counterexample() -> dict:
    """B = 3 branches, each wrong with probability 0.3 (ε < 0.5 for every branch), errors in
    pairs on a common wrong token: patterns 000 w.p. 0.55 and 110, 011, 101 w.p. 0.15 each.
    The majority (equal to the MAP-from-marginals vote, the weights being equal) is right
    with probability 0.55 < 0.7, any single branch's accuracy."""
    pp = np.zeros((2, 2, 2))
    pp[0, 0, 0] = 0.55
    pp[1, 1, 0] = pp[0, 1, 1] = pp[1, 0, 1] = 0.15
    law = pattern_law(pp, 2)
    return {"pattern_probs": pp, "V": 2, "law": law, "branch_accuracy": branch_accuracy(law),
            "vote_accuracy": accuracy(law, vote_sets(np.ones(3), 2))}


def _obs_index(V: int, B: int) -> np.ndarray:
    """All observation tuples (V^B, B), first branch most significant."""
    return np.array(list(itertools.product(range(V), repeat=B)), dtype=np.int64).reshape(-1, B)


def _argmax_sets(scores: np.ndarray) -> np.ndarray:
    m = scores.max(axis=-1, keepdims=True)
    return scores >= m - TIE_TOL * np.maximum(1.0, np.abs(m))


def map_sets(law: np.ndarray) -> np.ndarray:
    """For every observation tuple (rows, first branch most significant) the set of y that
    maximise the brute-force posterior ``P(y | t̂) ∝ P(y, t̂)`` (boolean (V^B, V)); a tuple of
    zero probability gets every y."""
    law = np.asarray(law, dtype=np.float64)
    V = law.shape[0]
    post = np.moveaxis(law, 0, -1).reshape(-1, V)
    tot = post.sum(axis=1, keepdims=True)
    post = np.where(tot > 0, post / np.where(tot > 0, tot, 1.0), 1.0 / V)
    return _argmax_sets(post)


def vote_scores(weights, V: int) -> np.ndarray:
    """``Σ_b w_b 1[t̂_b = y]`` for every observation tuple and every y (V^B, V)."""
    V = _check_V(V)
    w = check_real_array(np.atleast_1d(weights), "weights")
    obs = _obs_index(V, w.size)
    return (w[None, :, None] * (obs[:, :, None] == np.arange(V))).sum(axis=1)


def vote_sets(weights, V: int) -> np.ndarray:
    """The argmax sets of the weighted vote over all V tokens (V^B, V)."""
    return _argmax_sets(vote_scores(weights, V))


def map_vote_mismatch(eps, V: int, prior=None, weights=None) -> dict:
    """Compare MAP (brute-force posterior of the independent channel model with ``prior``)
    with the weighted vote (``weights``, default the MAP weights) on every observation tuple.
    Returns ``{"n_tuples", "n_mismatch", "worst": (observation, map set, vote set, posterior
    gap)}``: the posterior gap is ``P(MAP y | t̂) − P(vote's best y | t̂)``, how much the vote
    loses on its worst tuple (0 when the sets agree)."""
    V = _check_V(V)
    e = _check_eps(eps, V)
    law = channel_law(e, V, prior)
    ms = map_sets(law)
    w = map_weights(e, V) if weights is None else check_real_array(np.atleast_1d(weights), "weights")
    vs = vote_sets(w, V)
    post = np.moveaxis(law, 0, -1).reshape(-1, V)
    post = post / post.sum(axis=1, keepdims=True)
    best = post.max(axis=1)
    vote_best = np.where(vs, post, np.inf).min(axis=1)  # the vote's worst tie-break choice
    gap = best - vote_best
    bad = np.flatnonzero((ms != vs).any(axis=1))
    worst = None
    if bad.size:
        i = int(bad[np.argmax(gap[bad])])
        obs = tuple(int(x) for x in _obs_index(V, e.size)[i])
        worst = (obs, tuple(np.flatnonzero(ms[i]).tolist()), tuple(np.flatnonzero(vs[i]).tolist()), float(gap[i]))
    return {"n_tuples": int(ms.shape[0]), "n_mismatch": int(bad.size), "worst": worst,
            "max_gap": float(gap.max(initial=0.0))}


def accuracy(law: np.ndarray, sets: np.ndarray) -> float:
    """``P(decision = y)`` of a decision given as argmax sets over observation tuples, ties
    broken uniformly at random within the set."""
    law = np.asarray(law, dtype=np.float64)
    V = law.shape[0]
    joint = np.moveaxis(law, 0, -1).reshape(-1, V)       # (V^B, V): P(t̂, y)
    sets = np.asarray(sets, dtype=bool)
    frac = sets / sets.sum(axis=1, keepdims=True)
    return float((joint * frac).sum())


def branch_accuracy(law: np.ndarray) -> np.ndarray:
    """``P(t̂_b = y)`` for every branch."""
    law = np.asarray(law, dtype=np.float64)
    B = law.ndim - 1
    V = law.shape[0]
    out = np.empty(B)
    for b in range(B):
        m = law.sum(axis=tuple(i for i in range(1, B + 1) if i != b + 1))  # (V, V): y, t̂_b
        out[b] = np.trace(m.reshape(V, V))
    return out


def vote_accuracy(eps, V: int, weights=None, prior=None, rho: float = 0.0) -> float:
    """Probability that the weighted vote (default MAP weights; ``"uniform"`` for an
    unweighted majority) equals y under :func:`channel_law`."""
    e = _check_eps(eps, _check_V(V))
    if weights is None:
        w = map_weights(e, V)
    elif isinstance(weights, str):
        if weights != "uniform":
            raise ValueError(f"weights must be None, 'uniform' or a vector, got {weights!r}")
        w = np.ones(e.size)
    else:
        w = check_real_array(np.atleast_1d(weights), "weights")
    return accuracy(channel_law(e, V, prior, rho), vote_sets(w, V))


def bayes_accuracy(eps, V: int, prior=None, rho: float = 0.0) -> float:
    """Accuracy of MAP decoding (the best any decision rule achieves) under :func:`channel_law`."""
    law = channel_law(eps, V, prior, rho)
    return accuracy(law, map_sets(law))


# --- majority sentences -------------------------------------------------------------------------

def position_scores(tokens, weights, q_rows=None, lam: float = 0.0) -> np.ndarray:
    """The fusion score of every token at one position: ``S(t) = Σ_b w_b 1[t̂_b = t] +
    λ Σ_b w_b q_b(t)`` (tokens (B,), weights (B,), q_rows (B, V))."""
    w = check_real_array(np.atleast_1d(weights), "weights", lo=0.0)
    t = np.asarray(tokens)
    lam = check_real(lam, "lam (λ)", lo=0.0)
    if q_rows is None:
        if lam > 0:
            raise ValueError("the soft vote (λ > 0) needs q_rows")
        V = int(t.max()) + 1
        q = np.zeros((t.size, V))
    else:
        q = check_distribution(q_rows, name="q_rows")
        V = q.shape[-1]
    if t.shape != w.shape or q.shape[0] != t.size:
        raise ValueError(f"tokens, weights and q_rows must describe the same B branches, got {t.shape}, "
                         f"{w.shape}, {q.shape}")
    s = (w[:, None] * (t[:, None] == np.arange(V))).sum(axis=0)
    return s + lam * (w[:, None] * q).sum(axis=0)


def soft_majority_counterexample() -> dict:
    """Smallest instance where more than half of the weight is on the true token y = 0 and
    the soft vote (λ = 0.5, the ECSV-soft default) picks another token: B = 3 equal weights,
    two branches on 0 (share 2/3), one on 1; every row puts 0.9 on token 1."""
    tokens = np.array([0, 0, 1])
    w = np.ones(3)
    q = np.array([[0.05, 0.9, 0.05]] * 3)
    s = position_scores(tokens, w, q, 0.5)
    return {"tokens": tokens, "weights": w, "q_rows": q, "lam": 0.5, "share_on_truth": 2 / 3,
            "scores": s, "fused": int(np.argmax(s)), "truth": 0}


# --- the drafting model --------------------------------------------------------------------------

def _compositions(B: int, V: int):
    """Every vector of V non-negative counts summing to B (stars and bars), in lexicographic
    order of the bar positions."""
    return compositions(B, V)


@lru_cache(maxsize=64)
def compositions(B: int, V: int) -> np.ndarray:
    """All (C(B+V−1, V−1), V) count vectors of B draws over V tokens (read-only)."""
    if V == 1:
        out = np.array([[B]], dtype=np.int64)
    else:
        bars = np.array(list(itertools.combinations(range(B + V - 1), V - 1)), dtype=np.int64).reshape(-1, V - 1)
        edges = np.concatenate([np.full((bars.shape[0], 1), -1), bars, np.full((bars.shape[0], 1), B + V - 1)], axis=1)
        out = np.diff(edges, axis=1) - 1
    out.setflags(write=False)
    return out


def _multinomial_logp(c: np.ndarray, q: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln
    B = int(c[0].sum())
    with np.errstate(divide="ignore"):
        logq = np.log(q)
    terms = np.where(c > 0, c * logq, 0.0)
    return gammaln(B + 1) - gammaln(c + 1).sum(axis=1) + terms.sum(axis=1)


def vote_match_iid(p, q, B: int) -> float:
    """Exact ``P(plurality vote of B i.i.d. draws from q equals y)`` with ``y ~ p``
    independent of the draws — the drafting model at one position. Ties among the most
    voted tokens are broken by larger q, then the smaller token id (the fusion rule's
    tie-break without spot checks). Enumeration over the vote counts (multinomial)."""
    p, q = check_pair(p, q, names=("p (target)", "q (draft)"))
    if p.ndim != 1:
        raise ValueError("p and q must be 1-D distributions")
    B = check_int(B, "B (branches)", min=1)
    V = p.size
    n_comp = factorial(B + V - 1) // (factorial(B) * factorial(V - 1))
    if n_comp > 2_000_000:
        raise ValueError(f"{n_comp} vote compositions is too many to enumerate")
    c = compositions(B, V)
    lp = _multinomial_logp(c, q)
    order = sorted(range(V), key=lambda t: (-q[t], t))     # tie-break preference, best first
    pref = np.empty(V, dtype=np.int64)
    pref[order] = np.arange(V)[::-1]                        # larger = preferred
    win = np.argmax(c * V + pref[None, :], axis=1)
    keep = np.isfinite(lp)
    return float((np.exp(lp[keep]) * p[win[keep]]).sum())


def single_branch_match(p, q) -> float:
    """``P(one drafted token equals the verifier's sample) = Σ_t q(t) p(t)``."""
    p, q = check_pair(p, q, names=("p (target)", "q (draft)"))
    return float((p * q).sum(axis=-1))


# --- the prefix-length identity ---------------------------------------------------------------------

def prefix_length(a) -> np.ndarray:
    """``Σ_{j=1}^{k} Π_{i≤j} a_i`` over the last axis (per-position match probabilities a)."""
    a = check_real_array(a, "a (match probabilities)", lo=0.0, hi=1.0)
    if a.ndim == 0 or a.shape[-1] == 0:
        raise ValueError("a must have at least one position")
    return np.cumprod(a, axis=-1).sum(axis=-1)


def expected_prefix(indicators_law: np.ndarray) -> float:
    """E[accepted prefix] = Σ_j P(m_1 = … = m_j = 1) from the joint law of the k match
    indicators (an array of shape (2,)*k, index 1 = match)."""
    law = np.asarray(indicators_law, dtype=np.float64)
    k = law.ndim
    out = 0.0
    for j in range(1, k + 1):
        idx = (1,) * j + (slice(None),) * (k - j)
        out += float(law[idx].sum())
    return out


def marginal_matches(indicators_law: np.ndarray) -> np.ndarray:
    """``P(m_j = 1)`` for every position from the joint law of the match indicators."""
    law = np.asarray(indicators_law, dtype=np.float64)
    k = law.ndim
    return np.array([float(law[(slice(None),) * j + (1,)].sum()) for j in range(k)])


def dependent_monotonicity_counterexample() -> dict:
    """Two joint laws of k = 2 match indicators: B has the larger marginal match probability
    at *every* position (0.6 > 0.5) yet the smaller expected accepted prefix (0.8 < 1.0), so
    "raising every a_i raises the prefix length" fails when a_i are marginals of dependent
    positions. A: m1 = m2 (perfectly correlated); B: P(m1 m2 = 1) = 0.2."""
    A = np.array([[0.5, 0.0], [0.0, 0.5]])
    Bl = np.array([[0.0, 0.4], [0.4, 0.2]])
    return {"A": A, "B": Bl, "marginals_A": marginal_matches(A), "marginals_B": marginal_matches(Bl),
            "prefix_A": expected_prefix(A), "prefix_B": expected_prefix(Bl),
            "formula_A": float(prefix_length(marginal_matches(A))), "formula_B": float(prefix_length(marginal_matches(Bl)))}


# --- the verifier budget ------------------------------------------------------------------------------

def budget_plan(R: int, k: int, forget_spot: bool = False) -> tuple[int, int]:
    """``(R_used, d)`` of the equal-budget rule at SD-1 depth k: ``R_used = min(R, ⌊k/2⌋)``
    spot checks and a fused draft of depth ``d = k − R_used``, so that
    ``R_used + d + 1 = k + 1`` positions, SD-1's. The broken counter keeps ``d = k``."""
    R = check_int(R, "R (spot checks)", min=0)
    k = check_int(k, "k (depth)", min=1)
    r = min(R, k // 2)
    return (r, k) if forget_spot else (r, k - r)


def vtpo_parallel(R_used: int, d: int, tokens_per_step) -> np.ndarray:
    """Verifier positions per output token when one forward scores the whole draft:
    ``(R_used + d + 1)/E[τ + 1]``."""
    R_used = check_int(R_used, "R_used", min=0)
    d = check_int(d, "d (depth)", min=1)
    t = check_real_array(tokens_per_step, "tokens_per_step", lo=1.0)
    return (R_used + d + 1) / t


def vtpo_sequential(R_used: int, tokens_per_step) -> np.ndarray:
    """Verifier positions per output token when verification stops at the first mismatch:
    ``(R_used + E[τ + 1])/E[τ + 1] = 1 + R_used/E[τ + 1]``: at least 1, and SD-1's value is
    exactly 1, so any spot check (R_used ≥ 1) exceeds the SD-1 baseline under this
    accounting whatever the acceptance."""
    R_used = check_int(R_used, "R_used", min=0)
    t = check_real_array(tokens_per_step, "tokens_per_step", lo=1.0)
    return 1.0 + R_used / t


def budget_ledger(costs, allowance: float) -> np.ndarray:
    """The bank after each step of the equal-budget rule: ``bank_t = Σ_{s≤t} (allowance −
    cost_s)`` (surplus banked, never spent beyond it: the rule's invariant is bank ≥ 0)."""
    c = check_real_array(costs, "costs", lo=0.0)
    a = check_real(allowance, "allowance", lo=0.0)
    if c.ndim != 1:
        raise ValueError("costs must be a 1-D sequence of per-step verifier positions")
    return np.cumsum(a - c)
