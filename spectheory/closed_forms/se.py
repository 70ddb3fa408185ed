"""Closed forms of Speculative Ensemble (Fu et al., ICML 2025) and exact long-run dynamic
programs over Markov chains.

The paper's formulas (claims ``se.*``; TV with the ½, the paper's D_TV = Σ|·| is 2·TV):

``acceptance``              se.acceptance  α = 1 − ½ D_TV(q, r) = 1 − TV(q, r) = Σ min(q, r)  (Eq. 7/11)
``expected_tokens``         se.thm3_1      (1 − α^γ)/(1 − α) tokens per cycle, no bonus (Eq. 12)
``thm3_1_speedup``          se.thm3_1      (1 − α^γ)(1 + c) / ((1 − α)(1 + cγ))
``thm3_2_bound``            se.thm3_2      α ≥ λ for r = λq + (1 − λ)p, q proposing
``cor3_3_bound``            se.cor3_3      max(λ, 1 − λ)
``cor3_4_threshold``        se.cor3_4      λ > c/(1 + c)
``thm3_6_speedup``          se.thm3_6      (1 − α^{γq})(1 + c) / ((1 − α)(1 + cγq − α^{γp} c))

and what the alternating process actually does:

``alternating_speedup_iid`` the exact long-run speedup of Alg. 1 when every position has the
    same acceptance α_q (q proposing) and α_p (p proposing): renewal–reward over the three
    configurations of the alternation (q proposes afresh; p continues from q's bonus; q
    continues from p's bonus).
``long_run_chain``          the same renewal–reward on any Markov pair, over configurations
    (chain state, who proposes, cache or not), by matrix powers (scales to V = 50).
``sd_on_ensemble_chain``    standard SD with the cheapest member proposing and the ensemble
    as target (the paper's WE-SD / CD-SD baseline).

Cost model: member k costs ``t_k`` per call; the vanilla ensemble costs Σ_k t_k per token.
For two models ``c = t_q / t_p`` and ``t_p = 1``.
"""
from __future__ import annotations

import numpy as np

from ..checks import (check_costs, check_int, check_order_states, check_real, check_real_array, check_state,
                      check_type)
from ..distributions import DistributionError, check_distribution, check_pair
from ..divergences import total_variation
from ..markov import MarkovPair, MarkovSource, _check_stochastic, stationary_distribution, token_to_state_matrix
from ..rules.se import STANDARD, SERule


def _alpha(a):
    return check_real_array(a, "α", lo=0.0, hi=1.0)


def acceptance(q, r) -> np.ndarray:
    """Eq. 7: ``1 − ½ Σ|q − r|`` = 1 − TV(q, r); q and r distributions of the same shape."""
    q, r = check_pair(q, r, names=("q", "r"))
    return 1.0 - total_variation(q, r)


def expected_tokens(alpha, gamma: int):
    """Eq. 12 (no bonus): ``(1 − α^γ)/(1 − α)`` tokens per cycle (γ at α = 1)."""
    g = check_int(gamma, "γ", min=1)
    a = _alpha(alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(a < 1, (1 - a ** g) / (1 - np.where(a < 1, a, 0.0)), float(g))
    return v[()] if v.ndim == 0 else v


def thm3_1_speedup(alpha, gamma: int, c: float):
    """Thm 3.1: ``(1 − α^γ)(1 + c) / ((1 − α)(1 + cγ))`` over the vanilla ensemble."""
    c = check_real(c, "c", lo=0.0)
    return expected_tokens(alpha, gamma) * (1 + c) / (1 + c * gamma)


def thm3_2_bound(lam: float) -> float:
    """Thm 3.2: α ≥ λ (weighted ensemble, q proposing)."""
    return check_real(lam, "λ", lo=0.0, hi=1.0)


def cor3_3_bound(lam: float) -> float:
    """Cor 3.3: choosing the proposer, α ≥ max(λ, 1 − λ) ≥ ½."""
    lam = check_real(lam, "λ", lo=0.0, hi=1.0)
    return max(lam, 1.0 - lam)


def cor3_4_threshold(c: float) -> float:
    """Cor 3.4: γ = 2 speeds up when λ > c/(1 + c)."""
    c = check_real(c, "c", lo=0.0)
    return c / (1 + c)


def thm3_6_speedup(alpha, gamma_q: int, gamma_p: int, c: float):
    """Thm 3.6: ``(1 − α^{γq})(1 + c) / ((1 − α)(1 + cγq − α^{γp} c))``."""
    c = check_real(c, "c", lo=0.0)
    gq = check_int(gamma_q, "γq", min=1)
    gp = check_int(gamma_p, "γp", min=1)
    a = _alpha(alpha)
    return expected_tokens(a, gq) * (1 + c) / (1 + c * gq - a ** gp * c)


def alternating_speedup_iid(alpha_q, alpha_p, gamma_q: int, gamma_p: int, c: float):
    """Exact long-run speedup of Alg. 1 (q proposes first, t_q = c, t_p = 1) when the
    acceptance is α_q at every q-proposed and α_p at every p-proposed position.

    Configurations: A (q proposes γq afresh, cost γq c + 1), B (p continues from q's bonus
    with γp − 1 tokens, cost (γp − 1) + c), Q (q continues from p's bonus, cost
    (γq − 1)c + 1). A, Q → B w.p. F_q = α_q^{γq}, else → A; B → Q w.p. F_p = α_p^{γp},
    else → A. Stationary weights x_A : x_B : x_Q = (1 − F_q F_p) : F_q : F_q F_p, so

        tokens/time = (E_q + F_q E_p) / (γq c + 1 − F_q F_p c + F_q(γp − 1 + c)),

    E_k = (1 − α_k^{γk})/(1 − α_k); speedup = tokens/time × (1 + c).
    """
    c = check_real(c, "c", lo=0.0)
    gq = check_int(gamma_q, "γq", min=1)
    gp = check_int(gamma_p, "γp", min=1)
    aq, ap = _alpha(alpha_q), _alpha(alpha_p)
    Fq, Fp = aq ** gq, ap ** gp
    tok = expected_tokens(aq, gq) + Fq * expected_tokens(ap, gp)
    time = gq * c + 1 - Fq * Fp * c + Fq * (gp - 1 + c)
    return tok / time * (1 + c)


def vanilla_throughput(costs) -> float:
    """Tokens per unit time of the vanilla ensemble: every member called once per token."""
    t = check_costs(costs)
    return 1.0 / float(t.sum())


# --- exact long-run dynamic programs over Markov chains ---------------------------------------

def stationary(K: np.ndarray, start: int = 0) -> np.ndarray:
    """Stationary law of the configuration chain seen from ``start``: restricted to the
    configurations reachable from it, solved directly (πK = π, Σπ = 1, one equation replaced);
    falls back to :func:`spectheory.markov.stationary_distribution` if that system is singular
    (several recurrent classes) or gives a negative entry."""
    K = _check_stochastic(K, "K (configuration transition matrix)")
    m = K.shape[0]
    start = check_state(start, m, "start")
    seen = np.zeros(m, dtype=bool)
    seen[start] = True
    frontier = [start]
    while frontier:
        nxt = np.flatnonzero((K[frontier] > 0).any(axis=0) & ~seen)
        seen[nxt] = True
        frontier = list(nxt)
    idx = np.flatnonzero(seen)
    sub = K[np.ix_(idx, idx)]
    A = sub.T - np.eye(idx.size)
    A[-1] = 1.0
    b = np.zeros(idx.size)
    b[-1] = 1.0
    out = np.zeros(m)
    try:
        pi = np.linalg.solve(A, b)
        if np.all(pi > -1e-12) and np.allclose(pi @ sub, pi, rtol=0.0, atol=1e-10):
            out[idx] = np.clip(pi, 0, None) / np.clip(pi, 0, None).sum()
            return out
    except np.linalg.LinAlgError:
        pass
    return stationary_distribution(K, start=start)


def _rule_tables(tables, r, rule: SERule):
    from ..rules.se import other_member
    n = tables.shape[0]
    acc = np.empty_like(tables)
    res = np.empty_like(tables)
    for k in range(n):
        o = tables[other_member(k, n)]
        acc[k] = rule.accept_probability(r, tables[k], o)
        res[k] = rule.residual_distribution(r, tables[k], o)
    return acc, res


def long_run_chain(tables, r, gammas, costs, *, kind: str = "alt", first: int = 0,
                   rule: SERule = STANDARD, start_state: int = 0) -> dict:
    """Exact long-run tokens per unit time of Sec. 3.2 (``kind="sbe"``) or Alg. 1 (``"alt"``)
    on a two-member Markov instance (``tables`` (2, S, V), ensemble ``r`` (S, V)).

    Configurations (s, m): m = 0 the default proposer starts afresh, m = 1 + k member k
    continues from a cached bonus token. A cached token was drawn from member k's row at s,
    so its acceptance weight is the same q_k·acc as a fresh proposal: the cache token need
    not be kept in the configuration. Per configuration, with W_k = q_k·acc_k and
    A_k[s, s'] = Σ_{x→s'} W_k(x|s): E[tokens] = Σ_{j<γ_k} (A_k^j 1)[s]; the next
    configuration after a rejection is (s'', 0) via Σ_{j<γ_k} A_k^j diag(1 − ΣW_k) R_k, after
    full acceptance (s', 1 + other) (Alg. 1), (s', 0) (Sec. 3.2) or, bonus unchecked, one
    more token and (s'', 0). Returns tokens per step, time per step, throughput and speedup
    over the vanilla ensemble.
    """
    tables = np.asarray(tables, dtype=np.float64)
    if tables.ndim != 3 or tables.shape[0] != 2:
        raise ValueError(f"tables must have shape (2, S, V), got {tables.shape}")
    check_distribution(tables, name="tables")
    _, S, V = tables.shape
    check_order_states(S, V, "tables")
    r = np.asarray(r, dtype=np.float64)
    check_distribution(r, name="r (ensemble)")
    if r.shape != (S, V):
        raise DistributionError(f"r (ensemble) must have shape (S, V) = {(S, V)}, got {r.shape}")
    if kind not in ("sbe", "alt"):
        raise ValueError(f"kind must be 'sbe' or 'alt', got {kind!r}")
    if np.ndim(gammas) != 1 or len(gammas) != 2:
        raise ValueError(f"gammas must be two proposal lengths (γ_q, γ_p), got {gammas!r}")
    g = [check_int(x, "γ", min=1) for x in gammas]
    t = check_costs(costs, n=2)
    first = check_int(first, "first (default proposer)", min=0, max=1)
    check_type(rule, SERule, "rule", " (spectheory.rules.se)")
    start_state = check_state(start_state, S)
    acc, res = _rule_tables(tables, r, rule)
    A, D, Rm, P = [], [], [], []
    for k in range(2):
        W = tables[k] * acc[k]
        A.append(token_to_state_matrix(W, V, S))
        D.append(np.clip(1.0 - W.sum(axis=1), 0.0, None))
        Rm.append(token_to_state_matrix(res[k], V, S))
        P.append(token_to_state_matrix(tables[k], V, S))
    m = 3 * S
    K = np.zeros((m, m))
    tok = np.zeros(m)
    cost = np.zeros(m)

    def block(mode):
        return slice(mode * S, (mode + 1) * S)

    for mode in range(3):
        k = first if mode == 0 else mode - 1
        v = 1 - k
        Ak = np.eye(S)
        e = np.zeros(S)
        rej = np.zeros((S, S))
        drop = rule.residual == "drop"
        for _ in range(g[k]):
            if not drop:
                e += Ak.sum(axis=1)
            rej += Ak @ (D[k][:, None] * (np.eye(S) if drop else Rm[k]))
            Ak = Ak @ A[k]
            if drop:
                e += Ak.sum(axis=1)
        rows = block(mode)
        K[rows, block(0)] += rej
        if rule.bonus == "unchecked":
            K[rows, block(0)] += Ak @ P[v]
            e = e + Ak.sum(axis=1)
        elif kind == "alt":
            K[rows, block(1 + v)] += Ak
        else:
            K[rows, block(0)] += Ak
        tok[rows] = e
        cost[rows] = (g[k] - (0 if mode == 0 else 1)) * t[k] + t[v]
    nu = stationary(K, start=start_state)
    tokens, time = float(nu @ tok), float(nu @ cost)
    thr = tokens / time
    return {"tokens_per_step": tokens, "time_per_step": time, "throughput": thr,
            "speedup": thr * float(t.sum())}


def sd_on_ensemble_chain(r_source: MarkovSource, draft: MarkovSource, gamma: int, draft_cost: float,
                         total_cost: float, start_state: int = 0) -> dict:
    """Standard SD with ``draft`` proposing γ tokens and the ensemble r as target (bonus from
    r). One iteration costs γ draft calls plus one call of every member (the ensemble's
    forward pass): ``γ·draft_cost + total_cost``. Long-run tokens per iteration from
    :func:`spectheory.closed_forms.sd.long_run_block_efficiency`."""
    from . import sd as cf_sd
    g = check_int(gamma, "γ", min=1)
    dc = check_real(draft_cost, "draft_cost", lo=0.0)
    tc = check_real(total_cost, "total_cost", lo=0.0, lo_open=True)
    pair = MarkovPair(r_source, draft, "sd-on-ensemble")
    tokens = cf_sd.long_run_block_efficiency(pair, g, start_state)
    time = g * dc + tc
    return {"tokens_per_step": tokens, "time_per_step": time, "throughput": tokens / time,
            "speedup": tokens / time * tc}


def cost_report(se_throughput: float, tables, r, order: int, costs, *, sd_gamma: int = 5) -> dict:
    """The cost model's three numbers and their ratios for one ensemble (any number of
    members): tokens per unit time of the vanilla ensemble (Σ_k t_k per token), of SD on the
    ensemble (the cheapest member proposes ``sd_gamma`` tokens, the ensemble verifies; exact
    long run on the chain) and of SE (``se_throughput``, from :func:`long_run_chain`, the
    exact engines' ``long_run`` or the Monte Carlo's ``StreamResult.throughput``)."""
    tables = np.asarray(tables, dtype=np.float64)
    check_distribution(tables, name="tables")
    if tables.ndim != 3:
        raise ValueError(f"tables must have shape (n, S, V), got {tables.shape}")
    t = check_costs(costs, n=tables.shape[0])
    se_thr = check_real(se_throughput, "se_throughput", lo=0.0)
    k = int(np.argmin(t))
    sd = sd_on_ensemble_chain(MarkovSource(np.asarray(r, dtype=np.float64), order),
                              MarkovSource(tables[k], order), sd_gamma, float(t[k]), float(t.sum()))
    van = 1.0 / float(t.sum())
    return {"vanilla": van, "sd_on_ensemble": sd["throughput"], "se": se_thr,
            "sd_proposer": k, "sd_gamma": int(sd_gamma),
            "speedup_sd": sd["throughput"] / van, "speedup_se": se_thr / van,
            "se_over_sd": se_thr / sd["throughput"]}
