"""The trial call: run the sampler a few times before any statistics, and stop with a usage
error (and a hint) when it cannot be run as configured.

Checked, in order:

1. **arity**: the function accepts the arguments it will be called with (``fn(p, q,
   draft_tokens, rng)`` for a block verifier; ``make_step(target_lm, draft_lm, gamma, rng)``
   returning ``step(context)`` for a decoding step; ``fn(p, q, drafts, rng)`` or ``fn(p, q,
   tokens, parents, rng)`` for a multi-draft verifier);
2. **output**: on a few calls of a Markov instance it returns a block of 1..γ+1 integer ids in
   the vocabulary (not None, a dict, a float, a 2-D array without ``batched`` ...);
3. **representation**: on target rows that are a point mass (token 5 of V = 8; the drafted
   token 2 has p = 0) every call emits token 5 first, as any lossless sampler must. Reading
   probabilities as logits (softmax of rows that sum to 1) or logits as probabilities emits
   other tokens in most calls;
4. **first-token law**: the first tokens of 300 calls at γ = 1 from state 0 of the trial
   instance do not reject p(·|0) (chi-square at level 10⁻⁴): a sampler that survives the point
   mass under the wrong representation still draws from the wrong law.

When the configured options crash or return something that is not a block (1, 2) and another
combination of the adapter options (``batched``, ``framework``, ``adapter``; ``lm`` for decoding
steps) runs and passes (3), the run stops with :class:`ConformanceUsageError` naming the options
that work. When the configured options run but fail (3), or fail (4) *grossly* (p < 10⁻¹²: what a
representation mix-up gives; a lossy sampler's moderate deviation is left to the checks), the
other combination must also pass (4): a lossy sampler that passes the point-mass case under
another representation by accident is not turned into a usage error. When no combination
passes: an invalid output is a usage error too (the message says what was returned and what
is expected); an exception inside the sampler is a *crash*, reported by the checks with its
location (file:line), not a usage error; a failed representation check is left to the checks.
"""
from __future__ import annotations

import importlib.util
import inspect
import itertools
import time

import numpy as np

from .adapters import OUTPUT_CONTRACT, VerifierOutputError
from .driver import crash_location, describe

#: the point-mass case of the representation check
SANITY_V, SANITY_TOKEN, SANITY_DRAFT, SANITY_CALLS = 8, 5, 2, 12
TRIAL_INSTANCE = "markov1-V3-mix0.4"


class ConformanceUsageError(ValueError):
    """The sampler cannot be run as configured: a usage error (exit code 2 on the command
    line). ``problem`` says what happened, ``hint`` what to change."""

    def __init__(self, problem: str, hint: str = ""):
        self.problem, self.hint = problem, hint
        super().__init__(problem + (f"\nhint: {hint}" if hint else ""))


def cli_flags(options: dict) -> str:
    """Command-line spelling of adapter options."""
    out = []
    for k, v in options.items():
        if k == "batched":
            out.append("--batched" if v else "--unbatched")
        else:
            out.append(f"--{k} {v}")
    return " ".join(out)


def py_kwargs(options: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in options.items())


def check_arity(fn, n_args: int, call: str, hint: str) -> None:
    """Refuse a callable that cannot take ``n_args`` positional arguments."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: let the trial call tell
        return
    try:
        sig.bind(*range(n_args))
    except TypeError as err:
        params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        raise ConformanceUsageError(
            f"{getattr(fn, '__qualname__', fn)!s}{sig} cannot be called as {call} ({err}; it takes "
            f"{len(params)} positional argument{'s' if len(params) != 1 else ''}, {n_args} are passed)",
            hint) from None


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


class Result:
    """What a set of trial calls found: ``kind`` is "ok", "exception", "output" or "support"."""

    def __init__(self, kind="ok", message="", location=None, calls=0, seconds=0.0):
        self.kind, self.message, self.location, self.calls, self.seconds = kind, message, location, calls, seconds

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def _guard(call, describe_input):
    """Run one trial call: (output or None, Result or None)."""
    try:
        return call(), None
    except VerifierOutputError as err:
        return None, Result("output", f"{err} ({describe_input()})")
    except Exception as err:  # noqa: BLE001
        loc = crash_location(err)
        return None, Result("exception", f"it raised {describe(err)} at {loc}", loc)


def _block_inputs(opts: dict, g: int, V: int, what: str = "p") -> str:
    b = "1, " if opts.get("batched") else ""
    kind = {"probs": "probabilities", "logprobs": "log-probabilities", "logits": "logits"}[opts.get("adapter", "probs")]
    arr = "tensors" if opts.get("framework") == "torch" else "NumPy arrays"
    return (f"with {cli_flags(opts)} it receives p: target {kind} of shape ({b}{g + 1}, {V}), q: draft {kind} "
            f"of shape ({b}{g}, {V}), draft_tokens: ({b}{g},) integer ids, as {arr}, and rng: a numpy Generator")


def _sanity_rows(V=SANITY_V, k=SANITY_TOKEN, g=1):
    p = np.zeros((g + 1, V))
    p[:, k] = 1.0
    q = np.full((g, V), 1.0 / V)
    return p, q, [SANITY_DRAFT] * g


def run_block_trial(verifier, gamma: int) -> Result:
    """Trial calls of a block verifier under its options (see module docstring)."""
    from .. import instances as inst
    pair = inst.get(TRIAL_INSTANCE)
    opts = verifier.options()
    V, S = pair.V, pair.n_states
    p_rep = verifier.represent(pair.target.table, "target")
    q_rep = verifier.represent(pair.draft.table, "draft")
    drng = np.random.default_rng(7)
    rng = np.random.default_rng(11)
    verifier.sources.own(drng, rng)
    calls, t0 = 0, time.perf_counter()
    first_bad, done = None, 0
    with verifier.sources.active("trial"):
        for _ in range(3):
            s, states, draft = 0, [0], []
            for _i in range(gamma):
                x = int(drng.choice(V, p=pair.draft.table[s]))
                draft.append(x)
                s = (s * V + x) % S
                states.append(s)
            out, bad = _guard(lambda: verifier(p_rep[states], q_rep[states[:gamma]], draft, rng),
                              lambda: _block_inputs(opts, gamma, V))
            calls += 1
            if bad is not None:
                if bad.kind != "exception":
                    return bad
                first_bad = first_bad or bad
                continue
            done += 1
            if not 1 <= len(out) <= gamma + 1 or min(out) < 0 or max(out) >= V:
                return Result("output", f"a call returned {list(out)}: {OUTPUT_CONTRACT}, 1..γ+1 = 1..{gamma + 1} "
                                        f"ids in [0, {V}) ({_block_inputs(opts, gamma, V)})")
        p, q, draft = _sanity_rows(g=gamma)
        p_in, q_in = verifier.represent(p, "target"), verifier.represent(q, "draft")
        wrong = []
        for _ in range(SANITY_CALLS):
            out, bad = _guard(lambda: verifier(p_in, q_in, list(draft), rng),
                              lambda: _block_inputs(opts, gamma, SANITY_V))
            calls += 1
            if bad is not None:
                if bad.kind != "exception":
                    return bad
                first_bad = first_bad or bad
                continue
            done += 1
            if not out or out[0] != SANITY_TOKEN:
                wrong.append(out)
    if first_bad is not None:
        return never_or(first_bad, done, calls)
    seconds = (time.perf_counter() - t0) / max(calls, 1)
    if wrong:
        return Result("support", f"on target rows that are a point mass at token {SANITY_TOKEN} (V = {SANITY_V}; the "
                                 f"drafted token {SANITY_DRAFT} has p = 0), {len(wrong)} of {SANITY_CALLS} calls "
                                 f"emitted something else first (e.g. {list(wrong[0])}); any lossless sampler emits "
                                 f"{SANITY_TOKEN}. A sampler that reads probabilities as logits (or logits as "
                                 "probabilities) does this", calls=calls, seconds=seconds)
    return Result(calls=calls, seconds=seconds)


ACCEPT_CALLS = 20


def accepts_drafts(verifier, gamma: int) -> bool:
    """Whether the verifier accepts a drafted token in one of :data:`ACCEPT_CALLS` calls where
    the draft's rows equal the target's. Alg. 1 accepts there with probability 1; a rule that
    accepts with probability a per call is missed with probability (1 − a)^20 (3·10⁻⁴ at a = ⅓,
    the accept-p(x) rule on three equally likely tokens); a sampler that ignores the drafts (a
    fresh draw from p) never accepts."""
    from .. import instances as inst
    pair = inst.get(TRIAL_INSTANCE)
    V, S = pair.V, pair.n_states
    rows = pair.target.table
    P, Q = verifier.represent(rows, "target"), verifier.represent(rows, "draft")
    drng, rng = np.random.Generator(np.random.PCG64(13)), np.random.Generator(np.random.PCG64(17))
    multi = hasattr(verifier, "call_drafts")
    with verifier.sources.active("trial"):
        for _ in range(ACCEPT_CALLS):
            try:
                if not multi:
                    s, states, draft = 0, [0], []
                    for _i in range(gamma):
                        x = int(drng.choice(V, p=rows[s]))
                        draft.append(x)
                        s = (s * V + x) % S
                        states.append(s)
                    out = verifier(P[states], Q[states[:gamma]], draft, rng)
                    ok = len(out) >= 2 and out[0] == draft[0]
                elif verifier.tree is None:
                    x = int(drng.choice(V, p=rows[0]))
                    K = verifier.K
                    out = verifier.call_drafts(np.broadcast_to(P[[0, x % S]], (K, 2, V)).copy(),
                                               np.broadcast_to(Q[[0]], (K, 1, V)).copy(), np.full((K, 1), x), rng)
                    ok = len(out) >= 2 and out[0] == x
                else:
                    from .multidraft import tree_parents, tree_size
                    M = tree_size(verifier.tree)
                    x = int(drng.choice(V, p=rows[0]))
                    out = verifier.call_tree(np.broadcast_to(P[0], (M + 1, V)).copy(),
                                             np.broadcast_to(Q[0], (M + 1, V)).copy(), np.full(M, x),
                                             tree_parents(verifier.tree), rng)
                    ok = len(out) >= 2 and out[0] == x
            except Exception:  # noqa: BLE001
                return False
            if ok:
                return True
    return False


def never_or(first_bad: Result, done: int, calls: int) -> Result:
    """After trial calls some of which raised: kind "never" when none completed (a usage error:
    the sampler cannot be run as called), else the first exception (a crash the runs report)."""
    if done == 0:
        return Result("never", f"none of its {calls} trial calls completed; the first: {first_bad.message}",
                      first_bad.location, calls=calls)
    return first_bad


LAW_CALLS, LAW_LEVEL, LAW_GROSS = 300, 1e-4, 1e-12


def first_token_law_p(call_one, pair) -> float:
    """``call_one(x, rng)`` runs one γ = 1 call from state 0 with drafted token x and returns the
    emitted tokens: the chi-square p-value of the first tokens of :data:`LAW_CALLS` calls against
    p(·|0) (0 when a call raises or returns no valid first token)."""
    from ..judge import stats
    # plain constructors: this runs inside the sampler's routing block, where default_rng is routed
    drng, rng = np.random.Generator(np.random.PCG64(3)), np.random.Generator(np.random.PCG64(4))
    counts = np.zeros(pair.V)
    for _ in range(LAW_CALLS):
        x = int(drng.choice(pair.V, p=pair.draft.table[0]))
        try:
            out = call_one(x, rng)
        except Exception:  # noqa: BLE001  (a crash here is reported by the runs)
            return 0.0
        if not out or not 0 <= out[0] < pair.V:
            return 0.0
        counts[out[0]] += 1
    ev = stats.chisquare_gof("trial", counts, pair.target.table[0], alpha=LAW_LEVEL, tolerance_w=1.0)
    return float(ev.p_value)


def block_law_p(verifier) -> float:
    from .. import instances as inst
    pair = inst.get(TRIAL_INSTANCE)
    V, S = pair.V, pair.n_states
    P, Q = verifier.represent(pair.target.table, "target"), verifier.represent(pair.draft.table, "draft")
    with verifier.sources.active("trial"):
        return first_token_law_p(lambda x, rng: verifier(P[[0, (0 * V + x) % S]], Q[[0]], [x], rng), pair)


def option_space(configured: dict, choices: dict) -> list[dict]:
    """Every other combination of the option values, fewest changes first."""
    keys = list(choices)
    out = []
    for values in itertools.product(*(choices[k] for k in keys)):
        cand = dict(zip(keys, values))
        if cand == {k: configured[k] for k in keys}:
            continue
        out.append({**configured, **cand})
    out.sort(key=lambda c: sum(c[k] != configured[k] for k in keys))
    return out


def find_options(configured: dict, choices: dict, attempt, law=None) -> dict | None:
    """The first other option combination for which ``attempt(options)`` passes (and
    ``law(options)`` is true, the first-token law test, when given)."""
    import warnings
    for cand in option_space(configured, choices):
        try:
            with warnings.catch_warnings():  # the sampler meets inputs it was not written for
                warnings.simplefilter("ignore")
                if attempt(cand).ok and (law is None or law(cand)):
                    return cand
        except ConformanceUsageError:
            continue
        except Exception:  # noqa: BLE001  (an alternative that cannot even be built)
            continue
    return None


def adapter_choices() -> dict:
    """Option values the trial tries (logits before log-probabilities: code that applies a
    softmax itself is usually written for logits)."""
    return {"batched": (False, True), "framework": ("numpy", "torch") if torch_available() else ("numpy",),
            "adapter": ("probs", "logits", "logprobs")}


def conclude(res: Result, configured: dict, working: dict | None, call: str, what: str = "sampler") -> dict:
    """Raise the usage error the trial calls for, or return the trial's summary."""
    if res.ok:
        return {"calls": res.calls, "seconds_per_call": res.seconds, "result": "ok"}
    changed = {k: v for k, v in (working or {}).items() if configured.get(k) != v}
    if working is not None:
        raise ConformanceUsageError(
            f"the {what} could not be run as configured ({cli_flags(configured)}): {res.message}",
            f"it runs correctly on the trial inputs with {cli_flags(changed)} (Python: {py_kwargs(changed)})")
    if res.kind == "output":
        raise ConformanceUsageError(f"the {what} returned something that is not a block: {res.message}",
                                    f"make {call} return the emitted token ids, e.g. `return accepted + "
                                    "[next_token]` (a list of ints, a 1-D array or tensor); if it returns more (tokens "
                                    "and a count, a dict), wrap it: `lambda *args: fn(*args)[0]`")
    return {"calls": res.calls, "result": res.kind, "message": res.message, "location": res.location}


LAW_MESSAGE = (f"the first tokens of {LAW_CALLS} calls at γ = 1 from state 0 of {TRIAL_INSTANCE} reject the "
               f"target's law (chi-square, level {LAW_LEVEL:g})")


def with_law(res: Result, law_p) -> Result:
    """A passing trial must also pass the first-token law test (else kind "law"; "law-gross"
    below :data:`LAW_GROSS`, the signature of a representation mix-up)."""
    if res.ok:
        pv = law_p()
        if pv < LAW_LEVEL:
            return Result("law-gross" if pv < LAW_GROSS else "law",
                          f"{LAW_MESSAGE} (p = {pv:.2g}): wrong representation of p and q, or a lossy sampler",
                          calls=res.calls, seconds=res.seconds)
    return res


class Orders:
    """The argument orders the trial tries when the configured one fails: ``names`` of the
    arguments as spectheory passes them, ``classes`` their shape classes (arguments of one class
    cannot be told apart by shape, so orders exchanging them are not tried), ``attempt(order)``
    and ``law_p(order)`` as for options, and ``accepts(order)``: the sampler so called verifies
    the drafts — where p = q it accepts a drafted token in some call (a sampler that, fed the
    wrong arguments, falls back to a fresh draw from p passes the law test but never accepts)."""

    def __init__(self, names, classes, attempt, law_p, accepts):
        self.names, self.classes, self.attempt, self.law_p = tuple(names), tuple(classes), attempt, law_p
        self.accepts = accepts

    def candidates(self):
        n = len(self.names)
        for perm in itertools.permutations(range(n)):
            if perm == tuple(range(n)):
                continue
            if any(perm[i] != i and self.classes[perm[i]] == self.classes[i] for i in range(n)):
                continue
            yield perm

    def find(self):
        import warnings
        for perm in self.candidates():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if self.attempt(perm).ok and self.law_p(perm) >= LAW_LEVEL and self.accepts(perm):
                        return perm
            except Exception:  # noqa: BLE001
                continue
        return None

    def spelled(self, perm) -> str:
        return ", ".join(self.names[i] for i in perm)


def settle(res: Result, configured: dict, choices: dict, attempt, law_p, call: str, what: str,
           orders: Orders | None = None) -> dict:
    """Search the other option combinations, then the other argument orders, when the trial
    failed (see module docstring); raise or summarise."""
    working = None
    if not res.ok:
        if res.kind in ("exception", "output", "never"):
            working = find_options(configured, choices, attempt)
        elif res.kind in ("support", "law-gross"):
            working = find_options(configured, choices, attempt, lambda o: law_p(o) >= LAW_LEVEL)
        if working is None and orders is not None and res.kind in ("exception", "output", "never", "support",
                                                                   "law-gross"):
            perm = orders.find()
            if perm is not None:
                expected = ", ".join(orders.names)
                raise ConformanceUsageError(
                    f"the {what} takes its arguments in another order: called as {call} it "
                    + ("never completes a call" if res.kind == "never" else f"fails the trial ({res.message})")
                    + f"; it runs correctly on the trial inputs when called as fn({orders.spelled(perm)})",
                    f"spectheory calls fn({expected}): reorder the parameters, or pass a wrapper "
                    f"`lambda {expected}: fn({orders.spelled(perm)})`")
        if working is None and res.kind == "never":
            raise ConformanceUsageError(
                f"the {what} never completed a call as {call}: {res.message}",
                f"{SIGNATURES.get(what, 'see docs/conformance.md for the expected signature; ')}check the "
                "parameters' order and what each holds")
        if working is None and res.kind not in ("exception", "output"):
            return {"calls": res.calls, "result": res.kind, "message": res.message}
    return conclude(res, configured, working, call, what=what)


#: the expected signature, said in the "never completed a call" hint
SIGNATURES = {
    "sampler": "spectheory calls fn(p, q, draft_tokens, rng): p the target's (γ+1, V) rows at the drafted positions and the bonus "
               "position, q the draft's (γ, V) rows, draft_tokens the γ drafted ids, rng a numpy Generator; it "
               "returns the emitted ids (accepted prefix + one token); ",
    "verifier": "spectheory calls fn(p, q, drafts, rng) for K drafts (p (K, γ+1, V), q (K, γ, V), drafts (K, γ)) or fn(p, q, tokens, "
                "parents, rng) for a tree (p, q (M+1, V), tokens and parents (M,)); ",
    "decoding step": "spectheory calls make_step(target_lm, draft_lm, gamma, rng) returning step(context) -> emitted ids; ",
    "ragged sampler": "spectheory calls fn(draft_token_ids (T,), cu_num_draft_tokens (B,), draft_probs (T, V), "
                      "target_probs (T, V), bonus_token_ids (B,), rng) (--bonus inside: no bonus_token_ids, "
                      "target_probs (T + B, V)) and expects output_token_ids (B, max γ_b + 1) padded with -1; ",
}


def trial_block_verifier(verifier, gamma: int) -> dict:
    """The trial of a block verifier: raises :class:`ConformanceUsageError` or returns a
    summary (``result`` "ok"; "exception": a crash the run will report; "support" or "law": a
    failure no other options fix, left to the checks)."""
    check_arity(verifier.fn, 4, "fn(p, q, draft_tokens, rng)",
                "a block verifier takes (p, q, draft_tokens, rng) and returns the emitted tokens; decoding code "
                "that drafts by itself is a decoding step (--kind step: make_step(target_lm, draft_lm, gamma, "
                "rng) -> step(context)); a verifier of several drafts or a token tree is --kind multidraft; a batched "
                "sampler in the serving layout (flattened drafts, cumulative offsets, output (B, max γ_b + 1)) is "
                "--kind ragged")
    res = with_law(run_block_trial(verifier, gamma), lambda: block_law_p(verifier))

    def ordered(perm):
        v = verifier.with_options()
        v.arg_order = perm
        return v

    orders = Orders(("p", "q", "draft_tokens", "rng"), (0, 1, 2, 3),
                    lambda perm: run_block_trial(ordered(perm), gamma), lambda perm: block_law_p(ordered(perm)),
                    lambda perm: accepts_drafts(ordered(perm), max(gamma, 2)))
    return settle(res, verifier.options(), adapter_choices(),
                  lambda o: run_block_trial(verifier.with_options(**o), gamma),
                  lambda o: block_law_p(verifier.with_options(**o)),
                  "a block verifier fn(p, q, draft_tokens, rng)", "sampler", orders)


# --- decoding steps --------------------------------------------------------------------------

def run_step_trial(make_step, gamma: int, lm: str, dtype: str, sources) -> Result:
    from spectheory.pairs import pair_from_tables

    from .. import instances as inst

    from .fake_lm import fake_lm
    rng = np.random.default_rng(11)
    sources.current = rng
    sources.own(rng)
    calls, t0 = 0, time.perf_counter()
    point = np.zeros(SANITY_V)
    point[SANITY_TOKEN] = 1.0
    cases = [(inst.get(TRIAL_INSTANCE), 3, False), (pair_from_tables(point, np.full(SANITY_V, 1.0 / SANITY_V)),
                                                    SANITY_CALLS, True)]
    wrong = []
    first_bad, done = None, 0
    with sources.active("trial"):
        for pair, n_calls, sanity in cases:
            tl, dl = fake_lm(pair.target, lm=lm, dtype=dtype), fake_lm(pair.draft, lm=lm, dtype=dtype)
            step, bad = _guard(lambda: make_step(tl, dl, gamma, rng), lambda: f"--lm {lm}")
            if bad is not None:
                if bad.kind != "exception":
                    return bad
                return never_or(Result(bad.kind, "make_step(target_lm, draft_lm, gamma, rng) " + bad.message,
                                       bad.location), 0, calls)
            if not callable(step):
                return Result("output", f"make_step returned {type(step).__name__}, not a function step(context) -> "
                                        "tokens")
            context = [0] * max(pair.target.order, 1)
            for _ in range(n_calls):
                from .adapters import tokens_of
                out, bad = _guard(lambda: tokens_of(step(list(context)), batched=True),
                                  lambda: f"with --lm {lm} the step gets a list of token ids and the fake LMs are "
                                          + ("callables lm(contexts) -> (B, V) logits" if lm == "callable" else
                                             "torch modules: lm(input_ids).logits of shape (B, T, V)"))
                calls += 1
                if bad is not None:
                    if bad.kind != "exception":
                        return bad
                    first_bad = first_bad or bad
                    continue
                done += 1
                if not 1 <= len(out) <= gamma + 1 or min(out) < 0 or max(out) >= pair.V:
                    return Result("output", f"a step returned {list(out)}: {OUTPUT_CONTRACT}, 1..γ+1 = 1..{gamma + 1} "
                                            f"ids in [0, {pair.V})")
                if sanity and any(t != SANITY_TOKEN for t in out):
                    wrong.append(out)
                context.extend(out)
    if first_bad is not None:
        return never_or(first_bad, done, calls)
    seconds = (time.perf_counter() - t0) / max(calls, 1)
    if wrong:
        return Result("support", f"with a target that is a point mass at token {SANITY_TOKEN}, {len(wrong)} of "
                                 f"{SANITY_CALLS} steps emitted other tokens (e.g. {list(wrong[0])})", calls=calls,
                      seconds=seconds)
    return Result(calls=calls, seconds=seconds)


def step_law_p(make_step, lm, dtype, sources) -> float:
    from .. import instances as inst

    from .adapters import tokens_of
    from .fake_lm import fake_lm
    pair = inst.get(TRIAL_INSTANCE)
    rng0 = np.random.default_rng(5)
    sources.own(rng0)
    sources.current = rng0
    with sources.active("trial"):
        step = make_step(fake_lm(pair.target, lm=lm, dtype=dtype), fake_lm(pair.draft, lm=lm, dtype=dtype), 1, rng0)
        prefix = [0] * max(pair.target.order, 1)
        return first_token_law_p(lambda x, rng: tokens_of(step(list(prefix)), batched=True), pair)


def trial_decoding_step(make_step, gamma: int, lm: str, dtype: str, sources) -> dict:
    check_arity(make_step, 4, "make_step(target_lm, draft_lm, gamma, rng)",
                "a decoding step is given as make_step(target_lm, draft_lm, gamma, rng) returning step(context) -> "
                "emitted tokens; a function fn(p, q, draft_tokens, rng) is a block verifier (--kind block)")
    res = with_law(run_step_trial(make_step, gamma, lm, dtype, sources),
                   lambda: step_law_p(make_step, lm, dtype, sources))
    choices = {"lm": ("callable", "torch") if torch_available() else ("callable",)}
    return settle(res, {"lm": lm}, choices, lambda o: run_step_trial(make_step, gamma, o["lm"], dtype, sources),
                  lambda o: step_law_p(make_step, o["lm"], dtype, sources), "a decoding step's step(context)",
                  "decoding step")


# --- multi-draft and tree verifiers ---------------------------------------------------------------

def _multi_inputs(verifier, g: int, V: int) -> str:
    opts = verifier.options()
    b = "1, " if opts.get("batched") else ""
    arr = "tensors" if opts.get("framework") == "torch" else "NumPy arrays"
    if verifier.tree is None:
        K = verifier.K
        return (f"with {cli_flags(opts)} it receives p of shape ({b}{K}, {g + 1}, {V}), q ({b}{K}, {g}, {V}), "
                f"drafts ({b}{K}, {g}) integer ids, as {arr}, and rng: a numpy Generator")
    from .multidraft import tree_size
    M = tree_size(verifier.tree)
    return (f"with {cli_flags(opts)} it receives p of shape ({b}{M + 1}, {V}), q ({b}{M + 1}, {V}), tokens "
            f"({b}{M},) and parents ({b}{M},) integer arrays, as {arr}, and rng: a numpy Generator")


def run_multidraft_trial(verifier, gamma: int) -> Result:
    from .. import instances as inst

    from .multidraft import MultiRunner, tree_parents, tree_size
    pair = inst.get(TRIAL_INSTANCE)
    runner = MultiRunner(verifier, pair, gamma, 1, 7, "trial")
    g = runner.gamma
    rng = np.random.default_rng(11)
    runner.verifier_rng = rng
    verifier.sources.own(rng)
    calls, t0, wrong = 0, time.perf_counter(), []
    first_bad, done = None, 0
    with verifier.sources.active("trial"):
        for _ in range(3):
            res, bad = _guard(lambda: runner._call(0), lambda: _multi_inputs(verifier, g, pair.V))
            calls += 1
            if bad is not None:
                if bad.kind != "exception":
                    return bad
                first_bad = first_bad or bad
                continue
            done += 1
            out = res[0]
            if not 1 <= len(out) <= g + 1 or min(out) < 0 or max(out) >= pair.V:
                return Result("output", f"a call returned {list(out)}: {OUTPUT_CONTRACT}, 1..{g + 1} ids in "
                                        f"[0, {pair.V}) ({_multi_inputs(verifier, g, pair.V)})")
        p1, q1, _ = _sanity_rows(g=1)
        p_row, q_row = verifier.represent(p1[:1], "target")[0], verifier.represent(q1, "draft")[0]
        for _ in range(SANITY_CALLS):
            if verifier.tree is None:
                K = verifier.K
                p = np.broadcast_to(p_row, (K, g + 1, SANITY_V)).copy()
                q = np.broadcast_to(q_row, (K, g, SANITY_V)).copy()
                call = (lambda: verifier.call_drafts(p, q, np.full((K, g), SANITY_DRAFT), rng))
            else:
                M = tree_size(verifier.tree)
                p = np.broadcast_to(p_row, (M + 1, SANITY_V)).copy()
                q = np.broadcast_to(q_row, (M + 1, SANITY_V)).copy()
                call = (lambda: verifier.call_tree(p, q, np.full(M, SANITY_DRAFT), tree_parents(verifier.tree), rng))
            out, bad = _guard(call, lambda: _multi_inputs(verifier, g, SANITY_V))
            calls += 1
            if bad is not None:
                if bad.kind != "exception":
                    return bad
                first_bad = first_bad or bad
                continue
            done += 1
            if not out or out[0] != SANITY_TOKEN:
                wrong.append(out)
    if first_bad is not None:
        return never_or(first_bad, done, calls)
    seconds = (time.perf_counter() - t0) / max(calls, 1)
    if wrong:
        return Result("support", f"on target rows that are a point mass at token {SANITY_TOKEN} (every drafted "
                                 f"token {SANITY_DRAFT} has p = 0), {len(wrong)} of {SANITY_CALLS} calls emitted "
                                 f"something else first (e.g. {list(wrong[0])}); any lossless verifier emits "
                                 f"{SANITY_TOKEN}", calls=calls, seconds=seconds)
    return Result(calls=calls, seconds=seconds)


def multidraft_law_p(verifier) -> float:
    from .. import instances as inst

    from .multidraft import MultiRunner
    pair = inst.get(TRIAL_INSTANCE)
    runner = MultiRunner(verifier, pair, 1, 1, 9, "trial")
    with verifier.sources.active("trial"):
        return first_token_law_p(lambda x, rng: runner._call(0)[0], pair)


def trial_multidraft(verifier, gamma: int) -> dict:
    if verifier.tree is None:
        check_arity(verifier.fn, 4, "fn(p, q, drafts, rng)",
                    "a verifier of K independent drafts takes (p (K, γ+1, V), q (K, γ, V), drafts (K, γ), rng); a "
                    "tree verifier takes (p, q, tokens, parents, rng): pass tree=(b1, b2, ...) (--tree 2,2)")
    else:
        check_arity(verifier.fn, 5, "fn(p, q, tokens, parents, rng)",
                    "a tree verifier takes (p (M+1, V), q (M+1, V), tokens (M,), parents (M,), rng); a verifier of "
                    "K independent drafts takes (p, q, drafts, rng): leave tree out (--K 2)")
    res = with_law(run_multidraft_trial(verifier, gamma), lambda: multidraft_law_p(verifier))

    def ordered(perm):
        v = verifier.with_options()
        v.arg_order = perm
        return v

    names, classes = (("p", "q", "drafts", "rng"), (0, 1, 2, 3)) if verifier.tree is None else \
        (("p", "q", "tokens", "parents", "rng"), (0, 0, 1, 1, 2))  # p, q and tokens, parents: same shapes
    orders = Orders(names, classes, lambda perm: run_multidraft_trial(ordered(perm), gamma),
                    lambda perm: multidraft_law_p(ordered(perm)), lambda perm: accepts_drafts(ordered(perm), gamma))
    return settle(res, verifier.options(), adapter_choices(),
                  lambda o: run_multidraft_trial(verifier.with_options(**o), gamma),
                  lambda o: multidraft_law_p(verifier.with_options(**o)),
                  "a multi-draft verifier fn(p, q, drafts, rng)" if verifier.tree is None
                  else "a tree verifier fn(p, q, tokens, parents, rng)", "verifier", orders)


# --- batched samplers in the serving layout (ragged draft lengths) --------------------------------

#: the ragged trial batch: draft lengths, and the point-mass token of each request
RAGGED_TRIAL_GAMMAS, RAGGED_TRIAL_TOKENS = (1, 0, 2), (5, 3, 6)


def _ragged_inputs(sampler, gammas, V: int) -> str:
    opts = sampler.options()
    T, B = sum(gammas), len(gammas)
    kind = {"probs": "probabilities", "logprobs": "log-probabilities", "logits": "logits"}[opts["adapter"]]
    arr = "tensors" if opts["framework"] == "torch" else "NumPy arrays"
    off = "cu_num_draft_tokens" if opts["offsets"] == "cu" else "num_draft_tokens"
    tgt = f"({T}, {V})" if opts["bonus"] == "given" else f"({T + B}, {V})"
    return (f"with {cli_flags(opts)} it receives draft_token_ids ({T},), {off} ({B},), draft {kind} ({T}, {V}), "
            f"target {kind} {tgt}" + (f", bonus_token_ids ({B},)" if opts["bonus"] == "given" else "")
            + f" as {arr}, and rng: a numpy Generator (γ_b = {list(gammas)})")


def run_ragged_trial(sampler) -> Result:
    """Trial calls of a ragged sampler (:mod:`.ragged`): three batches of requests with γ_b =
    (1, 0, 2) drafted on the trial instance (a valid (B, W) output), then batches where request
    b's target rows are a point mass at its own token (5, 3, 6 of V = 8) and the drafted token 2
    has p = 0: every request must emit its own token first — what a sampler reading another
    request's rows (the offsets misread) or the wrong representation does not do."""
    from .. import instances as inst
    from .ragged import Request
    pair = inst.get(TRIAL_INSTANCE)
    V, S = pair.V, pair.n_states
    drng = np.random.Generator(np.random.PCG64(7))
    rng = np.random.Generator(np.random.PCG64(11))
    sampler.sources.own(drng, rng)
    calls, t0, first_bad, done, wrong = 0, time.perf_counter(), None, 0, []
    gs = RAGGED_TRIAL_GAMMAS
    with sampler.sources.active("trial"):
        for _ in range(3):
            reqs = []
            for g in gs:
                s, states, draft = 0, [0], []
                for _i in range(g):
                    x = int(drng.choice(V, p=pair.draft.table[s]))
                    draft.append(x)
                    s = (s * V + x) % S
                    states.append(s)
                bonus = int(drng.choice(V, p=pair.target.table[s])) if sampler.bonus == "given" else None
                reqs.append(Request(pair.target.table[states], pair.draft.table[states[:g]], draft, bonus))
            out, bad = _guard(lambda: sampler.call_batch(reqs, rng), lambda: _ragged_inputs(sampler, gs, V))
            calls += 1
            if bad is not None:
                if bad.kind != "exception":
                    return bad
                first_bad = first_bad or bad
                continue
            done += 1
        reqs = []
        for g, k in zip(gs, RAGGED_TRIAL_TOKENS):
            p = np.zeros((g + 1, SANITY_V))
            p[:, k] = 1.0
            reqs.append(Request(p, np.full((g, SANITY_V), 1.0 / SANITY_V), [SANITY_DRAFT] * g,
                                k if sampler.bonus == "given" else None))
        for _ in range(SANITY_CALLS):
            out, bad = _guard(lambda: sampler.call_batch(reqs, rng), lambda: _ragged_inputs(sampler, gs, SANITY_V))
            calls += 1
            if bad is not None:
                if bad.kind != "exception":
                    return bad
                first_bad = first_bad or bad
                continue
            done += 1
            if any(o[0] != k for o, k in zip(out, RAGGED_TRIAL_TOKENS)):
                wrong.append(out)
    if first_bad is not None:
        return never_or(first_bad, done, calls)
    seconds = (time.perf_counter() - t0) / max(calls, 1)
    if wrong:
        return Result("support", f"on a batch of requests with γ_b = {list(gs)} whose target rows are point masses at "
                                 f"tokens {list(RAGGED_TRIAL_TOKENS)} (V = {SANITY_V}; every drafted token "
                                 f"{SANITY_DRAFT} has p = 0), {len(wrong)} of {SANITY_CALLS} calls emitted other "
                                 f"first tokens (e.g. {[list(o) for o in wrong[0]]}); any lossless sampler emits each "
                                 "request's own token. A sampler that reads another request's rows (offsets misread) "
                                 "or probabilities as logits does this", calls=calls, seconds=seconds)
    return Result(calls=calls, seconds=seconds)


def ragged_law_p(sampler) -> float:
    """The first-token law test of :func:`first_token_law_p` on batches: 10 calls of 30 requests,
    γ_b = 1 from state 0."""
    from ..judge import stats
    from .. import instances as inst
    from .ragged import Request
    pair = inst.get(TRIAL_INSTANCE)
    V, S = pair.V, pair.n_states
    drng, rng = np.random.Generator(np.random.PCG64(3)), np.random.Generator(np.random.PCG64(4))
    counts = np.zeros(V)
    with sampler.sources.active("trial"):
        for _ in range(LAW_CALLS // 30):
            reqs = []
            for _b in range(30):
                x = int(drng.choice(V, p=pair.draft.table[0]))
                st = [0, (0 * V + x) % S]
                bonus = int(drng.choice(V, p=pair.target.table[st[1]])) if sampler.bonus == "given" else None
                reqs.append(Request(pair.target.table[st], pair.draft.table[st[:1]], [x], bonus))
            try:
                outs = sampler.call_batch(reqs, rng)
            except Exception:  # noqa: BLE001  (a crash here is reported by the runs)
                return 0.0
            for o in outs:
                counts[o[0]] += 1
    ev = stats.chisquare_gof("trial", counts, pair.target.table[0], alpha=LAW_LEVEL, tolerance_w=1.0)
    return float(ev.p_value)


def trial_ragged(sampler) -> dict:
    """The trial of a ragged sampler: raises :class:`ConformanceUsageError` (a signature that does
    not fit the bonus layout, options that do not run) or returns a summary as
    :func:`trial_block_verifier` does."""
    from .ragged import BONUS, CALL_GIVEN, CALL_INSIDE, OFFSETS
    other = "inside" if sampler.bonus == "given" else "given"
    n_other = 5 if sampler.bonus == "given" else 6
    what = ("target_probs (T + B, V) with each request's bonus row, the bonus drawn by the sampler"
            if other == "inside" else "target_probs (T, V) and bonus_token_ids (B,), the bonus given")
    try:
        check_arity(sampler.fn, sampler.n_args, sampler.call,
                    SIGNATURES["ragged sampler"] + "a block verifier fn(p, q, draft_tokens, rng) is --kind block")
    except ConformanceUsageError as err:
        try:
            check_arity(sampler.fn, n_other, CALL_INSIDE if other == "inside" else CALL_GIVEN, "")
        except ConformanceUsageError:
            raise err from None
        raise ConformanceUsageError(err.problem, f"it takes {n_other} arguments: the layout with {what} — run with "
                                                 f"--bonus {other} (Python: bonus={other!r})") from None
    res = with_law(run_ragged_trial(sampler), lambda: ragged_law_p(sampler))
    choices = {"framework": ("numpy", "torch") if torch_available() else ("numpy",),
               "adapter": ("probs", "logits", "logprobs"), "offsets": OFFSETS, "bonus": BONUS}
    return settle(res, sampler.options(), choices, lambda o: run_ragged_trial(sampler.with_options(**o)),
                  lambda o: ragged_law_p(sampler.with_options(**o)), sampler.call, "ragged sampler")
