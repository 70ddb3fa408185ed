"""Monte Carlo of SpecBranch's pipeline model (Shen et al., ICLR 2026) on Markov pairs, in simulated time.

The public functions validate their arguments, handle the seed (independent xoshiro256++
streams from :func:`spectheory.rng.stream_states`), prepare one
:class:`~spectheory._kernels.sb.SBTables` bundle and call the kernels with preallocated
outputs:

* :func:`simulate` — long-run rates of a method: ``n_streams`` independent chains of
  ``burn_in + n_rounds`` rounds; :class:`SBResult` gives tokens per unit time, speedup over
  autoregressive decoding, rollback rate, idle time of each model, tokens and accepted
  tokens per target call, each with a standard error (ratio of sums over streams, delta
  method), and the per-round histograms;
* :func:`first_tokens` — the first N emitted tokens of independent runs (losslessness);
* :func:`run_uniforms` / :func:`round_reference` — the same rounds fed explicit uniforms,
  by the kernel and by a plain-Python twin that must agree bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels import sb as _k
from ..checks import check_int, check_state, check_type
from ..closed_forms import multidraft as cf_md
from ..exact import sb as ex
from ..markov import MarkovPair
from ..rng import stream_states
from ..rules import sb as R
from .clock import ratio_of_means

N_STREAMS = 16
_KIND = {"ar": _k.KIND_AR, "sps": _k.KIND_SPS, "psd": _k.KIND_PSD, "pipeline": _k.KIND_PIPE}


def prepare(pair: MarkovPair, method: R.Method, pipe: R.Pipeline) -> _k.SBTables:
    """The kernel tables of one (pair, method, pipeline)."""
    m = ex.model(pair, method, pipe)
    S, V = m.S, m.V
    rule = method.branch_rule
    kk = np.ascontiguousarray(m.kk, dtype=np.int64)
    KM = int(kk.max()) if method.is_pipeline and method.branching else 1
    rho = np.ones(S)
    kres = np.asarray(m.res, dtype=np.float64).copy()
    if method.is_pipeline and method.branching and rule.verify == "kseq":
        for s in range(S):
            rho[s] = cf_md.kseq_rho(m.P[s], m.Q[s], int(kk[s]))
            kres[s] = cf_md.kseq_residual(m.P[s], m.Q[s], rho[s])
    order = np.argsort(-m.Q, axis=1, kind="stable").astype(np.int64)
    pol = np.cumsum(m.policy, axis=1)
    pol[:, -1] = 1.0
    return _k.SBTables(
        V, S, pipe.gamma, _KIND[method.kind], bool(method.branching), bool(method.keep_overlap), bool(method.overlap),
        R.BRANCH_TOKENS.index(rule.tokens), R.BRANCH_VERIFY.index(rule.verify), rule.residual == "argmax", KM,
        np.ascontiguousarray(m.P), np.ascontiguousarray(m.Q), np.cumsum(m.P, axis=1), np.cumsum(m.Q, axis=1),
        np.ascontiguousarray(m.acc), np.ascontiguousarray(m.res), np.cumsum(m.res, axis=1),
        np.ascontiguousarray(m.nxt), np.ascontiguousarray(m.trunc), kk, order, pol, rho, np.cumsum(kres, axis=1),
        np.ascontiguousarray(pipe.target_cost, dtype=np.float64))


def _start(method: R.Method, x0: int) -> np.ndarray:
    st = np.array([x0, x0, 0, 0, 0], dtype=np.int64)
    return st


@dataclass
class SBResult:
    """Summed round rewards per stream (``sums[c, i]``, fields :data:`spectheory.exact.sb.REWARDS`),
    histograms of emitted and accepted tokens per target call, and the AR time per token."""

    method: str
    sums: np.ndarray
    hist_emit: np.ndarray
    hist_acc: np.ndarray
    c_ar: float

    def _ratio(self, num, den) -> tuple[float, float]:
        a = np.asarray(num, dtype=np.float64)
        b = np.asarray(den, dtype=np.float64)
        if b.sum() <= 0:
            return float("nan"), float("nan")
        return ratio_of_means(a, b)

    def col(self, name: str) -> np.ndarray:
        return self.sums[:, ex.REWARDS.index(name)]

    def rates(self) -> ex.Rates:
        """Point estimates (ratio of total sums), as the exact engine's :class:`Rates`."""
        return ex.rates_from_sums(self.sums.sum(axis=0), self.c_ar)

    def estimate(self, what: str) -> tuple[float, float]:
        """``(estimate, standard error)`` of one rate: ``tokens_per_time``, ``latency``,
        ``speedup_ar``, ``rollback_rate``, ``submitted_rollback_rate``, ``rollback_per_drafted``,
        ``submitted_rollback_per_drafted``, ``waste_rate``, ``target_idle``, ``draft_idle``, ``tokens_per_call``,
        ``accepted_per_call``."""
        c = self.col
        if what == "tokens_per_time":
            return self._ratio(c("emitted"), c("time"))
        if what == "latency":
            return self._ratio(c("time"), c("emitted"))
        if what == "speedup_ar":
            r, se = self._ratio(c("emitted"), c("time"))
            return r * self.c_ar, se * self.c_ar
        if what == "rollback_rate":
            return self._ratio(c("rolled_back"), c("accepted") + c("rolled_back"))
        if what == "submitted_rollback_rate":
            return self._ratio(c("rolled_back_submitted"), c("accepted") + c("rolled_back_submitted"))
        if what == "rollback_per_drafted":
            return self._ratio(c("rolled_back"), c("drafted"))
        if what == "submitted_rollback_per_drafted":
            return self._ratio(c("rolled_back_submitted"), c("drafted"))
        if what == "waste_rate":
            r, se = self._ratio(c("accepted"), c("drafted_all"))
            return 1.0 - r, se
        if what == "target_idle":
            r, se = self._ratio(c("target_busy"), c("time"))
            return 1.0 - r, se
        if what == "draft_idle":
            r, se = self._ratio(c("draft_busy"), c("time"))
            return 1.0 - r, se
        if what == "tokens_per_call":
            return self._ratio(c("emitted"), c("target_calls"))
        if what == "accepted_per_call":
            return self._ratio(c("accepted"), c("target_calls"))
        raise ValueError(f"unknown rate {what!r}")

    def speedup_over(self, other: "SBResult") -> tuple[float, float]:
        """Throughput of this run over another's (e.g. SpecBranch over SpS) and its standard
        error (independent runs: relative errors add in quadrature)."""
        check_type(other, SBResult, "other", " (spectheory.montecarlo.sb)")
        a, sa = self.estimate("tokens_per_time")
        b, sb_ = other.estimate("tokens_per_time")
        r = a / b
        return r, r * float(np.hypot(sa / a, sb_ / b))


def _check_args(pair, method, pipe):
    check_type(pair, MarkovPair, "pair")
    check_type(method, R.Method, "method", " (spectheory.rules.sb)")
    check_type(pipe, R.Pipeline, "pipe", " (spectheory.rules.sb.Pipeline)")


def simulate(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, n_rounds: int, *, seed=None,
             n_streams: int = N_STREAMS, burn_in: int = 100, start_state: int = 0) -> SBResult:
    """``n_streams`` independent chains from ``start_state`` (nothing drafted), each
    ``burn_in`` rounds discarded then ``n_rounds`` rounds summed."""
    _check_args(pair, method, pipe)
    n_rounds = check_int(n_rounds, "n_rounds", min=1)
    n_streams = check_int(n_streams, "n_streams", min=2, max=4096)
    burn_in = check_int(burn_in, "burn_in", min=0)
    start_state = check_state(start_state, pair.n_states)
    T = prepare(pair, method, pipe)
    st = stream_states(seed, n_streams)
    g = pipe.gamma
    sums = np.zeros((n_streams, _k.N_REWARDS))
    he = np.zeros((n_streams, g + 3), dtype=np.int64)
    ha = np.zeros((n_streams, g + 3), dtype=np.int64)
    _k.sb_streams(T, st, n_rounds, burn_in, _start(method, start_state), sums, he, ha, 0,
                  np.zeros((0, 1), dtype=np.int64), np.zeros(n_streams + 1, dtype=np.int64))
    return SBResult(method.name, sums, he, ha, pipe.c_ar)


def first_tokens(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, n_runs: int, n_tokens: int, *,
                 seed=None, start_state: int = 0, n_streams: int = N_STREAMS) -> np.ndarray:
    """(n_runs, n_tokens): the first tokens emitted by independent runs from ``start_state``."""
    _check_args(pair, method, pipe)
    n_runs = check_int(n_runs, "n_runs", min=1)
    n_tokens = check_int(n_tokens, "n_tokens", min=1)
    n_streams = check_int(n_streams, "n_streams", min=1, max=4096)
    start_state = check_state(start_state, pair.n_states)
    T = prepare(pair, method, pipe)
    st = stream_states(seed, n_streams)
    bounds = np.linspace(0, n_runs, n_streams + 1).round().astype(np.int64)
    out = np.full((n_runs, n_tokens), -1, dtype=np.int64)
    g = pipe.gamma
    _k.sb_streams(T, st, 0, 0, _start(method, start_state), np.zeros((n_streams, _k.N_REWARDS)),
                  np.zeros((n_streams, g + 3), dtype=np.int64), np.zeros((n_streams, g + 3), dtype=np.int64),
                  n_tokens, out, bounds)
    return out


def n_uniforms(pair: MarkovPair, method: R.Method, pipe: R.Pipeline) -> int:
    """Length of one round's uniform row (the layout in :mod:`spectheory._kernels.sb`)."""
    T = prepare(pair, method, pipe)
    return _k.n_uniforms(T.gamma, T.KM)


def run_uniforms(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, uniforms, start_state: int = 0):
    """Kernel rounds driven by explicit uniforms (rounds × :func:`n_uniforms`): returns
    ``(tokens (rounds, γ + 2) −1 padded, emitted counts, rewards (rounds, 11))``."""
    _check_args(pair, method, pipe)
    start_state = check_state(start_state, pair.n_states)
    T = prepare(pair, method, pipe)
    u = np.ascontiguousarray(uniforms, dtype=np.float64)
    U = _k.n_uniforms(T.gamma, T.KM)
    if u.ndim != 2 or u.shape[1] != U:
        raise ValueError(f"uniforms must have shape (rounds, {U}), got {u.shape}")
    if u.size and (not np.all(np.isfinite(u)) or u.min() < 0 or u.max() >= 1):
        raise ValueError("uniforms must lie in [0, 1)")
    toks = np.empty((u.shape[0], pipe.gamma + 2), dtype=np.int64)
    lens = np.empty(u.shape[0], dtype=np.int64)
    rew = np.empty((u.shape[0], _k.N_REWARDS))
    _k.run_uniforms(T, u, _start(method, start_state), toks, lens, rew)
    return toks, lens, rew


# --- plain-Python twin of the kernel (the reference it must match bit for bit) -------------------

def _search(cdf_row, u):
    t = u * cdf_row[-1]
    i = int(np.searchsorted(cdf_row, t, side="right"))
    if i == cdf_row.shape[0]:
        i -= 1
        while i > 0 and cdf_row[i] == cdf_row[i - 1]:
            i -= 1
    return i


def _weights(w, u):
    t = u * float(sum(w))
    acc, last = 0.0, -1
    for x, wx in enumerate(w):
        if wx > 0.0:
            acc += wx
            last = x
            if acc > t:
                return x
    return last


def _branch_ref(T, x, u):
    g, KM, V = T.gamma, T.KM, T.V
    k = int(T.kk[x])
    q, p = T.Q[x], T.P[x]
    base, tests, last = 4 * g, 4 * g + KM, 4 * g + 2 * KM
    if T.tok == _k.TOK_TOPK:
        B = [int(T.order[x, i]) for i in range(k)]
    elif T.tok == _k.TOK_WOR:
        B, removed, left = [], set(), 1.0
        for i in range(k):
            t = u[base + i] * left
            acc, pick = 0.0, -1
            for y in range(V):
                if y in removed or q[y] <= 0.0:
                    continue
                acc += q[y]
                pick = y
                if acc > t:
                    break
            B.append(pick)
            removed.add(pick)
            left -= q[pick]
    else:
        B = [_search(T.qcdf[x], u[base + i]) for i in range(k)]
    if T.ver == _k.VER_FIRST:
        return B[0], True
    if T.ver == _k.VER_MATCH:
        y = _search(T.pcdf[x], u[last])
        return y, y in B
    if T.ver == _k.VER_BEST_P:
        b = 0
        for i in range(1, k):
            if p[B[i]] > p[B[b]]:
                b = i
        y = B[b]
        if u[tests] < T.acc[x, y]:
            return y, True
        if T.res_argmax:
            return int(np.argmax(T.res[x])), False
        return _search(T.rcdf[x], u[last]), False
    if T.ver == _k.VER_KSEQ:
        for i in range(k):
            y = B[i]
            if u[tests + i] < p[y] / (T.rho[x] * q[y]):
                return y, True
        return _search(T.kcdf[x], u[last]), False
    iid = T.tok == _k.TOK_IID
    pc = [float(v) for v in p]
    removed = [False] * V
    left = 1.0
    for i in range(k):
        y = B[i]
        qy = q[y] if iid else q[y] / left
        a = pc[y] / qy if qy > 0.0 else (1.0 if pc[y] > 0.0 else 0.0)
        if u[tests + i] < a:
            return y, True
        qi = [q[z] if iid else (0.0 if removed[z] else q[z] / left) for z in range(V)]
        diff = [pc[z] - qi[z] for z in range(V)]
        tot = 0.0
        for dz in diff:
            if dz > 0.0:
                tot += dz
        if tot > 0.0:
            pc = [dz / tot if dz > 0.0 else 0.0 for dz in diff]
        if not iid:
            removed[y] = True
            left -= q[y]
    if T.res_argmax:
        return int(np.argmax(pc)), False
    return _weights(pc, u[last]), False


def _time_ref(T, busy):
    return max(busy, float(T.gamma)) if T.overlap else busy + T.gamma


def round_reference(T: _k.SBTables, u, st: list) -> tuple[list, np.ndarray]:
    """One round in plain Python from state ``st`` (a list, modified in place): the emitted
    tokens and the round's rewards. Reads ``u`` exactly as :func:`spectheory._kernels.sb.round_step`."""
    I = {k: i for i, k in enumerate(ex.REWARDS)}
    rew = np.zeros(_k.N_REWARDS)
    g, KM = T.gamma, T.KM
    xa, xw = st[0], st[1]
    out = []

    def put(**kw):
        for k, v in kw.items():
            rew[I[k]] = v

    if T.kind == _k.KIND_AR:
        y = _search(T.pcdf[xa], u[0])
        st[0] = st[1] = int(T.nxt[xa, y])
        put(time=T.cost[0], target_busy=T.cost[0], emitted=1, target_calls=1, rounds=1)
        return [y], rew
    if T.kind == _k.KIND_SPS:
        put(time=g + T.cost[g], target_busy=T.cost[g], draft_busy=g, drafted=g, drafted_all=g, target_calls=1,
            rounds=1)
        for j in range(g):
            c = _search(T.qcdf[xa], u[3 * j])
            if u[3 * j + 1] < T.acc[xa, c]:
                out.append(c)
                xa = int(T.nxt[xa, c])
                continue
            y = _search(T.rcdf[xa], u[3 * j + 2])
            out.append(y)
            st[0] = st[1] = int(T.nxt[xa, y])
            put(emitted=len(out), accepted=j, rolled_back=g - j, rolled_back_submitted=g - j)
            return out, rew
        y = _search(T.pcdf[xa], u[4 * g + 2 * KM + 2])
        out.append(y)
        st[0] = st[1] = int(T.nxt[xa, y])
        put(emitted=len(out), accepted=g)
        return out, rew
    if T.kind == _k.KIND_PSD:
        if st[4] == 0:
            put(time=g, draft_busy=g, drafted=g, drafted_all=g, rounds=1)
            st[1], st[4] = xa, 1
            return out, rew
        put(time=_time_ref(T, T.cost[g]), target_busy=T.cost[g], draft_busy=g, drafted=g, drafted_all=g,
            target_calls=1, rounds=1)
        for j in range(g):
            c = _search(T.qcdf[xw], u[3 * j])
            if u[3 * j + 1] < T.acc[xa, c]:
                out.append(c)
                xa, xw = int(T.nxt[xa, c]), int(T.nxt[xw, c])
                continue
            y = _search(T.rcdf[xa], u[3 * j + 2])
            out.append(y)
            a2 = int(T.nxt[xa, y])
            put(emitted=len(out), accepted=j, rolled_back=(g - j) + (0 if T.keep_overlap else g),
                rolled_back_submitted=g - j)
            st[0] = a2
            if T.keep_overlap:
                w = int(T.nxt[xw, c])
                for t in range(g - j - 1):
                    w = int(T.nxt[w, _search(T.qcdf[w], u[3 * g + t])])
                st[1], st[4] = w, 1
            else:
                st[1], st[4] = a2, 0
            return out, rew
        st[0], st[1] = xa, xw
        put(emitted=len(out), accepted=g)
        return out, rew
    cap, d = st[2], st[3]
    j = 0
    while not (d == 0 or j >= cap or (d == 1 and T.trunc[xw])):
        c = _search(T.qcdf[xw], u[3 * j])
        if u[3 * j + 1] < T.acc[xa, c]:
            out.append(c)
            xa, xw = int(T.nxt[xa, c]), int(T.nxt[xw, c])
            j += 1
            continue
        y = _search(T.rcdf[xa], u[3 * j + 2])
        out.append(y)
        w, jj, t = int(T.nxt[xw, c]), j + 1, 0
        while jj < cap and not (d == 1 and T.trunc[w]):
            w = int(T.nxt[w, _search(T.qcdf[w], u[3 * g + t])])
            jj += 1
            t += 1
        put(time=_time_ref(T, T.cost[jj]), target_busy=T.cost[jj], draft_busy=g, emitted=len(out), accepted=j,
            rolled_back=(jj - j) + (0 if T.keep_overlap else g), rolled_back_submitted=jj - j, unused=cap - jj, drafted=g, drafted_all=g * T.kk[w], target_calls=1, rounds=1)
        a2 = int(T.nxt[xa, y])
        st[0] = a2
        st[1], st[2], st[3] = (w, g, 2) if T.keep_overlap else (a2, 0, 0)
        return out, rew
    put(time=_time_ref(T, T.cost[j]), target_busy=T.cost[j], draft_busy=g, unused=cap - j, drafted=g,
        drafted_all=g * T.kk[xw], target_calls=1, rounds=1)
    base = 4 * g
    if T.branching:
        y, ok = _branch_ref(T, xa, u)
        h = y
    else:
        h = _search(T.qcdf[xw], u[base])
        ok = bool(u[base + KM] < T.acc[xa, h])
        y = h if ok else _search(T.rcdf[xa], u[base + 2 * KM])
    out.append(y)
    put(emitted=len(out))
    a2 = int(T.nxt[xa, y])
    st[0] = a2
    if ok:
        put(accepted=j + 1)
        w2 = int(T.nxt[xw, y])
        if g == 1:
            st[1], st[2], st[3] = a2, 0, 0
            return out, rew
        v = u[base + 2 * KM + 1]
        dd = 0
        while dd < 2 and v >= T.pol[a2, dd]:
            dd += 1
        st[1], st[2], st[3] = (a2 if dd == 0 else w2), g - 1, dd
        return out, rew
    put(accepted=j, rolled_back=1 if T.keep_overlap else g, rolled_back_submitted=1)
    if T.keep_overlap and g > 1:
        st[1], st[2], st[3] = int(T.nxt[xw, h]), g - 1, 2
    else:
        st[1], st[2], st[3] = a2, 0, 0
    return out, rew


def reference_rounds(pair: MarkovPair, method: R.Method, pipe: R.Pipeline, uniforms, start_state: int = 0):
    """The plain-Python twin over explicit uniforms; same output as :func:`run_uniforms`."""
    _check_args(pair, method, pipe)
    start_state = check_state(start_state, pair.n_states)
    T = prepare(pair, method, pipe)
    u = np.asarray(uniforms, dtype=np.float64)
    st = [int(v) for v in _start(method, start_state)]
    toks = np.full((u.shape[0], pipe.gamma + 2), -1, dtype=np.int64)
    lens = np.empty(u.shape[0], dtype=np.int64)
    rew = np.empty((u.shape[0], _k.N_REWARDS))
    for r in range(u.shape[0]):
        out, rw = round_reference(T, u[r], st)
        toks[r, :len(out)] = out
        lens[r] = len(out)
        rew[r] = rw
    return toks, lens, rew
