"""Exact engines for SpecBranch's pipeline model (Shen et al., ICLR 2026) on Markov pairs.

Three layers, all exact up to float64 rounding:

* **Branch stage.** :func:`branch_law` — for one branch point (target row p, draft row q, k
  branches, a :class:`~spectheory.rules.sb.BranchRule`), the law of the emitted token split
  into "a branch survived with head y" and "no branch survived, correction y", by
  enumerating the branch tokens (top-k; every ordered draw without replacement; every
  i.i.d. k-tuple) and integrating each acceptance test. The K-SEQ rule is the multi-draft
  family's engine (:func:`spectheory.exact.multidraft.kseq_outcomes` on a γ = 1 tree).
* **Rounds.** A pipeline state (the source state, the drafting context of the pending
  block, its length cap and the draft-length signal) and one round of a method from it:
  :func:`round_outcomes` enumerates every emitted-token sequence (for the law of the first
  N tokens, :func:`first_tokens_distribution`); the same walk without tokens merges paths
  by state (:func:`round_kernel`) for the long-run rates.
* **Long run.** :func:`long_run_rates` — the reachable pipeline states form a finite Markov
  chain (one step = one round); its stationary law and each state's expected round
  rewards give tokens per unit time, rollback rate, idle time of each model and tokens per
  round by renewal-reward (ratio of expectations per round).

Plus :func:`accepted_per_round_law` (sb.trunc_geom): the exact law of the accepted count per
SD round on a Markov chain, by the chain DP, against the truncated geometric.

Drafting is *lazy* here and in the kernels: the block verified in a round is drafted from q
token by token as the walk reaches it. A drafted block is a q-walk from its context whatever
the moment it is drafted, and the truncation rule (draft confidence below ε) reads only the
drafting context, so this has the law of the pipeline that drafts ahead (docs/sb.md).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..checks import check_enumerable, check_int, check_state, check_type
from ..closed_forms import multidraft as cf_md
from ..closed_forms import sd as cf_sd
from ..closed_forms import sb as cf
from ..distributions import check_pair, residual
from ..markov import MarkovPair, next_state, stationary_distribution
from ..rules import sb as R
from ..rules.multidraft import KSEQ

#: Reward fields of a round (summed over rounds; ratios of sums are the long-run rates).
REWARDS = ("time", "target_busy", "draft_busy", "emitted", "accepted", "rolled_back", "unused",
           "drafted", "drafted_all", "target_calls", "rounds", "rolled_back_submitted")
_I = {name: i for i, name in enumerate(REWARDS)}
#: Refuse enumerations with more pipeline states than this.
MAX_PIPE_STATES = 20_000
#: Refuse branch enumerations with more token tuples than this.
MAX_BRANCH_TUPLES = 200_000


# --- branch stage ----------------------------------------------------------------------------

def _check_pq_row(p, q):
    p, q = check_pair(p, q, names=("p (target)", "q (draft)"))
    if p.ndim != 1:
        raise ValueError(f"p and q must be 1-D distributions over the vocabulary, got shape {p.shape}")
    return p, q


def topk_tokens(q, k: int) -> np.ndarray:
    """The k most probable tokens of q, most probable first, ties to the lower token id."""
    order = np.argsort(-np.asarray(q, dtype=np.float64), kind="stable")
    return order[:k]


def max_branches(q, rule: R.BranchRule) -> int:
    """Most branches a rule can fork: distinct tokens (top-k, without replacement) need q > 0."""
    return int(np.count_nonzero(q)) if rule.tokens in ("topk", "sample_wor") else 1 << 30


def _token_tuples(q, k, tokens):
    """(branch tokens in order, probability) for every outcome of the branch-token choice."""
    if tokens == "topk":
        yield tuple(int(x) for x in topk_tokens(q, k)), 1.0
        return
    supp = [int(x) for x in np.flatnonzero(q > 0)]
    if tokens == "iid":
        if len(supp) ** k > MAX_BRANCH_TUPLES:
            raise ValueError(f"{len(supp)}**{k} i.i.d. branch tuples is too many to enumerate")
        for tup in itertools.product(supp, repeat=k):
            yield tup, float(np.prod(q[list(tup)]))
        return

    def rec(prefix, prob):
        if len(prefix) == k:
            yield tuple(prefix), prob
            return
        rest = [x for x in supp if x not in prefix]
        left = float(q[rest].sum())
        for x in rest:
            yield from rec(prefix + [x], prob * q[x] / left)

    yield from rec([], 1.0)


def _rrs(p, q, tup, without_replacement, surv, corr, weight, argmax):
    pc = p.copy()
    removed = np.zeros(q.shape, dtype=bool)
    stay = 1.0
    for x in tup:
        if without_replacement:
            qi = np.where(removed, 0.0, q)
            qi = qi / qi.sum()
        else:
            qi = q
        a = min(1.0, pc[x] / qi[x]) if qi[x] > 0 else (1.0 if pc[x] > 0 else 0.0)
        surv[x] += weight * stay * a
        stay *= 1.0 - a
        if stay <= 0.0:
            return
        d = np.maximum(pc - qi, 0.0)
        if d.sum() > 0:
            pc = d / d.sum()
        removed[x] = True
    if argmax:
        corr[int(np.argmax(pc))] += weight * stay
    else:
        corr += weight * stay * pc


@lru_cache(maxsize=65536)
def _branch_law_of_rows(p_bytes: bytes, q_bytes: bytes, V: int, k: int, rule: R.BranchRule):
    """:func:`branch_law` of two rows given as bytes, memoised: a pipeline's branch stage depends only
    on (p row, q row, k, rule), not on γ, c or the policy, so every long-run computation of a
    comparison over γ and c reuses it (read-only arrays)."""
    surv, corr = branch_law(np.frombuffer(p_bytes, dtype=np.float64), np.frombuffer(q_bytes, dtype=np.float64), k,
                            rule)
    surv.flags.writeable = corr.flags.writeable = False
    return surv, corr


def branch_law(p, q, k: int, rule: R.BranchRule) -> tuple[np.ndarray, np.ndarray]:
    """``(surv, corr)``: ``surv[y]`` = P(a branch with head y survives), ``corr[y]`` = P(no branch
    survives and the correction is y). ``surv + corr`` is the law of the token emitted at the
    branch point; a lossless rule gives ``p``. ``k`` is capped at q's support for rules that
    need distinct tokens."""
    p, q = _check_pq_row(p, q)
    check_type(rule, R.BranchRule, "rule", " (spectheory.rules.sb)")
    k = min(check_int(k, "k (branches)", min=1), max_branches(q, rule))
    V = p.shape[0]
    surv, corr = np.zeros(V), np.zeros(V)
    if rule.verify == "kseq":
        for o in _kseq_outcomes(p, q, k):
            if o.tau == 1:
                surv[o.t[0]] += o.prob
            else:
                corr[o.y] += o.prob
        return surv, corr
    res = residual(p, q)
    for tup, w in _token_tuples(q, k, rule.tokens):
        if w == 0.0:
            continue
        if rule.verify == "first":
            surv[tup[0]] += w
        elif rule.verify == "match":
            inb = np.zeros(V, dtype=bool)
            inb[list(tup)] = True
            surv += w * np.where(inb, p, 0.0)
            corr += w * np.where(inb, 0.0, p)
        elif rule.verify == "best_p":
            x = tup[int(np.argmax(p[list(tup)]))]
            a = min(1.0, p[x] / q[x]) if q[x] > 0 else 1.0
            surv[x] += w * a
            if rule.residual == "argmax":
                corr[int(np.argmax(res))] += w * (1.0 - a)
            else:
                corr += w * (1.0 - a) * res
        else:  # rrs
            _rrs(p, q, tup, rule.tokens != "iid", surv, corr, w, rule.residual == "argmax")
    return surv, corr


def _kseq_outcomes(p, q, K):
    """One K-SEQ step at γ = 1 (SpecTr; the multi-draft family's exact engine)."""
    from . import multidraft as ex_md
    return ex_md.kseq_outcomes(cf_md.iid_tree(p, q, 1), K, KSEQ)


def branch_point_tv(p, q, k: int, rule: R.BranchRule) -> float:
    """TV between the token a branch point emits and p."""
    surv, corr = branch_law(p, q, k, rule)
    return float(0.5 * np.abs(surv + corr - np.asarray(p, dtype=np.float64)).sum())


def survival_probability(p, q, k: int, rule: R.BranchRule) -> float:
    """P(some branch survives) at one branch point."""
    return float(branch_law(p, q, k, rule)[0].sum())


# --- the model: per-state tables of one (pair, method, pipeline) -----------------------------

@dataclass(frozen=True, eq=False)
class Model:
    """Prepared tables of one (pair, method, pipeline); see :func:`model`."""

    pair: MarkovPair
    method: R.Method
    pipe: R.Pipeline

    @cached_property
    def P(self):
        return self.pair.target.table

    @cached_property
    def Q(self):
        return self.pair.draft.table

    @cached_property
    def V(self):
        return self.pair.V

    @cached_property
    def S(self):
        return self.pair.n_states

    @cached_property
    def nxt(self):
        return next_state(np.arange(self.S)[:, None], np.arange(self.V)[None, :], self.V, self.S).astype(np.int64)

    @cached_property
    def conf(self):
        """Draft confidence per state: the top-1 draft probability (the paper's q(x))."""
        return self.Q.max(axis=1)

    @cached_property
    def trunc(self):
        """States where the confidence rule ends a block (confidence < ε)."""
        return self.conf < self.pipe.eps

    @cached_property
    def acc(self):
        """min(1, p/q) per (state, token); where q = 0: 1 if p > 0 (only a broken method tests such
        a token: it was drafted in another context)."""
        P, Q = self.P, self.Q
        if self.method.accept == "swapped":  # broken: min(1, q/p)
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(P > 0, np.minimum(1.0, Q / np.where(P > 0, P, 1.0)), 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(Q > 0, np.minimum(1.0, P / np.where(Q > 0, Q, 1.0)), (P > 0).astype(float))

    @cached_property
    def res(self):
        return residual(self.P, self.Q)

    @cached_property
    def beta(self):
        """Acceptance probability of a draft token per state, Σ_x q(x)·acc(x) (Σ min(p, q))."""
        return (self.Q * self.acc).sum(axis=1)

    @cached_property
    def kk(self):
        """Branches forked at a branch point drafted in each state (1 without branching)."""
        if not (self.method.is_pipeline and self.method.branching):
            return np.ones(self.S, dtype=np.int64)
        k = np.asarray(R.n_branches(self.conf, self.pipe.k_max), dtype=np.int64)
        if self.method.branch_rule.tokens in ("topk", "sample_wor"):
            k = np.minimum(k, np.count_nonzero(self.Q > 0, axis=1))
        return k

    @cached_property
    def branch(self):
        """(surv, corr), each (S, V): the branch-stage law in every state (x_a = x_w)."""
        S, V = self.S, self.V
        surv, corr = np.zeros((S, V)), np.zeros((S, V))
        if self.method.is_pipeline and self.method.branching:
            for s in range(S):
                surv[s], corr[s] = _branch_law_of_rows(self.P[s].tobytes(), self.Q[s].tobytes(), V, int(self.kk[s]),
                                                       self.method.branch_rule)
        else:  # one head drawn from q, standard SD test
            surv[:] = self.Q * self.acc
            corr[:] = (1.0 - self.beta)[:, None] * self.res
        return surv, corr

    @cached_property
    def policy(self):
        return R.policy_for(self.method, self.pipe, self.S)

    def rem(self, cap: int, d: int):
        """``(law, Ek)``: ``law[j][x]`` = law over the final block length m ∈ 0..cap of a block
        whose drafting walk is at depth j in state x; ``Ek[j][x]`` = E[k at the block end]."""
        key = (cap, d)
        cache = self.__dict__.setdefault("_rem", {})
        if key not in cache:
            S = self.S
            law = [None] * (cap + 1)
            ek = [None] * (cap + 1)
            law[cap] = np.zeros((S, cap + 1))
            law[cap][:, cap] = 1.0
            ek[cap] = self.kk.astype(float)
            for j in range(cap - 1, -1, -1):
                cont_law = np.einsum("xc,xcm->xm", self.Q, law[j + 1][self.nxt])
                cont_k = np.einsum("xc,xc->x", self.Q, ek[j + 1][self.nxt])
                stop = np.zeros((S, cap + 1))
                stop[:, j] = 1.0
                t = self.trunc if d == R.CONFIDENCE else np.zeros(S, dtype=bool)
                law[j] = np.where(t[:, None], stop, cont_law)
                ek[j] = np.where(t, self.kk.astype(float), cont_k)
            cache[key] = (law, ek)
        return cache[key]

    def time_vectors(self):
        """(tvec, busy): round time and target busy time for a pipeline block of m tokens."""
        g = self.pipe.gamma
        cost = self.pipe.target_cost
        busy = cost[: g + 1]
        if not self.method.overlap:  # broken: the draft waits for the target
            return busy + float(g), busy
        return np.maximum(busy, float(g)), busy


def model(pair: MarkovPair, method: R.Method, pipe: R.Pipeline) -> Model:
    """Validated tables of one (pair, method, pipeline)."""
    check_type(pair, MarkovPair, "pair")
    check_type(method, R.Method, "method", " (spectheory.rules.sb)")
    check_type(pipe, R.Pipeline, "pipe", " (spectheory.rules.sb.Pipeline)")
    if method.policy == "hrad":
        R.policy_for(method, pipe, pair.n_states)  # raises if the table is missing or mis-sized
    return Model(pair, method, pipe)


def start_state_of(method: R.Method, x0: int) -> tuple:
    """The pipeline state a run starts from (source state x0, nothing drafted)."""
    if method.kind == "ar":
        return ("ar", x0)
    if method.kind == "sps":
        return ("sps", x0)
    if method.kind == "psd":
        return ("E", x0)
    return ("P", x0, x0, 0, 0)


# --- one round ---------------------------------------------------------------------------------

class _Acc:
    """Collects a round's outcomes: (tokens, next state) → [prob, prob-weighted rewards]."""

    def __init__(self, tokens: bool):
        self.tokens = tokens
        self.d: dict = {}

    def add(self, toks, nxt, prob, rew):
        if prob <= 0.0:
            return
        key = (toks if self.tokens else (), nxt)
        e = self.d.get(key)
        if e is None:
            self.d[key] = [prob, prob * rew]
        else:
            e[0] += prob
            e[1] += prob * rew

    def items(self):
        return [(k[0], k[1], v[0], v[1] / v[0]) for k, v in self.d.items()]


def _rew(**kw):
    r = np.zeros(len(REWARDS))
    for k, v in kw.items():
        r[_I[k]] = v
    return r


def _walk(m: Model, xa, xw, steps, tokens):
    """Frontier of a block walk: {(xa, xw, toks): prob} after each number of accepted tokens,
    and the rejection events ((xa, xw, toks, j, c), prob) on the way. ``steps(j, xw)`` says
    whether position j is still part of the block."""
    frontier = {(xa, xw, ()): 1.0}
    j = 0
    while True:
        ends, cont = {}, {}
        for (a, w, t), pr in frontier.items():
            (cont if steps(j, w) else ends)[(a, w, t)] = pr
        yield j, ends, cont
        if not cont:
            return
        nxt = {}
        for (a, w, t), pr in cont.items():
            qrow = m.Q[w]
            for c in np.flatnonzero(qrow):
                c = int(c)
                pa = pr * qrow[c] * m.acc[a, c]
                if pa > 0:
                    key = (int(m.nxt[a, c]), int(m.nxt[w, c]), t + (c,) if tokens else ())
                    nxt[key] = nxt.get(key, 0.0) + pa
        frontier = nxt
        j += 1


def _rejections(m: Model, a, w, pr, tokens_on):
    """Rejection events at a position: (drafted token c, correction y, prob); merged over c
    unless the drafting context differs from the actual one (a broken method)."""
    if a == w:
        rej = 1.0 - m.beta[a]
        if rej <= 0:
            return []
        return [(None, int(y), pr * rej * m.res[a, y]) for y in np.flatnonzero(m.res[a])]
    out = []
    for c in np.flatnonzero(m.Q[w]):
        pc = pr * m.Q[w, c] * (1.0 - m.acc[a, c])
        if pc > 0:
            out += [(int(c), int(y), pc * m.res[a, y]) for y in np.flatnonzero(m.res[a])]
    return out


def _tail_ends(m: Model, w, n):
    """Law of the drafting state after n more q-steps from w (the drafted tail of a block):
    row w of the n-th power of the draft's state transition matrix (cached per model)."""
    powers = m.__dict__.setdefault("_qpow", [np.eye(m.S)])
    if len(powers) == 1:
        Qs = np.zeros((m.S, m.S))
        np.add.at(Qs, (np.repeat(np.arange(m.S), m.V), m.nxt.ravel()), m.Q.ravel())
        m.__dict__["_qs"] = Qs
    while len(powers) <= n:
        powers.append(powers[-1] @ m.__dict__["_qs"])
    return powers[n][w]


def round_outcomes(m: Model, state: tuple, *, tokens: bool = True) -> list:
    """Every outcome of one round from ``state``: ``(emitted tokens, next state, probability,
    expected rewards given the outcome)`` (rewards in the order of :data:`REWARDS`). With
    ``tokens=False`` outcomes with the same next state are merged (for the long-run chain)."""
    out = _Acc(tokens)
    kind = state[0]
    g = m.pipe.gamma
    cost = m.pipe.target_cost
    if kind == "ar":
        x = state[1]
        for y in np.flatnonzero(m.P[x]):
            out.add((int(y),), ("ar", int(m.nxt[x, y])), m.P[x, y],
                    _rew(time=cost[0], target_busy=cost[0], emitted=1, target_calls=1, rounds=1))
        return out.items()
    if kind == "sps":
        x = state[1]
        base = dict(time=g + cost[g], target_busy=cost[g], draft_busy=g, drafted=g, drafted_all=g,
                    target_calls=1, rounds=1)
        for j, ends, cont in _walk(m, x, x, lambda j, w: j < g, tokens):
            for (a, w, t), pr in cont.items():
                for _, y, py in _rejections(m, a, w, pr, tokens):
                    out.add(t + (y,), ("sps", int(m.nxt[a, y])), py,
                            _rew(emitted=j + 1, accepted=j, rolled_back=g - j, rolled_back_submitted=g - j, **base))
            for (a, w, t), pr in ends.items():  # all γ accepted: bonus from p
                for y in np.flatnonzero(m.P[a]):
                    out.add(t + (int(y),), ("sps", int(m.nxt[a, y])), pr * m.P[a, y],
                            _rew(emitted=g + 1, accepted=g, **base))
        return out.items()
    if kind == "E":  # PSD: serial draft of a block of γ, target idle
        x = state[1]
        out.add((), ("R", x, x), 1.0, _rew(time=g, draft_busy=g, drafted=g, drafted_all=g, rounds=1))
        return out.items()
    if kind == "R":  # PSD: verify a block of γ while drafting the next γ
        xa, xw = state[1], state[2]
        T = max(cost[g], g) if m.method.overlap else cost[g] + g
        base = dict(time=T, target_busy=cost[g], draft_busy=g, drafted=g, drafted_all=g, target_calls=1, rounds=1)
        for j, ends, cont in _walk(m, xa, xw, lambda j, w: j < g, tokens):
            for (a, w, t), pr in cont.items():
                for c, y, py in _rejections(m, a, w, pr, tokens):
                    a2 = int(m.nxt[a, y])
                    r = _rew(emitted=j + 1, accepted=j, rolled_back=(g - j) + (0 if m.method.keep_overlap else g),
                             rolled_back_submitted=g - j, **base)
                    if not m.method.keep_overlap:
                        out.add(t + (y,), ("E", a2), py, r)
                    else:  # the overlapped block (drafted from the drafted block's end) is kept
                        w1 = int(m.nxt[w, c]) if c is not None else None
                        ends_w = _tail_ends(m, w1, g - j - 1) if w1 is not None else None
                        if ends_w is None:  # a == w: merge over the drafted token c
                            ends_w = np.zeros(m.S)
                            for cc in np.flatnonzero(m.Q[w]):
                                wt = m.Q[w, cc] * (1.0 - m.acc[a, cc]) / max(1.0 - m.beta[a], 1e-300)
                                ends_w += wt * _tail_ends(m, int(m.nxt[w, cc]), g - j - 1)
                        for we in np.flatnonzero(ends_w):
                            out.add(t + (y,), ("R", a2, int(we)), py * ends_w[we], r)
            for (a, w, t), pr in ends.items():
                out.add(t, ("R", a, w), pr, _rew(emitted=g, accepted=g, **base))
        return out.items()
    # --- PEARL / SpecBranch round ---
    _, xa, xw, cap, d = state
    tvec, busy = m.time_vectors()
    surv, corr = m.branch
    pol = m.policy
    law, ek = m.rem(cap, d) if cap > 0 else (None, None)

    def steps(j, w):
        if d == R.ALL_REJECT or j >= cap:
            return False
        return not (d == R.CONFIDENCE and m.trunc[w])

    def expect(j, w):
        """(E time, E busy, E m, E k) for a block whose drafting walk is at depth j in state w."""
        if cap == 0 or d == R.ALL_REJECT:
            return tvec[0], busy[0], 0.0, float(m.kk[w])
        lw = law[j][w]
        return float(lw @ tvec[: cap + 1]), float(lw @ busy[: cap + 1]), float(lw @ np.arange(cap + 1)), \
            float(ek[j][w])

    def after_survivor(a, w, y):
        a2, w2 = int(m.nxt[a, y]), int(m.nxt[w, y])
        if g == 1:
            return [(("P", a2, a2, 0, 0), 1.0)]
        res = []
        for dd in range(3):
            if pol[a2, dd] > 0:
                if dd == R.ALL_REJECT:
                    res.append((("P", a2, a2, g - 1, 0), pol[a2, dd]))
                else:
                    res.append((("P", a2, w2, g - 1, dd), pol[a2, dd]))
        return res

    for j, ends, cont in _walk(m, xa, xw, steps, tokens):
        # rejections inside the block
        for (a, w, t), pr in cont.items():
            for c, y, py in _rejections(m, a, w, pr, tokens):
                a2 = int(m.nxt[a, y])
                if c is None:
                    # expected tail over the rejected drafted token c ~ q·(1 − acc) (max(q − p, 0))
                    wts = m.Q[w] * (1.0 - m.acc[a])
                    wts = wts / wts.sum()
                    cs = [(int(cc), wts[cc]) for cc in np.flatnonzero(wts)]
                else:
                    cs = [(c, 1.0)]
                Et = Eb = Em = Ek = 0.0
                for cc, wc in cs:
                    et, eb, em, e_k = expect(j + 1, int(m.nxt[w, cc]))
                    Et += wc * et
                    Eb += wc * eb
                    Em += wc * em
                    Ek += wc * e_k
                r = _rew(time=Et, target_busy=Eb, draft_busy=g, emitted=j + 1, accepted=j,
                         rolled_back=(Em - j) + (0 if m.method.keep_overlap else g), rolled_back_submitted=Em - j,
                         unused=cap - Em, drafted=g,
                         drafted_all=g * Ek,
                         target_calls=1, rounds=1)
                if not m.method.keep_overlap:
                    out.add(t + (y,), ("P", a2, a2, 0, 0), py, r)
                else:  # keep the overlapped path (head + continuation, γ tokens) after the block
                    ends_w = np.zeros(m.S)
                    for cc, wc in cs:
                        ends_w += wc * _tail_ends(m, int(m.nxt[w, cc]), cap - j - 1)
                    for we in np.flatnonzero(ends_w):
                        out.add(t + (y,), ("P", a2, int(we), g, R.ALL_ACCEPT), py * ends_w[we], r)
        # block fully verified: the branch stage at (a, w), block length j
        for (a, w, t), pr in ends.items():
            base = dict(time=tvec[j], target_busy=busy[j], draft_busy=g, drafted=g,
                        drafted_all=g * float(m.kk[w]), target_calls=1, rounds=1, unused=cap - j)
            if a == w and not m.method.keep_overlap:
                for y in np.flatnonzero(surv[a]):
                    r = _rew(emitted=j + 1, accepted=j + 1, **base)
                    for nst, pw in after_survivor(a, w, int(y)):
                        out.add(t + (int(y),), nst, pr * surv[a, y] * pw, r)
                for y in np.flatnonzero(corr[a]):
                    a2 = int(m.nxt[a, y])
                    out.add(t + (int(y),), ("P", a2, a2, 0, 0), pr * corr[a, y],
                            _rew(emitted=j + 1, accepted=j, rolled_back=g, rolled_back_submitted=1, **base))
                continue
            # one head h ~ q(·|w) tested in the actual context a (no branching); explicit in h
            # because a method that keeps the overlap needs the rejected head (its continuation
            # is drafted from next(w, h)), and the drafting context may differ from a
            for h in np.flatnonzero(m.Q[w]):
                h = int(h)
                ph = pr * m.Q[w, h]
                ok = m.acc[a, h]
                if ok > 0:
                    r = _rew(emitted=j + 1, accepted=j + 1, **base)
                    for nst, pw in after_survivor(a, w, h):
                        out.add(t + (h,), nst, ph * ok * pw, r)
                if ok < 1:
                    for y in np.flatnonzero(m.res[a]):
                        a2 = int(m.nxt[a, y])
                        nst = ("P", a2, int(m.nxt[w, h]), g - 1, R.ALL_ACCEPT) if g > 1 else ("P", a2, a2, 0, 0)
                        out.add(t + (int(y),), nst, ph * (1 - ok) * m.res[a, y],
                                _rew(emitted=j + 1, accepted=j, rolled_back=1 if m.method.keep_overlap else g, rolled_back_submitted=1,
                                     **base))
    return out.items()


# --- laws of emitted tokens ----------------------------------------------------------------------

def first_tokens_distribution(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, n_tokens: int,
                              start_state: int = 0) -> np.ndarray:
    """Exact law of the first ``n_tokens`` emitted tokens of a run from ``start_state`` (nothing
    drafted), over as many rounds as it takes, as a flat array over V**n_tokens sequences
    (first token most significant): compare with ``pair.target.sequence_probs(n_tokens)``."""
    mdl = model(pair, method, pipe)
    n_tokens = check_enumerable(pair.V, check_int(n_tokens, "n_tokens", min=1))
    check_state(start_state, pair.n_states)
    V = pair.V
    memo: dict = {}
    rounds: dict = {}

    def outcomes(st):
        if st not in rounds:
            rounds[st] = round_outcomes(mdl, st, tokens=True)
            if len(rounds) > MAX_PIPE_STATES:
                raise ValueError("too many pipeline states to enumerate exactly")
        return rounds[st]

    def dist(st, n):
        key = (st, n)
        if key in memo:
            return memo[key]
        out = np.zeros(V ** n)
        for toks, nst, pr, _ in outcomes(st):
            L = len(toks)
            idx = 0
            for tkn in toks[:n]:
                idx = idx * V + tkn
            if L >= n:
                out[idx] += pr
            elif L == 0:
                out += pr * dist(nst, n)
            else:
                w = V ** (n - L)
                out[idx * w:(idx + 1) * w] += pr * dist(nst, n - L)
        memo[key] = out
        return out

    return dist(start_state_of(method, start_state), n_tokens)


def first_tokens_tv(pair, method, pipe, n_tokens, start_state=0) -> tuple[float, tuple, float, float]:
    """(TV to p, the sequence with the largest gap, its p, its probability under the method)."""
    law = first_tokens_distribution(pair, method, pipe, n_tokens, start_state)
    ref = pair.target.sequence_probs(n_tokens, start_state)
    k = int(np.argmax(np.abs(law - ref)))
    seq, V = [], pair.V
    for _ in range(n_tokens):
        seq.append(k % V)
        k //= V
    seq = tuple(reversed(seq))
    idx = 0
    for tkn in seq:
        idx = idx * V + tkn
    return float(0.5 * np.abs(law - ref).sum()), seq, float(ref[idx]), float(law[idx])


# --- long-run rates ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rates:
    """Long-run rates of one method (ratios of expected round rewards under the stationary law
    of the round chain). Times are in draft-call units (t = 1)."""

    tokens_per_time: float
    latency: float
    speedup_ar: float
    rollback_rate: float
    submitted_rollback_rate: float
    waste_rate: float
    target_idle: float
    draft_idle: float
    tokens_per_call: float
    accepted_per_call: float
    per_round: dict
    #: the rollback rates per drafted token (one path's draft forward passes: the public code prints
    #: rollback tokens and draft forward passes), not per speculated token
    rollback_per_drafted: float = float("nan")
    submitted_rollback_per_drafted: float = float("nan")

    def speedup_over(self, other: "Rates") -> float:
        """Throughput ratio over another method's rates (e.g. over SpS)."""
        check_type(other, Rates, "other", " (spectheory.exact.sb)")
        return self.tokens_per_time / other.tokens_per_time

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("tokens_per_time", "latency", "speedup_ar", "rollback_rate",
                                              "submitted_rollback_rate", "rollback_per_drafted",
                                              "submitted_rollback_per_drafted", "waste_rate", "target_idle", "draft_idle", "tokens_per_call",
                                              "accepted_per_call")}
        d["per_round"] = dict(self.per_round)
        return d


def rates_from_sums(sums, c_ar: float) -> Rates:
    """:class:`Rates` from summed (or expected) round rewards in the order of :data:`REWARDS`."""
    s = {k: float(sums[i]) for i, k in enumerate(REWARDS)}
    tpt = s["emitted"] / s["time"]
    spec = s["accepted"] + s["rolled_back"]
    nan = float("nan")
    return Rates(
        tokens_per_time=tpt, latency=1.0 / tpt, speedup_ar=c_ar * tpt,
        rollback_rate=s["rolled_back"] / spec if spec > 0 else nan,
        submitted_rollback_rate=(s["rolled_back_submitted"] / (s["accepted"] + s["rolled_back_submitted"])
                                 if s["accepted"] + s["rolled_back_submitted"] > 0 else nan),
        waste_rate=(s["drafted_all"] - s["accepted"]) / s["drafted_all"] if s["drafted_all"] > 0 else nan,
        target_idle=1.0 - s["target_busy"] / s["time"], draft_idle=1.0 - s["draft_busy"] / s["time"],
        tokens_per_call=s["emitted"] / s["target_calls"] if s["target_calls"] > 0 else nan,
        accepted_per_call=s["accepted"] / s["target_calls"] if s["target_calls"] > 0 else nan,
        per_round={k: s[k] / s["rounds"] for k in REWARDS},
        rollback_per_drafted=s["rolled_back"] / s["drafted"] if s["drafted"] > 0 else nan,
        submitted_rollback_per_drafted=s["rolled_back_submitted"] / s["drafted"] if s["drafted"] > 0 else nan)


def round_chain(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, start_state: int = 0):
    """``(states, T, Rw)``: the pipeline states reachable from ``start_state``, the round
    transition matrix between them and each state's expected round rewards."""
    mdl = model(pair, method, pipe)
    check_state(start_state, pair.n_states)
    s0 = start_state_of(method, start_state)
    index = {s0: 0}
    order = [s0]
    rows = []
    i = 0
    while i < len(order):
        st = order[i]
        outs = round_outcomes(mdl, st, tokens=False)
        row = {}
        rew = np.zeros(len(REWARDS))
        for _, nst, pr, r in outs:
            if nst not in index:
                index[nst] = len(order)
                order.append(nst)
                if len(order) > MAX_PIPE_STATES:
                    raise ValueError(f"more than {MAX_PIPE_STATES} reachable pipeline states")
            row[index[nst]] = row.get(index[nst], 0.0) + pr
            rew += pr * r
        rows.append((row, rew))
        i += 1
    n = len(order)
    T = np.zeros((n, n))
    Rw = np.zeros((n, len(REWARDS)))
    for i, (row, rew) in enumerate(rows):
        tot = sum(row.values())
        for j, v in row.items():
            T[i, j] = v / tot
        Rw[i] = rew / tot
    return order, T, Rw


def long_run_rates(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, start_state: int = 0,
                   engine: str = "auto") -> Rates:
    """Exact long-run rates by renewal-reward over the finite round chain (stationary law seen
    from ``start_state`` when the chain is reducible). ``engine``: ``"walk"`` (the round walk of
    :func:`round_outcomes`, every method), ``"matrix"`` (the same rounds as matrix products over
    all states at once, pipelines whose drafting context is the actual one), ``"auto"``."""
    model(pair, method, pipe)  # validates the arguments
    if engine not in ("auto", "walk", "matrix"):
        raise ValueError(f"engine must be 'auto', 'walk' or 'matrix', got {engine!r}")
    matrix_ok = method.kind in ("pipeline", "sps", "psd") and not method.keep_overlap
    if engine == "matrix" and not matrix_ok:
        raise ValueError(f"the matrix engine runs pipelines, SpS and PSD without keep_overlap, not {method.name!r}")
    if engine == "matrix" or (engine == "auto" and matrix_ok):
        chain = {"pipeline": pipeline_chain_matrix, "sps": sps_chain_matrix, "psd": psd_chain_matrix}[method.kind]
        T, Rw, s0 = chain(pair, method, pipe, start_state)
        pi = _stationary(T, s0)
        return rates_from_sums(pi @ Rw, pipe.c_ar)
    _, T, Rw = round_chain(pair, method, pipe, start_state)
    pi = _stationary(T, 0)
    return rates_from_sums(pi @ Rw, pipe.c_ar)


def _stationary(T: np.ndarray, start: int) -> np.ndarray:
    """The long-run law of the round chain from ``start``: a direct solve on the states reachable
    from it when they have one stationary law (the usual case), else
    :func:`spectheory.markov.stationary_distribution` (reducible chains, exactly)."""
    n = T.shape[0]
    seen = np.zeros(n, dtype=bool)
    seen[start] = True
    frontier = np.array([start])
    while frontier.size:
        nxt = np.flatnonzero((T[frontier] > 0).any(axis=0) & ~seen)
        seen[nxt] = True
        frontier = nxt
    idx = np.flatnonzero(seen)
    Tr = T[np.ix_(idx, idx)]
    A = Tr.T - np.eye(idx.size)
    A[-1] = 1.0
    b = np.zeros(idx.size)
    b[-1] = 1.0
    try:
        pr = np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        return stationary_distribution(T, start=start)
    if pr.min() < -1e-10 or np.abs(pr @ Tr - pr).max() > 1e-10:
        return stationary_distribution(T, start=start)
    out = np.zeros(n)
    out[idx] = np.clip(pr, 0.0, None)
    return out / out.sum()


def _tok2state(mdl: "Model", W: np.ndarray) -> np.ndarray:
    S, V = mdl.S, mdl.V
    out = np.zeros((S, S))
    np.add.at(out, (np.repeat(np.arange(S), V), mdl.nxt.ravel()), W.ravel())
    return out


def sps_chain_matrix(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, start_state: int = 0):
    """``(T, Rw, start)``: SpS's round chain over source states (the state a round starts in) and
    each state's expected round rewards, by the chain DP (the round of :func:`round_outcomes`)."""
    mdl = model(pair, method, pipe)
    if method.kind != "sps":
        raise ValueError("sps_chain_matrix runs SpS")
    start_state = check_state(start_state, pair.n_states)
    S, g = mdl.S, pipe.gamma
    cost = pipe.target_cost
    A = _tok2state(mdl, mdl.Q * mdl.acc)
    rej = 1.0 - mdl.beta
    Rr = _tok2state(mdl, rej[:, None] * mdl.res)
    T = np.zeros((S, S))
    ri = {k: i for i, k in enumerate(REWARDS)}
    Rw = np.zeros((S, len(REWARDS)))
    Ak = np.eye(S)
    e_tau = np.zeros(S)
    for k in range(g):
        pk = Ak @ rej                       # P(τ = k | s)
        e_tau += k * pk
        T += Ak @ Rr
        Ak = Ak @ A
    pg = Ak.sum(axis=1)                     # P(τ = γ | s)
    e_tau += g * pg
    T += Ak @ _tok2state(mdl, mdl.P)
    Rw[:, ri["time"]] = g + cost[g]
    Rw[:, ri["target_busy"]] = cost[g]
    Rw[:, ri["draft_busy"]] = g
    Rw[:, ri["emitted"]] = e_tau + 1.0
    Rw[:, ri["accepted"]] = e_tau
    Rw[:, ri["rolled_back"]] = g - e_tau
    Rw[:, ri["rolled_back_submitted"]] = g - e_tau
    Rw[:, ri["drafted"]] = g
    Rw[:, ri["drafted_all"]] = g
    Rw[:, ri["target_calls"]] = 1
    Rw[:, ri["rounds"]] = 1
    return T, Rw, start_state


def psd_chain_matrix(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, start_state: int = 0):
    """``(T, Rw, start)``: PSD's round chain over (EMPTY, x) = x and (READY, x) = S + x, and each
    state's expected round rewards (the rounds of :func:`round_outcomes`)."""
    mdl = model(pair, method, pipe)
    if method.kind != "psd" or method.keep_overlap:
        raise ValueError("psd_chain_matrix runs PSD without keep_overlap")
    start_state = check_state(start_state, pair.n_states)
    S, g = mdl.S, pipe.gamma
    cost = pipe.target_cost
    A = _tok2state(mdl, mdl.Q * mdl.acc)
    rej = 1.0 - mdl.beta
    Rr = _tok2state(mdl, rej[:, None] * mdl.res)
    ri = {k: i for i, k in enumerate(REWARDS)}
    T = np.zeros((2 * S, 2 * S))
    Rw = np.zeros((2 * S, len(REWARDS)))
    # EMPTY: a serial draft of γ, then READY in the same state
    T[:S, S:] = np.eye(S)
    Rw[:S, ri["time"]] = g
    Rw[:S, ri["draft_busy"]] = g
    Rw[:S, ri["drafted"]] = g
    Rw[:S, ri["drafted_all"]] = g
    Rw[:S, ri["rounds"]] = 1
    # READY: verify γ while drafting γ
    Ak = np.eye(S)
    e_tau = np.zeros(S)
    p_fail = np.zeros(S)
    for k in range(g):
        pk = Ak @ rej
        e_tau += k * pk
        p_fail += pk
        T[S:, :S] += Ak @ Rr
        Ak = Ak @ A
    e_tau += g * Ak.sum(axis=1)
    T[S:, S:] += Ak
    Rw[S:, ri["time"]] = max(cost[g], g) if method.overlap else cost[g] + g
    Rw[S:, ri["target_busy"]] = cost[g]
    Rw[S:, ri["draft_busy"]] = g
    Rw[S:, ri["emitted"]] = e_tau + p_fail       # τ accepted, + the correction after a rejection
    Rw[S:, ri["accepted"]] = e_tau
    Rw[S:, ri["rolled_back"]] = (g - e_tau) + g * p_fail
    Rw[S:, ri["rolled_back_submitted"]] = g - e_tau
    Rw[S:, ri["drafted"]] = g
    Rw[S:, ri["drafted_all"]] = g
    Rw[S:, ri["target_calls"]] = 1
    Rw[S:, ri["rounds"]] = 1
    return T, Rw, start_state


def pipeline_chain_matrix(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, start_state: int = 0):
    """``(T, Rw, start)``: the round chain of a PEARL/SpecBranch pipeline (drafting context =
    actual context) over the pipeline states ``(x, kind)``, x a source state and kind 0 = empty
    block, 1..3 = the survivor's continuation under signal all-reject / confidence / all-accept,
    index ``kind·S + x``; each state's expected round rewards. The round of :func:`round_outcomes`
    written as matrix products over every start state at once."""
    mdl = model(pair, method, pipe)
    if method.kind != "pipeline" or method.keep_overlap:
        raise ValueError("pipeline_chain_matrix runs pipelines without keep_overlap")
    start_state = check_state(start_state, pair.n_states)
    S, V, g = mdl.S, mdl.V, pipe.gamma
    tvec, busy = mdl.time_vectors()
    nxt = mdl.nxt
    surv, corr = mdl.branch
    pol = mdl.policy
    acc_tok = mdl.Q * mdl.acc                      # accept draft token c in state a
    rej_tok = mdl.Q * (1.0 - mdl.acc)              # reject draft token c in state a
    beta = mdl.beta

    def tok2state(W):
        out = np.zeros((S, S))
        np.add.at(out, (np.repeat(np.arange(S), V), nxt.ravel()), W.ravel())
        return out

    A = tok2state(acc_tok)
    Rej = tok2state((1.0 - beta)[:, None] * mdl.res)
    Surv = tok2state(surv)
    Corr = tok2state(corr)
    kinds = 4 if g > 1 else 1
    n = kinds * S
    T = np.zeros((n, n))
    Rw = np.zeros((n, len(REWARDS)))
    ri = {k: i for i, k in enumerate(REWARDS)}
    # after a survivor in x' the next kind is 1 + signal (γ > 1), else the empty block
    if g > 1:
        Next_surv = np.hstack([Surv * pol[:, d][None, :] for d in range(3)])  # (S, 3S): kinds 1..3
    kk = mdl.kk.astype(float)
    for kind in range(kinds):
        cap, d = (0, 0) if kind == 0 else (g - 1, kind - 1)
        rows = slice(kind * S, (kind + 1) * S)
        base = np.zeros((S, len(REWARDS)))
        base[:, ri["draft_busy"]] = g
        base[:, ri["drafted"]] = g
        base[:, ri["target_calls"]] = 1
        base[:, ri["rounds"]] = 1
        Rw[rows] += base
        if cap == 0 or d == R.ALL_REJECT:
            M_end = [np.eye(S)]       # the block ends at depth 0
            M_cont = []
        else:
            law, ek = mdl.rem(cap, d)
            M = np.eye(S)
            M_end, M_cont = [], []
            for j in range(cap + 1):
                stop = np.ones(S, dtype=bool) if j == cap else (mdl.trunc if d == R.CONFIDENCE else np.zeros(S, bool))
                M_end.append(M * stop[None, :])
                cont = M * (~stop)[None, :]
                M_cont.append(cont)
                if j < cap:
                    M = cont @ A
            # rejections at depth j: expected tail over the rejected drafted token
            for j, cont in enumerate(M_cont):
                if j >= cap or not cont.any():
                    continue
                Lw = law[j + 1]                                      # (S, cap + 1) law of m from depth j+1
                em = Lw @ np.arange(cap + 1)
                et = Lw @ tvec[: cap + 1]
                eb = Lw @ busy[: cap + 1]
                e_k = ek[j + 1]
                wt = rej_tok                                          # (S, V) weight of rejecting token c
                f = lambda vec: (wt * vec[nxt]).sum(axis=1)           # Σ_c q(1 − acc) vec[next(a, c)]
                pr = 1.0 - beta
                r = np.zeros((S, len(REWARDS)))
                r[:, ri["time"]] = f(et)
                r[:, ri["target_busy"]] = f(eb)
                r[:, ri["emitted"]] = (j + 1) * pr
                r[:, ri["accepted"]] = j * pr
                r[:, ri["rolled_back"]] = f(em) - j * pr + g * pr
                r[:, ri["rolled_back_submitted"]] = f(em) - j * pr
                r[:, ri["unused"]] = cap * pr - f(em)
                r[:, ri["drafted_all"]] = g * f(e_k)
                Rw[rows] += cont @ r
                T[rows, 0:S] += cont @ Rej
        # the block ended at depth j in state a: branch stage
        for j, E in enumerate(M_end):
            if not E.any():
                continue
            mass = E.sum(axis=1)
            Rw[rows, ri["time"]] += mass * tvec[j]
            Rw[rows, ri["target_busy"]] += mass * busy[j]
            Rw[rows, ri["unused"]] += mass * (cap - j)
            Rw[rows, ri["drafted_all"]] += E @ (g * kk)
            ps, pc = surv.sum(axis=1), corr.sum(axis=1)
            Rw[rows, ri["emitted"]] += mass * (j + 1)
            Rw[rows, ri["accepted"]] += mass * j + E @ ps
            Rw[rows, ri["rolled_back"]] += g * (E @ pc)
            Rw[rows, ri["rolled_back_submitted"]] += E @ pc
            T[rows, 0:S] += E @ Corr
            if g > 1:
                T[rows, S:] += E @ Next_surv
            else:
                T[rows, 0:S] += E @ Surv
    # the survivor's all-reject signal: the drafting context resets (same state in this engine)
    rs = T.sum(axis=1, keepdims=True)
    T = T / np.where(rs > 0, rs, 1.0)
    return T, Rw, start_state


def accepted_law(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, start_state: int = 0) -> np.ndarray:
    """Exact long-run law of the accepted draft tokens per target call (rounds with a target
    call, weighted by the stationary law of the round chain), k = 0..γ + 1. For SpS it is the
    law of τ; computed from the method's own rounds (its own acceptance test), so a broken
    verifier shows. SpS by the chain DP with the method's acceptance matrix; other methods by
    enumerating their rounds."""
    if method.kind == "sps":
        return _sps_accepted_law(model(pair, method, pipe), pipe.gamma, check_state(start_state, pair.n_states))
    states, T, _ = round_chain(pair, method, pipe, start_state)
    pi = stationary_distribution(T, start=0)
    mdl = model(pair, method, pipe)
    law = np.zeros(pipe.gamma + 2)
    ia, ic = _I["accepted"], _I["target_calls"]
    for w, st in zip(pi, states):
        if w <= 0:
            continue
        for _, _, pr, r in round_outcomes(mdl, st, tokens=True):
            if r[ic] > 0:
                law[int(round(r[ia]))] += w * pr
    return law / law.sum()


def _sps_accepted_law(mdl: Model, gamma: int, start: int) -> np.ndarray:
    S, V = mdl.S, mdl.V

    def tok2state(W):
        out = np.zeros((S, S))
        np.add.at(out, (np.repeat(np.arange(S), V), mdl.nxt.ravel()), W.ravel())
        return out

    A = tok2state(mdl.Q * mdl.acc)
    rej = 1.0 - mdl.beta
    Rr = tok2state(rej[:, None] * mdl.res)
    Pb = tok2state(mdl.P)
    K = np.zeros((S, S))
    by_state = np.zeros((S, gamma + 2))
    Ak = np.eye(S)
    for k in range(gamma):
        by_state[:, k] = Ak @ rej
        K += Ak @ Rr
        Ak = Ak @ A
    by_state[:, gamma] = Ak.sum(axis=1)
    K += Ak @ Pb
    nu = stationary_distribution(K, start=start)
    return nu @ by_state


# --- sb.trunc_geom ------------------------------------------------------------------------------------

def accepted_per_round_law(pair: MarkovPair, gamma: int, start_state: int = 0) -> np.ndarray:
    """Exact long-run law of τ (accepted draft tokens per SD round), k = 0..γ:
    ``Σ_s ν(s) P(τ = k | s)`` with ``P(τ = k | s) = (A^k (1 − β))[s]`` for k < γ and
    ``(A^γ 1)[s]`` for k = γ (A the chain's acceptance matrix) and ν the stationary law of
    round-start states (``closed_forms.sd.iteration_kernel``)."""
    check_type(pair, MarkovPair, "pair")
    gamma = check_int(gamma, "gamma (draft length)", min=1)
    check_state(start_state, pair.n_states)
    nu = stationary_distribution(cf_sd.iteration_kernel(pair, gamma), start=start_state)
    return nu @ tau_law_by_state(pair, gamma)


def tau_law_by_state(pair: MarkovPair, gamma: int) -> np.ndarray:
    """(S, γ+1): P(τ = k | round starts in s)."""
    check_type(pair, MarkovPair, "pair")
    gamma = check_int(gamma, "gamma (draft length)", min=1)
    A = cf_sd.acceptance_matrix(pair)
    rej = 1.0 - pair.acceptance_by_state()
    out = np.empty((pair.n_states, gamma + 1))
    v = np.eye(pair.n_states)
    for k in range(gamma):
        out[:, k] = v @ rej
        v = v @ A
    out[:, gamma] = v.sum(axis=1)
    return out


def alpha_readings(pair: MarkovPair, gamma: int, start_state: int = 0) -> dict:
    """The readings of "α = E[β]" on a Markov source: under the target's stationary law
    (``stationary``, the default), under the law of SD round-start states (``round_start``),
    and per verified position (``per_position``: the acceptance rate of all tested drafts)."""
    check_type(pair, MarkovPair, "pair")
    gamma = check_int(gamma, "gamma (draft length)", min=1)
    start_state = check_state(start_state, pair.n_states)
    beta = pair.acceptance_by_state()
    nu = stationary_distribution(cf_sd.iteration_kernel(pair, gamma), start=start_state)
    law = accepted_per_round_law(pair, gamma, start_state)
    k = np.arange(gamma + 1)
    tested = float(law @ np.minimum(k + 1, gamma))
    return {"stationary": cf_sd.stationary_acceptance(pair, start_state),
            "round_start": float(nu @ beta),
            "per_position": float(law @ k) / tested}


def trunc_geom_tv(pair: MarkovPair, gamma: int, alpha: float | None = None, start_state: int = 0) -> float:
    """TV between the exact law of τ and the truncated geometric at ``alpha`` (default: the
    stationary α = E_π[β])."""
    law = accepted_per_round_law(pair, gamma, start_state)
    a = alpha_readings(pair, gamma, start_state)["stationary"] if alpha is None else alpha
    return float(0.5 * np.abs(law - cf.trunc_geom_pmf(a, gamma)).sum())
