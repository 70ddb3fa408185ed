"""Monte Carlo of multi-draft verification on Markov pairs (SpecTr-GBV, GBV; K-SEQ).

The public functions validate arguments, build the kernels' tables (alias tables of the
draft rows, ρ and residuals of K-SEQ per state and number of drafts alive) and split the
runs over independent xoshiro256++ streams (:func:`spectheory.rng.stream_states`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels import multidraft as _k
from .._kernels.core import build_alias
from ..checks import check_enumerable, check_int, check_int_array, check_state, check_type
from ..closed_forms import multidraft as cf
from ..markov import MarkovPair
from ..rng import stream_states
from ..rules.multidraft import SPECTR_GBV, MultiDraftRule

#: Largest block tree the SpecTr-GBV kernel rebuilds per iteration.
MAX_TREE = 20_000
N_STREAMS = 16

#: Largest K-SEQ residual table (states × (K + 1) × V cells) the kernel tables hold.
MAX_KSEQ_CELLS = 1 << 26


@dataclass
class MDResult:
    """First ``n_tokens`` emitted tokens of each run, and the first iteration's τ (and, for
    SpecTr-GBV, the code of its accepted block)."""

    tokens: np.ndarray
    tau: np.ndarray
    tcode: np.ndarray | None


def _tables(pair: MarkovPair, gamma: int, K: int, rule: MultiDraftRule):
    q_prob, q_alias = build_alias(pair.draft.rows)
    common = dict(V=pair.V, S=pair.n_states, gamma=gamma, K=K,
                  p_rows=np.ascontiguousarray(pair.target.rows), p_ros=pair.target.row_of_state,
                  q_rows=np.ascontiguousarray(pair.draft.rows), q_ros=pair.draft.row_of_state,
                  q_prob=q_prob, q_alias=q_alias)
    if rule.algorithm == "kseq":
        S, V = pair.n_states, pair.V
        rho = np.ones((S, K + 1))
        res = np.zeros((S, K + 1, V))
        for s in range(S):
            p, q = pair.target.conditional(s), pair.draft.conditional(s)
            for n in range(1, K + 1):
                r = {"one": 1.0, "K": float(n)}.get(rule.rho) or cf.kseq_rho(p, q, K if rule.rho_k == "initial" else n)
                rho[s, n] = r
                res[s, n] = p if rule.residual == "p" else cf.kseq_residual(p, q, r)
        return _k.KSeqTables(rho=rho, res_w=res, **common)
    V = pair.V
    if sum(V ** d for d in range(gamma + 2)) > MAX_TREE:
        raise ValueError(f"block tree of V={V}, γ={gamma} is too large for the SpecTr-GBV kernel")
    off = np.zeros(gamma + 2, dtype=np.int64)
    for d in range(1, gamma + 2):
        off[d] = off[d - 1] + V ** (d - 1)
    return _k.GBVTables(expo=rule.exponent(K), h_scale=float(rule.h_scale), residual_p=rule.residual == "p",
                        modify=bool(rule.modify),
                        ignore_H=rule.h_in_H == "ignore_H",
                        h_mode={"eq2": 0, "sec3.3": 1, "one": 2}[rule.h_form], off=off, **common)


def simulate(pair: MarkovPair, gamma: int, K: int, n_runs: int, n_tokens: int = 1, *,
             rule: MultiDraftRule = SPECTR_GBV, seed=None, start_state: int = 0) -> MDResult:
    """``n_runs`` independent runs from ``start_state``, each continued over as many
    iterations (Alg. 3, modification carried) as it takes to emit ``n_tokens`` tokens."""
    check_type(pair, MarkovPair, "pair")
    check_type(rule, MultiDraftRule, "rule", " (spectheory.rules.multidraft)")
    gamma = check_int(gamma, "gamma", min=1)
    K = check_int(K, "K", min=1)
    if rule.algorithm == "kseq" and pair.n_states * (K + 1) * pair.V > MAX_KSEQ_CELLS:
        raise ValueError(f"K = {K} drafts need {pair.n_states}×{K + 1}×{pair.V} K-SEQ residual cells "
                         f"(limit {MAX_KSEQ_CELLS})")
    n_runs = check_int(n_runs, "n_runs", min=1)
    n_tokens = check_int(n_tokens, "n_tokens", min=1)
    check_state(start_state, pair.n_states)
    T = _tables(pair, gamma, K, rule)
    per = -(-n_runs // N_STREAMS)
    total = per * N_STREAMS
    st = stream_states(seed, N_STREAMS)
    toks = np.empty((total, n_tokens), dtype=np.int64)
    tau = np.empty(total, dtype=np.int64)
    if rule.algorithm == "kseq":
        _k.kseq_runs(st, per, n_tokens, start_state, T, toks, tau)
        return MDResult(toks[:n_runs], tau[:n_runs], None)
    tcode = np.empty(total, dtype=np.int64)
    _k.gbv_runs(st, per, n_tokens, start_state, T, toks, tau, tcode)
    return MDResult(toks[:n_runs], tau[:n_runs], tcode[:n_runs])


def sequence_counts(tokens: np.ndarray, V: int) -> np.ndarray:
    """Counts of each V**N sequence (first token most significant)."""
    V = check_int(V, "V", min=1)
    tokens = check_int_array(tokens, "tokens", min=0, max=V - 1, ndim=2)
    N = check_enumerable(V, tokens.shape[1], "N (tokens per run)")
    idx = tokens @ (V ** np.arange(N - 1, -1, -1))
    return np.bincount(idx, minlength=V ** N)
