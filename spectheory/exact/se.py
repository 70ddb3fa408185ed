"""Exact engines for Speculative Ensemble (Fu et al., ICML 2025) on small Markov instances.

Three algorithms, each written as one *step* of its loop, exactly as printed:

* ``"sbe"``: the speculative-based ensemble (Sec. 3.2): the default proposer proposes γ
  tokens, the other model scores them (one call), each is verified against the ensemble r
  (Eq. 6), the first rejection is resampled from ``norm(max(r − q, 0))``, no bonus token.
* ``"alt"``: the alternate proposal framework (App. B.1, Alg. 1): if all proposals are
  accepted the verifier's bonus token ``t`` becomes the cache C and the roles swap; the new
  proposer adds ``γ − |C|`` tokens to it; any rejection clears C and the default proposer
  (``first``) takes over again.
* ``"nse"``: the n-model speculative ensemble (App. B.2, Alg. 2): the model with the
  shortest probability cache scores the cached sequence and adds a bonus token, every token
  scored by all models is verified in order against ``E(p_1, …, p_n)``, and the scorer then
  proposes ``γ_i − 1`` more. ``after_reject="pseudocode"`` follows Alg. 2 literally (after a
  rejection the scorer still proposes γ_i − 1 tokens); ``"text"`` follows the prose of B.2
  ("the default proposal model is invoked to generate γ_1 new proposal tokens").

Every random choice of a step is enumerated (re-executing the step along every branch), so
the law of the emitted tokens, the next configuration and the model invocations of a step
are exact. Two uses:

* :func:`first_tokens_distribution`: the law of the first N emitted tokens over as many
  steps as it takes (compare with ``r.sequence_probs(N)``, claim ``se.lossless``);
* :func:`long_run`: renewal–reward over the process's configurations (the alternation's
  state, the cache, the chain state): stationary law of the configuration chain, then
  tokens per unit time = Σν·E[tokens] / Σν·E[time] (claim ``se.thm3_6``).

Members are indexed as given; for two models the convention is ``(q, p)``: 0 proposes by
default. Costs: Propose of k tokens = k calls of the proposer, Score = one call.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..checks import check_costs, check_enumerable, check_int, check_state, check_type
from ..distributions import DistributionError, check_distribution
from ..ensembles import Ensemble, common_tables
from ..markov import MarkovSource
from ..rules.se import STANDARD, SERule, other_member

#: Refuse enumerations with more configurations than this.
MAX_CONFIGS = 20_000


@dataclass(frozen=True, eq=False)
class SEModels:
    """Member tables on a common state space and the ensemble r (a Markov source)."""

    tables: np.ndarray   # (n, S, V)
    r: np.ndarray        # (S, V)
    order: int
    name: str = "models"

    def __post_init__(self):
        tabs = np.asarray(self.tables, dtype=np.float64)
        if tabs.ndim != 3 or tabs.shape[0] < 2:
            raise ValueError(f"tables must have shape (n ≥ 2, S, V), got {tabs.shape}")
        check_distribution(tabs, name="member tables")
        r = np.asarray(self.r, dtype=np.float64)
        check_distribution(r, name="r (ensemble)")
        if r.shape != tabs.shape[1:]:
            raise DistributionError(f"r (ensemble) must have shape (S, V) = {tabs.shape[1:]}, got {r.shape}")
        order = check_int(self.order, "order", min=0)
        if tabs.shape[1] != tabs.shape[2] ** order:
            raise ValueError(f"member tables have {tabs.shape[1]} states, not V**order = "
                             f"{tabs.shape[2]}**{order}")
        object.__setattr__(self, "tables", tabs)
        object.__setattr__(self, "r", r)

    @classmethod
    def build(cls, sources, ens: Ensemble, name: str = "models") -> "SEModels":
        check_type(ens, Ensemble, "ens", " (wrap a function with Ensemble.from_function)")
        tabs = common_tables(sources)
        r = ens(tabs)
        return cls(tabs, r, max(s.order for s in sources), name)

    @property
    def n(self) -> int:
        return self.tables.shape[0]

    @property
    def S(self) -> int:
        return self.tables.shape[1]

    @property
    def V(self) -> int:
        return self.tables.shape[2]

    @cached_property
    def r_source(self) -> MarkovSource:
        return MarkovSource(self.r, self.order)

    def rule_tables(self, rule: SERule):
        """(acc, res): acceptance probability and resampling law per (member k, state, token)."""
        check_type(rule, SERule, "rule", " (spectheory.rules.se)")
        n = self.n
        acc = np.empty_like(self.tables)
        res = np.empty_like(self.tables)
        for k in range(n):
            o = self.tables[other_member(k, n)]
            acc[k] = rule.accept_probability(self.r, self.tables[k], o)
            res[k] = rule.residual_distribution(self.r, self.tables[k], o)
        return acc, res

    def acceptance(self, k: int) -> np.ndarray:
        """Per-state α_k(s) = Σ_x min(q_k, r) = 1 − TV(q_k, r) (Eq. 7 with the ½)."""
        k = check_int(k, "k (member)", min=0, max=self.n - 1)
        return np.minimum(self.tables[k], self.r).sum(axis=-1)


@dataclass(frozen=True)
class Algorithm:
    """Which SE algorithm runs, with its proposal lengths (one per member)."""

    kind: str                 # "sbe" (Sec. 3.2), "alt" (Alg. 1), "nse" (Alg. 2)
    gammas: tuple
    first: int = 0            # default proposer
    after_reject: str = "pseudocode"   # Alg. 2 only: "pseudocode" or "text"

    def __post_init__(self):
        if self.kind not in ("sbe", "alt", "nse"):
            raise ValueError(f"unknown algorithm {self.kind!r}; use 'sbe', 'alt' or 'nse'")
        if np.ndim(self.gammas) != 1:
            raise TypeError(f"gammas must be a sequence of proposal lengths (one per member), got {self.gammas!r}")
        g = tuple(check_int(x, "proposal length γ", min=1) for x in self.gammas)
        object.__setattr__(self, "gammas", g)
        if self.kind in ("sbe", "alt") and len(g) != 2:
            raise ValueError(f"{self.kind} is a two-model algorithm: give (γ_q, γ_p)")
        if len(g) < 2:
            raise ValueError("an ensemble needs at least two members")
        check_int(self.first, "first (default proposer)", min=0, max=len(g) - 1)
        if self.after_reject not in ("pseudocode", "text"):
            raise ValueError("after_reject must be 'pseudocode' or 'text'")

    def initial_config(self, start_state: int = 0):
        if self.kind == "nse":
            return (start_state, (), (0,) * len(self.gammas))
        return (start_state, -1, -1)


# --- enumeration of one step ------------------------------------------------------------------

class _Branch:
    """Random choices of one step along a fixed path of outcomes (re-execution DFS)."""

    def __init__(self, path):
        self.path, self.i, self.prob, self.alts = path, 0, 1.0, []

    def draw(self, dist) -> int:
        support = np.flatnonzero(dist > 0)
        if self.i < len(self.path):
            x = self.path[self.i]
        else:
            x = int(support[0])
            self.alts.append((self.i, [int(y) for y in support[1:]]))
        self.prob *= float(dist[x])
        self.i += 1
        return x

    def bernoulli(self, a: float) -> bool:
        return self.draw(np.array([1.0 - a, a])) == 1


class _RecordingBranch(_Branch):
    def __init__(self, path):
        super().__init__(path)
        self._taken = []

    def draw(self, dist) -> int:
        x = super().draw(dist)
        self._taken.append(x)
        return x


def _enumerate_step(step, config):
    out: dict = {}
    stack = [[]]
    while stack:
        path = stack.pop()
        br = _RecordingBranch(path)
        emitted, nxt, inv = step(config, br)
        key = (tuple(int(t) for t in emitted), nxt, tuple(inv))
        out[key] = out.get(key, 0.0) + br.prob
        for i, alts in br.alts:
            for y in alts:
                stack.append(br._taken[:i] + [y])
    return out


class Engine:
    """Exact step enumeration of one algorithm under one rule on one :class:`SEModels`."""

    def __init__(self, models: SEModels, alg: Algorithm, rule: SERule = STANDARD):
        check_type(models, SEModels, "models")
        check_type(alg, Algorithm, "alg")
        check_type(rule, SERule, "rule", " (spectheory.rules.se)")
        if alg.kind != "nse" and models.n != 2:
            raise ValueError(f"{alg.kind} needs exactly two members, got {models.n}")
        if alg.kind == "nse" and len(alg.gammas) != models.n:
            raise ValueError(f"give one proposal length per member ({models.n}), got {len(alg.gammas)}")
        if alg.kind == "nse" and rule.bonus != "none":
            raise ValueError("the n-model framework scores every bonus token; bonus='unchecked' is a "
                             "two-model control")
        self.M, self.alg, self.rule = models, alg, rule
        self.acc, self.res = models.rule_tables(rule)
        self._cache: dict = {}

    def _nxt(self, s, x):
        return (s * self.M.V + x) % self.M.S

    # Sec. 3.2 and Alg. 1 --------------------------------------------------------------------
    def _step_two(self, config, br):
        M, alg, rule = self.M, self.alg, self.rule
        s, who, cache = config
        inv = [0, 0]
        if cache < 0:
            k, T, st = alg.first, [], s
        else:
            k, T, st = who, [cache], self._nxt(s, cache)
        g = alg.gammas[k]
        for _ in range(g - len(T)):                       # Propose(S + C, γ − |C|)
            x = br.draw(M.tables[k, st])
            T.append(x)
            st = self._nxt(st, x)
        inv[k] += g - (0 if cache < 0 else 1)
        v = 1 - k
        inv[v] += 1                                       # Score(T): one call of the verifier
        out, st = [], s
        for x in T:                                       # Verify(T, E(L))
            if br.bernoulli(self.acc[k, st, x]):
                out.append(x)
                st = self._nxt(st, x)
            else:
                if rule.residual == "drop":
                    return out, (st, -1, -1), inv
                y = br.draw(self.res[k, st])
                out.append(y)
                return out, (self._nxt(st, y), -1, -1), inv
        t = br.draw(M.tables[v, st])                      # bonus token of the verifier
        if rule.bonus == "unchecked":
            out.append(t)
            return out, (self._nxt(st, t), -1, -1), inv
        if alg.kind == "alt":
            return out, (st, v, t), inv                   # C ← t, swap roles
        return out, (st, -1, -1), inv                     # Sec. 3.2: bonus discarded

    # Alg. 2 ---------------------------------------------------------------------------------
    def _step_n(self, config, br):
        M, alg = self.M, self.alg
        n = M.n
        s, Sc, lens = config
        Sc, lens = list(Sc), list(lens)
        inv = [0] * n
        out = []
        if not Sc:
            k, st = alg.first, s
            for _ in range(alg.gammas[k]):
                x = br.draw(M.tables[k, st])
                Sc.append((x, k))
                st = self._nxt(st, x)
            inv[k] += alg.gammas[k]
            lens[k] = alg.gammas[k]
            return out, (s, tuple(Sc), tuple(lens)), inv
        i = int(np.argmin(lens))
        inv[i] += 1
        st = s
        for x, _ in Sc:
            st = self._nxt(st, x)
        t = br.draw(M.tables[i, st])                      # Score: bonus token and its probability
        Sc.append((t, i))
        lens[i] = len(Sc)
        rejected = False
        while all(ln > 0 for ln in lens):
            x, k = Sc[0]
            if br.bernoulli(self.acc[k, s, x]):
                out.append(x)
                s = self._nxt(s, x)
                Sc.pop(0)
                lens = [ln - 1 for ln in lens]
            else:
                if self.rule.residual != "drop":
                    y = br.draw(self.res[k, s])
                    out.append(y)
                    s = self._nxt(s, y)
                Sc, lens, rejected = [], [0] * n, True
                break
        if not (rejected and alg.after_reject == "text"):
            m = alg.gammas[i] - 1                         # Propose(M_i, S + S_c, γ_i − 1)
            st = s
            for x, _ in Sc:
                st = self._nxt(st, x)
            for _ in range(m):
                x = br.draw(M.tables[i, st])
                Sc.append((x, i))
                st = self._nxt(st, x)
            inv[i] += m
            lens[i] += m
        return out, (s, tuple(Sc), tuple(lens)), inv

    def step_outcomes(self, config) -> dict:
        """{(emitted tokens, next config, invocations per member): probability}."""
        got = self._cache.get(config)
        if got is None:
            step = self._step_n if self.alg.kind == "nse" else self._step_two
            got = _enumerate_step(step, config)
            self._cache[config] = got
        return got


def first_tokens_distribution(engine: Engine, n_tokens: int, start_state: int = 0) -> np.ndarray:
    """Exact law of the first ``n_tokens`` emitted tokens (flat over V**n, first token most
    significant), comparable with ``engine.M.r_source.sequence_probs(n_tokens, start_state)``."""
    check_type(engine, Engine, "engine")
    V = engine.M.V
    n_tokens = check_enumerable(V, check_int(n_tokens, "n_tokens", min=1))
    start_state = check_state(start_state, engine.M.S)
    memo: dict = {}

    def dist(config, n, depth=0):
        key = (config, n)
        if key in memo:
            return memo[key]
        if depth > 60:
            raise RuntimeError("no token emitted in 60 consecutive steps: the first-N law is "
                               "undefined for this rule/instance")
        out = np.zeros(V ** n)
        for (em, nxt, _), pr in engine.step_outcomes(config).items():
            L = len(em)
            if L >= n:
                idx = 0
                for t in em[:n]:
                    idx = idx * V + t
                out[idx] += pr
            else:
                idx = 0
                for t in em:
                    idx = idx * V + t
                w = V ** (n - L)
                out[idx * w:(idx + 1) * w] += pr * dist(nxt, n - L, depth + (L == 0))
        memo[key] = out
        return out

    return dist(engine.alg.initial_config(start_state), n_tokens)


@dataclass(frozen=True)
class LongRun:
    """Renewal–reward result: stationary tokens per step, invocations per step and model,
    tokens per unit time and the speedup over the vanilla ensemble (Σ_k t_k per token)."""

    tokens_per_step: float
    invocations_per_step: np.ndarray
    throughput: float
    speedup: float
    n_configs: int


def config_chain(engine: Engine, start_state: int = 0):
    """Reachable configurations with the step transition matrix, E[tokens] and E[invocations]."""
    check_type(engine, Engine, "engine")
    start_state = check_state(start_state, engine.M.S)
    init = engine.alg.initial_config(start_state)
    index = {init: 0}
    order = [init]
    rows = []
    i = 0
    while i < len(order):
        cfg = order[i]
        row: dict = {}
        tok = 0.0
        inv = np.zeros(engine.M.n)
        for (em, nxt, iv), pr in engine.step_outcomes(cfg).items():
            if nxt not in index:
                if len(order) >= MAX_CONFIGS:
                    raise ValueError(f"more than {MAX_CONFIGS} configurations: instance too large")
                index[nxt] = len(order)
                order.append(nxt)
            row[index[nxt]] = row.get(index[nxt], 0.0) + pr
            tok += pr * len(em)
            inv += pr * np.asarray(iv, dtype=np.float64)
        rows.append((row, tok, inv))
        i += 1
    m = len(order)
    P = np.zeros((m, m))
    toks = np.zeros(m)
    invs = np.zeros((m, engine.M.n))
    for a, (row, tok, inv) in enumerate(rows):
        for b, pr in row.items():
            P[a, b] = pr
        toks[a], invs[a] = tok, inv
    return order, P, toks, invs


def long_run(engine: Engine, costs, start_state: int = 0) -> LongRun:
    """Exact long-run tokens per unit time of the process (renewal–reward over its
    configurations), with ``costs[k]`` the time of one call of member k."""
    check_type(engine, Engine, "engine")
    t = check_costs(costs, n=engine.M.n)
    _, P, toks, invs = config_chain(engine, start_state)
    from ..closed_forms.se import stationary
    nu = stationary(P, start=0)
    tok = float(nu @ toks)
    inv = nu @ invs
    time = float(inv @ t)
    thr = tok / time if time > 0 else np.inf
    return LongRun(tok, inv, thr, thr * float(t.sum()), P.shape[0])


def expected_step_tokens(engine: Engine, config=None) -> float:
    """E[tokens emitted in one step] from ``config`` (default: the initial configuration)."""
    check_type(engine, Engine, "engine")
    if config is not None and (not isinstance(config, tuple) or len(config) != 3):
        raise ValueError(f"config must be a configuration (state, ·, ·) of the engine, got {config!r}")
    if config is None:
        cfg = engine.alg.initial_config()
    else:
        cfg = (check_state(config[0], engine.M.S, "config state"),) + config[1:]
    return float(sum(pr * len(em) for (em, _, _), pr in engine.step_outcomes(cfg).items()))
