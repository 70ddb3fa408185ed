"""Batched rejection samplers with ragged draft lengths: the layout of a serving engine.

A serving engine verifies the drafts of every request of a batch in one call. Request b has
its own draft length γ_b (0 included: a request with nothing drafted gets its bonus token only),
its drafts are flattened into one array and addressed by cumulative offsets. The layout
(``fn`` as :class:`RaggedSampler` calls it; that of vLLM's v1 ``rejection_sample``, whose
arguments are named the same way):

``draft_token_ids``     (T,) int, T = Σ γ_b, request b's drafts at ``cu[b−1]:cu[b]`` (cu[−1] = 0);
``cu_num_draft_tokens`` (B,) int, the cumulative draft lengths cu[b] = γ_0 + … + γ_b
                        (``offsets="counts"``: ``num_draft_tokens`` (B,), the γ_b themselves);
``draft_probs``         (T, V), the draft's rows at the drafted positions;
``target_probs``        ``bonus="given"`` (default): (T, V), the target's rows at the drafted
                        positions, and ``bonus_token_ids`` (B,) follows it: the bonus token of
                        each request, drawn from the target's row at its bonus position by the
                        caller (the engine's ordinary sampler) — ``fn(draft_token_ids, cu,
                        draft_probs, target_probs, bonus_token_ids, rng)``;
                        ``bonus="inside"``: (T + B, V), request b's γ_b + 1 rows consecutive
                        (its drafted positions, then its bonus position) at rows
                        ``cu[b−1] + b : cu[b] + b + 1``, and the sampler draws the bonus itself
                        — ``fn(draft_token_ids, cu, draft_probs, target_probs, rng)``;
``rng``                 the random source (a NumPy Generator; torch's, NumPy's and Python's
                        global functions are routed through it, :mod:`.sources`).

It returns ``output_token_ids`` (B, W), W ≥ max γ_b + 1: row b the accepted drafted prefix of
request b, then its correction (after a rejection) or its bonus token (after γ_b accepts),
then −1 (the placeholder) to the end of the row. ``adapter``, ``dtype`` and ``framework`` are
those of block verifiers (:mod:`.adapters`).

The check (:func:`spectheory.conformance.check_ragged_sampler`) keeps several *lanes* per
draft length: each lane is one run of the block checks (drafting along the Markov chain from
its own state, :mod:`.driver`), and each call of the sampler verifies one request of every
lane, in a fresh seeded order (so the offsets of a lane change from call to call). The
emitted rows are unflattened and every request's block goes to the trace of its γ, so each
(instance, γ) gets the block kind's statistics (:mod:`.checks`) — and one check more,
:func:`cross_request_independence`: the requests of one call must be independent given their
inputs (a sampler whose requests share uniforms, or read each other's rows, is not).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable  # noqa: F401  (annotations of the inherited BlockVerifier fields)
from time import perf_counter

import numpy as np

from scipy import stats as sps

from ...judge import stats
from ...judge.evidence import Evidence
from ...markov import MarkovPair
from ..adapters import BlockVerifier, VerifierOutputError
from ..checks import CHECKS, IMPOSSIBLE_ID, TOL_W, Check, first_n, label
from ..forced import inverse_cdf
from ..kind import Block, Control, Kind
from ..probes import ProbeRequest, probe_list
from ..runs import CallLedger, Recorder, Trace, VerifierCrash, crash_from, impossible_positions, rows_json, spawn
from ..trial import (SANITY_CALLS, SANITY_DRAFT, SANITY_V, ConformanceUsageError, check_arity, cli_flags,
                     torch_available)
from .block import SPARSE, BlockKind, block_plan, draft_chain, floor_shows

OFFSETS = ("cu", "counts")
BONUS = ("given", "inside")
#: draft lengths of the lanes (0: a request with nothing drafted, its bonus only)
GAMMAS = (0, 1, 3)
MAX_GAMMA = 4
#: the output's padding after a request's tokens (vLLM's PLACEHOLDER_TOKEN_ID)
PLACEHOLDER = -1
#: lanes per draft length: BASE_LANES × ⌈N/(γ+1)⌉ (N first tokens per run), so every γ
#: completes about as many runs per call
BASE_LANES = 8
#: checks that apply at γ = 0 (no drafts: the call is a draw of the bonus token)
GAMMA0_CHECKS = ("conformance.impossible_tokens", "conformance.first_tokens", "conformance.token_law_by_state", "conformance.bonus_by_state",
                 "ragged.cross_request_independence")
INDEPENDENCE_ID = "ragged.cross_request_independence"
CALL_GIVEN = "fn(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng)"
CALL_INSIDE = "fn(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, rng)"


class Request:
    """One request of a batch: exact target rows ``p`` (γ+1, V) (its drafted positions and its
    bonus position), draft rows ``q`` (γ, V), the drafted ids, and the bonus token the caller
    gives (``bonus="given"``)."""

    __slots__ = ("p", "q", "draft", "bonus")

    def __init__(self, p, q, draft, bonus=None):
        self.p, self.q, self.draft, self.bonus = p, q, list(draft), bonus


@dataclass
class RaggedSampler(BlockVerifier):
    """A user's batched rejection sampler in the serving layout (see the module docstring)."""

    offsets: str = "cu"
    bonus: str = "given"

    def __post_init__(self):
        super().__post_init__()
        if self.batched:
            raise ValueError("batched does not apply to a ragged sampler: its inputs are a batch already")
        if self.offsets not in OFFSETS:
            raise ValueError(f"offsets must be one of {OFFSETS}, got {self.offsets!r}")
        if self.bonus not in BONUS:
            raise ValueError(f"bonus must be one of {BONUS}, got {self.bonus!r}")

    def options(self) -> dict:
        return {"adapter": self.adapter, "dtype": self.dtype, "framework": self.framework,
                "offsets": self.offsets, "bonus": self.bonus}

    def with_options(self, **options):
        options.pop("batched", None)
        return type(self)(self.fn, **{**self.options(), **options}, name=self.name, arg_order=self.arg_order)

    @property
    def call(self) -> str:
        return CALL_GIVEN if self.bonus == "given" else CALL_INSIDE

    @property
    def n_args(self) -> int:
        return 6 if self.bonus == "given" else 5

    def flatten(self, requests, V: int, rows: bool = True) -> tuple:
        """The flattened arrays (exact float64 rows, not yet represented; ``rows=False``: ids,
        lengths and bonus tokens only)."""
        g = np.array([len(r.draft) for r in requests], dtype=np.int64)
        ids = np.array([x for r in requests for x in r.draft], dtype=np.int64)
        bonus = np.array([r.bonus for r in requests], dtype=np.int64) if self.bonus == "given" else None
        if not rows:
            return ids, g, None, None, bonus
        q = np.concatenate([np.asarray(r.q, dtype=np.float64).reshape(-1, V) for r in requests])
        if self.bonus == "given":
            p = np.concatenate([np.asarray(r.p, dtype=np.float64)[:len(r.draft)].reshape(-1, V) for r in requests])
        else:
            p = np.concatenate([np.asarray(r.p, dtype=np.float64).reshape(-1, V) for r in requests])
        return ids, g, q, p, bonus

    def call_batch(self, requests, rng, p_rep=None, q_rep=None, V: int | None = None) -> list[tuple]:
        """Call the sampler once on ``requests`` (a list of :class:`Request`) and return each
        request's emitted tokens. ``p_rep``/``q_rep``: the flattened rows already represented
        (else represented here from the exact rows)."""
        V = V or np.asarray(requests[0].p).shape[-1]
        ids, g, q, p, bonus = self.flatten(requests, V, rows=p_rep is None)
        if p_rep is None:
            p_rep, q_rep = self.represent(p, "target"), self.represent(q, "draft")
        offs = np.cumsum(g) if self.offsets == "cu" else g
        args = [self._to_framework(ids, integer=True), self._to_framework(offs, integer=True),
                self._to_framework(np.asarray(q_rep).reshape(-1, V)),
                self._to_framework(np.asarray(p_rep).reshape(-1, V))]
        if self.bonus == "given":
            args.append(self._to_framework(bonus, integer=True))
        self.sources.current = rng
        out = self.invoke(*args, rng)
        return rows_of(out, g, V)


def rows_of(out, gammas, V: int) -> list[tuple]:
    """Each request's emitted tokens from the (B, W) output padded with −1; raises
    :class:`VerifierOutputError` for anything else."""
    B = len(gammas)
    if out is None:
        raise VerifierOutputError("the function returned None; it must return output_token_ids (B, W), "
                                  "W ≥ max γ_b + 1, each row the emitted tokens then −1")
    if isinstance(out, tuple) and len(out) == 2 and len(getattr(out[0], "shape", ())) >= 1:
        raise VerifierOutputError("the sampler returned a pair: return only output_token_ids (wrap it: "
                                  "lambda *a: fn(*a)[0])")
    if hasattr(out, "detach"):
        out = out.detach().cpu().numpy()
    try:
        arr = np.asarray(out)
    except ValueError as err:
        raise VerifierOutputError(f"the function returned a ragged nested sequence ({err}); return a (B, W) "
                                  "array padded with −1") from None
    if arr.ndim != 2 or arr.shape[0] != B:
        raise VerifierOutputError(f"expected output_token_ids of shape (B, W) = ({B}, ≥ {int(max(gammas)) + 1}) "
                                  f"padded with −1, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.floating) or not np.all(np.isfinite(arr)) \
                or not np.all(arr == np.round(arr)):
            raise VerifierOutputError(f"emitted tokens are not integer ids: {arr!r}")
    arr = arr.astype(np.int64)
    rows = []
    for b in range(B):
        row = arr[b]
        pad = np.flatnonzero(row == PLACEHOLDER)
        L = int(pad[0]) if pad.size else row.size
        toks = row[:L]
        if (row[L:] != PLACEHOLDER).any():
            raise VerifierOutputError(f"request {b}: row {row.tolist()} has tokens after the placeholder −1")
        g = int(gammas[b])
        if not 1 <= L <= g + 1:
            raise VerifierOutputError(f"request {b} (γ_b = {g}) emitted {L} tokens {toks.tolist()}; it allows "
                                      f"1..{g + 1}")
        if toks.min() < 0 or toks.max() >= V:
            raise VerifierOutputError(f"request {b}: token ids {toks.tolist()} outside the vocabulary [0, {V})")
        rows.append(tuple(int(t) for t in toks))
    return rows


# --- reference samplers in the serving layout (the controls) ---------------------------------

def _split(ids, offs, bonus_mode, offsets_mode, target, draft, bonus):
    """Per request: (p rows (γ+1, V) — in "given" mode the bonus row a point mass at the given
    bonus —, q rows, drafted ids)."""
    ids = np.asarray(ids)
    g = np.asarray(offs) if offsets_mode == "counts" else np.diff(np.concatenate([[0], np.asarray(offs)]))
    target, draft = np.asarray(target, np.float64), np.asarray(draft, np.float64)
    V = target.shape[1]
    out, t0 = [], 0
    for b, gb in enumerate(g.tolist()):
        q = draft[t0:t0 + gb]
        if bonus_mode == "given":
            onehot = np.zeros((1, V))
            onehot[0, int(bonus[b])] = 1.0
            p = np.vstack([target[t0:t0 + gb], onehot])
        else:
            p = target[t0 + b:t0 + b + gb + 1]
        out.append((p, q, [int(x) for x in ids[t0:t0 + gb]]))
        t0 += gb
    return out


def _pad(rows, width):
    out = np.full((len(rows), width), PLACEHOLDER, dtype=np.int64)
    for b, r in enumerate(rows):
        out[b, :len(r)] = r
    return out


def from_block(block_fn, bonus: str = "given", offsets: str = "cu", name: str = ""):
    """A ragged sampler that verifies each request with the block verifier ``block_fn(p, q,
    draft, rng)`` in turn (probabilities, NumPy): how the checker runs its reference rules and
    its negative controls in the serving layout."""

    def sample(ids, offs, draft_probs, target_probs, *rest):
        bonus_ids, rng = (rest[0], rest[1]) if bonus == "given" else (None, rest[0])
        reqs = _split(ids, offs, bonus, offsets, target_probs, draft_probs, bonus_ids)
        rows = [block_fn(p, q, d, rng) for p, q, d in reqs]
        return _pad(rows, max(len(d) for _, _, d in reqs) + 1)

    sample.__name__ = sample.__qualname__ = name or f"ragged[{getattr(block_fn, '__name__', 'block')}]"
    return sample


def shared_uniform(bonus: str = "given", offsets: str = "cu"):
    """Negative control of :func:`cross_request_independence`: Alg. 1 on every request, with
    one set of uniforms per call shared by all requests (u_i at draft position i, one more for
    the correction/bonus). Each request's law is right; the requests of a call are dependent."""

    def shared(ids, offs, draft_probs, target_probs, *rest):
        bonus_ids, rng = (rest[0], rest[1]) if bonus == "given" else (None, rest[0])
        reqs = _split(ids, offs, bonus, offsets, target_probs, draft_probs, bonus_ids)
        G = max(len(d) for _, _, d in reqs)
        u = rng.random(G + 1)
        rows = []
        for p, q, d in reqs:
            out = []
            for i, x in enumerate(d):
                ratio = min(1.0, p[i, x] / q[i, x]) if q[i, x] > 0 else float(p[i, x] > 0)
                if u[i] < ratio:
                    out.append(x)
                    continue
                r = np.maximum(p[i] - q[i], 0.0)
                out.append(inverse_cdf(r / r.sum() if r.sum() > 0 else p[i], u[G]))
                break
            else:
                out.append(inverse_cdf(p[len(d)], u[G]))
            rows.append(out)
        return _pad(rows, G + 1)

    shared.__name__ = shared.__qualname__ = "shared-uniform"
    return shared


def rows_of_next_request(bonus: str = "given", offsets: str = "cu"):
    """Negative control of the law checks in this layout: Alg. 1 on request b with the target
    and draft rows of request b + 1 (mod B) — the rows of another request, as a wrong offset
    reads them (its drafted ids are request b's own)."""
    from ..references import reference_verifier

    def mixed(ids, offs, draft_probs, target_probs, *rest):
        bonus_ids, rng = (rest[0], rest[1]) if bonus == "given" else (None, rest[0])
        reqs = _split(ids, offs, bonus, offsets, target_probs, draft_probs, bonus_ids)
        B = len(reqs)
        rows = []
        for b, (p, q, d) in enumerate(reqs):
            # the rows of the next request with at least as many positions (wrap around)
            for k in range(1, B + 1):
                p2, q2, d2 = reqs[(b + k) % B]
                if len(d2) >= len(d):
                    break
            g = len(d)
            rows.append(reference_verifier(p2[:g + 1], q2[:g], d, rng))
        return _pad(rows, max(len(d) for _, _, d in reqs) + 1)

    mixed.__name__ = mixed.__qualname__ = "rows-of-next-request"
    return mixed


def controls(bonus: str, offsets: str = "cu") -> list:
    """(name, ragged function, description) of every negative control in the subject's
    layout: the block kind's broken rules run request by request, the rows of another
    request, and uniforms shared across the requests of a call."""
    from ..references import CONTROLS as BLOCK
    out = [(c, from_block(f, bonus, offsets, name=c), d) for c, f, d in BLOCK]
    out.append(("rows-of-next-request", rows_of_next_request(bonus, offsets),
                "negative control: request b verified with the target and draft rows of request b + 1 (a wrong "
                "offset into the flattened rows)"))
    out.append(("shared-uniform", shared_uniform(bonus, offsets),
                "negative control of cross-request independence: Alg. 1 on every request with one set of "
                "uniforms per call shared by all requests (each request's law right, the requests dependent)"))
    return out


# --- the runs ----------------------------------------------------------------------------------

class RaggedTrace(Trace):
    """A :class:`~.driver.Trace` of the requests of one γ, with, per request, its neighbour's
    (the next request of the same call) γ, start state and first emitted token."""

    nb_gamma: np.ndarray
    nb_state: np.ndarray
    nb_first: np.ndarray


def lanes_for(gammas, n_tokens: int, base: int = BASE_LANES) -> list[int]:
    """The γ of every lane (see :data:`BASE_LANES`)."""
    return [g for g in gammas for _ in range(base * -(-n_tokens // (g + 1)))]


def engine_seed(seed: int, instance: str):
    """The seed of an instance's engine in a report from ``seed`` (the subject's and the controls')."""
    from ...rng import derive_seed
    return derive_seed(seed, "conformance-ragged", instance)


class RaggedEngine:
    """Every lane of one instance: runs from state 0 of each draft length in ``gammas``, one
    request per lane in each call of the sampler. The sequence of calls is a function of the
    seed alone (how far it has gone never changes what a call sees), so the runs of one γ up to
    any count are reproducible (:meth:`trace`); they are taken in rank order (:meth:`_advance`),
    a fixed set of runs of every lane, not the first to finish.

    ``seed`` spawns the drafting stream (which also orders the requests of each call), the
    sampler's Generator, the bonus tokens the checker gives (``bonus="given"``) and the
    completion draws of the checks."""

    def __init__(self, sampler: RaggedSampler, pair: MarkovPair, gammas, n_tokens: int, seed, name: str = "",
                 base_lanes: int = BASE_LANES):
        from ..forced import CountingGenerator
        draft_ss, verifier_ss, bonus_ss, completion_ss = spawn(seed, 4)
        self.draft_rng = np.random.Generator(np.random.PCG64(draft_ss))
        self.bonus_rng = np.random.Generator(np.random.PCG64(bonus_ss))
        self.verifier_rng = CountingGenerator(np.random.Generator(np.random.PCG64(verifier_ss)))
        sampler.sources.own(self.draft_rng, self.bonus_rng, self.verifier_rng)
        self.completion_seed = completion_ss
        self.sampler, self.pair, self.n_tokens = sampler, pair, n_tokens
        self.gammas = tuple(gammas)
        self.name = name or pair.name
        self.lane_gamma = lanes_for(self.gammas, n_tokens, base_lanes)
        self.lanes = [{"s": 0, "got": [], "first": True, "pending": []} for _ in self.lane_gamma]
        self.rec = {g: Recorder(pair, g, n_tokens, with_draft=True) for g in self.gammas}
        self.nb = {g: [] for g in self.gammas}
        self.calls_at_run = {g: [] for g in self.gammas}
        #: the lanes of each γ, and each lane's finished runs (its calls, its first tokens)
        self.lanes_of = {g: [i for i, lg in enumerate(self.lane_gamma) if lg == g] for g in self.gammas}
        self.done = [[] for _ in self.lane_gamma]
        self.ledger = CallLedger()
        self.findings: list = []
        self._events: dict = {}
        self.impossible = 0
        self.trace_failures = True
        self.p_list = pair.target.table.tolist()
        self.sampler_s = 0.0
        self.batch_calls = 0
        self.requests = 0
        self.crash: VerifierCrash | None = None
        V = pair.V
        self.p_tab, self.q_tab = pair.target.table, pair.draft.table
        q_cdf = np.cumsum(self.q_tab, axis=1)
        q_cdf /= q_cdf[:, -1:]
        self.q_cdf = q_cdf.tolist()
        self.p_cdf = np.cumsum(self.p_tab, axis=1)
        self.last_q = [int(np.flatnonzero(row)[-1]) for row in self.q_tab]
        self.last_p = [int(np.flatnonzero(row)[-1]) for row in self.p_tab]
        self.p_rep = sampler.represent(self.p_tab, "target")
        self.q_rep = sampler.represent(self.q_tab, "draft")
        self.V = V

    def runs(self, g: int) -> int:
        """Runs of draft length ``g`` available in rank order (see :meth:`_advance`)."""
        self._advance(g)
        return len(self.rec[g].run_tokens)

    def _advance(self, g: int) -> None:
        """Move the finished runs of ``g`` into its trace in *rank* order — run j of the l-th
        lane of ``g`` has rank j·L + l (L lanes) — as far as every lower rank is finished. The
        runs up to any rank are then a fixed set of (lane, j), whatever their contents: no run
        is kept or left out for having finished early (the first runs to *finish* would favour
        short runs, those that accepted more per call)."""
        lanes, rec = self.lanes_of[g], self.rec[g]
        L = len(lanes)
        while True:
            r = len(rec.run_tokens)
            lane_i, j = lanes[r % L], r // L
            if j >= len(self.done[lane_i]):
                return
            pending, tokens = self.done[lane_i][j]
            for st, first, out, draft, nb, call in pending:
                rec.record(st, first, out, draft, call)
                self.nb[g].append(nb)
            rec.run_tokens.append(tokens)
            self.calls_at_run[g].append(len(rec.start))
            self.done[lane_i][j] = None  # moved

    def extend(self, g: int, n_runs: int) -> None:
        """Calls until the lanes of draft length ``g`` have completed ``n_runs`` runs."""
        if self.crash is not None or self.runs(g) >= n_runs:
            return
        with self.sampler.sources.active(f"{self.name} ragged"):
            while self.crash is None and self.runs(g) < n_runs:
                self._call()

    def _call(self):
        V, S = self.V, self.pair.n_states
        order = self.draft_rng.permutation(len(self.lanes))
        u_all = self.draft_rng.random((len(self.lanes), max(self.gammas) or 1)).tolist()
        reqs, meta = [], []
        for b, lane_i in enumerate(order.tolist()):
            lane, g = self.lanes[lane_i], self.lane_gamma[lane_i]
            states, draft = draft_chain(self.q_cdf, self.last_q, V, S, lane["s"], u_all[b], g)
            bonus = None
            if self.sampler.bonus == "given":
                st = states[-1]
                bonus = min(int((self.p_cdf[st] <= self.bonus_rng.random() * self.p_cdf[st, -1]).sum()),
                            self.last_p[st])
            reqs.append(Request(None, None, draft, bonus))
            meta.append((lane_i, states, draft))
        # flattened rows, represented once per state (no per-call conversion)
        all_states = [st for _, states, draft in meta for st in (states if self.sampler.bonus == "inside"
                                                                 else states[:len(draft)])]
        q_states = [st for _, states, draft in meta for st in states[:len(draft)]]
        p_rep = self.p_rep[all_states] if all_states else np.zeros((0, V), dtype=self.p_rep.dtype)
        q_rep = self.q_rep[q_states] if q_states else np.zeros((0, V), dtype=self.q_rep.dtype)
        for r, (_, states, draft) in zip(reqs, meta):
            r.p, r.q = self.p_tab[states], self.q_tab[states[:len(draft)]]
        self.batch_calls += 1
        bg = self.verifier_rng.bit_generator
        rng_state = bg.state
        u0, x0 = self.verifier_rng.decision_values(), self.verifier_rng.extremes
        context = f"call {self.batch_calls}, γ_b = {[len(r.draft) for r in reqs]}"
        try:
            self.sampler.sources.current = self.verifier_rng
            t0 = perf_counter()
            outs = self.sampler.call_batch(reqs, self.verifier_rng, p_rep, q_rep, V)
            self.sampler_s += perf_counter() - t0
        except Exception as err:  # noqa: BLE001  (any crash of user code is a finding)
            outs = self._crashed(err, reqs, p_rep, q_rep, rng_state, context, x0)
            if outs is None:
                return
        bad = [(b, impossible_positions(self.p_list, states[0], out, V, S))
               for b, (out, (_, states, _)) in enumerate(zip(outs, meta))]
        bad = [(b, pos) for b, pos in bad if pos]
        if bad:
            self.impossible += sum(len(pos) for _, pos in bad)
            if self.trace_failures and sum(f["what"] == "impossible token" for f in self.findings) < 3:
                p_list = self.p_list
                trig = self._trigger(reqs, p_rep, q_rep, rng_state,
                                     lambda o: o is None or any(impossible_positions(p_list, m[1][0], x, V, S)
                                                                for x, m in zip(o, meta)),
                                     self.verifier_rng.extremes > x0)
                b, pos = bad[0]
                self.findings.append({"what": "impossible token", "instance": self.pair.name,
                                      "gamma": len(meta[b][2]), "call": self.batch_calls,
                                      "context": f"{context}, request {b}", "position": pos[0][0], "token": pos[0][1],
                                      "output": [list(o) for o in outs], "inputs": self.inputs(reqs, rng_state),
                                      "event": trig["event"] if trig else None,
                                      "probability": trig["probability"] if trig else None})
        needed = 0
        for out, (_, states, draft) in zip(outs, meta):
            tau = len(out) - 1
            for i in range(min(tau + 1, len(draft))):
                a, b_ = self.p_tab[states[i], draft[i]], self.q_tab[states[i], draft[i]]
                if 0.0 < a < b_:
                    needed += 1
        drawn = self.verifier_rng.decision_values() - u0
        if needed:
            self.ledger.note_draws(self.batch_calls, needed, drawn,
                                   lambda: f"call {self.batch_calls} ({len(reqs)} requests, "
                                           f"γ_b = {[len(r.draft) for r in reqs]})")
        B = len(reqs)
        for b, (out, (lane_i, states, draft)) in enumerate(zip(outs, meta)):
            tau = len(out) - 1
            g = len(draft)
            if self.ledger.structure_example is None and (
                    list(out[:tau]) != draft[:tau] or (tau < g and out[tau] == draft[tau])):
                self.ledger.structure_example = {**self.inputs(reqs, rng_state), "output": [list(o) for o in outs],
                                                 "context": f"call {self.batch_calls}, request {b} (γ_b = {g})"}
            nb_out, (nb_lane, nb_states, _) = outs[(b + 1) % B], meta[(b + 1) % B]
            lane = self.lanes[lane_i]
            lane["pending"].append((lane["s"], lane["first"], out, draft,
                                    (self.lane_gamma[nb_lane], nb_states[0], nb_out[0]), self.batch_calls))
            lane["first"] = False
            lane["got"].extend(out)
            s = lane["s"]
            for t in out:
                s = (s * V + t) % S
            lane["s"] = s
            if len(lane["got"]) >= self.n_tokens:
                self._flush(lane_i)
        self.requests += B

    def _crashed(self, err, reqs, p_rep, q_rep, rng_state, context, x0, depth=0):
        """A batch call that raised: when an extreme uniform triggered it, a finding of that event and
        the call again with the next uniforms (as :meth:`.runs.Runs._crashed`); else the end of the
        runs with :attr:`crash`. Returns the outputs to go on with, or None."""
        from ..runs import crash_location
        crash = crash_from(err, f"{self.name} ragged", context, self.inputs(reqs, rng_state))
        extremes = self.verifier_rng.extremes > x0
        key = (type(err).__name__, crash_location(err))
        trig = None
        if self.trace_failures:
            trig = self._events.get(key) if extremes else None
            if trig is None:
                trig = self._trigger(reqs, p_rep, q_rep, rng_state, lambda o: o is None, extremes)
        if trig is None or (trig.get("output") is None and not trig.get("seen")) or depth >= 3:
            crash.trigger = None if trig is None else {"event": trig["event"], "probability": trig["probability"]}
            self.crash = crash
            return None
        if key not in self._events:
            self._events[key] = {**trig, "output": None, "seen": 1}
            self.findings.append({"what": "crash", "instance": self.pair.name, "gamma": None, "call": self.batch_calls,
                                  "context": context, "exception": crash.exception, "location": crash.location,
                                  "inputs": crash.inputs, "event": trig["event"], "probability": trig["probability"],
                                  "output": None, "times": 1})
        else:
            for f in self.findings:
                if f["what"] == "crash" and (f["exception"].split(":")[0], f["location"]) == key:
                    f["times"] = f.get("times", 1) + 1
        x1, state1 = self.verifier_rng.extremes, self.verifier_rng.bit_generator.state
        try:
            return self.sampler.call_batch(reqs, self.verifier_rng, p_rep, q_rep, self.V)
        except Exception as err2:  # noqa: BLE001
            return self._crashed(err2, reqs, p_rep, q_rep, state1, context, x1, depth + 1)

    def _trigger(self, reqs, p_rep, q_rep, rng_state, still_fails, extremes_drawn):
        """What triggered a failing call (:meth:`.runs.Runs.trigger`, for a batch): its replay with
        every extreme uniform moved inside, else a zero-mass residual in a request's rows."""
        from ..forced import NudgedGenerator, extreme_probability
        from ..severity import extreme_event, zero_mass_event
        from .block import residual_zero_mass
        if extremes_drawn:
            bg = np.random.PCG64()
            bg.state = rng_state
            nudged = NudgedGenerator(np.random.Generator(bg))
            self.sampler.sources.current = nudged
            try:
                outs = self.sampler.call_batch(reqs, nudged, p_rep, q_rep, self.V)
            except Exception:  # noqa: BLE001
                outs = None
            finally:
                self.sampler.sources.current = self.verifier_rng
            if nudged.nudged and not still_fails(outs):
                which, dtype = nudged.nudged[0]
                return {"event": extreme_event(which, dtype), "probability": extreme_probability(which, dtype),
                        "output": outs}
        mass = 0.0
        for r in reqs:
            if r.draft:
                P, Q = self.sampler.seen(self.sampler.represent(r.p, "target")), \
                    self.sampler.seen(self.sampler.represent(r.q, "draft"))
                mass += residual_zero_mass(P[:-1], Q, r.draft)
        if mass > 0:
            return {"event": zero_mass_event(self.sampler.dtype), "probability": mass, "output": None}
        return None

    def _flush(self, lane_i):
        lane = self.lanes[lane_i]
        self.done[lane_i].append((lane["pending"], lane["got"][:self.n_tokens]))
        self.lanes[lane_i] = {"s": 0, "got": [], "first": True, "pending": []}

    def inputs(self, reqs, rng_state) -> dict:
        """The exact inputs of a call (for :func:`.replay.rerun`): per request p, q rows and
        drafted ids (and the given bonus), and the sampler's generator state before it."""
        out = {"requests": [{"p": rows_json(r.p), "q": rows_json(r.q), "draft": list(r.draft)}
                            | ({"bonus": int(r.bonus)} if r.bonus is not None else {}) for r in reqs],
               "rng_state": rng_state}
        return out

    def trace(self, g: int, n_runs: int) -> RaggedTrace:
        """The runs of draft length ``g`` of rank below ``n_runs`` (the calls of those runs)."""
        n_runs = min(n_runs, self.runs(g))
        c = self.calls_at_run[g][n_runs - 1] if n_runs else 0
        t = self.rec[g].trace(f"{self.name}", self.completion_seed)
        nb = np.asarray(self.nb[g][:c], dtype=np.int64).reshape(-1, 3)
        fields = {k: getattr(t, k) for k in t.__dataclass_fields__}
        for k in ("start", "first", "emitted", "length", "draft", "call_id"):
            fields[k] = fields[k][:c]
        if g == 0:
            fields["draft"] = np.zeros((c, 0), dtype=np.int64)
        fields["run_tokens"] = fields["run_tokens"][:n_runs]
        fields["completion_seed"] = np.random.SeedSequence(
            self.completion_seed.entropy, spawn_key=self.completion_seed.spawn_key + (g,))
        tr = RaggedTrace(**fields)
        tr.nb_gamma, tr.nb_state, tr.nb_first = nb[:, 0], nb[:, 1], nb[:, 2]
        return tr


class LaneView:
    """The runs of one draft length of a :class:`RaggedEngine`, as the sequential design of
    :func:`.api.run_sequential` extends them (one γ at a time)."""

    def __init__(self, engine: RaggedEngine, gamma: int):
        self.engine, self.gamma = engine, gamma
        self.limit = 0
        self.sampler_s = 0.0
        # the calls' draw accounting and findings are the engine's: reported once, with the last γ (run last)
        last = gamma == engine.gammas[-1]
        self.ledger = engine.ledger if last else None
        self.findings = engine.findings if last else []

    @property
    def impossible(self) -> int:
        return self.engine.impossible if self.gamma == self.engine.gammas[-1] else 0

    @property
    def trace_failures(self) -> bool:
        return self.engine.trace_failures

    @trace_failures.setter
    def trace_failures(self, value: bool) -> None:
        self.engine.trace_failures = value

    @property
    def crash(self):
        return self.engine.crash

    @property
    def n_runs(self) -> int:
        return min(self.limit, self.engine.runs(self.gamma))

    @property
    def calls(self) -> int:
        return self.trace().n_calls

    def extend(self, n_runs: int) -> None:
        self.limit = max(self.limit, n_runs)
        t0 = self.engine.sampler_s
        self.engine.extend(self.gamma, n_runs)
        self.sampler_s += self.engine.sampler_s - t0

    def trace(self) -> RaggedTrace:
        return self.engine.trace(self.gamma, self.n_runs)


# --- checks ------------------------------------------------------------------------------------

def _pool(tab: np.ndarray):
    """Merge the rarest token of either side into the next rarest until every expected count of
    the independence table is ≥ :data:`stats.MIN_EXPECTED` (a function of independent tokens
    stays independent); None when fewer than two categories are left on a side."""
    while tab.shape[0] >= 2 and tab.shape[1] >= 2:
        r, c = tab.sum(axis=1), tab.sum(axis=0)
        if (np.outer(r, c) / tab.sum()).min() >= stats.MIN_EXPECTED:
            return tab
        if r.min() <= c.min():
            i, j = np.argsort(r)[:2]
            tab[j] += tab[i]
            tab = np.delete(tab, i, axis=0)
        else:
            i, j = np.argsort(c)[:2]
            tab[:, j] += tab[:, i]
            tab = np.delete(tab, i, axis=1)
    return None


def cross_request_independence(trace: RaggedTrace, pair: MarkovPair, alpha: float) -> Evidence:
    """The first token of each request against that of the next request of the same call:
    chi-square test of independence within each stratum (γ_b, s_b, γ_b', s_b') (start states
    and draft lengths of the two), summed over strata — given their inputs the requests of a
    call are independent for any sampler that draws each request's randomness on its own.
    The rarest tokens of a side are pooled until every expected count is ≥ 5 (:func:`_pool`);
    strata left with fewer than two categories on a side are left out."""
    V = pair.V
    key = ((trace.start * (MAX_GAMMA + 1) + trace.nb_gamma) * pair.n_states + trace.nb_state)
    stat, df, n_used = 0.0, 0, 0
    for k in np.unique(key):
        sel = key == k
        tab = np.zeros((V, V))
        np.add.at(tab, (trace.emitted[sel, 0], trace.nb_first[sel]), 1)
        tab = _pool(tab[tab.sum(axis=1) > 0][:, tab.sum(axis=0) > 0])
        if tab is None:
            continue
        n = tab.sum()
        exp = np.outer(tab.sum(axis=1), tab.sum(axis=0)) / n
        stat += float(((tab - exp) ** 2 / exp).sum())
        df += (tab.shape[0] - 1) * (tab.shape[1] - 1)
        n_used += int(n)
    test = ("independence of the first tokens of neighbouring requests of a call, chi-square within strata "
            "(start states, draft lengths), summed")
    note = (f"{n_used} of {trace.n_calls} requests in strata with two categories or more on each side (rarest tokens "
            f"pooled until every expected count is ≥ {stats.MIN_EXPECTED:g})")
    if df == 0:
        # the first token of a request from state s has law p(·|s) (lossless): nothing to test
        # where it is a point mass on either side; else too few requests yet (more runs decide)
        multi = (pair.target.table > 0).sum(axis=1) >= 2
        if trace.n_calls and multi[trace.start].any() and multi[trace.nb_state].any():
            return Evidence("mc", label(trace), 0.0, None, p_value=None, outcome="underpowered", test=test, n=n_used,
                            alpha=alpha, power=stats.POWER, detectable=np.inf, tolerance=TOL_W,
                            note=note + ": too few requests in any stratum yet")
        return stats.info("mc", label(trace), None, None, n=n_used, test=test,
                          note=note + ": no stratum with two possible first tokens on both sides (nothing to test)")
    w_det = stats.chi2_detectable_w(df, n_used, alpha)
    p_value = float(sps.chi2.sf(stat, df))
    outcome = "fail" if p_value < alpha else ("pass" if w_det <= TOL_W else "underpowered")
    return Evidence("mc", label(trace), 0.0, float(np.sqrt(stat / n_used)), p_value=p_value, outcome=outcome,
                    test=test + f": stat {stat:.1f} on {df} df; measured = Cohen's w", n=n_used, alpha=alpha,
                    power=stats.POWER, detectable=w_det, tolerance=TOL_W, note=note)


def _gamma0(check: Check) -> Check:
    """``check`` reading "not applicable" at γ = 0 unless it applies there."""
    if check.id in GAMMA0_CHECKS:
        return check

    def run(trace, pair, alpha):
        if trace.gamma == 0:
            return [stats.info("mc", label(trace), None, None, test=check.id.removeprefix("conformance."),
                               note="γ = 0: nothing drafted, nothing to verify (the request's bonus token is tested "
                                    "by first_tokens, token_law_by_state and bonus_by_state)")]
        return check.run(trace, pair, alpha)

    return Check(check.id, check.statement, check.reference, run, check.mc_tests, check.controls,
                 check.for_steps, check.group)


def ragged_checks() -> tuple:
    """The block kind's checks (the law checks with the rows-of-another-request control too)
    and the cross-request independence check."""
    out = []
    for c in CHECKS:
        ctl = c.controls + (("rows-of-next-request",) if c.group == "lossless" and c.mc_tests else ())
        out.append(_gamma0(Check(c.id, c.statement, c.reference, c.run, c.mc_tests, ctl, c.for_steps, c.group)))
    out.append(Check(INDEPENDENCE_ID, "Given their inputs, the requests of one call are independent: the first "
                     "token of a request carries no information about the next request's.",
                     "the serving layout: each request is its own sequence (Leviathan et al. 2023, Thm 3.5, request "
                     "by request)", lambda t, pair, a: [cross_request_independence(t, pair, a)], 1,
                     ("shared-uniform",), group="lossless"))
    return tuple(out)




# --- the kind ----------------------------------------------------------------------------------

#: the ragged trial batch: draft lengths, and the point-mass token of each request
RAGGED_TRIAL_GAMMAS, RAGGED_TRIAL_TOKENS = (1, 0, 2), (5, 3, 6)


class RaggedKind(Kind):
    """Batched samplers in the serving layout (module docstring): the block kind's checks per
    (instance, γ) through lanes of runs, the independence of a call's requests, the block kind's
    probes as batches of three requests (the probe, a γ = 0 request on its bonus row, the probe)."""

    name, title = "ragged", "ragged sampler"
    seed_tag = "conformance-ragged"
    INSTANCES = BlockKind.INSTANCES
    GAMMAS = GAMMAS
    MIN_GAMMA, MAX_GAMMA = 0, MAX_GAMMA
    standard_probes = True
    interpretation = ("Black-box check of a batched sampler with ragged draft lengths (the serving layout) on the "
                      "built-in instances; see docs/conformance.md.")
    OPTION_DEFAULTS = {"adapter": "probs", "dtype": "float64", "framework": "numpy", "offsets": "cu",
                       "bonus": "given"}
    what = "ragged sampler"

    def __init__(self, fn, *, name=None, gammas=None, **options):
        super().__init__(fn, name=name, **options)
        self.engines: dict = {}
        if gammas is not None:
            self.run_gammas = self.check_gammas(gammas)

    def wrap(self, fn, *, name="", offsets="cu", bonus="given", adapter="probs", dtype="float64", framework="numpy",
             batched=False):
        if isinstance(fn, RaggedSampler):
            return fn
        if batched:
            raise ValueError("batched does not apply to a ragged sampler: its inputs are a batch already")
        return RaggedSampler(fn, adapter=adapter, dtype=dtype, framework=framework, name=name, offsets=offsets,
                             bonus=bonus)

    @property
    def call_text(self) -> str:
        return self.sampler.call

    def check_gammas(self, gammas):
        from ...checks import check_int
        if isinstance(gammas, str) or not hasattr(gammas, "__iter__"):
            raise TypeError(f"gammas must be a sequence of draft lengths, e.g. (0, 1, 3), got {gammas!r}")
        out = tuple(sorted({check_int(g, "gamma", min=0, max=MAX_GAMMA) for g in gammas}))
        if not out:
            raise ValueError("gammas must name at least one draft length")
        return out

    def checks(self):
        return ragged_checks()

    def blocks(self, instances, gammas):
        return block_plan(self.checks(), instances, gammas)

    def _view(self, sampler, block, seed_key):
        pair = self.pair(block)
        key = (id(sampler), block.instance)
        if key not in self.engines:
            self.engines[key] = (sampler, RaggedEngine(sampler, pair, self.run_gammas, first_n(pair.V), seed_key,
                                                       block.instance))
        return LaneView(self.engines[key][1], block.gamma)

    def seed_of(self, block, seed):
        return engine_seed(seed, block.instance)

    def runner(self, sampler, block, seed):
        return self._view(sampler, block, seed)

    def controls(self):
        names = {c for chk in self.checks() for c in chk.controls}
        roles = {"accept-u≤ratio": ("support probes",), "unguarded-residual": ("support probes",),
                 "lossless:accept=p(x)": ("checks", "standard probes")}
        return [Control(c, f, d, roles.get(c, ("checks",)), applies=(lambda b: floor_shows(b.instance))
                        if c == "residual-clamped-1e-5" else None)
                for c, f, d in controls(self.sampler.bonus) if c in names or c in roles]

    def control_sampler(self, control, for_probes=False):
        return RaggedSampler(control.fn, name=control.name, bonus=self.sampler.bonus,
                             dtype=self.sampler.dtype if for_probes else "float64")

    def settings(self):
        engines = [(s, e) for s, e in self.engines.values() if s is self.sampler]
        return {**self.sampler.options(), "requests_per_call": {e.pair.name: len(e.lanes) for _, e in engines},
                "calls": {e.pair.name: e.batch_calls for _, e in engines}}

    def finish(self, report, runners):
        report["run"].update(self.settings())

    def layout(self, block_info=None):
        return {"kind": "ragged", "gammas": list(self.run_gammas)}

    def replay_block(self, instance, gamma, setting=None):
        return Block(instance, gamma)

    # --- probes: batches of three requests -------------------------------------------------------
    def probes(self, sampler):
        return probe_list(sampler)

    def _batch(self, sampler, probe):
        """The probe's request twice, with a request of γ = 0 between them (its one row the probe's
        bonus row): (requests with exact rows, the same with the rows the sampler gets)."""
        g = len(probe.draft)
        P = np.asarray(probe.p, dtype=np.float64)
        Q = np.asarray(probe.q, dtype=np.float64)
        if probe.logits is not None:
            P_in, Q_in = sampler.from_logits(probe.logits[0]), sampler.from_logits(probe.logits[1])
        else:
            P_in, Q_in = sampler.represent(P, "target"), sampler.represent(Q, "draft")

        def bonus_of(row):
            return inverse_cdf(np.maximum(row, 0.0), 0.5) if sampler.bonus == "given" else None

        exact = [Request(P, Q, probe.draft, bonus_of(P[g])), Request(P[g:g + 1], Q[:0], [], bonus_of(P[g])),
                 Request(P, Q, probe.draft, bonus_of(P[g]))]
        fed = [Request(P_in, Q_in, probe.draft, r.bonus) for r in exact]
        fed[1] = Request(P_in[g:g + 1], Q_in[:0], [], exact[1].bonus)
        return exact, fed

    def probe_call(self, sampler, probe, rng):
        exact, fed = self._batch(sampler, probe)
        V = probe.p.shape[1]
        fi = [np.asarray(r.p) for r in fed]
        p_rep = np.concatenate([x[:len(r.draft)] if sampler.bonus == "given" else x for x, r in zip(fi, fed)])
        q_rep = np.concatenate([np.asarray(r.q).reshape(-1, V) for r in fed])
        outs = sampler.call_batch(exact, rng, p_rep, q_rep, V)
        return [ProbeRequest(r.p, r.q, tuple(r.draft), out, r.bonus,
                             last_drawn=sampler.bonus == "inside" or (len(out) - 1 < len(r.draft)))
                for r, out in zip(exact, outs)]

    def probe_rerun(self, probe) -> dict:
        exact, _ = self._batch(self.sampler, probe)
        src = probe.logits if probe.logits is not None else (probe.p, probe.q)
        P, Q = np.asarray(src[0], np.float64), np.asarray(src[1], np.float64)
        g = len(probe.draft)
        reqs = [{"p": P.tolist(), "q": Q.tolist(), "draft": list(probe.draft)},
                {"p": P[g:g + 1].tolist(), "q": [], "draft": []},
                {"p": P.tolist(), "q": Q.tolist(), "draft": list(probe.draft)}]
        for r, e in zip(reqs, exact):
            if e.bonus is not None:
                r["bonus"] = int(e.bonus)
        return {"requests": reqs, "forced": probe.forced, **({"logits": True} if probe.logits is not None else {})}

    def rerun_call(self, sampler, inputs, rng):
        requests, logits = inputs["requests"], inputs.get("logits")
        V = len(requests[0]["p"][0])
        reqs = [Request(np.asarray(r["p"], np.float64).reshape(-1, V), np.asarray(r["q"], np.float64).reshape(-1, V),
                        r["draft"], r.get("bonus")) for r in requests]
        conv = sampler.from_logits if logits else None
        p_rep, q_rep = [], []
        for r in reqs:
            P = conv(r.p) if conv else sampler.represent(r.p, "target")
            p_rep.append(P[:len(r.draft)] if sampler.bonus == "given" else P)
            q_rep.append((conv(r.q) if conv else sampler.represent(r.q, "draft")) if len(r.draft) else r.q)
        return sampler.call_batch(reqs, rng, np.concatenate(p_rep), np.concatenate(q_rep), V)

    # --- the trial ---------------------------------------------------------------------------------
    def trial(self, gammas):
        from ..trial import trial
        return trial(self, 1)

    def trial_arity(self):
        sampler = self.sampler
        other = "inside" if sampler.bonus == "given" else "given"
        n_other = 5 if sampler.bonus == "given" else 6
        what = ("target_probs (T + B, V) with each request's bonus row, the bonus drawn by the sampler"
                if other == "inside" else "target_probs (T, V) and bonus_token_ids (B,), the bonus given")
        from ..trial import SIGNATURES
        try:
            check_arity(sampler.fn, sampler.n_args, sampler.call,
                        SIGNATURES["ragged sampler"] + "a block verifier fn(p, q, draft_tokens, rng) is --kind block")
        except ConformanceUsageError as err:
            try:
                check_arity(sampler.fn, n_other, CALL_INSIDE if other == "inside" else CALL_GIVEN, "")
            except ConformanceUsageError:
                raise err from None
            raise ConformanceUsageError(err.problem, f"it takes {n_other} arguments: the layout with {what} — run "
                                                     f"with --bonus {other} (Python: bonus={other!r})") from None

    def _requests(self, sampler, pair, drng, gammas):
        V, S = pair.V, pair.n_states
        reqs = []
        for g in gammas:
            s, states, draft = 0, [0], []
            for _i in range(g):
                x = int(drng.choice(V, p=pair.draft.table[s]))
                draft.append(x)
                s = (s * V + x) % S
                states.append(s)
            bonus = int(drng.choice(V, p=pair.target.table[s])) if sampler.bonus == "given" else None
            reqs.append(Request(pair.target.table[states], pair.draft.table[states[:g]], draft, bonus))
        return reqs

    def trial_call(self, sampler, pair, drng, rng, gamma):
        gs = RAGGED_TRIAL_GAMMAS
        return sampler.call_batch(self._requests(sampler, pair, drng, gs), rng), list(gs)

    def trial_point_mass(self, sampler, rng, gamma):
        reqs = []
        for g, k in zip(RAGGED_TRIAL_GAMMAS, RAGGED_TRIAL_TOKENS):
            p = np.zeros((g + 1, SANITY_V))
            p[:, k] = 1.0
            reqs.append(Request(p, np.full((g, SANITY_V), 1.0 / SANITY_V), [SANITY_DRAFT] * g,
                                k if sampler.bonus == "given" else None))
        return sampler.call_batch(reqs, rng), list(RAGGED_TRIAL_TOKENS)

    def trial_point_mass_message(self, wrong) -> str:
        gs = RAGGED_TRIAL_GAMMAS
        return (f"on a batch of requests with γ_b = {list(gs)} whose target rows are point masses at tokens "
                f"{list(RAGGED_TRIAL_TOKENS)} (V = {SANITY_V}; every drafted token {SANITY_DRAFT} has p = 0), "
                f"{len(wrong)} of {SANITY_CALLS} calls emitted other first tokens (e.g. {[list(o) for o in wrong[0]]}); "
                "any lossless sampler emits each request's own token. A sampler that reads another request's rows "
                "(offsets misread) or probabilities as logits does this")

    def trial_first_tokens(self, sampler, pair, drng, rng):
        V, S = pair.V, pair.n_states
        reqs = []
        for _b in range(30):
            x = int(drng.choice(V, p=pair.draft.table[0]))
            st = [0, (0 * V + x) % S]
            bonus = int(drng.choice(V, p=pair.target.table[st[1]])) if sampler.bonus == "given" else None
            reqs.append(Request(pair.target.table[st], pair.draft.table[st[:1]], [x], bonus))
        return [o[0] for o in sampler.call_batch(reqs, rng)]

    def trial_describe(self, sampler, gamma, V) -> str:
        opts = sampler.options()
        gammas = RAGGED_TRIAL_GAMMAS
        T, B = sum(gammas), len(gammas)
        kind = {"probs": "probabilities", "logprobs": "log-probabilities", "logits": "logits"}[opts["adapter"]]
        arr = "tensors" if opts["framework"] == "torch" else "NumPy arrays"
        off = "cu_num_draft_tokens" if opts["offsets"] == "cu" else "num_draft_tokens"
        tgt = f"({T}, {V})" if opts["bonus"] == "given" else f"({T + B}, {V})"
        return (f"with {cli_flags(opts)} it receives draft_token_ids ({T},), {off} ({B},), draft {kind} ({T}, {V}), "
                f"target {kind} {tgt}" + (f", bonus_token_ids ({B},)" if opts["bonus"] == "given" else "")
                + f" as {arr}, and rng: a numpy Generator (γ_b = {list(gammas)})")

    def option_choices(self):
        return {"framework": ("numpy", "torch") if torch_available() else ("numpy",),
                "adapter": ("probs", "logits", "logprobs"), "offsets": OFFSETS, "bonus": BONUS}

    def arg_orders(self):
        return None


def check_ragged_sampler(fn, *, offsets: str = "cu", bonus: str = "given", adapter: str = "probs",
                         dtype: str = "float64", framework: str = "numpy", n: int = 10_000, gammas=GAMMAS,
                         instances=RaggedKind.INSTANCES, seed: int = 0, alpha: float = 0.01, controls: bool = True,
                         control_n: int | None = None, probes: bool = True, progress: bool = False,
                         name: str | None = None, trial: bool = True) -> dict:
    """Test a batched rejection sampler in the serving layout (``fn(draft_token_ids,
    cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng) -> output_token_ids``
    (B, max γ_b + 1) padded with −1; ``bonus="inside"``: no ``bonus_token_ids``, ``target_probs``
    (T + B, V); ``offsets="counts"``: ``num_draft_tokens`` in place of the cumulative counts) for
    losslessness and standard speculative sampling. ``gammas``: the draft lengths of the
    requests of every call (0 allowed: a request with its bonus only); each call verifies one
    request of every lane of every γ. The checks of :func:`check_block_verifier` per (instance,
    γ), plus the independence of the requests of a call; probes as batches of three requests.
    See the module docstring."""
    from ..driver import run
    kind = RaggedKind(fn, name=name, offsets=offsets, bonus=bonus, adapter=adapter, dtype=dtype, framework=framework)
    return run(kind, n=n, gammas=gammas, instances=instances, seed=seed, alpha=alpha, controls=controls,
               control_n=control_n, probes=probes, progress=progress, trial=trial)
