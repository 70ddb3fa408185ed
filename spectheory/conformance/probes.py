"""Boundary probes: one call of the sampler with its random source forced to an extreme, on tiny
instances built to expose the classic float failures of rejection samplers — the same probes for
every kind, each kind laying a probe out as one call of its own layout
(:meth:`.kind.Kind.probe_call`: one block, K equal drafts, a tree whose every node carries the
probe's token, a batch of requests).

Forced values: 0, the largest float below 1 in the sampler's dtype ("1−ulp"), and an exact ratio
tie u = p(x)/q(x). Instances: a drafted token with p = 0 that the draft allows (u = 0 must not
accept it: ``u ≤ ratio`` does; an inverse CDF searched with ``side="left"`` returns it as the
correction), disjoint supports, a one-token vocabulary, p ≥ q at the drafted token (u = 1−ulp must
accept), and p = q in exact arithmetic but not after the softmax in the sampler's dtype, with p ≤ q
at every token after rounding (a rejection at u = 1−ulp meets a residual of zero mass: it must not
crash, return NaN or emit a token with p = 0) — on rows where every token is possible and on
**rows with restricted support**, token 0 masked (p = q = 0 there), so that a NaN residual that
falls back to token 0 emits an impossible token.

Each probe call is graded on its **output**, request by request: **support** (any lossless
sampler: no crash, a block of 1..γ+1 valid ids, every token in the support of the target row it is
drawn from) and, for the layouts of Alg. 1, **standard** (the drafted prefix, the rejection or
acceptance the probe requires, the one possible output). A call that crashed or returned an
invalid block fails both: it is never a pass.

A probe is **applied** only if its forced values decided every step of the call
(:func:`accounting`): the call's acceptance decisions that needed a random value — at a tested
draft with 0 < p(x) < q(x); a decision at p(x) = 0 (reject) or p(x) ≥ q(x) (accept) needs none,
so a sampler that makes it without a draw is graded on its output — were matched by as many
uniforms from the forced source, and every last token whose law has two or more possible tokens by
one value more; the call drew at least one value from the forced source; no draw escaped during the
call; the statistical runs did not show the sampler reusing uniforms across calls; no compiled code
that bypasses the routing was found. Otherwise both
rows are ``info`` ("not applied", with the reason), never a pass; a violation found anyway (a p = 0
token emitted, a crash) still fails.

Each forced value is in the range of the transform it feeds (:data:`.forced.TRANSFORMS`); each
probe says which transform it targets (:attr:`Probe.targets`) and the event it stands for, with its
probability (:meth:`Probe.event_of`): that event decides the failure's kind (:mod:`.severity`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..judge import stats
from .adapters import VerifierOutputError
from .forced import ForcedSourceUnsupported, ForcedUniforms, extreme_probability


@dataclass(frozen=True)
class Probe:
    name: str
    p: np.ndarray          # (γ+1, V) exact target rows
    q: np.ndarray          # (γ, V) exact draft rows
    draft: tuple
    forced: object         # "zero", "max" or a float
    must_accept: int = 0   # τ must be ≥ this
    must_reject: bool = False
    exact_output: tuple | None = None
    logits: tuple | None = field(default=None)  # (p logits, q logits) fed instead of the rows
    what: str = ""
    targets: str = ""      # the transform whose boundary the forced value probes
    event: str = ""        # the real event this stands for, with its probability (zero-mass probes)
    probability: float | None = None  # of that event (zero-mass probes)
    family: str = ""       # what kind of boundary: one bug failing several probes of a family is one bug

    def event_of(self, dtype: str) -> tuple[str, float]:
        """(the event the forced value stands for, its probability)."""
        if self.event:
            return self.event, self.probability
        return event_of(self.forced, dtype), forced_probability(self.forced, dtype)

    def at_gamma(self, gamma: int) -> "Probe":
        """The probe with ``gamma`` drafted positions: its first row and drafted token at every
        position, its last row as the bonus row (multi-draft and tree layouts)."""
        g0 = len(self.draft)
        if gamma == g0:
            return self
        p = np.vstack([np.repeat(self.p[:1], gamma, axis=0), self.p[-1:]])
        q = np.repeat(self.q[:1], gamma, axis=0)
        logits = None
        if self.logits is not None:
            lp, lq = np.asarray(self.logits[0]), np.asarray(self.logits[1])
            logits = (np.vstack([np.repeat(lp[:1], gamma, axis=0), lp[-1:]]), np.repeat(lq[:1], gamma, axis=0))
        exact = (self.exact_output[0],) * (gamma + 1) if self.exact_output is not None else None
        return replace(self, p=p, q=q, draft=(self.draft[0],) * gamma, logits=logits, exact_output=exact,
                       must_accept=gamma if self.must_accept else 0)


def forced_probability(forced, dtype: str = "float64") -> float:
    if forced in ("zero", "max"):
        return extreme_probability(forced, dtype)
    return 2.0 ** -53


def event_of(forced, dtype: str = "float64") -> str:
    """The event a forced uniform stands for and its probability per draw in ``dtype``."""
    from .severity import extreme_event
    if forced in ("zero", "max"):
        return extreme_event(forced, dtype)
    return f"a uniform equal to the ratio {forced} exactly: probability 2^-53 ≈ 1.1e-16 per float64 draw"


ACCEPT_TARGET = "the acceptance test u < p(x)/q(x) (uniform draws)"
RESIDUAL_TARGET = "the inverse CDF (or race) of the correction/bonus draw"


def _rows(*rows):
    return np.array(rows, dtype=np.float64)


P0 = _rows([0.0, 0.5, 0.5], [0.5, 0.5, 0.0])
Q0 = _rows([0.5, 0.25, 0.25])
DISJ_P = _rows([0.5, 0.5, 0.0], [0.5, 0.5, 0.0])
DISJ_Q = _rows([0.0, 0.0, 1.0])


def base_probes(gamma_one_token: int = 2) -> list[Probe]:
    g = gamma_one_token
    return [
        Probe("p=0 drafted token, u=0", P0, Q0, (0,), "zero", must_reject=True, family="u=0",
              targets=ACCEPT_TARGET + " at ratio 0: u ≤ ratio accepts",
              what="token 0 has p = 0 and q = 0.5: u = 0 must reject it (u < 0 is false) and the "
                   "correction from norm(max(p−q,0)) = (0, ½, ½) must not be token 0"),
        Probe("p=0 drafted token, u=1−ulp", P0, Q0, (0,), "max", must_reject=True, family="u=1−ulp",
              targets=RESIDUAL_TARGET + " at its top end",
              what="reject token 0; the correction at u = 1−ulp must be a valid id in {1, 2}"),
        Probe("disjoint supports, u=0", DISJ_P, DISJ_Q, (2,), "zero", must_reject=True, family="u=0",
              targets=ACCEPT_TARGET + " at ratio 0 and " + RESIDUAL_TARGET + " at u = 0",
              what="q drafts token 2 where p = 0: always rejected, correction from p"),
        Probe("disjoint supports, u=1−ulp", DISJ_P, DISJ_Q, (2,), "max", must_reject=True, family="u=1−ulp",
              targets=RESIDUAL_TARGET + " at its top end (the last token has p = 0)",
              what="as above at the other extreme"),
        Probe("one-token vocabulary, u=0", np.ones((g + 1, 1)), np.ones((g, 1)), (0,) * g, "zero", family="u=0",
              exact_output=(0,) * (g + 1), targets=ACCEPT_TARGET + " at ratio 1, u = 0",
              what="V = 1: every draft accepted, bonus 0"),
        Probe("one-token vocabulary, u=1−ulp", np.ones((g + 1, 1)), np.ones((g, 1)), (0,) * g, "max",
              family="u=1−ulp", exact_output=(0,) * (g + 1), targets=ACCEPT_TARGET + " at ratio 1, u = 1−ulp",
              what="V = 1 at u = 1−ulp: still all accepted (u < 1 = p/q)"),
        Probe("p≥q at the draft, u=1−ulp", _rows([0.5, 0.25, 0.25], [0.5, 0.5, 0.0]),
              _rows([0.25, 0.25, 0.5]), (0,), "max", must_accept=1, family="u=1−ulp",
              targets=ACCEPT_TARGET + " at ratio 2 (clipped to 1), and the bonus draw at u = 1−ulp",
              what="ratio p/q = 2: u = 1−ulp < 1 must accept; the bonus at u = 1−ulp must be a "
                   "valid id and not token 2 (p = 0)"),
        Probe("exact ratio tie u=p/q=0.5", _rows([0.25, 0.5, 0.25], [0.25, 0.25, 0.5]),
              _rows([0.5, 0.25, 0.25]), (0,), 0.5, family="tie", targets=ACCEPT_TARGET + " at u = ratio exactly",
              what="u equals the ratio p/q = ½ exactly: either outcome is a measure-zero choice; "
                   "the output must be valid (outcome reported)"),
    ]


def zero_mass_probes(sampler, max_cases: int = 4, seed: int = 2026, masked: bool = False) -> list[Probe]:
    """Logit vectors z (V = 5, seeded) and shifts c with softmax(z + c) ≤ softmax(z) at every
    token after rounding in the sampler's dtype (torch's kernel for torch samplers) and strictly
    below at a token x that the draft then proposes. In exact arithmetic the two are the same
    distribution. ``masked``: token 0 gets logit −inf in both (p = q = 0 there), the token a
    NaN residual's argmax or fallback returns."""
    rng = np.random.default_rng(seed + (1 if masked else 0))
    out = []
    support = "token 0 masked (p = 0 there), " if masked else ""
    for _ in range(500):
        z = np.round(rng.normal(0.0, 2.0, 5), 3)
        if masked:
            z[0] = -np.inf
        q = sampler.softmax(z)
        for k in range(1, 50):
            c = round(0.37 * k, 2)
            p = sampler.softmax(z + c)
            lower = np.flatnonzero((p < q) & (q > 0))
            if not (p <= q).all() or not lower.size:
                continue
            x = int(lower[np.argmax(q[lower])])
            n_case = len(out) + 1
            out.append(Probe(
                f"p=q up to {sampler.dtype} rounding, {support}zero-mass residual, u=1−ulp (case {n_case})",
                np.vstack([p, p]), q[None], (x,), "max", family="zero-mass residual",
                logits=(np.vstack([z + c, z + c]), z[None]),
                targets="the residual norm(max(p − q, 0)) after a rejection, when it has zero mass"
                        + (" (its NaN must not fall back to the masked token 0)" if masked else ""),
                event=zero_mass_text(sampler.dtype), probability=float(np.maximum(q - p, 0.0).sum()),
                what=f"p = softmax(z + {c}) and q = softmax(z), z = {z.tolist()}, are equal in exact "
                     f"arithmetic; after rounding p ≤ q everywhere and p(x) < q(x) at the draft x = {x}: "
                     "a rejection meets a residual max(p − q, 0) of zero mass"
                     + ("; token 0 has p = 0, so falling back to it emits an impossible token" if masked else "")))
            break
        if len(out) >= max_cases:
            break
    return out


def zero_mass_text(dtype: str) -> str:
    from .severity import zero_mass_event
    return zero_mass_event(dtype)


def probe_list(sampler) -> list[Probe]:
    """Every probe run on ``sampler`` (in order)."""
    return base_probes() + zero_mass_probes(sampler) + zero_mass_probes(sampler, max_cases=2, masked=True)


# --- grading ---------------------------------------------------------------------------------------

@dataclass
class ProbeRequest:
    """One request of a probe call and its output: the exact target rows ``p`` (γ+1, V) it is
    graded against, draft rows ``q``, the drafted tokens, the emitted ``out``, the bonus it was
    given (or None) and whether the sampler draws its last token itself."""

    p: np.ndarray
    q: np.ndarray
    draft: tuple
    out: tuple
    bonus: int | None = None
    last_drawn: bool = True


def violations(probe: Probe, out: tuple, exact_p: np.ndarray, draft=None) -> tuple[list[str], list[str]]:
    """What the output ``out`` of a probe call breaks: (support violations, standard violations)."""
    draft = tuple(probe.draft if draft is None else draft)
    g, V = len(draft), exact_p.shape[1]
    if not 1 <= len(out) <= g + 1:
        return [f"emitted {len(out)} tokens (γ = {g} allows 1..{g + 1})"], []
    if min(out) < 0 or max(out) >= V:
        return [f"token id outside [0, {V}): {out}"], []
    support, standard = [], []
    tau = len(out) - 1
    # rows are known along the drafted prefix: check each token up to the first divergence
    for i, t in enumerate(out):
        if exact_p[i, t] <= 0:
            support.append(f"position {i}: emitted token {t} has p = 0 ({role_of(i, tau, g)})")
        if i >= g or t != draft[i]:
            break
    if tuple(out[:tau]) != tuple(draft[:tau]):
        standard.append(f"emitted prefix {out[:tau]} is not the draft prefix {draft[:tau]}")
    if probe.must_reject and tau > 0:
        standard.append(f"accepted {tau} draft(s) where every draft must be rejected")
    if tau < probe.must_accept:
        standard.append(f"accepted {tau} draft(s); {probe.must_accept} must be accepted at this u")
    if probe.exact_output is not None and tuple(out) != probe.exact_output:
        standard.append(f"emitted {out}; the only possible output is {probe.exact_output}")
    return support, standard


def role_of(i: int, tau: int, gamma: int) -> str:
    """What the token at position ``i`` of a call that accepted ``tau`` drafts is."""
    if i < tau:
        return "an accepted draft"
    return "the bonus token" if tau == gamma else "the correction"


TEST = "boundary probe (forced uniforms)"


def decisions_of(out, gamma: int) -> int:
    """Acceptance decisions a call with output ``out`` made: τ accepted drafts, plus the
    rejection unless all γ were accepted."""
    tau = len(out) - 1
    return tau + (1 if tau < gamma else 0)


def needed_values(req: ProbeRequest) -> tuple[int, int]:
    """(uniforms, values in all) the forced source must have given for its values to have
    decided every step of a request: one uniform per acceptance decision at a tested draft with
    0 < p(x) < q(x), one value more for a last token drawn from a law of two or more tokens."""
    g, tau = len(req.draft), len(req.out) - 1
    p, q = np.asarray(req.p, dtype=np.float64), np.asarray(req.q, dtype=np.float64)
    uniforms = sum(1 for i in range(min(tau + 1, g)) if 0.0 < p[i, req.draft[i]] < q[i, req.draft[i]])
    if tau < g:
        law = np.maximum(p[tau] - q[tau], 0.0)
        law = law if law.sum() > 0 else p[tau]
    else:
        law = p[g]
    last = int(req.last_drawn and (law > 0).sum() >= 2)
    return uniforms, uniforms + last


def accounting(rng, needed: tuple[int, int] | None, escaped=(), blocked=()) -> list[str]:
    """Why a probe call was not applied (empty: applied). ``rng``: the forced source of the
    call (counts by kind); ``needed``: (uniforms, values in all) its output calls for
    (:func:`needed_values`, summed over requests; None after a crash); ``escaped``: sources that
    changed state during the call; ``blocked``: reasons found elsewhere (reuse across calls in
    the runs, compiled code bypassing the routing)."""
    reasons = list(blocked)
    if escaped:
        reasons.append("draws escaped the forced source: " + ", ".join(escaped))
    if rng.total() == 0:  # no forced value reached the call: nothing of it was decided by them
        reasons.append("the sampler drew nothing from the forced source")
        return reasons
    if needed is None:
        return reasons
    d, total_needed = needed
    u, total = rng.decision_values(), rng.total()
    if u < d or total < total_needed:
        kinds = ", ".join(f"{v} {k}" for k, v in rng.by_kind.items() if v) or "nothing"
        reasons.append(f"the call's output needed {d} uniform{'s' if d != 1 else ''} (one per acceptance decision "
                       f"at a draft with 0 < p(x) < q(x)) and {total_needed} value{'s' if total_needed != 1 else ''} "
                       f"in all (one more for each last token drawn from two or more); it drew {kinds} from the "
                       "forced source (uniforms kept from earlier calls, drawn elsewhere, or decisions made without "
                       "a draw)")
    return reasons


#: a probe whose draws escaped the routing is made again, this many times in all (the escaped draws
#: then come from torch's, NumPy's, Python's and Numba's global generators at fixed states: the same in every
#: report), so a violation that depends on them is seen as it would be by the sampler's users
ESCAPED_REPEATS = 8


def run_probe(kind, sampler, probe: Probe, blocked=()):
    """(support evidence, standard evidence, result) of one probe call (see module docstring);
    ``blocked``: reasons, found before, why no probe can be applied. ``result``: what
    :mod:`.severity` needs (the violations, the event and its probability, the crash)."""
    from .runs import crash_location, describe
    from .sources import fixed_globals
    label = f"probe: {probe.name}"
    for attempt in range(ESCAPED_REPEATS):
        rng = ForcedUniforms(probe.forced)
        reqs, crash, unsupported = None, None, None
        with fixed_globals(2026 + attempt), sampler.sources.active(label):
            try:
                reqs = kind.probe_call(sampler, probe, rng)
            except ForcedSourceUnsupported as err:
                unsupported = err
            except VerifierOutputError as err:
                crash = {"violation": f"returned an invalid block: {err}", "exception": f"invalid output: {err}",
                         "location": None}
            except Exception as err:  # noqa: BLE001  (a crash is the finding)
                crash = {"violation": f"raised {describe(err)} at {crash_location(err)}", "exception": describe(err),
                         "location": crash_location(err)}
        if crash is not None or unsupported is not None or not sampler.sources.escaped_in(label):
            break
        if any(_support_violations(probe, r) for r in reqs):
            break
    escaped = sampler.sources.escaped_in(label)
    event, prob = probe.event_of(getattr(sampler, "dtype", "float64"))
    result = {"probe": probe.name, "family": probe.family, "event": event, "probability": prob, "applied": False,
              "support": [], "standard": [], "crash": crash, "output": None}
    if unsupported is not None:
        reason = f"the sampler asked the forced source for a draw it cannot force: {unsupported}"
        row = stats.info("exact", probe.name, 0.0, None, test=TEST, note=f"{probe.what}. Probe not applied: {reason}")
        return row, row, result
    if crash is not None:
        support, standard, needed, shown = [crash["violation"]], [crash["violation"]], None, "—"
    else:
        support, standard, d, t = [], [], 0, 0
        multi = len(reqs) > 1
        for b, r in enumerate(reqs):
            pre = f"request {b}: " if multi else ""
            if r.draft:
                s_, t_ = violations(probe, r.out, np.maximum(np.asarray(r.p, np.float64), 0.0), r.draft)
            else:  # a request with nothing drafted: its bonus only
                s_ = [f"position 0: emitted token {r.out[0]} has p = 0 (the bonus token)"] \
                    if np.asarray(r.p)[0, r.out[0]] <= 0 else []
                t_ = [f"emitted {r.out[0]}, not the bonus token {r.bonus} it was given"] \
                    if r.bonus is not None and r.out[0] != r.bonus else []
            support += [pre + x for x in s_]
            standard += [pre + x for x in t_]
            du, dt = needed_values(r)
            d, t = d + du, t + dt
        needed = (d, t)
        shown = [list(r.out) for r in reqs] if multi else reqs[0].out
        result["output"] = [list(r.out) for r in reqs]
    note = (f"{probe.what}. Targets {probe.targets or 'the forced draws'}; stands for {event}. Output: {shown}")
    reasons = accounting(rng, needed, escaped, blocked)
    applied = not reasons
    result.update(applied=applied, support=support, standard=standard)
    if probe.forced == 0.5 and crash is None and applied:
        note += f"; tie {'accepted' if len(reqs[0].out) > 1 else 'rejected'}"
    if not applied:
        note += "; probe not applied (" + "; ".join(reasons) + ")"
    rows = []
    for found in (support, standard):
        if found:
            rows.append(stats.exact_equal(probe.name, 0, len(found), what="violations (forced uniforms)",
                                          note=note + "; VIOLATION: " + "; ".join(found)))
        elif not applied:
            rows.append(stats.info("exact", probe.name, 0.0, 0.0, test=TEST, note=note))
        else:
            rows.append(stats.exact_equal(probe.name, 0, 0, what="violations (forced uniforms)", note=note))
    return rows[0], rows[1], result


def _support_violations(probe, r) -> list:
    if r.draft:
        return violations(probe, r.out, np.maximum(np.asarray(r.p, np.float64), 0.0), r.draft)[0]
    return [] if np.asarray(r.p)[0, r.out[0]] > 0 else ["p = 0"]


def run_probes(kind, sampler, blocked=()) -> tuple[list, list, list]:
    """(support evidence, standard evidence, results) of every probe of ``kind`` on ``sampler``."""
    rows = [run_probe(kind, sampler, pr, blocked) for pr in kind.probes(sampler)]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
