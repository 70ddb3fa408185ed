"""Monte Carlo of Speculative Ensemble (Fu et al., ICML 2025) on Markov sources.

Public wrapper of :mod:`spectheory._kernels.se`: validates arguments, builds the alias
tables once (:func:`prepare`), seeds one xoshiro256++ stream per run
(:func:`spectheory.rng.stream_states`, so results do not depend on the thread count) and
returns per-run / per-stream outcomes:

* :func:`sample_first_tokens` — first N emitted tokens of independent runs (claim
  ``se.lossless``: their law must be r^N);
* :func:`simulate_streams` — long streams counting tokens, steps, Score calls, calls per
  member and verification attempts/acceptances per proposing member; the cost model turns
  calls into time (:meth:`StreamResult.speedup`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels import se as _k
from .._kernels.core import build_alias
from ..checks import check_costs, check_int, check_state, check_type
from ..exact.se import Algorithm, SEModels
from ..rng import stream_states
from ..rules.se import STANDARD, SERule

KIND_CODE = {"sbe": 0, "alt": 1, "nse": 2}
#: xoshiro streams the first-token runs are split over (contiguous blocks of runs).
FIRST_TOKEN_STREAMS = 64


def prepare(models: SEModels, alg: Algorithm, rule: SERule = STANDARD) -> _k.Tables:
    """Alias tables and acceptance table for the kernel."""
    check_type(models, SEModels, "models")
    check_type(alg, Algorithm, "alg")
    check_type(rule, SERule, "rule", " (spectheory.rules.se)")
    n, S, V = models.tables.shape
    if len(alg.gammas) != n:
        raise ValueError(f"give one proposal length per member ({n}), got {len(alg.gammas)}")
    if alg.kind != "nse" and n != 2:
        raise ValueError(f"{alg.kind} needs exactly two members")
    if alg.kind == "nse" and rule.bonus != "none":
        raise ValueError("bonus='unchecked' is a two-model control")
    acc, res = models.rule_tables(rule)
    mp, ma = build_alias(models.tables.reshape(n * S, V))
    rp, ra = build_alias(res.reshape(n * S, V))
    after = 0 if (alg.kind == "nse" and alg.after_reject == "pseudocode") else 1
    return _k.Tables(np.ascontiguousarray(models.tables), np.ascontiguousarray(acc), mp, ma, rp, ra,
                     np.asarray(alg.gammas, dtype=np.int64), V, S, KIND_CODE[alg.kind], int(alg.first),
                     after, 1 if rule.bonus == "unchecked" else 0, 1 if rule.residual == "drop" else 0)


def sample_first_tokens(models: SEModels, alg: Algorithm, n_tokens: int, n_runs: int, *,
                        rule: SERule = STANDARD, seed=None, start_state: int = 0) -> np.ndarray:
    """(n_runs, n_tokens) first emitted tokens of independent runs from ``start_state``."""
    T = prepare(models, alg, rule)
    N = check_int(n_tokens, "n_tokens", min=1)
    R = check_int(n_runs, "n_runs", min=1)
    s0 = check_state(start_state, models.S)
    out = np.empty((R, N), dtype=np.int64)
    return _k.se_first_tokens(stream_states(seed, min(R, FIRST_TOKEN_STREAMS)), T, s0, out)


@dataclass
class StreamResult:
    """Per-stream counters (see :func:`spectheory._kernels.se._run`)."""

    n: int
    counters: np.ndarray

    @property
    def tokens(self):
        return self.counters[:, 0]

    @property
    def steps(self):
        return self.counters[:, 1]

    @property
    def scores(self):
        return self.counters[:, 2]

    @property
    def calls(self):
        return self.counters[:, 3:3 + self.n]

    @property
    def attempts(self):
        return self.counters[:, 3 + self.n:3 + 2 * self.n]

    @property
    def accepts(self):
        return self.counters[:, 3 + 2 * self.n:3 + 3 * self.n]

    def time(self, costs) -> np.ndarray:
        t = check_costs(costs, n=self.n)
        return self.calls @ t

    def throughput(self, costs) -> np.ndarray:
        """Tokens per unit time, per stream."""
        return self.tokens / self.time(costs)

    def speedup(self, costs) -> np.ndarray:
        """Throughput over the vanilla ensemble's (Σ_k t_k per token), per stream."""
        return self.throughput(costs) * float(np.sum(costs))

    def cost_report(self, models: SEModels, costs, *, sd_gamma: int = 5) -> dict:
        """Vanilla ensemble, SD on the ensemble (exact chain) and SE (this run: pooled tokens
        over pooled time) tokens per unit time and their ratios
        (:func:`spectheory.closed_forms.se.cost_report`)."""
        from ..closed_forms.se import cost_report
        check_type(models, SEModels, "models")
        thr = float(self.tokens.sum() / self.time(costs).sum())
        return cost_report(thr, models.tables, models.r, models.order, costs, sd_gamma=sd_gamma)


def simulate_streams(models: SEModels, alg: Algorithm, n_streams: int, tokens_per_stream: int, *,
                     rule: SERule = STANDARD, seed=None, start_state: int = 0) -> StreamResult:
    """``n_streams`` independent streams, each run until it has emitted
    ``tokens_per_stream`` tokens (it may overshoot by one step)."""
    T = prepare(models, alg, rule)
    R = check_int(n_streams, "n_streams", min=1)
    L = check_int(tokens_per_stream, "tokens_per_stream", min=1)
    s0 = check_state(start_state, models.S)
    n = models.n
    counters = np.zeros((R, 3 + 3 * n), dtype=np.int64)
    _k.se_streams(stream_states(seed, R), T, s0, L, counters)
    return StreamResult(n, counters)
