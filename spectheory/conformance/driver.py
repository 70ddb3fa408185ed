"""Drive a verifier along a Markov pair and record every call.

One *run* starts from state 0 and repeats iterations until at least ``n_tokens`` tokens are
emitted: draft γ tokens from q along the chain (spectheory draws them), build the target's
(γ+1, V) and the draft's (γ, V) rows at the drafted states, call the verifier, append what it
emitted and move the chain by it. Runs are independent; calls within a run are not (each
starts where the previous one ended), which the checks take into account.

A runner (:class:`BlockRunner`, :class:`StepRunner`) can be extended run by run, so the
sequential design of :mod:`spectheory.conformance.sequential` looks at the data after each
group of runs. Every group of calls runs inside the sampler's
:meth:`~spectheory.conformance.sources.RandomSources.active` block (global random sources
routed to the verifier's generator, escaped draws detected). A call that raises, or returns
something that is not a block, ends the runner with a :class:`VerifierCrash` that says where
(file:line of the innermost frame of the sampler's own code).
"""
from __future__ import annotations

import bisect
import os
import traceback
from time import perf_counter
from dataclasses import dataclass

import numpy as np

from ..markov import MarkovPair, next_state
from .adapters import BlockVerifier, VerifierOutputError, tokens_of


class VerifierCrash(RuntimeError):
    """The verifier raised or returned an invalid block during a statistical run.

    ``kind``: ``"exception"`` or ``"invalid output"``; ``location``: ``file:line in function``
    of the innermost frame of the sampler's own code (None for invalid output); ``exception``:
    ``"Type: message"``; ``context``: where in the run it happened."""

    def __init__(self, message: str, *, kind: str = "exception", location: str | None = None,
                 exception: str = "", context: str = "", inputs: dict | None = None):
        super().__init__(message)
        self.kind, self.location, self.exception, self.context = kind, location, exception, context
        #: the crashing call's inputs (exact rows, drafts, the rng state before it): see replay.py
        self.inputs = inputs

    def to_json(self) -> dict:
        out = {"kind": self.kind, "location": self.location, "exception": self.exception,
               "context": self.context, "message": str(self)}
        if self.inputs is not None:
            out["inputs"] = self.inputs
        return out


_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBRARY_PARTS = (os.sep + "numpy" + os.sep, os.sep + "torch" + os.sep, os.sep + "scipy" + os.sep)


def _library_frame(filename: str) -> bool:
    f = os.path.abspath(filename)
    if f.startswith(_HERE + os.sep) or any(part in f for part in _LIBRARY_PARTS):
        return True
    return f.startswith(os.path.dirname(os.__file__) + os.sep) and "site-packages" not in f


def crash_location(err: BaseException) -> str | None:
    """``file:line in function`` of the innermost traceback frame outside spectheory's
    conformance package, NumPy, SciPy, torch and the standard library (the sampler's own code);
    the innermost frame when every frame is library code."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return None
    own = [f for f in frames if not _library_frame(f.filename)]
    f = (own or frames)[-1]
    return f"{f.filename}:{f.lineno} in {f.name}"


def describe(err: BaseException) -> str:
    msg = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {msg}" if msg else type(err).__name__


def crash_from(err: BaseException, name: str, context: str, inputs: dict | None = None) -> VerifierCrash:
    """A :class:`VerifierCrash` for an exception raised by the sampler (or its invalid output)."""
    if isinstance(err, VerifierOutputError):
        return VerifierCrash(f"{name}: invalid output: {err} ({context})", kind="invalid output",
                             exception=describe(err), context=context, inputs=inputs)
    loc = crash_location(err)
    return VerifierCrash(f"{name}: the sampler raised {describe(err)} at {loc} ({context})", location=loc,
                         exception=describe(err), context=context, inputs=inputs)


def rows_json(rows) -> list:
    """Probability rows as nested lists of floats (exact float64 values, repr round-trips)."""
    return np.asarray(rows, dtype=np.float64).tolist()


class CallLedger:
    """What the runs learn call by call beyond the trace: calls whose acceptance decisions that
    needed a random value (0 < p(x) < q(x) at the tested draft) outnumber the uniforms drawn
    from the checker's source (uniforms reused across calls, or drawn where the checker cannot
    see), and the first call that broke the block structure (its inputs, for a rerunnable call)."""

    def __init__(self):
        self.short_calls = 0
        self.needing_calls = 0
        self.short_example: dict | None = None
        self.structure_example: dict | None = None

    def note_draws(self, call: int, needed: int, drawn: int, context) -> None:
        """``context``: a string, or a function returning it (built only for the example)."""
        if needed:
            self.needing_calls += 1
        if drawn < needed:
            self.short_calls += 1
            if self.short_example is None:
                self.short_example = {"call": call, "decisions_needing_a_uniform": needed, "uniforms_drawn": drawn,
                                      "context": context() if callable(context) else context}

    def to_json(self) -> dict:
        return {"short_calls": self.short_calls, "calls_needing_a_uniform": self.needing_calls,
                "short_example": self.short_example}


@dataclass
class Trace:
    """Every call of the runs on one (instance, γ).

    start: (C,) state at the start of each call; first: (C,) whether the call opened its run;
    emitted: (C, γ+1) tokens, −1 padded; length: (C,) number emitted; draft: (C, γ) drafted
    tokens (None for decoding steps, which draft by themselves; (C, K, γ) for multi-draft
    verifiers); run_tokens: (R, N) the first N tokens of each run; completion_seed: seeds the
    draws from p that complete short blocks (``checks.complete_blocks``); title: the label of
    its evidence rows when "instance γ=…" would mislead (end-to-end generation: one call per run).
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
    completion_seed: object = 0
    title: str = ""

    @property
    def n_calls(self) -> int:
        return int(self.start.shape[0])

    @property
    def n_runs(self) -> int:
        return int(self.run_tokens.shape[0])

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
    def __init__(self, pair, gamma, n_tokens, with_draft):
        self.pair, self.gamma, self.n_tokens = pair, gamma, n_tokens
        self.start, self.first, self.emitted, self.draft = [], [], [], []
        self.with_draft = with_draft
        self.run_tokens = []

    def check(self, out):
        g = self.gamma
        if not 1 <= len(out) <= g + 1:
            raise VerifierOutputError(f"a call emitted {len(out)} tokens; γ = {g} allows 1..{g + 1}")
        V = self.pair.V
        if min(out) < 0 or max(out) >= V:
            raise VerifierOutputError(f"emitted token ids {out} outside the vocabulary [0, {V})")

    def record(self, s, first, out, draft=None):
        row = list(out) + [-1] * (self.gamma + 1 - len(out))
        self.start.append(s)
        self.first.append(first)
        self.emitted.append(row)
        if self.with_draft:
            self.draft.append(draft)

    def trace(self, name, completion_seed=0):
        pair = self.pair
        em = np.asarray(self.emitted, dtype=np.int64).reshape(-1, self.gamma + 1)
        draft = None
        if self.with_draft:
            draft = np.asarray(self.draft, dtype=np.int64)
            draft = draft.reshape((-1,) + draft.shape[1:]) if draft.size else draft.reshape(0, self.gamma)
        return Trace(name, self.gamma, pair.V, pair.n_states, np.asarray(self.start, dtype=np.int64),
                     np.asarray(self.first, dtype=bool), em, (em >= 0).sum(axis=1), draft,
                     np.asarray(self.run_tokens, dtype=np.int64).reshape(-1, self.n_tokens), completion_seed)


def _spawn(seed, k):
    """The first ``k`` children of ``seed`` — the same every time (spawning from a SeedSequence
    object advances it, so a copy spawns: a runner rebuilt from the same seed, to replay a call,
    gets the same streams)."""
    if isinstance(seed, np.random.SeedSequence):
        ss = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size)
    else:
        ss = np.random.SeedSequence(seed)
    return ss.spawn(k)


class _Captured(Exception):
    """Raised by a replaying runner when it reaches the call whose inputs it was asked for."""


class BlockRunner:
    """Independent runs of a block verifier from state 0 on one (pair, γ), extendable.

    ``seed`` (int or SeedSequence) spawns three independent streams: the drafting, the
    verifier's own Generator, and the completion draws of the checks."""

    def __init__(self, verifier: BlockVerifier, pair: MarkovPair, gamma: int, n_tokens: int, seed,
                 name: str = "", advance=None):
        from .forced import CountingGenerator
        self._args = (verifier, pair, gamma, n_tokens, seed, name)
        self._capture_call: int | None = None  # a replay stops before this call, keeping its inputs
        self.captured: dict | None = None
        draft_ss, verifier_ss, completion_ss = _spawn(seed, 3)
        # plain constructors: a replay (inputs_of_call) builds a runner inside the routing block,
        # where default_rng is routed
        self.draft_rng = np.random.Generator(np.random.PCG64(draft_ss))
        self.verifier_rng = CountingGenerator(np.random.Generator(np.random.PCG64(verifier_ss)))  # same stream, counted
        verifier.sources.own(self.draft_rng, self.verifier_rng)
        self.completion_seed = completion_ss
        self.verifier, self.pair, self.gamma, self.n_tokens = verifier, pair, gamma, n_tokens
        self.name, self.advance = name or pair.name, advance
        self.ledger = CallLedger()
        #: seconds spent inside the sampler's calls (the rest of a run is the checker's)
        self.sampler_s = 0.0
        self.p_list, self.q_list = pair.target.table.tolist(), pair.draft.table.tolist()
        q_tab = pair.draft.table
        q_cdf = np.cumsum(q_tab, axis=1)
        q_cdf /= q_cdf[:, -1:]
        self.q_cdf = q_cdf.tolist()
        self.last = [int(np.flatnonzero(row)[-1]) for row in q_tab]  # never draft a zero-mass token
        self.p_rep = verifier.represent(pair.target.table, "target")
        self.q_rep = verifier.represent(q_tab, "draft")
        self.rec = _Recorder(pair, gamma, n_tokens, with_draft=True)
        self.crash: VerifierCrash | None = None
        self.calls = 0
        self._inputs_cache: dict = {}  # framework inputs per distinct (states, draft): BlockVerifier.block_inputs

    @property
    def n_runs(self) -> int:
        return len(self.rec.run_tokens)

    def extend(self, n_runs: int) -> None:
        """Run until ``n_runs`` runs are recorded in all (or the verifier crashes)."""
        if self.crash is not None or self.n_runs >= n_runs:
            return
        v = self.verifier
        with v.sources.active(f"{self.name} γ={self.gamma}"):
            self._extend(n_runs)

    def _extend(self, n_runs):
        gamma, V, S = self.gamma, self.pair.V, self.pair.n_states
        q_cdf, last, p_rep, q_rep = self.q_cdf, self.last, self.p_rep, self.q_rep
        rec, verifier, rng, draft_rng = self.rec, self.verifier, self.verifier_rng, self.draft_rng
        pl, ql, ledger, bg = self.p_list, self.q_list, self.ledger, rng.bit_generator
        cap = self._capture_call
        inputs_cache = self._inputs_cache
        while self.n_runs < n_runs:
            s, got, first = 0, [], True
            while len(got) < self.n_tokens:
                u = draft_rng.random(gamma).tolist()
                states = [s]
                draft = []
                st = s
                for i in range(gamma):
                    x = min(bisect.bisect_right(q_cdf[st], u[i]), last[st])
                    draft.append(x)
                    st = (st * V + x) % S
                    states.append(st)
                self.calls += 1
                if self.calls == cap:
                    self.captured = self._inputs(states, draft, bg.state)
                    raise _Captured
                u0 = rng.decision_values()
                try:
                    args = verifier.block_inputs(p_rep, q_rep, states, draft, inputs_cache)
                    verifier.sources.current = rng
                    t0 = perf_counter()
                    raw = verifier.invoke(*args, rng)
                    self.sampler_s += perf_counter() - t0  # the sampler's own call, no conversions
                    out = tokens_of(raw, verifier.batched)
                    rec.check(out)
                except Exception as err:  # noqa: BLE001  (any crash of user code is a finding)
                    self.crash = crash_from(err, f"{self.name} γ={gamma}",
                                            f"call {self.calls}, run {self.n_runs + 1}, start state {s}, "
                                            f"draft {draft}", self.inputs_of_call(self.calls))
                    return
                tau = len(out) - 1
                needed = 0
                for i in range(min(tau + 1, gamma)):
                    a, b = pl[states[i]][draft[i]], ql[states[i]][draft[i]]
                    if 0.0 < a < b:
                        needed += 1
                drawn = rng.decision_values() - u0
                if needed:
                    ledger.note_draws(self.calls, needed, drawn,
                                      lambda: f"call {self.calls}, run {self.n_runs + 1}, start state {s}, draft "
                                              f"{draft}, emitted {list(out)}")
                if ledger.structure_example is None and (
                        list(out[:tau]) != draft[:tau] or (tau < gamma and out[tau] == draft[tau])):
                    ledger.structure_example = {"call_index": self.calls, "output": list(out),
                                                "context": f"call {self.calls}, run {self.n_runs + 1}"}
                rec.record(s, first, out, draft)
                first = False
                got.extend(out)
                for t in out:
                    s = (s * V + t) % S
            rec.run_tokens.append(got[:self.n_tokens])
            if self.advance is not None:
                self.advance(1)

    def inputs_of_call(self, call: int) -> dict | None:
        """The exact inputs of call number ``call`` and the state of the sampler's generator
        before it, found by replaying the runs from the seed (states are not kept call by call:
        that would cost every call; a replay costs only when a failure needs its call). None when
        the replay does not reach it (a sampler whose output depends on more than its inputs and
        the routed sources)."""
        fresh = BlockRunner(*self._args)
        fresh._capture_call = call
        try:
            fresh.extend(self.n_runs + 1)
        except _Captured:
            return fresh.captured
        return None

    def _inputs(self, states, draft, state) -> dict:
        """The exact inputs of one call and the state of its rng before it (for :mod:`.replay`)."""
        return {"p": rows_json(self.pair.target.table[states]),
                "q": rows_json(self.pair.draft.table[states[:self.gamma]]), "draft": [int(x) for x in draft],
                "rng_state": state}

    def trace(self) -> Trace:
        return self.rec.trace(self.name, self.completion_seed)


def run_block_verifier(verifier: BlockVerifier, pair: MarkovPair, gamma: int, n_runs: int,
                       n_tokens: int, seed, name: str = "", advance=None) -> Trace:
    """``n_runs`` independent runs of the block verifier from state 0 (see module docstring).
    ``seed`` drives the drafting; the verifier gets its own independent Generator. Raises
    :class:`VerifierCrash` if the verifier crashes."""
    runner = BlockRunner(verifier, pair, gamma, n_tokens, seed, name, advance)
    runner.extend(n_runs)
    if runner.crash is not None:
        raise runner.crash
    return runner.trace()


class StepRunner:
    """Independent runs of a decoding step built by ``make_step(target_lm, draft_lm, gamma,
    rng)``; each call ``step(context) -> emitted tokens`` extends the context (a list of token
    ids, starting as ``[0] * max(order, 1)``, i.e. state 0). ``models``: the (target, draft) LMs
    handed to ``make_step``, when they are not the fake LMs of ``pair`` (end-to-end generation:
    the models are the raw sources, ``pair`` the processed law the checks compare with)."""

    def __init__(self, make_step, pair: MarkovPair, gamma: int, n_tokens: int, seed, name: str = "",
                 lm: str = "callable", dtype: str = "float32", advance=None, sources=None, models=None):
        from .fake_lm import fake_lm
        from .sources import RandomSources
        step_ss, completion_ss = _spawn(seed, 2)
        self.rng = np.random.default_rng(step_ss)
        self.completion_seed = completion_ss
        self.sources = sources if sources is not None else RandomSources(make_step)
        self.sources.own(self.rng)
        self.pair, self.gamma, self.n_tokens = pair, gamma, n_tokens
        self.name, self.advance = name or pair.name, advance
        if models is not None:
            target_lm, draft_lm = models
        else:
            target_lm = fake_lm(pair.target, lm=lm, dtype=dtype)
            draft_lm = fake_lm(pair.draft, lm=lm, dtype=dtype)
        self.sources.current = self.rng
        self.crash: VerifierCrash | None = None
        self.rec = _Recorder(pair, gamma, n_tokens, with_draft=False)
        self.prefix = [0] * max(pair.target.order, 1)
        self.calls = 0
        self.sampler_s = 0.0
        try:
            with self.sources.active(f"{self.name} γ={gamma}"):
                self.step = make_step(target_lm, draft_lm, gamma, self.rng)
        except Exception as err:  # noqa: BLE001
            self.crash = crash_from(err, f"{self.name} γ={gamma}", "make_step(target_lm, draft_lm, gamma, rng)")

    @property
    def n_runs(self) -> int:
        return len(self.rec.run_tokens)

    def extend(self, n_runs: int) -> None:
        if self.crash is not None or self.n_runs >= n_runs:
            return
        self.sources.current = self.rng
        with self.sources.active(f"{self.name} γ={self.gamma}"):
            self._extend(n_runs)

    def _extend(self, n_runs):
        V, S = self.pair.V, self.pair.n_states
        rec = self.rec
        while self.n_runs < n_runs:
            s, got, first = 0, [], True
            context = list(self.prefix)
            while len(got) < self.n_tokens:
                self.calls += 1
                try:
                    t0 = perf_counter()
                    raw = self.step(list(context))
                    self.sampler_s += perf_counter() - t0
                    out = tokens_of(raw, batched=True)
                    rec.check(out)
                except Exception as err:  # noqa: BLE001
                    self.crash = crash_from(err, f"{self.name} γ={self.gamma}",
                                            f"call {self.calls}, run {self.n_runs + 1}, context {context}")
                    return
                rec.record(s, first, out)
                first = False
                got.extend(out)
                context.extend(out)
                for t in out:
                    s = int(next_state(s, t, V, S))
            rec.run_tokens.append(got[:self.n_tokens])
            if self.advance is not None:
                self.advance(1)

    def trace(self) -> Trace:
        return self.rec.trace(self.name, self.completion_seed)


def run_decoding_step(make_step, pair: MarkovPair, gamma: int, n_runs: int, n_tokens: int, seed,
                      name: str = "", lm: str = "callable", dtype: str = "float32", advance=None) -> Trace:
    """``n_runs`` independent runs of a decoding step (see :class:`StepRunner`); raises
    :class:`VerifierCrash` if the step crashes."""
    runner = StepRunner(make_step, pair, gamma, n_tokens, seed, name, lm, dtype, advance)
    runner.extend(n_runs)
    if runner.crash is not None:
        raise runner.crash
    return runner.trace()
