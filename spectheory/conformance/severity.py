"""Which kind of failure a *lossless: fails* is — decided by the probability of the event that
triggered it, wherever it was seen (a statistical run or a probe).

* **law** — the sampler's output distribution is wrong on ordinary inputs: a statistical check of
  the output law (``first_tokens``, ``token_law_by_state``, the serving layout's independence)
  rejects, with its effect size (empirical total variation, Cohen's w = √(χ²/n)); or an
  **impossible token** — an emitted token whose probability under the (processed) target is
  exactly 0 given the call's inputs — was emitted without a rare event behind it: a proof, not a
  statistic, with the call that emits it again.
* **boundary** — the failure (an impossible token, a crash, NaN, a violated probe) is triggered by
  an event of probability below :data:`THRESHOLD` per draw or per call: a uniform equal to 0.0
  exactly (2⁻²⁴ per float32 draw, 2⁻⁵³ per float64), to the largest float below 1, an exact ratio
  tie, or a rejection meeting a residual of zero mass in the sampler's dtype. In the statistical
  runs the trigger is found by replaying the failing call with its extreme uniforms moved one step
  inside (:meth:`.runs.Runs.trigger`): a failure that disappears was triggered by them. The report
  gives the event and its probability; the sampler is lossless in law otherwise.
* **crash** — the sampler raised (or returned something that is not a block) on ordinary inputs.

A failure triggered by an event at or above the threshold (u = 0 in float16: 2⁻¹² per draw) is of
the kind of what it did: law (an impossible token), crash. The kind is the top line's tag
(``LOSSLESS: fails [boundary]``), ``report["verdicts"]["lossless"]["severity"]`` with every failure
in ``"failures"`` — one per distinct bug (:func:`distinct`), each with the call that reproduces it
— and the command's exit status (:data:`EXIT_CODES`). Precedence: law, then crash, then boundary.
"""
from __future__ import annotations

import math
import re

#: an event of probability below this (per draw, or per call for a zero-mass residual) is a boundary event
THRESHOLD = 1e-6
#: the statistical checks of the output law (any layout)
LAW_CHECKS = ("conformance.first_tokens", "conformance.token_law_by_state",
              # the serving layout: the joint law of the requests of one call (spectheory.conformance.kinds.ragged)
              "ragged.cross_request_independence")
IMPOSSIBLE_CHECK = "conformance.impossible_tokens"
PROBE_CHECK = "conformance.support_probes"
#: exit status of ``spectheory conformance`` per kind (0: no lossless failure; 2: usage error)
EXIT_CODES = {"law": 1, "boundary": 3, "crash": 4}
ORDER = ("law", "crash", "boundary")
CRASH_TEST = "run of the sampler"


def _p(x: float) -> str:
    k = -math.log2(x) if x > 0 else None
    if k is not None and abs(k - round(k)) < 1e-9:
        return f"2^-{round(k)} ≈ {x:.1e}"
    return f"{x:.2g}"


def extreme_event(which: str, dtype: str = "float64") -> str:
    """A uniform at an extreme of its dtype, and its probability per draw (forced.TRANSFORMS)."""
    from .forced import extreme_probability
    pr = extreme_probability(which, dtype)
    who = {"float64": "NumPy, Python, torch.rand in float64", "float32": "torch.rand in float32; 2^-53 in float64",
           "float16": "torch.rand in float16: the float32 value rounded, 1.0 wrapping to 0",
           "bfloat16": "torch.rand in bfloat16"}.get(dtype, dtype)
    if which == "zero":
        return f"a uniform equal to 0.0 exactly: probability {_p(pr)} per {dtype} draw ({who})"
    return f"a uniform equal to the largest {dtype} below 1: probability {_p(pr)} per {dtype} draw"


def zero_mass_event(dtype: str = "float64") -> str:
    return (f"a rejection where p ≤ q at every token after rounding in {dtype} (rows equal in exact arithmetic: the "
            "same model as target and draft, or logits that differ by a constant), so the residual max(p − q, 0) has "
            "zero mass: probability Σ max(q − p, 0), of the order of the rows' rounding error, per call")


def kind_of(probability: float | None, otherwise: str) -> str:
    """``boundary`` for an event below :data:`THRESHOLD`, else ``otherwise``."""
    return "boundary" if probability is not None and probability < THRESHOLD else otherwise


def _cohens_w(e: dict) -> float | None:
    m = re.search(r"stat ([0-9.eE+-]+)", e.get("test") or "")
    if not m or not e.get("n"):
        return None
    try:
        return math.sqrt(float(m.group(1)) / float(e["n"]))
    except ValueError:
        return None


def _violation_class(text: str) -> str:
    """What a violation is, without its numbers and tokens (one bug failing several probes
    of a family says the same)."""
    m = re.search(r"has p = 0 \((.*?)\)", text)
    if m:
        return f"a token with p = 0 as {m.group(1)}"
    m = re.search(r"raised (\w+).* at (\S+:\d+)", text)
    if m:
        return f"raised {m.group(1)} at {m.group(2)}"
    return re.sub(r"[\d\[\]\(\), ]+", " ", text).strip()[:60]


def failures(claims: list, crashes: list, findings=()) -> list[dict]:
    """Every lossless failure with its kind, its event (when a rare one triggered it) and a
    ``signature`` naming the bug (see :func:`distinct`)."""
    out = []
    by_id = {c["id"]: c for c in claims}
    for c in claims:
        if c.get("group") != "lossless" or c.get("verdict") != "fails" or c["id"] not in LAW_CHECKS:
            continue
        for e in c["evidence"]:
            if e["outcome"] == "fail" and not (e.get("test") or "").startswith(CRASH_TEST):
                out.append({"kind": "law", "check": c["id"].removeprefix("conformance."), "instance": e["instance"],
                            "p_value": e.get("p_value"), "n": e.get("n"), "empirical_tv": e.get("measured"),
                            "cohens_w": _cohens_w(e), "test": e.get("test"), "signature": "law: statistic",
                            "call": (c.get("counterexample") or {}).get("call")})
    imp = by_id.get(IMPOSSIBLE_CHECK)
    traced = [f for f in findings if f["what"] == "impossible token"]
    for f in traced:
        kind = kind_of(f.get("probability"), "law")
        out.append({"kind": kind, "check": "impossible_tokens", "proof": kind == "law", "instance": f["block"],
                    "context": f["context"], "token": f["token"], "position": f["position"], "output": f["output"],
                    "event": f.get("event"), "probability": f.get("probability"), "call": f.get("call_line"),
                    "signature": f"impossible token; {'event: ' + _event_key(f.get('event')) if kind == 'boundary' else 'law'}"})
    if imp is not None and imp.get("verdict") == "fails" and not traced:
        e = next((e for e in imp["evidence"] if e["outcome"] == "fail"
                  and not (e.get("test") or "").startswith(CRASH_TEST)), None)
        if e is not None:
            out.append({"kind": "law", "check": "impossible_tokens", "proof": True, "instance": e["instance"],
                        "context": e.get("note"), "signature": "impossible token; law"})
    probe = by_id.get(PROBE_CHECK)
    for r in (probe or {}).get("results", []):
        if not r["support"]:
            continue
        kind = kind_of(r.get("probability"), "crash" if r.get("crash") else "law")
        viol = r["support"][0]
        out.append({"kind": kind, "check": "support_probes", "probe": r["probe"], "violation": viol,
                    "event": r.get("event"), "probability": r.get("probability"), "call": r.get("call"),
                    "signature": f"{_violation_class(viol)}; event: {_event_key(r.get('event'))}"})
    for cr in crashes:
        trig = cr.get("trigger") or {}
        kind = kind_of(trig.get("probability"), "crash")
        loc = cr.get("location")
        out.append({"kind": kind, "instance": cr["instance"], "gamma": cr["gamma"], "exception": cr["exception"],
                    "location": loc, "context": cr.get("context"), "event": trig.get("event"),
                    "probability": trig.get("probability"), "call": cr.get("call"),
                    "signature": f"raised {cr['exception'].split(':')[0]} at {_short(loc)}"
                                 + (f"; event: {_event_key(trig.get('event'))}" if kind == "boundary" else "")})
    for f in findings:
        if f["what"] != "crash":
            continue
        kind = kind_of(f.get("probability"), "crash")
        out.append({"kind": kind, "instance": f["block"], "exception": f["exception"], "location": f["location"],
                    "context": f["context"], "event": f.get("event"), "probability": f.get("probability"),
                    "times": f.get("times", 1),
                    "call": f.get("call_line"),
                    "signature": f"raised {f['exception'].split(':')[0]} at {_short(f['location'])}"
                                 + (f"; event: {_event_key(f.get('event'))}" if kind == "boundary" else "")})
    return out


def _short(loc) -> str:
    return str(loc).split(" in ")[0] if loc else "?"


def _event_key(event) -> str:
    """The event without its numbers (the same bug at u = 0 in two probes is one bug)."""
    if not event:
        return "none"
    if "zero mass" in event:
        return "zero-mass residual"
    if "0.0 exactly" in event:
        return "uniform 0"
    if "largest" in event:
        return "uniform 1−ulp"
    return re.sub(r"[\d.]+", "#", event)[:40]


def distinct(found: list[dict]) -> list[dict]:
    """One entry per bug: the first failure of each signature, with ``also`` counting the others
    (a u = 0 bug fails several probes; a zero-mass crash is another bug with its own call)."""
    out, seen = [], {}
    for f in found:
        key = f.get("signature") or repr(f)
        if key in seen:
            seen[key]["also"] = seen[key].get("also", 0) + 1
            if not seen[key].get("call") and f.get("call"):
                seen[key]["call"] = f["call"]
            continue
        seen[key] = dict(f)
        out.append(seen[key])
    return out


def severity_of(found: list[dict]) -> str | None:
    kinds = {f["kind"] for f in found}
    return next((k for k in ORDER if k in kinds), None)


def summary(found: list[dict], claims: list) -> str:
    """One line: the worst case of each kind (the kind itself is the verdict's tag)."""
    kind = severity_of(found)
    parts = []
    stat = [f for f in found if f["kind"] == "law" and f.get("check") != "impossible_tokens"]
    proof = [f for f in found if f["kind"] == "law" and f.get("check") == "impossible_tokens"]
    if proof:
        p0 = proof[0]
        where = f" ({p0['context']})" if p0.get("context") else ""
        parts.append(f"the output law is wrong, with certainty: it emitted a token with target probability 0 given its "
                     f"inputs (token {p0.get('token')} at position {p0.get('position')} on {p0['instance']}{where}); "
                     "a proof, not a statistic")
    if stat:
        w = max(stat, key=lambda f: f["empirical_tv"] or 0.0)
        eff = f"empirical TV {w['empirical_tv']:.3g}" if w["empirical_tv"] is not None else "effect not measured"
        if w["cohens_w"] is not None:
            eff += f", Cohen's w {w['cohens_w']:.2g}"
        checks = sorted({f["check"] for f in stat})
        parts.append(f"the output law is wrong: {', '.join(checks)} reject{'s' if len(checks) == 1 else ''} "
                     f"(worst: {w['check']} on {w['instance']}, {eff}, p = {w['p_value']:.2g}, n = {w['n']})")
    crash = [f for f in found if f["kind"] == "crash"]
    if crash:
        c0 = crash[0]
        where = f" at {c0['location']}" if c0.get("location") else ""
        what = c0.get("exception") or c0.get("violation")
        parts.append(f"the sampler crashed on ordinary inputs ({len(crash)} time(s); {what}{where})")
    bound = [f for f in found if f["kind"] == "boundary"]
    if bound:
        law_v = {c["id"].removeprefix("conformance."): c["verdict"] for c in claims if c["id"] in LAW_CHECKS}
        said = ", ".join(f"{i} {v}" for i, v in law_v.items())
        lead = "" if stat or proof or crash or not law_v else (
            f"lossless in law ({said}) but " if all(v == "holds" for v in law_v.values())
            else f"the law not shown either way ({said}); ")
        b0 = bound[0]
        n_probes = sum(1 for f in bound if f.get("probe"))
        if b0.get("probe"):
            parts.append(f"{lead}fails on events of stated probability in {n_probes} boundary probe(s): "
                         f"'{b0['probe']}' — {b0['violation']}; the event: {b0.get('event')}")
        else:
            what = (f"emitted token {b0.get('token')} with p = 0" if b0.get("check") == "impossible_tokens"
                    else f"raised {b0.get('exception')}" + (f" at {b0['location']}" if b0.get("location") else ""))
            parts.append(f"{lead}fails on an event of stated probability seen in the statistical runs "
                         f"({b0.get('context')}: {what}); the event: {b0.get('event')}")
    return "; ".join(parts) if kind else ""
