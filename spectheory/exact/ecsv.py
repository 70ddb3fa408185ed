"""Exact law of one ECSV decoding step and of the emitted text, by enumeration over branches.

Source: "Error-Correcting Speculative Decoding via Branch Voting" (ECSV), anonymous
manuscript under revision, 2026. Notation: ``p`` target (verifier), ``q`` draft, ``B``
branches of depth ``k`` (fused depth ``d``); the method is :mod:`spectheory.rules.ecsv`.

One step from a state enumerates every drafted branch tuple (``V^{B·d}`` of them, each with
its probability under the drafter), fuses each one (NumPy, vectorised over the tuples: an
implementation independent of the Numba kernel) and integrates the verification's
randomness analytically, so every emitted block has an exact probability. From the step
laws of every state: the law of the first N emitted tokens (TV and cross-entropy to p), the
long-run accepted length, tokens and verifier positions per step (renewal-reward over the
chain of step-start states), and the per-position match probabilities behind the prefix
length identity. Meant for small V, B and d (``MAX_TUPLES``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_enumerable, check_int, check_state, check_type
from ..markov import stationary_distribution
from ..rules.ecsv import Setup

#: Largest number of branch tuples (V^{B·d}) one step enumerates.
MAX_TUPLES = 1 << 18
#: Largest tuples × branches × depth × V cells the vectorised fusion holds at once.
MAX_CELLS = 1 << 26
#: Relative tolerance under which two fusion scores (or tie-break keys) count as tied.
TIE_TOL = 1e-9


@dataclass(frozen=True)
class Block:
    """One emitted block of a step: ``tau`` accepted fused tokens then one verifier token."""

    tokens: tuple
    prob: float
    tau: int
    end_state: int
    ce: float  # Σ −log p(token | its state) over the block


@dataclass(frozen=True)
class StepLaw:
    """Exact law of one step from ``state``.

    tau: P(τ = j), j = 0..d. tokens: E[τ + 1]. cost_parallel: E[verifier positions] when a
    forward scores the whole draft (R_used + d + 1; a token tree: its distinct prefixes);
    cost_sequential: positions scored up to the first mismatch (R_used + τ + 1).
    ce: E[Σ −log p] over the emitted tokens. fused: law of the fused draft over V^d codes
    (fusion methods). match_marginal[j]: P(the fused token j matches | the fused prefix),
    averaged over the draft, whether or not position j is reached (a_j read marginally).
    """

    state: int
    blocks: tuple
    tau: np.ndarray
    tokens: float
    cost_parallel: float
    cost_sequential: float
    ce: float
    fused: np.ndarray | None
    match_marginal: np.ndarray

    @property
    def accepted(self) -> float:
        return float(self.tau @ np.arange(self.tau.size))

    def tail(self) -> np.ndarray:
        """P(τ ≥ j), j = 1..d."""
        return self.tau[::-1].cumsum()[::-1][1:]

    def match_conditional(self) -> np.ndarray:
        """a_j = P(τ ≥ j | τ ≥ j − 1), j = 1..d (nan where position j − 1 is never passed)."""
        t = np.concatenate(([1.0], self.tail()))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(t[:-1] > 0, t[1:] / np.where(t[:-1] > 0, t[:-1], 1.0), np.nan)


def _check_setup(setup) -> Setup:
    return check_type(setup, Setup, "setup", " (spectheory.rules.ecsv.Setup)")


# --- enumeration -----------------------------------------------------------------------------

def _enumerate(setup: Setup, s0: int):
    V, S, Bd, d = setup.V, setup.S, setup.Bd, setup.d
    n_pos = Bd * d
    if V > 1 and n_pos * np.log2(V) > np.log2(MAX_TUPLES):
        raise ValueError(f"V^(B·d) = {V}^{n_pos} branch tuples is too many to enumerate (limit {MAX_TUPLES}); "
                         "use spectheory.montecarlo.ecsv")
    n = V ** n_pos
    if n * n_pos * V > MAX_CELLS:
        raise ValueError(f"{n} tuples × {n_pos} positions × V = {V} is too large for the exact engine")
    codes = np.arange(n, dtype=np.int64)
    tok = np.empty((n, Bd, d), dtype=np.int64)
    for pos in range(n_pos):  # position (b, j) is digit b·d + j, most significant first
        b, j = divmod(pos, d)
        tok[:, b, j] = (codes // V ** (n_pos - 1 - pos)) % V
    st = np.empty((n, Bd, d + 1), dtype=np.int64)
    st[:, :, 0] = s0
    for j in range(d):
        st[:, :, j + 1] = (st[:, :, j] * V + tok[:, :, j]) % S
    prob = np.prod(setup.q_rows[setup.q_ros[st[:, :, :d]], tok], axis=(1, 2))
    keep = prob > 0
    return tok[keep], st[keep], prob[keep]


def _ties(tied, key, where=None):
    """Keep, among ``tied`` (…, V), the entries whose ``key`` is maximal (relative TIE_TOL);
    only at the rows selected by ``where`` (…,) when given."""
    kk = np.where(tied, key, -np.inf)
    kmax = kk.max(axis=-1, keepdims=True)
    new = tied & (key >= kmax - TIE_TOL * np.maximum(1.0, np.abs(kmax)))
    return new if where is None else np.where(where[..., None], new, tied)


def _weights(m, r):
    if m.weights == "uniform":
        return np.ones_like(r)
    if m.scope == "position":
        z = m.gamma * r
        return np.exp(z - z.max(axis=1, keepdims=True))
    z = m.gamma * r.mean(axis=2)
    w = np.exp(z - z.max(axis=1, keepdims=True))
    return np.broadcast_to(w[:, :, None], r.shape)


def _argmax(m, w, onehot, qrow, qbar, cand, spot=None, spot_rows=None):
    score = (w[..., None] * onehot).sum(axis=1)
    if m.lam > 0:
        score = score + m.lam * (w[..., None] * qrow).sum(axis=1)
    tied = _ties(cand, score)
    if m.ties == "verifier" and spot is not None:
        tied = _ties(tied, spot_rows, spot)
    if m.ties in ("verifier", "qbar"):
        tied = _ties(tied, qbar)
    return np.argmax(tied, axis=-1)  # the first True: the smallest token id


def fuse(setup: Setup, tok: np.ndarray, st: np.ndarray, s0: int):
    """Fused drafts (n, d) and average rows q̄ (n, d, V) of enumerated branch tuples
    ``tok`` (n, B, d) with branch states ``st`` (n, B, d + 1) from state ``s0``."""
    m = setup.method
    V = setup.V
    n, B, d = tok.shape
    rows = setup.q_ros[st[:, :, :d]]
    qrow = setup.q_rows[rows]
    onehot = tok[..., None] == np.arange(V)
    qbar = qrow.mean(axis=1)
    cand = onehot.any(axis=1)
    if m.top_m > 0:
        top = np.argsort(-qbar, axis=-1, kind="stable")[..., :m.top_m]
        np.put_along_axis(cand, top, True, axis=-1)
    if m.weights == "uniform":
        r = np.zeros((n, B, d))
    else:
        a = m.alpha
        ent = setup.q_ent[rows]
        agr = ((tok[:, :, None, :] == tok[:, None, :, :]).sum(axis=2) - 1) / (B - 1) if B > 1 else np.zeros_like(ent)
        r = a[0] * (-ent) + a[1] * agr + a[2] * setup.q_log[rows, tok]
    fused0 = _argmax(m, _weights(m, r), onehot, qrow, qbar, cand)
    if setup.R_used == 0:
        return fused0, qbar
    # spot checks: the R_used positions of highest disagreement (or entropy), ties → smaller j
    D = 1.0 - onehot.sum(axis=1).max(axis=-1) / B
    ent = setup.q_ent[rows]
    H = ent[:, 0].copy()
    for b in range(1, B):  # summed in branch order, as the kernel does: equal keys compare equal
        H = H + ent[:, b]
    H = H / B
    jj = np.broadcast_to(np.arange(d), D.shape)
    keys = {"disagreement": (jj, -H, -D), "entropy": (jj, -D, -H), "least": (jj, H, D)}[m.spot_select]
    chosen = np.lexsort(keys, axis=-1)[:, :setup.R_used]
    spot = np.zeros((n, d), dtype=bool)
    np.put_along_axis(spot, chosen, True, axis=-1)
    sf = np.empty((n, d), dtype=np.int64)  # states along the first-pass fused prefix
    sf[:, 0] = s0
    for j in range(1, d):
        sf[:, j] = (sf[:, j - 1] * V + fused0[:, j - 1]) % setup.S
    prow = setup.p_ros[sf]
    c = setup.p_log[prow[:, None, :], tok] - setup.p_second_log[prow][:, None, :]
    r2 = r + m.alpha[3] * c * spot[:, None, :]
    fused = _argmax(m, _weights(m, r2), onehot, qrow, qbar, cand, spot, setup.p_rows[prow])
    return fused, qbar


# --- verification laws -----------------------------------------------------------------------

class _Acc:
    """Accumulates emitted blocks: arrays over (code of the accepted prefix)·V + last token."""

    def __init__(self, V, d):
        self.V = V
        self.mass = [np.zeros(V ** (j + 1)) for j in range(d + 1)]

    def add(self, j, prefix_code, mass_rows):
        """mass_rows (n, V): mass of (τ = j, accepted prefix, y) for every y."""
        idx = prefix_code[:, None] * self.V + np.arange(self.V)
        np.add.at(self.mass[j], idx.ravel(), mass_rows.ravel())

    def add_one(self, j, prefix_code, y, mass):
        np.add.at(self.mass[j], prefix_code * self.V + y, mass)


def _path_states(setup, s0, x):
    n, d = x.shape
    sp = np.empty((n, d + 1), dtype=np.int64)
    sp[:, 0] = s0
    for j in range(d):
        sp[:, j + 1] = (sp[:, j] * setup.V + x[:, j]) % setup.S
    return sp


def _single_path(setup, s0, x, prob, qprop, acc: _Acc, verify: str):
    """Block law of verifying fused drafts x (n, d) of probabilities prob, proposal rows
    qprop (n, d, V) for the rejection-sampling readings. Returns the marginal match
    probabilities (d,) and the per-draft acceptance probabilities (n, d)."""
    m = setup.method
    V = setup.V
    n, d = x.shape
    sp = _path_states(setup, s0, x)
    prow = setup.p_ros[sp]
    P = setup.p_rows[prow]                     # (n, d + 1, V)
    px = np.take_along_axis(P[:, :d], x[..., None], axis=-1)[..., 0]
    if verify == "greedy":
        top = setup.p_top[prow]
        a = (x == top[:, :d]).astype(float)
    elif verify == "match":
        a = px
    else:  # rs, rs_exact: min(1, p(x)/q(x)) against the proposal row
        qx = np.take_along_axis(qprop, x[..., None], axis=-1)[..., 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(qx > 0, np.minimum(1.0, px / np.where(qx > 0, qx, 1.0)), (px > 0).astype(float))
    pre = np.ones((n, d + 1))
    for j in range(d):
        pre[:, j + 1] = pre[:, j] * a[:, j]
    code = np.zeros(n, dtype=np.int64)
    for j in range(d + 1):
        w = prob * pre[:, j]
        if j == d:  # bonus token
            if verify == "greedy":
                acc.add_one(j, code, top[:, d], w)
            else:
                acc.add(j, code, w[:, None] * P[:, d])
            break
        rej = w * (1.0 - a[:, j])
        if m.on_mismatch == "draft":
            acc.add_one(j, code, x[:, j], rej)
        elif verify == "greedy":
            acc.add_one(j, code, top[:, j], rej)
        elif verify == "match":
            # y ~ p, y ≠ x_j: mass pre_j · p(y) for every y ≠ x_j
            rows = P[:, j].copy()
            np.put_along_axis(rows, x[:, j, None], 0.0, axis=-1)
            acc.add(j, code, (prob * pre[:, j])[:, None] * rows)
        else:
            if m.residual == "p":
                res = P[:, j]
            else:
                res = np.maximum(P[:, j] - qprop[:, j], 0.0)
                s = res.sum(axis=-1, keepdims=True)
                res = np.where(s > 0, res / np.where(s > 0, s, 1.0), P[:, j])
            acc.add(j, code, rej[:, None] * res)
        code = code * V + x[:, j]
    return (prob[:, None] * a).sum(axis=0) / prob.sum(), a


def _trie(setup, s0, tok, st, prob, acc: _Acc, verify: str):
    """SD-multi: the branches as a token tree against the verifier's samples."""
    V = setup.V
    n, B, d = tok.shape
    same = np.ones((n, B, B, d + 1), dtype=bool)
    for j in range(d):
        same[..., j + 1] = same[..., j] & (tok[:, :, None, j] == tok[:, None, :, j])
    lower = np.tril(np.ones((B, B), dtype=bool), -1)  # b2 < b
    rep = ~(same & lower[None, :, :, None]).any(axis=2)  # (n, B, d + 1): first branch with its prefix
    n_nodes = rep[:, :, 1:].sum(axis=(1, 2)) + 1
    prow = setup.p_ros[st]                                # (n, B, d + 1) states before each token
    P = setup.p_rows[prow]                                # (n, B, d + 1, V)
    if verify == "greedy":
        g = np.empty(d + 1, dtype=np.int64)
        s = s0
        for j in range(d + 1):
            g[j] = setup.p_top[setup.p_ros[s]]
            s = (s * V + g[j]) % setup.S
        ok = np.cumprod(tok == g[:d], axis=2)            # (n, B, d)
        tau = ok.sum(axis=2).max(axis=1)
        gcode = np.zeros(d + 1, dtype=np.int64)
        for j in range(d):
            gcode[j + 1] = gcode[j] * V + g[j]
        for j in range(d + 1):
            sel = tau == j
            if sel.any():
                acc.add_one(j, np.full(sel.sum(), gcode[j]), np.full(sel.sum(), g[j]), prob[sel])
        return n_nodes, None
    pt = np.take_along_axis(P[:, :, :d], tok[..., None], axis=-1)[..., 0]
    pp = np.ones((n, B, d + 1))
    for j in range(d):
        pp[:, :, j + 1] = pp[:, :, j] * pt[:, :, j]
    code = np.zeros((n, B), dtype=np.int64)
    for j in range(d + 1):
        w = prob[:, None] * pp[:, :, j] * rep[:, :, j]   # (n, B)
        rows = P[:, :, j]
        if j < d:
            nexts = (same[:, :, :, j, None] & (tok[:, None, :, j, None] == np.arange(V))).any(axis=2)
            rows = np.where(nexts, 0.0, rows)
            code_next = code * V + tok[:, :, j]
        keep = w > 0
        acc.add(j, code[keep], w[keep][:, None] * rows[keep])
        if j < d:
            code = code_next
    return n_nodes, None


def _oracle_pick(setup, tok, st, verify):
    prow = setup.p_ros[st]
    n, B, d = tok.shape
    if verify == "greedy":
        top = setup.p_top[prow[:, :, :d]]
        score = np.cumprod(tok == top, axis=2).sum(axis=2).astype(float)
    else:
        pt = np.take_along_axis(setup.p_rows[prow[:, :, :d]], tok[..., None], axis=-1)[..., 0]
        score = np.cumprod(pt, axis=2).sum(axis=2)
    best = score.max(axis=1, keepdims=True)
    pick = np.argmax(score >= best - TIE_TOL * np.maximum(1.0, best), axis=1)
    return tok[np.arange(n), pick]


def _fused_law(setup, x, prob):
    V, d = setup.V, setup.d
    code = np.zeros(x.shape[0], dtype=np.int64)
    for j in range(d):
        code = code * V + x[:, j]
    F = np.zeros(V ** d)
    np.add.at(F, code, prob)
    return F


def _proposal_rows(F, V, d):
    """π_j(· | c_<j) for every fused code c (V^d, d, V), from the fused law F."""
    codes = np.arange(V ** d)
    out = np.zeros((V ** d, d, V))
    for j in range(d):
        Fj1 = F.reshape((V ** (j + 1), V ** (d - j - 1))).sum(axis=1)   # law of the first j + 1 tokens
        Fj = Fj1.reshape(V ** j, V).sum(axis=1)
        pre = codes // V ** (d - j)
        num = Fj1.reshape(V ** j, V)[pre]
        den = Fj[pre][:, None]
        out[:, j] = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    return out


def step_law(setup: Setup, state: int = 0) -> StepLaw:
    """Exact law of one decoding step of ``setup`` from ``state``."""
    setup = _check_setup(setup)
    s0 = check_state(state, setup.S, "state")
    m = setup.method
    V, d = setup.V, setup.d
    tok, st, prob = _enumerate(setup, s0)
    acc = _Acc(V, d)
    F = None
    cost_par = float(setup.R_used + d + 1)
    seq_extra = float(setup.R_used)
    if m.kind == "sd_multi":
        n_nodes, _ = _trie(setup, s0, tok, st, prob, acc, m.verify)
        cost_par = float(prob @ n_nodes)
        marg = np.full(d, np.nan)
    else:
        if m.kind == "fusion":
            x, qbar = fuse(setup, tok, st, s0)
        elif m.kind == "oracle":
            x, qbar = _oracle_pick(setup, tok, st, m.verify), None
        else:  # sd1: the branch itself, proposal = its own rows
            x = tok[:, 0]
            qbar = setup.q_rows[setup.q_ros[st[:, 0, :d]]]
        if m.kind == "fusion":
            F = _fused_law(setup, x, prob)
        if m.verify == "rs_exact":
            keep = np.flatnonzero(F > 0)
            xs = np.stack([(keep // V ** (d - 1 - j)) % V for j in range(d)], axis=1)
            marg, _ = _single_path(setup, s0, xs, F[keep], _proposal_rows(F, V, d)[keep], acc, "rs")
        else:
            marg, _ = _single_path(setup, s0, x, prob, qbar, acc, m.verify)
        if m.kind == "oracle":
            same = np.ones((tok.shape[0], setup.Bd, setup.Bd, d + 1), dtype=bool)
            for j in range(d):
                same[..., j + 1] = same[..., j] & (tok[:, :, None, j] == tok[:, None, :, j])
            lower = np.tril(np.ones((setup.Bd, setup.Bd), dtype=bool), -1)
            rep = ~(same & lower[None, :, :, None]).any(axis=2)
            cost_par = float(prob @ (rep[:, :, 1:].sum(axis=(1, 2)) + 1))
    blocks, tau, ce = _blocks(setup, s0, acc)
    e_tau = float(tau @ np.arange(d + 1))
    cost_seq = cost_par if m.kind == "oracle" else seq_extra + e_tau + 1.0
    return StepLaw(s0, tuple(blocks), tau, e_tau + 1.0, cost_par, cost_seq, ce, F, np.asarray(marg, float))


def _blocks(setup, s0, acc: _Acc):
    V, S = setup.V, setup.S
    blocks = []
    tau = np.zeros(setup.d + 1)
    ce = 0.0
    for j, arr in enumerate(acc.mass):
        for idx in np.flatnonzero(arr > 0):
            toks = tuple(int((idx // V ** (j - i)) % V) for i in range(j + 1))
            s = s0
            c = 0.0
            for t in toks:
                c -= setup.p_log[setup.p_ros[s], t]
                s = (s * V + t) % S
            w = float(arr[idx])
            blocks.append(Block(toks, w, j, int(s), float(c)))
            tau[j] += w
            ce += w * c
    return blocks, tau, ce


# --- across steps ----------------------------------------------------------------------------

class _Laws:
    def __init__(self, setup):
        self.setup = setup
        self._c: dict = {}

    def __call__(self, s: int) -> StepLaw:
        got = self._c.get(s)
        if got is None:
            got = self._c[s] = step_law(self.setup, s)
        return got


def first_tokens_distribution(setup: Setup, n_tokens: int, start_state: int = 0) -> np.ndarray:
    """Exact law of the first ``n_tokens`` emitted tokens from ``start_state``, over as many
    steps as it takes (flat over V^N, first token most significant): compare with
    ``setup.pair.target.sequence_probs(N, start_state)``."""
    setup = _check_setup(setup)
    V = setup.V
    n_tokens = check_enumerable(V, check_int(n_tokens, "n_tokens", min=1))
    start_state = check_state(start_state, setup.S)
    laws = _Laws(setup)
    memo: dict = {}

    def dist(s, n):
        key = (s, n)
        if key in memo:
            return memo[key]
        out = np.zeros(V ** n)
        for blk in laws(s).blocks:
            L = len(blk.tokens)
            idx = 0
            for t in blk.tokens[:n]:
                idx = idx * V + t
            if L >= n:
                out[idx] += blk.prob
            else:
                w = V ** (n - L)
                out[idx * w:(idx + 1) * w] += blk.prob * dist(blk.end_state, n - L)
        memo[key] = out
        return out

    return dist(start_state, n_tokens)


def tv_to_target(setup: Setup, n_tokens: int, start_state: int = 0) -> float:
    """``TV(law of the first N emitted tokens, p^N)`` from ``start_state``."""
    d = first_tokens_distribution(setup, n_tokens, start_state)
    return float(0.5 * np.abs(d - setup.pair.target.sequence_probs(n_tokens, start_state)).sum())


def cross_entropy_first(setup: Setup, n_tokens: int, start_state: int = 0) -> float:
    """``E[−log p(x^N)]/N`` over the first N emitted tokens (nats per token); equals
    ``H(p^N)/N`` for a lossless method."""
    d = first_tokens_distribution(setup, n_tokens, start_state)
    pN = setup.pair.target.sequence_probs(n_tokens, start_state)
    with np.errstate(divide="ignore"):
        lp = np.maximum(np.log(pN), -690.7755278982137)
    return float(-(d @ lp) / n_tokens)


def step_kernel(setup: Setup) -> tuple[np.ndarray, list]:
    """``(K, laws)``: K[s, s'] = P(the next step starts in s' | this one starts in s), and the
    step law of every state."""
    setup = _check_setup(setup)
    laws = [step_law(setup, s) for s in range(setup.S)]
    K = np.zeros((setup.S, setup.S))
    for s, law in enumerate(laws):
        for blk in law.blocks:
            K[s, blk.end_state] += blk.prob
    return K, laws


_QUANTITIES = ("accepted", "tokens", "cost_parallel", "cost_sequential", "ce")


def _per_state(laws) -> dict:
    return {"accepted": np.array([lw.accepted for lw in laws]), "tokens": np.array([lw.tokens for lw in laws]),
            "cost_parallel": np.array([lw.cost_parallel for lw in laws]),
            "cost_sequential": np.array([lw.cost_sequential for lw in laws]),
            "ce": np.array([lw.ce for lw in laws])}


def _ratios(e: dict) -> dict:
    return {"accepted_length": e["accepted"], "tokens_per_step": e["tokens"],
            "vtpo_parallel": e["cost_parallel"] / e["tokens"], "vtpo_sequential": e["cost_sequential"] / e["tokens"],
            "ce_per_token": e["ce"] / e["tokens"], "cost_parallel_per_step": e["cost_parallel"],
            "cost_sequential_per_step": e["cost_sequential"]}


def long_run(setup: Setup, start_state: int = 0) -> dict:
    """Long-run averages (stationary law of step-start states, from ``start_state`` if the
    chain is reducible): accepted length E[τ], tokens per step E[τ+1], verifier positions per
    output token in both accountings (renewal-reward: E[cost]/E[tokens]), cross-entropy to p
    per emitted token (nats)."""
    K, laws = step_kernel(setup)
    pi = stationary_distribution(K, check_state(start_state, setup.S))
    e = {k: float(pi @ v) for k, v in _per_state(laws).items()}
    return _ratios(e)


def horizon_means(setup: Setup, n_steps: int, start_state: int = 0) -> dict:
    """The same quantities as :func:`long_run` for a run of exactly ``n_steps`` steps from
    ``start_state``: E[Σ_t X_t]/n_steps for each per-step quantity, ratios of those sums —
    the exact counterpart of a simulated stream of that length."""
    n_steps = check_int(n_steps, "n_steps", min=1)
    K, laws = step_kernel(setup)
    x = _per_state(laws)
    dist = np.zeros(setup.S)
    dist[check_state(start_state, setup.S)] = 1.0
    occ = np.zeros(setup.S)
    for t in range(n_steps):
        occ += dist
        nxt = dist @ K
        if np.abs(nxt - dist).max() < 1e-15:
            occ += (n_steps - t - 1) * nxt
            break
        dist = nxt
    occ /= occ.sum()  # = n_steps up to the rounding of the step laws' total mass
    return _ratios({k: float(occ @ v) for k, v in x.items()})


def harness(sources: dict, methods, Bs, ks, drafters, *, tv_tokens: int = 3, reading: str = "match",
            regime: str = "sampling") -> list[dict]:
    """The falsification harness, exactly, on small instances: one row per (source,
    drafter, B, k, method) with the long-run accepted length, tokens per step, verifier
    positions per step and per output token (both accountings), cross-entropy to p per
    token, and TV / cross-entropy of the first ``tv_tokens`` emitted tokens from state 0.
    Same rows (keys and method naming) as :func:`spectheory.montecarlo.ecsv.harness`,
    numbers instead of estimates."""
    from ..markov import MarkovPair
    from ..rules.ecsv import Drafter
    if not isinstance(sources, dict) or not sources:
        raise ValueError("sources must be a non-empty dict {name: MarkovPair}")
    if reading not in ("match", "rs", "rs_exact"):
        raise ValueError(f"reading must be 'match', 'rs' or 'rs_exact', got {reading!r}")
    rows = []
    for src, pair in sources.items():
        check_type(pair, MarkovPair, f"sources[{src!r}]")
        for dr in drafters:
            check_type(dr, Drafter, "drafter")
            for B in Bs:
                for k in ks:
                    for m0 in methods:
                        m = m0.regime(regime)
                        if regime == "sampling" and m.kind == "fusion":
                            m = m.with_verify(reading)
                        if m0.kind == "sd1" and B != Bs[0]:
                            continue
                        setup = Setup(pair, m, B, k, dr)
                        row = {"source": src, "drafter": dr.name, "B": B, "k": k, "method": m0.name,
                               "verify": m.verify, "R_used": setup.R_used, "d": setup.d,
                               "allowance": setup.allowance, **long_run(setup)}
                        row["tv"] = tv_to_target(setup, tv_tokens)
                        row["ce_first"] = cross_entropy_first(setup, tv_tokens)
                        rows.append(row)
    return rows
