"""The runs of a sampler on one block (instance, γ): independent runs from state 0, extendable run
by run, and what each call leaves behind.

One *run* starts in state 0 and repeats calls until at least ``n_tokens`` tokens are emitted;
each call starts where the previous one ended (its emitted tokens move the chain). Runs are
independent; calls within a run are not, which the checks take into account. A kind
(:mod:`.kinds`) subclasses :class:`Runs` with how one call is made — :meth:`Runs.prepare` (what
the checker gives the call: drafts, rows, a context) and :meth:`Runs.invoke` (the sampler's call)
— and the loop here does the rest, for every kind alike:

* the **trace** (:class:`Trace`): each call's start state, emitted tokens, drafts, call number;
* the **per-call accounting** (:class:`CallLedger`): calls whose acceptance decisions that needed a
  random value (0 < p(x) < q(x) at the tested draft) outnumber the uniforms drawn from the
  checker's source (uniforms reused across calls), and the first call that broke the structure;
* **impossible tokens**: an emitted token whose probability under the target is 0 given the
  call's inputs — a law failure with certainty, whatever the seed (:func:`.checks.impossible_tokens`);
* **what triggered a failure**: a call that crashed or emitted an impossible token is replayed
  (:meth:`Runs.trigger`): with every extreme uniform of the call moved one step inside
  (:class:`.forced.NudgedGenerator`) — if the failure disappears, the extreme was its trigger, an
  event of stated probability (a uniform equal to 0.0 exactly: 2⁻²⁴ per float32 draw); else a
  rejection where the residual has zero mass in the sampler's dtype. A crash so triggered does not
  end the runs: the run goes on with the nudged call's output, so the statistics are those of the
  sampler away from that event; a crash on ordinary inputs ends the block (:class:`VerifierCrash`,
  with the sampler's own file:line);
* the **replay of any call from the seed** (:meth:`Runs.inputs_of_call`): its exact inputs and the
  state of the sampler's generator before it, for a rerunnable call. No generator state is kept
  per call: a replay costs only when a failure needs its call.
"""
from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from ..markov import next_state
from .adapters import VerifierOutputError


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
        #: the event that triggered it, when one did (see Runs.trigger)
        self.trigger: dict | None = None

    def to_json(self) -> dict:
        out = {"kind": self.kind, "location": self.location, "exception": self.exception,
               "context": self.context, "message": str(self)}
        if self.inputs is not None:
            out["inputs"] = self.inputs
        if self.trigger is not None:
            out["trigger"] = self.trigger
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
    tokens (None for decoding steps, which draft by themselves); run_tokens: (R, N) the first N
    tokens of each run; completion_seed: seeds the draws from p that complete short blocks
    (``checks.complete_blocks``); title: the label of its evidence rows when "instance γ=…" would
    mislead (end-to-end generation: one call per run); call_id: (C,) the runner's number of the
    call each row comes from (what :meth:`Runs.inputs_of_call` replays).
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
    call_id: np.ndarray | None = None

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


class Recorder:
    """The calls of the runs of one γ as they come, turned into a :class:`Trace`."""

    def __init__(self, pair, gamma, n_tokens, with_draft):
        self.pair, self.gamma, self.n_tokens = pair, gamma, n_tokens
        self.start, self.first, self.emitted, self.draft, self.call_id = [], [], [], [], []
        self.with_draft = with_draft
        self.run_tokens = []

    def check(self, out):
        g = self.gamma
        if not 1 <= len(out) <= g + 1:
            raise VerifierOutputError(f"a call emitted {len(out)} tokens; γ = {g} allows 1..{g + 1}")
        V = self.pair.V
        if min(out) < 0 or max(out) >= V:
            raise VerifierOutputError(f"emitted token ids {out} outside the vocabulary [0, {V})")

    def record(self, s, first, out, draft=None, call_id=0):
        row = list(out) + [-1] * (self.gamma + 1 - len(out))
        self.start.append(s)
        self.first.append(first)
        self.emitted.append(row)
        self.call_id.append(call_id)
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
                     np.asarray(self.run_tokens, dtype=np.int64).reshape(-1, self.n_tokens), completion_seed,
                     call_id=np.asarray(self.call_id, dtype=np.int64))


def spawn(seed, k):
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


#: impossible-token calls of one block whose trigger is looked for (each costs a replay from the seed)
MAX_TRACED = 3


def impossible_positions(p_list, s, out, V, S) -> list[tuple[int, int]]:
    """(position, token) of every emitted token with probability 0 in the row of the state it is
    emitted in (``p_list``: the target's table as lists; ``s``: the call's start state)."""
    bad = []
    for i, t in enumerate(out):
        if p_list[s][t] <= 0.0:
            bad.append((i, t))
        s = (s * V + t) % S
    return bad


class Runs:
    """Independent runs of one kind's calls from state 0 on one (pair, γ), extendable.

    ``seed`` (int or SeedSequence) spawns three independent streams: :attr:`draft_rng` (what
    the checker draws for a call: drafts, the order of requests), :attr:`rng` (the sampler's
    own Generator, counted: :class:`.forced.CountingGenerator`) and the completion draws of the
    checks. Subclasses implement :meth:`prepare`, :meth:`invoke`, :meth:`inputs` and, where
    drafts are seen, :meth:`needed` and :meth:`off_structure`."""

    #: whether the trace keeps each call's drafted tokens
    with_draft = True

    def __init__(self, sampler, pair, gamma: int, n_tokens: int, seed, name: str = "", sources=None):
        from .forced import CountingGenerator
        self._args = (sampler, pair, gamma, n_tokens, seed, name)
        self._capture_call: int | None = None  # a replay stops before this call, keeping its inputs
        self.captured: dict | None = None
        draft_ss, verifier_ss, completion_ss = self.streams(seed)
        # plain constructors: a replay (inputs_of_call) builds a runner inside the routing block,
        # where default_rng is routed
        self.draft_rng = np.random.Generator(np.random.PCG64(draft_ss))
        self.rng = CountingGenerator(np.random.Generator(np.random.PCG64(verifier_ss)))  # same stream, counted
        self.sources = sources if sources is not None else sampler.sources
        self.sources.own(self.draft_rng, self.rng)
        self.completion_seed = completion_ss
        self.sampler, self.pair, self.gamma, self.n_tokens = sampler, pair, gamma, n_tokens
        self.name = name or pair.name
        self.ledger = CallLedger()
        #: seconds spent inside the sampler's calls (the rest of a run is the checker's)
        self.sampler_s = 0.0
        self.p_list = pair.target.table.tolist()
        self.rec = Recorder(pair, gamma, n_tokens, with_draft=self.with_draft)
        self.crash: VerifierCrash | None = None
        self.calls = 0
        #: failures seen in the runs with what triggered them (impossible tokens, crashes on an event)
        self.findings: list[dict] = []
        self.impossible = 0
        #: look for what triggered a failure (off for the negative controls: only their verdicts count)
        self.trace_failures = True
        self._pending: list = []  # impossible-token calls whose trigger finalize() looks for
        self._replayed: dict = {}
        #: (exception type, location) → the event that triggered such a crash (found once per block)
        self._events: dict = {}
        self.setup()

    # --- what a kind implements ------------------------------------------------------------------
    def streams(self, seed) -> tuple:
        """The seeds of the drafting stream, the sampler's generator and the completion draws."""
        return tuple(spawn(seed, 3))

    def setup(self) -> None:
        """Per-runner preparation (tables, represented rows)."""

    def prepare(self, s: int, context: list):
        """What the checker gives the call made from state ``s`` (drafts, rows): anything
        :meth:`invoke` and :meth:`inputs` understand."""
        raise NotImplementedError

    def invoke(self, prepared, rng):
        """Call the sampler once on ``prepared`` with ``rng`` as its source; return its raw output."""
        raise NotImplementedError

    def read(self, raw) -> tuple:
        """The emitted tokens of a raw output (raises VerifierOutputError)."""
        raise NotImplementedError

    def inputs(self, prepared, rng_state) -> dict:
        """The exact inputs of a call and the state of its rng before it (for :mod:`.replay`)."""
        raise NotImplementedError

    def draft_of(self, prepared):
        """The drafted tokens the trace keeps (None where drafts are not seen)."""
        return None

    def after_call(self, prepared, out) -> None:
        """Per-call bookkeeping of the kind (e.g. whether the output lies on the drafts)."""

    def needed(self, prepared, out) -> int:
        """Acceptance decisions of the call that needed a random value (0 < p(x) < q(x))."""
        return 0

    def off_structure(self, prepared, out) -> bool:
        """Whether the call broke the block structure (a prefix off the drafts, ...)."""
        return False

    def zero_mass(self, prepared) -> float:
        """The probability of a rejection at a position whose residual has zero mass in the
        sampler's representation (p ≤ q at every token after rounding, p(x) < q(x) at the draft),
        summed over the call's positions; 0 when there is none."""
        return 0.0

    def context_of(self, prepared, s) -> str:
        return f"start state {s}"

    # --- the loop ----------------------------------------------------------------------------------
    @property
    def n_runs(self) -> int:
        return len(self.rec.run_tokens)

    def label(self) -> str:
        return f"{self.name} γ={self.gamma}"

    def extend(self, n_runs: int) -> None:
        """Run until ``n_runs`` runs are recorded in all (or the sampler crashes on ordinary inputs)."""
        if self.crash is not None or self.n_runs >= n_runs:
            return
        with self.sources.active(self.label()):
            self._extend(n_runs)

    def start_context(self) -> list:
        return []

    def _extend(self, n_runs):
        V, S = self.pair.V, self.pair.n_states
        rec, rng, ledger, p_list = self.rec, self.rng, self.ledger, self.p_list
        cap = self._capture_call
        while self.n_runs < n_runs:
            s, got, first = 0, [], True
            context = self.start_context()
            while len(got) < self.n_tokens:
                self.calls += 1
                prepared = self.prepare(s, context)
                if self.calls == cap:
                    self.captured = self.inputs(prepared, rng.bit_generator.state)
                    raise _Captured
                u0, x0 = rng.decision_values(), rng.extremes
                try:
                    self.sources.current = rng
                    t0 = perf_counter()
                    raw = self.invoke(prepared, rng)
                    self.sampler_s += perf_counter() - t0  # the sampler's own call, no conversions
                    out = self.read(raw)
                    rec.check(out)
                except Exception as err:  # noqa: BLE001  (any crash of user code is a finding)
                    out = self._crashed(err, prepared, s, x0)
                    if out is None:
                        return
                self.after_call(prepared, out)
                needed = self.needed(prepared, out)
                if needed:
                    ledger.note_draws(self.calls, needed, rng.decision_values() - u0,
                                      lambda: f"call {self.calls}, run {self.n_runs + 1}, "
                                              f"{self.context_of(prepared, s)}, emitted {list(out)}")
                if ledger.structure_example is None and self.off_structure(prepared, out):
                    ledger.structure_example = {"call_index": self.calls, "output": list(out),
                                                "context": f"call {self.calls}, run {self.n_runs + 1}"}
                bad = impossible_positions(p_list, s, out, V, S)
                if bad:
                    self._impossible(prepared, out, s, bad, x0)
                rec.record(s, first, out, self.draft_of(prepared), self.calls)
                first = False
                got.extend(out)
                context.extend(out)
                for t in out:
                    s = (s * V + t) % S
            rec.run_tokens.append(got[:self.n_tokens])

    def inputs_of_call(self, call: int) -> dict | None:
        """The exact inputs of call number ``call`` and the state of the sampler's generator
        before it, found by replaying the runs from the seed. None when the replay does not reach
        it (a sampler whose output depends on more than its inputs and the routed sources)."""
        if call in self._replayed:
            return self._replayed[call]
        fresh = type(self)(*self._args, **self._kwargs())
        fresh._capture_call = call
        found = None
        try:
            fresh.extend(self.n_runs + 1)
        except _Captured:
            found = fresh.captured
        finally:
            self.sources.current = self.rng
        self._replayed[call] = found
        return found

    def _kwargs(self) -> dict:
        return {}

    # --- failures and their triggers ------------------------------------------------------------------
    def trigger(self, prepared, still_fails, extremes_drawn: bool) -> dict | None:
        """What triggered a failing call (see the module docstring): ``still_fails(output or
        None)`` says whether an output (None: it raised) still shows the failure. Returns
        ``{"event", "probability", "output"}`` (``output``: the nudged call's, when an extreme
        was the trigger) or None (ordinary inputs)."""
        from .forced import NudgedGenerator, extreme_probability
        from .severity import zero_mass_event
        if extremes_drawn:
            inp = self.inputs_of_call(self.calls)
            if inp is not None:
                bg = np.random.PCG64()
                bg.state = inp["rng_state"]
                nudged = NudgedGenerator(np.random.Generator(bg))
                with self.sources.active(self.label()):
                    self.sources.current = nudged
                    try:
                        out = self.read(self.invoke(prepared, nudged))
                        self.rec.check(out)
                    except Exception:  # noqa: BLE001
                        out = None
                    finally:
                        self.sources.current = self.rng
                if nudged.nudged and not still_fails(out):
                    which, dtype = nudged.nudged[0]
                    from .severity import extreme_event
                    return {"event": extreme_event(which, dtype), "probability": extreme_probability(which, dtype),
                            "output": list(out)}
        mass = self.zero_mass(prepared)
        if mass > 0:
            return {"event": zero_mass_event(getattr(self.sampler, "dtype", "float64")), "probability": mass,
                    "output": None}
        return None

    def _finding(self, what, prepared, s, out, trigger, extra=None) -> dict:
        inp = self.inputs_of_call(self.calls)
        return {"what": what, "instance": self.pair.name, "gamma": self.gamma, "call": self.calls,
                "context": f"call {self.calls}, run {self.n_runs + 1}, {self.context_of(prepared, s)}",
                "output": None if out is None else list(out), "inputs": inp,
                **(trigger or {"event": None, "probability": None}), **(extra or {})}

    def _impossible(self, prepared, out, s, bad, x0):
        """An impossible token: counted now, its trigger looked for after the runs (:meth:`finalize`:
        a replay calls the sampler, which must not touch the runs of a sampler that keeps state)."""
        self.impossible += 1
        if self.trace_failures and len(self._pending) < MAX_TRACED and self._capture_call is None:
            self._pending.append((self.calls, self.n_runs, prepared, out, s, bad, self.rng.extremes > x0))

    def finalize(self) -> None:
        """Look for what triggered the impossible tokens seen (at most :data:`MAX_TRACED` per
        block): the replay of each call from the seed, with its extremes moved inside."""
        V, S = self.pair.V, self.pair.n_states
        pending, self._pending = self._pending, []
        calls, runs = self.calls, self.n_runs
        with self.sources.active(self.label()):
            for call, run, prepared, out, s, bad, extremes in pending:
                self.calls = call
                trig = self.trigger(prepared, lambda o: o is None or bool(impossible_positions(self.p_list, s, o, V, S)),
                                    extremes)
                if trig is not None:
                    trig = {k: v for k, v in trig.items() if k != "output"}
                i, t = bad[0]
                f = self._finding("impossible token", prepared, s, out, trig, {"position": i, "token": t})
                f["context"] = f"call {call}, run {run + 1}, {self.context_of(prepared, s)}"
                self.findings.append(f)
        self.calls = calls

    def _crashed(self, err, prepared, s, x0, depth: int = 0):
        """A call that raised (or returned an invalid block). When an extreme uniform triggered it
        (the nudged replay of the call does not fail), it is a finding of that event and the run
        goes on with a fresh call on the same inputs (fresh uniforms: the law of the run is
        untouched); else the block ends with :attr:`crash` (its trigger attached when it is a
        zero-mass residual). Returns the output to go on with, or None."""
        context = f"call {self.calls}, run {self.n_runs + 1}, {self.context_of(prepared, s)}"
        extremes = self.rng.extremes > x0
        if self._capture_call is not None and extremes:
            return self._retry(prepared, s, depth)  # a replay: the original run went on after this call
        if not self.trace_failures:
            self.crash = crash_from(err, self.label(), context)
            return None
        key = (type(err).__name__, crash_location(err))
        trig = self._events.get(key) if extremes else None
        if trig is None:
            trig = self.trigger(prepared, lambda o: o is None, extremes)
        if trig is not None and (trig.get("output") is not None or trig.get("seen")):
            if key not in self._events:
                self._events[key] = {**trig, "output": None, "seen": 1}
                crash = crash_from(err, self.label(), context, self.inputs_of_call(self.calls))
                self.findings.append({"what": "crash", "instance": self.pair.name, "gamma": self.gamma,
                                      "call": self.calls, "context": context, "exception": crash.exception,
                                      "location": crash.location, "inputs": crash.inputs, "event": trig["event"],
                                      "probability": trig["probability"], "output": None, "times": 1})
            else:
                self._events[key]["seen"] += 1
                for f in self.findings:
                    if f["what"] == "crash" and (f["exception"].split(":")[0], f["location"]) == key:
                        f["times"] = f.get("times", 1) + 1
            return self._retry(prepared, s, depth)
        crash = crash_from(err, self.label(), context, self.inputs_of_call(self.calls))
        crash.trigger = None if trig is None else {"event": trig["event"], "probability": trig["probability"]}
        self.crash = crash
        return None

    def _retry(self, prepared, s, depth):
        """The call again on the same inputs with the run's next uniforms."""
        x0 = self.rng.extremes
        try:
            out = self.read(self.invoke(prepared, self.rng))
            self.rec.check(out)
            return out
        except Exception as err:  # noqa: BLE001
            if depth >= 3:
                self.crash = crash_from(err, self.label(), f"call {self.calls} (retried {depth + 1} times)")
                return None
            return self._crashed(err, prepared, s, x0, depth + 1)

    def trace(self) -> Trace:
        return self.rec.trace(self.name, self.completion_seed)
