"""Boundary probes: run a block verifier once with its random source forced to an extreme, on
tiny instances built to expose the classic float failures of rejection samplers.

Forced values: 0, the largest float below 1 in the verifier's dtype ("1−ulp"), and an exact
ratio tie u = p(x)/q(x). Instances: a drafted token with p = 0 that the draft allows (u = 0 must
not accept it: ``u ≤ ratio`` does; an inverse CDF searched with ``side="left"`` returns it as
the correction), disjoint supports, a one-token vocabulary, p ≥ q at the drafted token (u =
1−ulp must accept), and p = q in exact arithmetic but not after the softmax in the verifier's
dtype, with p ≤ q at every token after rounding (a rejection at u = 1−ulp meets a residual of
zero mass: it must not crash or return NaN).

Each probe call is graded twice by :func:`spectheory.judge.stats.exact_equal` on a number of violations
(claimed 0): **support** (any lossless verifier: no crash, a block of 1..γ+1 valid ids, every
token in the support of the target row it is drawn from) and **standard** (Alg. 1 at that u:
the drafted prefix, the rejection or acceptance the probe requires, the one possible output).

A probe is **applied** only if its forced values decided every step of the call
(:func:`accounting`): the call made d = τ + [τ < γ] acceptance decisions (τ accepted drafts, one
rejection unless all were accepted), and the sampler drew at least d uniforms (values compared
with a ratio: ``random``, ``rand``, ``uniform_``, ``bernoulli``, or one exponential at a time)
and at least d + 1 values in
all (one more for the correction or bonus token) from the forced source, directly or through a
routed global source (:mod:`.sources`); no draw escaped it during the call; the statistical
runs did not show the sampler reusing uniforms across calls (a call that made more decisions
needing a random value than it drew uniforms); no compiled code that bypasses the routing was
found in the sampler. Otherwise both rows are ``info`` ("not applied", with the reason), never
a pass; a violation found anyway (a p = 0 token emitted, a crash) still fails.

Each forced value is in the range of the transform it feeds: uniforms are forced to exactly 0
or 1 − ulp (values ``torch.rand``, NumPy and Python return, with probability 2⁻⁵³ per float64
draw, 2⁻²⁴ per float32 one); the keys of an exponential race (``exponential_`` of several
values at once) at "u = 0" get the smallest positive uniform of their dtype, E ≈ 2⁻⁵³ > 0, since
E = 0 for every key at once is a tie independent draws never produce (one exponential drawn
alone keeps E = −log(1 − 0) = 0, which CPU torch returns with probability 2⁻⁵³). Each probe says
which transform it targets (:attr:`Probe.targets`) and the event it stands for, with its
probability (:attr:`Probe.event`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..judge import stats
from ..judge.evidence import Evidence

from .adapters import BlockVerifier, VerifierOutputError
from .forced import ForcedSourceUnsupported, ForcedUniforms


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
    event: str = ""        # the real event this stands for, with its probability


def event_of(forced, dtype: str = "float64") -> str:
    """The event a forced uniform stands for and its probability per draw in ``dtype``."""
    from .forced import UNIFORM_BITS
    bits = UNIFORM_BITS.get(np.dtype(dtype), 53)
    if forced == "zero":
        who = "NumPy, Python, torch.rand in float64" if bits == 53 else f"torch.rand in {dtype}; 2^-53 in float64"
        return f"a uniform equal to 0.0 exactly: probability 2^-{bits} ≈ {2.0 ** -bits:.1e} per {dtype} draw ({who})"
    if forced == "max":
        return f"a uniform equal to 1 − 2^-{bits} (the largest below 1): probability 2^-{bits} ≈ {2.0 ** -bits:.1e} per " \
               f"{dtype} draw"
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
        Probe("p=0 drafted token, u=0", P0, Q0, (0,), "zero", must_reject=True,
              targets=ACCEPT_TARGET + " at ratio 0: u ≤ ratio accepts",
              what="token 0 has p = 0 and q = 0.5: u = 0 must reject it (u < 0 is false) and the "
                   "correction from norm(max(p−q,0)) = (0, ½, ½) must not be token 0"),
        Probe("p=0 drafted token, u=1−ulp", P0, Q0, (0,), "max", must_reject=True,
              targets=RESIDUAL_TARGET + " at its top end",
              what="reject token 0; the correction at u = 1−ulp must be a valid id in {1, 2}"),
        Probe("disjoint supports, u=0", DISJ_P, DISJ_Q, (2,), "zero", must_reject=True,
              targets=ACCEPT_TARGET + " at ratio 0 and " + RESIDUAL_TARGET + " at u = 0",
              what="q drafts token 2 where p = 0: always rejected, correction from p"),
        Probe("disjoint supports, u=1−ulp", DISJ_P, DISJ_Q, (2,), "max", must_reject=True,
              targets=RESIDUAL_TARGET + " at its top end (the last token has p = 0)",
              what="as above at the other extreme"),
        Probe("one-token vocabulary, u=0", np.ones((g + 1, 1)), np.ones((g, 1)), (0,) * g, "zero",
              exact_output=(0,) * (g + 1), targets=ACCEPT_TARGET + " at ratio 1, u = 0",
              what="V = 1: every draft accepted, bonus 0"),
        Probe("one-token vocabulary, u=1−ulp", np.ones((g + 1, 1)), np.ones((g, 1)), (0,) * g, "max",
              exact_output=(0,) * (g + 1), targets=ACCEPT_TARGET + " at ratio 1, u = 1−ulp",
              what="V = 1 at u = 1−ulp: still all accepted (u < 1 = p/q)"),
        Probe("p≥q at the draft, u=1−ulp", _rows([0.5, 0.25, 0.25], [0.5, 0.5, 0.0]),
              _rows([0.25, 0.25, 0.5]), (0,), "max", must_accept=1,
              targets=ACCEPT_TARGET + " at ratio 2 (clipped to 1), and the bonus draw at u = 1−ulp",
              what="ratio p/q = 2: u = 1−ulp < 1 must accept; the bonus at u = 1−ulp must be a "
                   "valid id and not token 2 (p = 0)"),
        Probe("exact ratio tie u=p/q=0.5", _rows([0.25, 0.5, 0.25], [0.25, 0.25, 0.5]),
              _rows([0.5, 0.25, 0.25]), (0,), 0.5, targets=ACCEPT_TARGET + " at u = ratio exactly",
              what="u equals the ratio p/q = ½ exactly: either outcome is a measure-zero choice; "
                   "the output must be valid (outcome reported)"),
    ]


def zero_mass_probes(verifier: BlockVerifier, max_cases: int = 4, seed: int = 2026) -> list[Probe]:
    """Logit vectors z (V = 5, seeded) and shifts c with softmax(z + c) ≤ softmax(z) at every
    token after rounding in the verifier's dtype (torch's kernel for torch verifiers) and
    strictly below at a token x that the draft then proposes. In exact arithmetic the two are
    the same distribution."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(500):
        z = np.round(rng.normal(0.0, 2.0, 5), 3)
        q = verifier.softmax(z)
        for k in range(1, 50):
            c = round(0.37 * k, 2)
            p = verifier.softmax(z + c)
            lower = np.flatnonzero((p < q) & (q > 0))
            if not (p <= q).all() or not lower.size:
                continue
            x = int(lower[np.argmax(q[lower])])
            out.append(Probe(
                f"p=q up to {verifier.dtype} rounding, zero-mass residual, u=1−ulp (case {len(out) + 1})",
                np.vstack([p, p]), q[None], (x,), "max",
                logits=(np.vstack([z + c, z + c]), z[None]),
                targets="the residual norm(max(p − q, 0)) after a rejection, when it has zero mass",
                event=f"a rejection where p ≤ q at every token after rounding in {verifier.dtype} (rows equal in exact "
                      "arithmetic: the same model as target and draft, or logits that differ by a constant): "
                      "probability Σ max(q − p, 0), of the order of the rows' rounding error, per call",
                what=f"p = softmax(z + {c}) and q = softmax(z), z = {z.tolist()}, are equal in exact "
                     f"arithmetic; after rounding p ≤ q everywhere and p(x) < q(x) at the draft x = {x}: "
                     "a rejection meets a residual max(p − q, 0) of zero mass"))
            break
        if len(out) >= max_cases:
            break
    return out


def violations(probe: Probe, out: tuple, exact_p: np.ndarray) -> tuple[list[str], list[str]]:
    """What the output ``out`` of a probe call breaks: (support violations, standard violations)."""
    g, V = len(probe.draft), probe.p.shape[1]
    if not 1 <= len(out) <= g + 1:
        return [f"emitted {len(out)} tokens (γ = {g} allows 1..{g + 1})"], []
    if min(out) < 0 or max(out) >= V:
        return [f"token id outside [0, {V}): {out}"], []
    support, standard = [], []
    tau = len(out) - 1
    # rows are known along the drafted prefix: check each token up to the first divergence
    for i, t in enumerate(out):
        if exact_p[i, t] <= 0:
            support.append(f"position {i}: emitted token {t} has p = 0")
        if i >= g or t != probe.draft[i]:
            break
    if tuple(out[:tau]) != tuple(probe.draft[:tau]):
        standard.append(f"emitted prefix {out[:tau]} is not the draft prefix {probe.draft[:tau]}")
    if probe.must_reject and tau > 0:
        standard.append(f"accepted {tau} draft(s) where every draft must be rejected")
    if tau < probe.must_accept:
        standard.append(f"accepted {tau} draft(s); {probe.must_accept} must be accepted at this u")
    if probe.exact_output is not None and tuple(out) != probe.exact_output:
        standard.append(f"emitted {out}; the only possible output is {probe.exact_output}")
    return support, standard


TEST = "boundary probe (forced uniforms)"


def decisions_of(out, gamma: int) -> int:
    """Acceptance decisions a call with output ``out`` made: τ accepted drafts, plus the
    rejection unless all γ were accepted (a lower bound for multi-draft and tree verifiers:
    one candidate tested per depth)."""
    tau = len(out) - 1
    return tau + (1 if tau < gamma else 0)


def accounting(rng, out, gamma: int, escaped=(), blocked=(), *, decisions: int | None = None,
               extra: int = 1) -> list[str]:
    """Why a probe call was not applied (empty: applied). ``rng``: the forced source of the
    call (counts by kind); ``out``: its output (None after a crash); ``escaped``: sources that
    changed state during the call; ``blocked``: reasons found elsewhere (reuse across calls in
    the runs, compiled code bypassing the routing). A call verifying several requests at once
    (:mod:`.ragged`) passes ``decisions``, the sum of its requests' decisions, and ``extra``,
    the values its last tokens need (one per request whose last token the sampler draws)."""
    reasons = list(blocked)
    if escaped:
        reasons.append("draws escaped the forced source: " + ", ".join(escaped))
    if rng.draws == 0:
        reasons.append("the sampler drew no uniform from the forced source")
    elif out is not None:
        d = decisions_of(out, gamma) if decisions is None else decisions
        u, total = rng.decision_values(), rng.total()
        if u < d or total < d + extra:
            kinds = ", ".join(f"{v} {k}" for k, v in rng.by_kind.items() if v)
            reasons.append(f"the call made {d} acceptance decision{'s' if d != 1 else ''} and drew {kinds} from the "
                           f"forced source: at least {d} uniform{'s' if d != 1 else ''} (one per decision) and "
                           f"{d + extra} values in all (one more for each correction/bonus drawn) are needed for the forced "
                           "values to have decided every step (uniforms kept from earlier calls, or decisions made "
                           "without a draw)")
    return reasons


def run_probe(verifier: BlockVerifier, probe: Probe, blocked=()) -> tuple[Evidence, Evidence]:
    """(support evidence, standard evidence) of one probe call (see module docstring);
    ``blocked``: reasons, found before, why no probe can be applied."""
    rng = ForcedUniforms(probe.forced)
    if probe.logits is not None:
        p_in, q_in = verifier.from_logits(probe.logits[0]), verifier.from_logits(probe.logits[1])
    else:
        p_in, q_in = verifier.represent(probe.p, "target"), verifier.represent(probe.q, "draft")
    exact_p = np.maximum(probe.p, 0.0)
    label = f"probe: {probe.name}"
    out, unsupported = None, None
    with verifier.sources.active(label):
        try:
            out = verifier(p_in, q_in, list(probe.draft), rng)
        except ForcedSourceUnsupported as err:
            unsupported = err
        except VerifierOutputError as err:
            crash = f"returned an invalid block: {err}"
        except Exception as err:  # noqa: BLE001  (a crash is the finding)
            from .driver import crash_location, describe
            crash = f"raised {describe(err)} at {crash_location(err)}"
    escaped = verifier.sources.escaped_in(label)
    if unsupported is not None:
        reason = f"the sampler asked the forced source for a draw it cannot force: {unsupported}"
        return _not_applied(probe, reason), _not_applied(probe, reason)
    if out is None:
        support, standard = [crash], []
    else:
        support, standard = violations(probe, out, exact_p)
    event = probe.event or event_of(probe.forced, verifier.dtype)
    note = (f"{probe.what}. Targets {probe.targets or 'the forced draws'}; stands for {event}. "
            f"Output: {out if out is not None else '—'}")
    reasons = accounting(rng, out, len(probe.draft), escaped, blocked)
    applied = not reasons
    if probe.forced == 0.5 and out is not None and applied:
        note += f"; tie {'accepted' if len(out) > 1 else 'rejected'}"
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
    return rows[0], rows[1]


def _not_applied(probe, reason):
    return stats.info("exact", probe.name, 0.0, None, test=TEST, note=f"{probe.what}. Probe not applied: {reason}")


def run_probes(verifier: BlockVerifier, blocked=()) -> tuple[list[Evidence], list[Evidence]]:
    """(support evidence, standard evidence) of every probe (``blocked``: see :func:`run_probe`)."""
    rows = [run_probe(verifier, pr, blocked) for pr in probe_list(verifier)]
    return [r[0] for r in rows], [r[1] for r in rows]


def probe_list(verifier: BlockVerifier) -> list[Probe]:
    """Every probe run on ``verifier`` (in order)."""
    return base_probes() + zero_mass_probes(verifier)


def rerun_inputs(probe: Probe) -> dict:
    """Keyword arguments of :func:`.replay.rerun` that repeat the probe call."""
    if probe.logits is not None:
        return {"p": np.asarray(probe.logits[0], dtype=np.float64).tolist(),
                "q": np.asarray(probe.logits[1], dtype=np.float64).tolist(), "draft": list(probe.draft),
                "forced": probe.forced, "logits": True}
    return {"p": probe.p.tolist(), "q": probe.q.tolist(), "draft": list(probe.draft), "forced": probe.forced}
