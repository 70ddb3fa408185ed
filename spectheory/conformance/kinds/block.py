"""The block kind: a verifier ``fn(p, q, draft_tokens, rng) -> emitted tokens``, the shape of most
rejection samplers (``transformers``, inference servers; Leviathan et al. 2023, Alg. 1).

spectheory drafts γ tokens from q along the chain, builds the target's (γ+1, V) and the draft's
(γ, V) rows at the drafted states (:class:`..adapters.BlockVerifier` converts them to what the
function takes), calls ``fn`` and moves the chain by what it emitted. Checks: every check of
:mod:`..checks` (lossless: impossible tokens, first-N law, token law by state; standard: block
law, bonus, acceptance, E[τ], tokens per call); probes: :func:`..probes.probe_list`, graded for
support and against Alg. 1; controls: :data:`..references.CONTROLS`.

Instances (:data:`BlockKind.INSTANCES`): Markov pairs (β varies with the state), the edge cases,
and a large vocabulary with sparse support (``iid-V4096-sparse4``), where a bug that gives every
token a floor of mass emits impossible tokens at a rate that grows with V; only the
impossible-token check runs there.
"""
from __future__ import annotations

import bisect

import numpy as np

from ..adapters import BlockVerifier, tokens_of
from ..checks import CHECKS, IMPOSSIBLE_ID, first_n
from ..kind import Block, Control, Kind
from ..probes import ProbeRequest, probe_list
from ..runs import Runs, rows_json
from ..trial import SANITY_CALLS, SANITY_DRAFT, SANITY_TOKEN, SANITY_V, adapter_choices, check_arity, cli_flags, \
    draft_along, sanity_rows

#: the instance with a large vocabulary and sparse support (the impossible-token check only)
SPARSE = "iid-V4096-sparse4"


def floor_shows(name: str) -> bool:
    """Whether the impossible-token control (a floor of 1e-5 on every token) shows on an instance: a
    large vocabulary with tokens of probability 0, where the floor's mass ~V·1e-5 is seen at once."""
    from ... import instances as inst
    pair = inst.get(name)
    return pair.V >= 1000 and bool((pair.target.table <= 0).any())


#: on iid-V3-disjoint every call emits one token, its correction drawn from p, whatever γ (the first
#: draft has p = 0 and is rejected with certainty): the joint law of a run's first tokens there is
#: that of corrections across independent calls, which first_tokens tests on every other instance
#: (corrections between accepted drafts included); it is not run there (it cost 24% of a default
#: run's calls: four calls per run of four tokens)
ONE_TOKEN_CALLS = "iid-V3-disjoint"


def draft_chain(q_cdf, last, V: int, S: int, s: int, u, gamma: int):
    """(states, drafted tokens) of ``gamma`` tokens drafted along the chain from state ``s``, token
    i the inverse CDF of q's row (``q_cdf``, as lists) at ``u[i]``, never past the row's last
    token of positive mass (``last``)."""
    states, draft, st = [s], [], s
    for i in range(gamma):
        x = min(bisect.bisect_right(q_cdf[st], u[i]), last[st])
        draft.append(x)
        st = (st * V + x) % S
        states.append(st)
    return states, draft


def block_plan(checks, instances, gammas) -> list[Block]:
    """The blocks of the block layouts (block verifiers, decoding steps, multi-draft, ragged): every
    (instance, γ) with every check, but the sparse instance (the impossible-token check only, at the
    largest γ: every call has a correction or a bonus to draw, and the check needs no repetition
    per γ) and no first_tokens on :data:`ONE_TOKEN_CALLS`."""
    ids = tuple(c.id for c in checks)
    out = []
    for i in instances:
        for g in gammas:
            if i == SPARSE:
                if g == max(gammas):
                    out.append(Block(i, g, checks=(IMPOSSIBLE_ID,)))
            elif i == ONE_TOKEN_CALLS:
                out.append(Block(i, g, checks=tuple(c for c in ids if c != "conformance.first_tokens")))
            else:
                out.append(Block(i, g))
    return out


class BlockRuns(Runs):
    """Runs of a block verifier (:class:`..runs.Runs`): each call drafts γ tokens from q along the
    chain (inverse CDF of the drafting stream, never a zero-mass token) and verifies them."""

    def setup(self):
        v, pair = self.sampler, self.pair
        q_tab = pair.draft.table
        self.q_list = q_tab.tolist()
        q_cdf = np.cumsum(q_tab, axis=1)
        q_cdf /= q_cdf[:, -1:]
        self.q_cdf = q_cdf.tolist()
        self.last = [int(np.flatnonzero(row)[-1]) for row in q_tab]  # never draft a zero-mass token
        self.p_rep = v.represent(pair.target.table, "target")
        self.q_rep = v.represent(q_tab, "draft")
        self._inputs_cache: dict = {}  # framework inputs per distinct (states, draft): BlockVerifier.block_inputs

    def prepare(self, s, context):
        gamma, V, S = self.gamma, self.pair.V, self.pair.n_states
        return draft_chain(self.q_cdf, self.last, V, S, s, self.draft_rng.random(gamma).tolist(), gamma)

    def invoke(self, prepared, rng):
        states, draft = prepared
        return self.sampler.invoke(*self.sampler.block_inputs(self.p_rep, self.q_rep, states, draft,
                                                              self._inputs_cache), rng)

    def read(self, raw):
        return tokens_of(raw, self.sampler.batched)

    def inputs(self, prepared, rng_state) -> dict:
        states, draft = prepared
        return {"p": rows_json(self.pair.target.table[states]),
                "q": rows_json(self.pair.draft.table[states[:self.gamma]]), "draft": [int(x) for x in draft],
                "rng_state": rng_state}

    def draft_of(self, prepared):
        return prepared[1]

    def needed(self, prepared, out) -> int:
        states, draft = prepared
        n = 0
        for i in range(min(len(out), self.gamma)):
            a, b = self.p_list[states[i]][draft[i]], self.q_list[states[i]][draft[i]]
            if 0.0 < a < b:
                n += 1
        return n

    def off_structure(self, prepared, out) -> bool:
        draft, tau = prepared[1], len(out) - 1
        return list(out[:tau]) != draft[:tau] or (tau < self.gamma and out[tau] == draft[tau])

    def zero_mass(self, prepared) -> float:
        states, draft = prepared
        p_seen, q_seen = self.sampler.seen(self.p_rep[states]), self.sampler.seen(self.q_rep[states[:-1]])
        return residual_zero_mass(p_seen[:-1], q_seen, draft)

    def context_of(self, prepared, s) -> str:
        return f"start state {s}, draft {prepared[1]}"


def residual_zero_mass(p_rows, q_rows, draft) -> float:
    """Σ over positions with p ≤ q at every token and p(x) < q(x) at the draft of the rejection
    probability 1 − p(x)/q(x) there (rows as the sampler sees them)."""
    mass = 0.0
    for i, x in enumerate(draft):
        p, q = p_rows[i], q_rows[i]
        if (p <= q).all() and 0 < p[x] < q[x]:
            mass += 1.0 - float(p[x]) / float(q[x])
    return mass


class BlockKind(Kind):
    name, title = "block", "block verifier"
    INSTANCES = ("markov1-V3-mix0.4", "markov1-V4-topk2", "iid-V4-strong", "iid-V3-disjoint", "iid-V3-equal",
                 "iid-V1", SPARSE)
    GAMMAS = (1, 3)
    standard_probes = True
    OPTION_DEFAULTS = {"adapter": "probs", "dtype": "float64", "batched": False, "framework": "numpy"}
    what, call_text = "sampler", "a block verifier fn(p, q, draft_tokens, rng)"

    def wrap(self, fn, *, name="", adapter="probs", dtype="float64", batched=False, framework="numpy"):
        if isinstance(fn, BlockVerifier):
            return fn
        return BlockVerifier(fn, adapter=adapter, dtype=dtype, batched=batched, framework=framework, name=name)

    def checks(self):
        return CHECKS

    def blocks(self, instances, gammas):
        return block_plan(self.checks(), instances, gammas)

    def runner(self, sampler, block, seed):
        pair = self.pair(block)
        return BlockRuns(sampler, pair, block.gamma, first_n(pair.V), seed, block.instance)

    def controls(self):
        from ..references import CONTROLS
        roles = {"accept-u≤ratio": ("support probes",), "unguarded-residual": ("support probes",),
                 "lossless:accept=p(x)": ("checks", "standard probes")}
        return [Control(c, f, d, roles.get(c, ("checks",)), applies=(lambda b: floor_shows(b.instance))
                        if c == "residual-clamped-1e-5" else None) for c, f, d in CONTROLS]

    def control_sampler(self, control, for_probes=False):
        return BlockVerifier(control.fn, name=control.name, dtype=self.sampler.dtype if for_probes else "float64")

    def probes(self, sampler):
        return probe_list(sampler)

    def probe_call(self, sampler, probe, rng):
        if probe.logits is not None:
            p_in, q_in = sampler.from_logits(probe.logits[0]), sampler.from_logits(probe.logits[1])
        else:
            p_in, q_in = sampler.represent(probe.p, "target"), sampler.represent(probe.q, "draft")
        out = sampler(p_in, q_in, list(probe.draft), rng)
        return [ProbeRequest(probe.p, probe.q, tuple(probe.draft), out)]

    def probe_rerun(self, probe) -> dict:
        if probe.logits is not None:
            return {"p": np.asarray(probe.logits[0], dtype=np.float64).tolist(),
                    "q": np.asarray(probe.logits[1], dtype=np.float64).tolist(), "draft": list(probe.draft),
                    "forced": probe.forced, "logits": True}
        return {"p": probe.p.tolist(), "q": probe.q.tolist(), "draft": list(probe.draft), "forced": probe.forced}

    def rerun_call(self, sampler, inputs, rng):
        conv = sampler.from_logits if inputs.get("logits") else None
        P = conv(inputs["p"]) if conv else sampler.represent(inputs["p"], "target")
        Q = conv(inputs["q"]) if conv else sampler.represent(inputs["q"], "draft")
        return sampler(P, Q, list(inputs["draft"]), rng)

    def layout(self, block_info=None) -> dict:
        return {}

    # --- the trial ---------------------------------------------------------------------------------
    def trial(self, gammas):
        from ..trial import trial
        return trial(self, min(gammas))

    def trial_arity(self):
        check_arity(self.sampler.fn, 4, "fn(p, q, draft_tokens, rng)",
                    "a block verifier takes (p, q, draft_tokens, rng) and returns the emitted tokens; decoding code "
                    "that drafts by itself is a decoding step (--kind step: make_step(target_lm, draft_lm, gamma, "
                    "rng) -> step(context)); a verifier of several drafts or a token tree is --kind multidraft; a "
                    "batched sampler in the serving layout (flattened drafts, cumulative offsets, output (B, max γ_b "
                    "+ 1)) is --kind ragged")

    def trial_call(self, sampler, pair, drng, rng, gamma):
        states, draft = draft_along(pair, drng, gamma)
        P, Q = sampler.represent(pair.target.table, "target"), sampler.represent(pair.draft.table, "draft")
        return [sampler(P[states], Q[states[:gamma]], draft, rng)], [gamma]

    def trial_point_mass(self, sampler, rng, gamma):
        p, q, draft = sanity_rows(g=gamma)
        return [sampler(sampler.represent(p, "target"), sampler.represent(q, "draft"), list(draft), rng)], \
            [SANITY_TOKEN]

    def trial_point_mass_message(self, wrong) -> str:
        return (f"on target rows that are a point mass at token {SANITY_TOKEN} (V = {SANITY_V}; the drafted token "
                f"{SANITY_DRAFT} has p = 0), {len(wrong)} of {SANITY_CALLS} calls emitted something else first (e.g. "
                f"{list(wrong[0][0])}); any lossless sampler emits {SANITY_TOKEN}. A sampler that reads probabilities "
                "as logits (or logits as probabilities) does this")

    def trial_first_tokens(self, sampler, pair, drng, rng):
        V, S = pair.V, pair.n_states
        P, Q = sampler.represent(pair.target.table, "target"), sampler.represent(pair.draft.table, "draft")
        x = int(drng.choice(V, p=pair.draft.table[0]))
        out = sampler(P[[0, x % S]], Q[[0]], [x], rng)
        return [out[0] if out else None]

    def trial_accepts(self, sampler, pair, drng, rng, gamma):
        rows = pair.target.table
        P, Q = sampler.represent(rows, "target"), sampler.represent(rows, "draft")
        V, S = pair.V, pair.n_states
        s, states, draft = 0, [0], []
        for _ in range(gamma):
            x = int(drng.choice(V, p=rows[s]))
            draft.append(x)
            s = (s * V + x) % S
            states.append(s)
        out = sampler(P[states], Q[states[:gamma]], draft, rng)
        return len(out) >= 2 and out[0] == draft[0]

    def accepts_gamma(self, gamma):
        return max(gamma, 2)

    def trial_describe(self, sampler, gamma, V) -> str:
        opts = sampler.options()
        b = "1, " if opts.get("batched") else ""
        kind = {"probs": "probabilities", "logprobs": "log-probabilities", "logits": "logits"}[opts["adapter"]]
        arr = "tensors" if opts.get("framework") == "torch" else "NumPy arrays"
        return (f"with {cli_flags(opts)} it receives p: target {kind} of shape ({b}{gamma + 1}, {V}), q: draft "
                f"{kind} of shape ({b}{gamma}, {V}), draft_tokens: ({b}{gamma},) integer ids, as {arr}, and rng: a "
                "numpy Generator")

    def option_choices(self):
        return adapter_choices()

    def arg_orders(self):
        return ("p", "q", "draft_tokens", "rng"), (0, 1, 2, 3)


def check_block_verifier(fn, *, adapter: str = "probs", dtype: str = "float64", batched: bool = False,
                         framework: str = "numpy", n: int = BlockKind.DEFAULT_N, gammas=BlockKind.GAMMAS,
                         instances=BlockKind.INSTANCES, seed: int = 0, alpha: float = 0.01, controls: bool = True,
                         control_n: int | None = None, probes: bool = True, progress: bool = False,
                         name: str | None = None, trial: bool = True) -> dict:
    """Test a block verifier ``fn(p, q, draft_tokens, rng) -> emitted tokens`` for losslessness
    and for being standard speculative sampling.

    fn may also be a :class:`~spectheory.conformance.adapters.BlockVerifier` (then ``adapter``,
    ``dtype``, ``batched`` and ``framework`` are taken from it). At most ``n`` independent runs
    per (instance, γ), fewer where every check is decided earlier (:mod:`..sequential`);
    ``controls``: also run the broken reference rules (at most ``control_n`` runs, default
    max(n // 4, 1000)) so every check shows it can fail; ``probes``: the forced-uniform boundary
    probes; ``trial``: the trial call (:mod:`..trial`), which raises
    :class:`~spectheory.conformance.trial.ConformanceUsageError` when the sampler cannot be run
    as configured. Returns a report dict (schema ``spectheory.report/1``, with
    ``report["verdicts"]``); print it with :func:`~spectheory.conformance.print_report`, save it
    with :func:`spectheory.judge.format.write_json`.
    """
    from ..driver import run
    kind = BlockKind(fn, name=name, adapter=adapter, dtype=dtype, batched=batched, framework=framework)
    return run(kind, n=n, gammas=gammas, instances=instances, seed=seed, alpha=alpha, controls=controls,
               control_n=control_n, probes=probes, progress=progress, trial=trial)
