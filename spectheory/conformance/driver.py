"""Drive a verifier along a Markov pair and record every call.

One *run* starts from state 0 and repeats iterations until at least ``n_tokens`` tokens are
emitted: draft γ tokens from q along the chain (spectheory draws them), build the target's
(γ+1, V) and the draft's (γ, V) rows at the drafted states, call the verifier, append what it
emitted and move the chain by it. Runs are independent; calls within a run are not (each
starts where the previous one ended), which the checks take into account.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from ..markov import MarkovPair, next_state
from .adapters import BlockVerifier, VerifierOutputError


class VerifierCrash(RuntimeError):
    """The verifier raised or returned an invalid block during a statistical run."""


@dataclass
class Trace:
    """Every call of the runs on one (instance, γ).

    start: (C,) state at the start of each call; first: (C,) whether the call opened its run;
    emitted: (C, γ+1) tokens, −1 padded; length: (C,) number emitted; draft: (C, γ) drafted
    tokens (None for decoding steps, which draft by themselves); run_tokens: (R, N) the first
    N tokens of each run.
    """

    instance: str
    gamma: int
    V: int
    n_states: int
    start: np.ndarray
    first: np.ndarray
    emitted: np.ndarray
    length: np.ndarray
    draft: np.ndarray | None
    run_tokens: np.ndarray

    @property
    def n_calls(self) -> int:
        return int(self.start.shape[0])

    def states_along(self) -> np.ndarray:
        """(C, γ+1) state before each emitted position (−1 past the call's length)."""
        C, g = self.n_calls, self.gamma
        out = np.full((C, g + 1), -1, dtype=np.int64)
        s = self.start.copy()
        for i in range(g + 1):
            live = i < self.length
            out[live, i] = s[live]
            s = np.where(live, next_state(s, np.maximum(self.emitted[:, i], 0), self.V, self.n_states), s)
        return out


class _Recorder:
    def __init__(self, pair, gamma, n_runs, n_tokens, with_draft):
        self.pair, self.gamma, self.n_tokens = pair, gamma, n_tokens
        self.start, self.first, self.emitted, self.draft = [], [], [], []
        self.with_draft = with_draft
        self.run_tokens = np.empty((n_runs, n_tokens), dtype=np.int64)

    def record(self, s, first, out, draft=None):
        g = self.gamma
        if not 1 <= len(out) <= g + 1:
            raise VerifierOutputError(f"a call emitted {len(out)} tokens; γ = {g} allows 1..{g + 1}")
        V = self.pair.V
        if min(out) < 0 or max(out) >= V:
            raise VerifierOutputError(f"emitted token ids {out} outside the vocabulary [0, {V})")
        row = np.full(g + 1, -1, dtype=np.int64)
        row[:len(out)] = out
        self.start.append(s)
        self.first.append(first)
        self.emitted.append(row)
        if self.with_draft:
            self.draft.append(draft)

    def trace(self, name):
        pair = self.pair
        return Trace(name, self.gamma, pair.V, pair.n_states, np.asarray(self.start, dtype=np.int64),
                     np.asarray(self.first, dtype=bool), np.asarray(self.emitted, dtype=np.int64).reshape(-1, self.gamma + 1),
                     (np.asarray(self.emitted).reshape(-1, self.gamma + 1) >= 0).sum(axis=1),
                     np.asarray(self.draft, dtype=np.int64).reshape(-1, self.gamma) if self.with_draft else None,
                     self.run_tokens)


def run_block_verifier(verifier: BlockVerifier, pair: MarkovPair, gamma: int, n_runs: int,
                       n_tokens: int, seed, name: str = "", advance=None) -> Trace:
    """``n_runs`` independent runs of the block verifier from state 0 (see module docstring).
    ``seed`` drives the drafting; the verifier gets its own independent Generator."""
    draft_rng, verifier_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)) \
        if not isinstance(seed, np.random.SeedSequence) else (np.random.default_rng(s) for s in seed.spawn(2))
    V, S = pair.V, pair.n_states
    p_tab, q_tab = pair.target.table, pair.draft.table
    q_cdf = np.cumsum(q_tab, axis=1)
    q_cdf /= q_cdf[:, -1:]
    q_cdf = q_cdf.tolist()
    last = [int(np.flatnonzero(row)[-1]) for row in q_tab]  # never draft a zero-mass token
    p_rep = verifier.represent(p_tab, "target")
    q_rep = verifier.represent(q_tab, "draft")
    rec = _Recorder(pair, gamma, n_runs, n_tokens, with_draft=True)
    for r in range(n_runs):
        s, got, first = 0, [], True
        while len(got) < n_tokens:
            u = draft_rng.random(gamma).tolist()
            states = [s]
            draft = []
            st = s
            for i in range(gamma):
                x = min(bisect.bisect_right(q_cdf[st], u[i]), last[st])
                draft.append(x)
                st = (st * V + x) % S
                states.append(st)
            try:
                out = verifier(p_rep[states], q_rep[states[:gamma]], draft, verifier_rng)
            except Exception as err:  # noqa: BLE001  (any crash of user code is a finding)
                raise VerifierCrash(f"{name} γ={gamma}: the verifier raised {type(err).__name__}: {err} "
                                    f"(start state {s}, draft {draft})") from err
            try:
                rec.record(s, first, out, draft)
            except VerifierOutputError as err:
                raise VerifierCrash(f"{name} γ={gamma}: {err} (start state {s}, draft {draft})") from err
            first = False
            got.extend(out)
            for t in out:
                s = (s * V + t) % S
        rec.run_tokens[r] = got[:n_tokens]
        if advance is not None:
            advance(1)
    return rec.trace(name)


def run_decoding_step(make_step, pair: MarkovPair, gamma: int, n_runs: int, n_tokens: int, seed,
                      name: str = "", lm: str = "callable", dtype: str = "float32", advance=None) -> Trace:
    """``n_runs`` independent runs of a decoding step built by ``make_step(target_lm, draft_lm,
    gamma, rng)``; each call ``step(context) -> emitted tokens`` extends the context (a list of
    token ids, starting as ``[0] * max(order, 1)``, i.e. state 0)."""
    from .fake_lm import fake_lm
    rng = np.random.default_rng(seed)
    target_lm = fake_lm(pair.target, lm=lm, dtype=dtype)
    draft_lm = fake_lm(pair.draft, lm=lm, dtype=dtype)
    step = make_step(target_lm, draft_lm, gamma, rng)
    V, S = pair.V, pair.n_states
    rec = _Recorder(pair, gamma, n_runs, n_tokens, with_draft=False)
    prefix = [0] * max(pair.target.order, 1)
    from .adapters import tokens_of
    for r in range(n_runs):
        s, got, first = 0, [], True
        context = list(prefix)
        while len(got) < n_tokens:
            try:
                out = tokens_of(step(list(context)), batched=True)
                rec.record(s, first, out)
            except Exception as err:  # noqa: BLE001
                raise VerifierCrash(f"{name} γ={gamma}: the decoding step failed: {type(err).__name__}: {err} "
                                    f"(context {context})") from err
            first = False
            got.extend(out)
            context.extend(out)
            for t in out:
                s = int(next_state(s, t, V, S))
        rec.run_tokens[r] = got[:n_tokens]
        if advance is not None:
            advance(1)
    return rec.trace(name)
