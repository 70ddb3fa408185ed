"""The trial call: run the sampler a few times before any statistics, and stop with a usage
error (and a hint) when it cannot be run as configured — the same steps for every kind, each kind
making the calls in its own layout (the ``trial_*`` hooks of :class:`.kind.Kind`).

Checked, in order:

1. **arity**: the function accepts the arguments it will be called with (``fn(p, q,
   draft_tokens, rng)`` for a block verifier; ``make_step(target_lm, draft_lm, gamma, rng)``
   returning ``step(context)`` for a decoding step; ``fn(p, q, drafts, rng)`` or ``fn(p, q,
   tokens, parents, rng)`` for a multi-draft verifier; the serving layout's six or five);
2. **output**: on a few calls of a Markov instance it returns a block of 1..γ+1 integer ids in
   the vocabulary (not None, a dict, a float, a 2-D array without ``batched`` ...);
3. **representation**: on target rows that are a point mass (token 5 of V = 8; the drafted
   token 2 has p = 0) every call emits token 5 first, as any lossless sampler must. Reading
   probabilities as logits (softmax of rows that sum to 1) or logits as probabilities emits
   other tokens in most calls;
4. **first-token law**: the first tokens of 300 calls (requests) at γ = 1 from state 0 of the
   trial instance do not reject p(·|0) (chi-square at level 10⁻⁴): a sampler that survives the
   point mass under the wrong representation still draws from the wrong law.

When the configured options crash or return something that is not a block (1, 2) and another
combination of the adapter options (``batched``, ``framework``, ``adapter``; ``lm`` for decoding
steps; ``offsets`` and ``bonus`` in the serving layout) runs and passes (3), the run stops with
:class:`ConformanceUsageError` naming the options that work. When the configured options run but
fail (3), or fail (4) *grossly* (p < 10⁻¹²: what a representation mix-up gives; a lossy sampler's
moderate deviation is left to the checks), the other combination must also pass (4): a lossy
sampler that passes the point-mass case under another representation by accident is not turned
into a usage error. Arguments in another order that shapes tell apart are tried too (a sampler
that, so called, also verifies the drafts). When nothing passes: an invalid output is a usage
error too (the message says what was returned and what is expected); an exception inside the
sampler is a *crash*, reported by the checks with its location (file:line), not a usage error; a
failed representation check is left to the checks.
"""
from __future__ import annotations

import importlib.util
import inspect
import itertools
import time

import numpy as np

from .adapters import OUTPUT_CONTRACT, VerifierOutputError
from .runs import crash_location, describe

#: the point-mass case of the representation check
SANITY_V, SANITY_TOKEN, SANITY_DRAFT, SANITY_CALLS = 8, 5, 2, 12
TRIAL_INSTANCE = "markov1-V3-mix0.4"
#: calls of the trial that must accept a drafted token where p = q (the argument-order search)
ACCEPT_CALLS = 20


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


def guard(call, describe_input):
    """Run one trial call: (output or None, Result or None)."""
    try:
        return call(), None
    except VerifierOutputError as err:
        return None, Result("output", f"{err} ({describe_input()})")
    except Exception as err:  # noqa: BLE001
        loc = crash_location(err)
        return None, Result("exception", f"it raised {describe(err)} at {loc}", loc)


def sanity_rows(V=SANITY_V, k=SANITY_TOKEN, g=1):
    """Target rows that are a point mass at token ``k``, uniform draft rows, the drafted token 2 (p = 0)."""
    p = np.zeros((g + 1, V))
    p[:, k] = 1.0
    q = np.full((g, V), 1.0 / V)
    return p, q, [SANITY_DRAFT] * g


def draft_along(pair, drng, gamma: int, s: int = 0):
    """(states, drafted tokens) of γ tokens drafted from q along the chain from state ``s``."""
    V, S = pair.V, pair.n_states
    states, draft = [s], []
    for _ in range(gamma):
        x = int(drng.choice(V, p=pair.draft.table[s]))
        draft.append(x)
        s = (s * V + x) % S
        states.append(s)
    return states, draft


def run_trial(kind, sampler, gamma: int) -> Result:
    """Trial calls of ``sampler`` in ``kind``'s layout (see module docstring): three ordinary calls
    on the trial instance, then :data:`SANITY_CALLS` point-mass calls."""
    from .. import instances as inst
    pair = inst.get(TRIAL_INSTANCE)
    drng = np.random.Generator(np.random.PCG64(7))
    rng = np.random.Generator(np.random.PCG64(11))
    sampler.sources.own(drng, rng)
    calls, t0 = 0, time.perf_counter()
    first_bad, done, wrong = None, 0, []

    def attempts(n, call, what):
        """``n`` guarded calls: (output, None) or (None, a failure that ends the trial); an
        exception is kept (the first) and the next call made."""
        nonlocal calls, done, first_bad
        for _ in range(n):
            res, bad = guard(call, what)
            calls += 1
            if bad is not None and bad.kind == "exception":
                first_bad = first_bad or bad
                continue
            done += bad is None
            yield res, bad

    with sampler.sources.active("trial"):
        sampler.sources.current = rng
        for res, bad in attempts(3, lambda: kind.trial_call(sampler, pair, drng, rng, gamma),
                                 lambda: kind.trial_describe(sampler, gamma, pair.V)):
            if bad is not None:
                return bad
            for out, g in zip(*res):
                if not 1 <= len(out) <= g + 1 or min(out) < 0 or max(out) >= pair.V:
                    return Result("output", f"a call returned {list(out)}: {OUTPUT_CONTRACT}, 1..γ+1 = 1..{g + 1} "
                                            f"ids in [0, {pair.V}) ({kind.trial_describe(sampler, gamma, pair.V)})")
        for res, bad in attempts(SANITY_CALLS, lambda: kind.trial_point_mass(sampler, rng, gamma),
                                 lambda: kind.trial_describe(sampler, gamma, SANITY_V)):
            if bad is not None:
                return bad
            outs, expected = res
            if any(not o or o[0] != k for o, k in zip(outs, expected)):
                wrong.append(outs)
    if first_bad is not None:
        return never_or(first_bad, done, calls)
    seconds = (time.perf_counter() - t0) / max(calls, 1)
    if wrong:
        return Result("support", kind.trial_point_mass_message(wrong), calls=calls, seconds=seconds)
    return Result(calls=calls, seconds=seconds)


LAW_CALLS, LAW_LEVEL, LAW_GROSS = 300, 1e-4, 1e-12


def law_p(kind, sampler) -> float:
    """The chi-square p-value of the first tokens of :data:`LAW_CALLS` requests at γ = 1 from
    state 0 of the trial instance against p(·|0) (0 when a call raises or returns no valid
    first token)."""
    from .. import instances as inst
    from ..judge import stats
    pair = inst.get(TRIAL_INSTANCE)
    # plain constructors: this runs inside the sampler's routing block, where default_rng is routed
    drng, rng = np.random.Generator(np.random.PCG64(3)), np.random.Generator(np.random.PCG64(4))
    counts = np.zeros(pair.V)
    with sampler.sources.active("trial"):
        sampler.sources.current = rng
        while counts.sum() < LAW_CALLS:
            try:
                firsts = kind.trial_first_tokens(sampler, pair, drng, rng)
            except Exception:  # noqa: BLE001  (a crash here is reported by the runs)
                return 0.0
            for t in firsts:
                if t is None or not 0 <= t < pair.V:
                    return 0.0
                counts[t] += 1
    ev = stats.chisquare_gof("trial", counts, pair.target.table[0], alpha=LAW_LEVEL, tolerance_w=1.0)
    return float(ev.p_value)


def accepts_drafts(kind, sampler, gamma: int) -> bool:
    """Whether the sampler accepts a drafted token in one of :data:`ACCEPT_CALLS` calls where
    the draft's rows equal the target's. Alg. 1 accepts there with probability 1; a rule that
    accepts with probability a per call is missed with probability (1 − a)^20 (3·10⁻⁴ at a = ⅓,
    the accept-p(x) rule on three equally likely tokens); a sampler that ignores the drafts (a
    fresh draw from p) never accepts."""
    from .. import instances as inst
    pair = inst.get(TRIAL_INSTANCE)
    drng, rng = np.random.Generator(np.random.PCG64(13)), np.random.Generator(np.random.PCG64(17))
    with sampler.sources.active("trial"):
        sampler.sources.current = rng
        for _ in range(ACCEPT_CALLS):
            try:
                if kind.trial_accepts(sampler, pair, drng, rng, gamma):
                    return True
            except Exception:  # noqa: BLE001
                return False
    return False


def never_or(first_bad: Result, done: int, calls: int) -> Result:
    """After trial calls some of which raised: kind "never" when none completed (a usage error:
    the sampler cannot be run as called), else the first exception (a crash the runs report)."""
    if done == 0:
        return Result("never", f"none of its {calls} trial calls completed; the first: {first_bad.message}",
                      first_bad.location, calls=calls)
    return first_bad


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


def trial(kind, gamma: int) -> dict:
    """The trial of ``kind``'s sampler: raises :class:`ConformanceUsageError` or returns a
    summary (``result`` "ok"; "exception": a crash the run will report; "support" or "law": a
    failure no other options fix, left to the checks)."""
    sampler = kind.sampler
    kind.trial_arity()
    res = with_law(run_trial(kind, sampler, gamma), lambda: law_p(kind, sampler))
    orders = None
    spec = kind.arg_orders()
    if spec is not None:
        names, classes = spec

        def ordered(perm):
            v = sampler.with_options()
            v.arg_order = perm
            return v

        orders = Orders(names, classes, lambda perm: run_trial(kind, ordered(perm), gamma),
                        lambda perm: law_p(kind, ordered(perm)),
                        lambda perm: accepts_drafts(kind, ordered(perm), kind.accepts_gamma(gamma)))
    return settle(res, sampler.options(), kind.option_choices(),
                  lambda o: run_trial(kind, sampler.with_options(**o), gamma),
                  lambda o: law_p(kind, sampler.with_options(**o)), kind.call_text, kind.what, orders)
