"""Closed forms of Kobus & Gündüz, "Speculative Decoding via Exponential Races", as the family's
claim readings reconstruct them (the paper's formulas were lost in extraction;
notebooks/ersd_derivations.py derives each one).

``poisson_matching_bound``   Lemma 3.1 (Li & Anantharam 2021): P(accept 1st) ≥ Σ_x p q/(p + q)
``ersd_first_acceptance``    exact P(X_p = X_q) = Σ_x 1 / Σ_y max(p(y)/p(x), q(y)/q(x))
``gsd_first_acceptance``     1 − TV(p, q) = Σ min(p, q) (the optimal coupling, Sun et al. 2023)
``tunstall_bound``           Thm 4.1: E[generated] ≤ log((k+1)(|A|−1)+1) / H(a)
``lemma42_bound``            Lemma 4.2: log((k+1)(M+n−1)+1) / H(ã_n), and its minimum over n
``BROKEN_*``                 broken twins of Thm 4.1 and Lemma 4.2 (negative controls)
``kl_lower_bound``           eq. 6: H(acceptance index) ≥ D_KL(p‖q)
``pfr_upper_bound``          eq. 8: H ≤ D + log(D+1) + 4 (bits; Li & El Gamal 2018)
``grs_upper_bound``          eq. 7 (Harsha et al. 2010 form): H ≤ D + 2 log(D+1) + C (C unprinted)
``zero_order_expected``      1 + Σ_v Π a(i_j) for a tree under a 0th-order a (the paper's Eq. 4)
``pfr_list_index_law``       law of the Poisson functional representation's index into an i.i.d. list
``grs_list_index_law``       law of greedy rejection sampling's index into an i.i.d. list

Broken twins (negative controls), each beside the formula it breaks: ``harmonic_mean_bound``
(2 Σ pq/(p+q), the harmonic mean, for Lemma 3.1's bound), ``one_minus_l1`` (1 − Σ|p − q|, TV
without its ½), ``tunstall_bound_mixed_bases``, ``lemma42_min_bound_no_extra_alphabet``,
``pfr_upper_bound_no_constant`` (eq. 8 without its + 4), ``kl_lower_bound_doubled``.
"""
from __future__ import annotations

import numpy as np

from ..checks import check_int, check_log_base, check_real, check_real_array, check_subprobability
from ..distributions import check_distribution, check_pair
from ..divergences import entropy, harmonic_mean_term, kl_divergence, overlap


def poisson_matching_bound(p, q) -> np.ndarray:
    """Lemma 3.1 lower bound on ERSD's first-token acceptance: ``Σ_x p(x)q(x)/(p(x)+q(x))``."""
    p, q = check_pair(p, q)
    return harmonic_mean_term(p, q)


def harmonic_mean_bound(p, q) -> np.ndarray:
    """Broken twin of :func:`poisson_matching_bound` (negative control): ``Σ_x 2 p q/(p + q)``,
    the harmonic mean of p and q summed (twice the lemma's bound)."""
    return 2.0 * poisson_matching_bound(p, q)


def ersd_first_acceptance(p, q) -> np.ndarray:
    """Exact first-token acceptance of ERSD (shared exponentials): ``Σ_x 1/Σ_y max(p(y)/p(x),
    q(y)/q(x))`` over x with p(x), q(x) > 0 (row-wise)."""
    p, q = check_pair(p, q)
    p2, q2 = np.atleast_2d(p), np.atleast_2d(q)
    out = np.zeros(p2.shape[0])
    for r in range(p2.shape[0]):
        pr, qr = p2[r], q2[r]
        for x in np.flatnonzero((pr > 0) & (qr > 0)):
            out[r] += 1.0 / np.maximum(pr / pr[x], qr / qr[x]).sum()
    return out if p.ndim == 2 else out[0]


def ersd_first_acceptance_sorted(p, q) -> np.ndarray:
    """Same value as :func:`ersd_first_acceptance` in O(V log V) per row (for real vocabularies):
    with ρ_y = p(y)/q(y), max(p(y)/p(x), q(y)/q(x)) is p(y)/p(x) when ρ_y ≥ ρ_x and q(y)/q(x)
    otherwise, so Σ_y max(…) = P_≥(ρ_x)/p(x) + Q_<(ρ_x)/q(x) with tail/prefix sums over tokens
    sorted by ρ."""
    p, q = check_pair(p, q)
    p2, q2 = np.atleast_2d(p), np.atleast_2d(q)
    out = np.zeros(p2.shape[0])
    for r in range(p2.shape[0]):
        pr, qr = p2[r], q2[r]
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.where(qr > 0, pr / np.where(qr > 0, qr, 1.0), np.inf)
        rho = np.where((pr == 0) & (qr == 0), 0.0, rho)
        order = np.argsort(rho, kind="stable")
        rs, ps, qs = rho[order], pr[order], qr[order]
        p_tail = np.cumsum(ps[::-1])[::-1]            # Σ_{j ≥ i} p (sorted)
        q_prefix = np.concatenate([[0.0], np.cumsum(qs)[:-1]])  # Σ_{j < i} q
        first = np.searchsorted(rs, rs, side="left")  # first index with ρ ≥ ρ_x (ties together)
        ok = (ps > 0) & (qs > 0)
        denom = p_tail[first[ok]] / ps[ok] + q_prefix[first[ok]] / qs[ok]
        out[r] = float(np.sum(1.0 / denom))
    return out if p.ndim == 2 else out[0]


def gsd_first_acceptance(p, q) -> np.ndarray:
    """``Σ min(p, q) = 1 − TV(p, q)``: GSD's first-token acceptance, the largest P(X_p = X_q)
    over all couplings."""
    p, q = check_pair(p, q)
    return overlap(p, q)


def one_minus_l1(p, q) -> np.ndarray:
    """Broken twin of :func:`gsd_first_acceptance` as an upper bound (negative control):
    ``1 − Σ_x |p(x) − q(x)|``, i.e. 1 − TV with TV missing its ½."""
    p, q = check_pair(p, q)
    return 1.0 - np.abs(p - q).sum(axis=-1)


def tunstall_bound(a, k: int, base: float = np.e, alphabet: int | None = None) -> float:
    """Thm 4.1 (reconstructed): ``log((k+1)(|A|−1)+1) / H(a)`` for a 0th-order acceptance-index
    distribution ``a`` and any tree with k drafted vertices; |A| = number of indices with
    positive mass (``alphabet`` overrides). Same log base on both sides; +inf when H(a) = 0."""
    a = check_distribution(a, name="a")
    k = check_int(k, "k", min=0)
    base = check_log_base(base)
    A = int(np.count_nonzero(a)) if alphabet is None else check_int(alphabet, "alphabet", min=1)
    H = float(entropy(a, base))
    num = np.log((k + 1) * (A - 1) + 1) / np.log(base)
    if H <= 0:
        return float("inf")
    return float(num / H)


def tunstall_bound_mixed_bases(a, k: int) -> float:
    """Broken twin of :func:`tunstall_bound` (negative control): a natural-log numerator over the
    entropy in bits."""
    a = check_subprobability(a, "a (acceptance-index distribution)")
    k = check_int(k, "k", min=0)
    H = float(entropy(a, 2.0))
    return float(np.log((k + 1) * (int(np.count_nonzero(a)) - 1) + 1) / H) if H > 0 else float("inf")


def lemma42_tilde(a, M: int, n: int) -> np.ndarray:
    """ã_n: a(1..M), then the residual mass r = 1 − Σ_{i≤M} a(i) spread evenly over n indices."""
    a = check_subprobability(a, "a (acceptance-index distribution)")
    M = check_int(M, "M", min=1, max=a.shape[0])
    n = check_int(n, "n", min=0)
    r = max(0.0, 1.0 - a[:M].sum())
    if n == 0:
        return a[:M].copy()
    return np.concatenate([a[:M], np.full(n, r / n)])


def lemma42_bound(a, k: int, M: int, n: int, base: float = np.e) -> float:
    """Lemma 4.2 (reconstructed): ``log((k+1)(M+n−1)+1) / H(ã_n)``."""
    k = check_int(k, "k", min=0)
    base = check_log_base(base)
    at = lemma42_tilde(a, M, n)
    if n == 0 and abs(at.sum() - 1) > 1e-12:
        raise ValueError("n = 0 needs zero residual mass")
    H = float(entropy(at, base))
    if H <= 0:
        return float("inf")
    return float(np.log((k + 1) * (M + n - 1) + 1) / np.log(base) / H)


def lemma42_min_bound(a, k: int, M: int, n_max: int = 4096, base: float = np.e,
                      require_cap: bool = True) -> tuple[float, int]:
    """min over n of :func:`lemma42_bound` (the paper's plotted bound) and the minimising n.
    ``require_cap``: only n with r/n ≤ a(M) (the lemma's 'each ≤ a(M)'); n = 0 only if r = 0."""
    a = check_subprobability(a, "a (acceptance-index distribution)")
    k = check_int(k, "k", min=0)
    M = check_int(M, "M", min=1, max=a.shape[0])
    n_max = check_int(n_max, "n_max", min=1)
    base = check_log_base(base)
    r = max(0.0, 1.0 - a[:M].sum())
    if r <= 1e-15:
        return lemma42_bound(a, k, M, 0, base), 0
    n_lo = 1
    if require_cap and a[M - 1] > 0:
        n_lo = max(1, int(np.ceil(r / a[M - 1] - 1e-12)))
    ns = np.arange(n_lo, max(n_lo, n_max) + 1, dtype=np.float64)
    # H(ã_n) = H(a(1..M) part) − r·log(r/n): the n equal cells in closed form, all n at once
    head = a[:M][a[:M] > 0]
    H = (-(head * np.log(head)).sum() - r * np.log(r / ns)) / np.log(base)
    num = np.log((k + 1) * (M + ns - 1) + 1) / np.log(base)
    vals = np.where(H > 0, num / np.where(H > 0, H, 1.0), np.inf)
    j = int(np.argmin(vals))
    return float(vals[j]), int(ns[j])


def lemma42_min_bound_no_extra_alphabet(a, k: int, M: int, n_max: int = 256) -> float:
    """Broken twin of :func:`lemma42_min_bound` (negative control): the n extra indices spread the
    residual in the entropy but are left out of the alphabet term, log((k+1)(M−1)+1) / H(ã_n),
    minimised over n = 1..n_max (nats)."""
    a = check_subprobability(a, "a (acceptance-index distribution)")
    k = check_int(k, "k", min=0)
    M = check_int(M, "M", min=1, max=a.shape[0])
    n_max = check_int(n_max, "n_max", min=1)
    r = max(0.0, 1.0 - a[:M].sum())
    head = a[:M][a[:M] > 0]
    ns = np.arange(1, n_max + 1, dtype=np.float64)
    H = -(head * np.log(head)).sum() - (r * np.log(r / ns) if r > 0 else 0.0) * np.ones_like(ns)
    H = np.where(H > 0, H, np.nan)
    return float(np.nanmin(np.log((k + 1) * (M - 1) + 1) / H)) if np.any(H > 0) else float("inf")


def kl_lower_bound(p, q, base: float = 2.0) -> np.ndarray:
    """eq. 6 (reconstructed): the lower bound D_KL(p‖q) on the acceptance index's entropy."""
    p, q = check_pair(p, q)
    base = check_log_base(base)
    return kl_divergence(p, q, base)


def pfr_upper_bound(D_bits) -> np.ndarray:
    """eq. 8 (reconstructed, Li & El Gamal 2018): ``D + log2(D + 1) + 4`` bits."""
    D = check_real_array(D_bits, "D_bits (KL divergence in bits)", lo=0.0)
    return D + np.log2(D + 1.0) + 4.0


def pfr_upper_bound_no_constant(D_bits) -> np.ndarray:
    """Broken twin of :func:`pfr_upper_bound` (negative control): ``D + log2(D + 1)``, the + 4 dropped."""
    D = check_real_array(D_bits, "D_bits (KL divergence in bits)", lo=0.0)
    return D + np.log2(D + 1.0)


def kl_lower_bound_doubled(p, q, base: float = 2.0) -> np.ndarray:
    """Broken twin of :func:`kl_lower_bound` (negative control): ``2 D_KL(p‖q)``."""
    return 2.0 * kl_lower_bound(p, q, base)


def grs_upper_bound(D_bits, C: float = 0.0) -> np.ndarray:
    """eq. 7 in the Harsha et al. 2010 form ``D + 2 log2(D + 1) + C`` bits; the paper's constant
    C was lost in extraction (Harsha et al. state O(1)), so C is a parameter."""
    D = check_real_array(D_bits, "D_bits (KL divergence in bits)", lo=0.0)
    check_real(C, "C")
    return D + 2.0 * np.log2(D + 1.0) + C


def zero_order_expected(a, tree) -> float:
    """``1 + Σ_{v} Π_j a(i_j)`` (the paper's Eq. 4 under a 0th-order acceptance function)."""
    from ..trees import expected_generated, zero_order
    return expected_generated(zero_order(a), tree)


# --- channel simulation: the index into an i.i.d. list (with repeats) ---------------------------

def _list_pq(p, q):
    p, q = check_pair(p, q)
    if p.ndim != 1:
        raise ValueError(f"p and q must be 1-D distributions, got shape {p.shape}")
    if np.any((p > 0) & (q <= 0)):
        raise ValueError("the list index is finite only where supp p ⊆ supp q (D_KL(p‖q) < ∞)")
    return p, q


def pfr_list_index_law(p, q, *, tail: float = 1e-13, n_max: int = 2_000_000) -> np.ndarray:
    """Law of K, the index of the selected point in the Poisson functional representation (Li &
    El Gamal 2018): points (T_i, X_i) with T_1 < T_2 < … a rate-1 Poisson process and X_i ~ q
    i.i.d. (a list with repeats), K = argmin_i T_i q(X_i)/p(X_i). Given the winner X_K = x
    (law p, independent of its score τ ~ Exp(1)), K − 1 ~ Poisson(τ c_x) with
    c_x = Σ_y (q(y) p(x)/q(x) − p(y))₊, so K | x is geometric with success 1/(1 + c_x):
    P(K = k) = Σ_x p(x) r_x^{k−1}(1 − r_x), r_x = c_x/(1 + c_x). Returned for k = 1..n with the
    tail beyond n below ``tail``."""
    p, q = _list_pq(p, q)
    tail = check_real(tail, "tail", lo=0.0, lo_open=True)
    n_max = check_int(n_max, "n_max", min=1)
    xs = np.flatnonzero(p > 0)
    c = np.array([np.maximum(q * (p[x] / q[x]) - p, 0.0).sum() for x in xs])
    r = c / (1.0 + c)
    n = 1
    for px, rx in zip(p[xs], r):
        if rx > 0:
            n = max(n, int(np.ceil(np.log(tail / px) / np.log(rx))) + 1)
    if n > n_max:
        raise ValueError(f"the list index law needs {n} terms for tail {tail:g} (n_max = {n_max}): p/q too large")
    k = np.arange(n, dtype=np.float64)
    law = np.zeros(n)
    for px, rx in zip(p[xs], r):
        law += px * (1.0 - rx) * (rx ** k if rx > 0 else (k == 0).astype(np.float64))
    return law


def grs_list_index_law(p, q, *, tail: float = 1e-13, n_max: int = 2_000_000) -> np.ndarray:
    """Law of K, the step at which greedy rejection sampling (Harsha et al. 2010) accepts: X_i ~ q
    i.i.d. (a list with repeats), accepted with probability (p_i(x) − p_{i−1}(x))/((1 − Σ p_{i−1}) q(x))
    where p_i(x) = min(p(x), p_{i−1}(x) + (1 − Σ p_{i−1}) q(x)) = min(p(x), q(x) s_i) is the mass
    accepted by step i (s_i = s_{i−1} + 1 − Σ p_{i−1}); the sequence does not depend on the
    draws, so P(K > i) = 1 − Σ_x p_i(x). Returned until the remaining mass is below ``tail`` (a
    Numba loop; the tail is geometric with ratio 1 − q(x*) at the token x* of largest p/q)."""
    from .._kernels.ersd import grs_list_law
    p, q = _list_pq(p, q)
    tail = check_real(tail, "tail", lo=0.0, lo_open=True)
    n_max = check_int(n_max, "n_max", min=1)
    out = np.zeros(n_max)
    n = grs_list_law(p, q, tail, n_max, out)
    if n < 0:
        raise ValueError(f"greedy rejection sampling needs more than n_max = {n_max} steps for tail {tail:g}")
    return -np.diff(out[:n])
