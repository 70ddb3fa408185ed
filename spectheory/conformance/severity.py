"""Which kind of failure a *lossless: fails* is.

* **law** — a statistical check of the output law (``first_tokens``, ``token_law_by_state``)
  rejects: the sampler's output distribution is wrong on ordinary inputs. The effect size is
  given: the empirical total-variation distance of the failing test and Cohen's w = √(χ²/n).
* **crash** — the sampler raised (or returned something that is not a block) on ordinary
  inputs during the statistical runs.
* **boundary** — the law checks do not reject, but a boundary probe finds a violation (a token
  with p = 0, a crash, NaN): the sampler fails on an event of stated probability — a uniform
  equal to 0.0 exactly (2⁻⁵³ per float64 draw), to 1 − ulp, to an exact ratio, or a rejection
  meeting a residual of zero mass — and is lossless in law otherwise.

The kind is the top line's tag (``LOSSLESS: fails [boundary]``), ``report["verdicts"]
["lossless"]["severity"]`` with every failure in ``"failures"``, and the command's exit status
(:data:`EXIT_CODES`). Precedence when several are present: law, then crash, then boundary.
"""
from __future__ import annotations

import math
import re

#: the statistical checks of the output law (any layout)
LAW_CHECKS = ("conformance.first_tokens", "conformance.token_law_by_state",
              # the serving layout: the joint law of the requests of one call (spectheory.conformance.ragged)
              "ragged.cross_request_independence")
PROBE_CHECK = "conformance.support_probes"
#: exit status of ``spectheory conformance`` per kind (0: no lossless failure; 2: usage error)
EXIT_CODES = {"law": 1, "boundary": 3, "crash": 4}
ORDER = ("law", "crash", "boundary")
CRASH_TEST = "run of the sampler"


def _cohens_w(e: dict) -> float | None:
    m = re.search(r"stat ([0-9.eE+-]+)", e.get("test") or "")
    if not m or not e.get("n"):
        return None
    try:
        return math.sqrt(float(m.group(1)) / float(e["n"]))
    except ValueError:
        return None


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    j = text.find(end, i + len(start))
    return text[i + len(start):j if j >= 0 else None].strip()


def failures(claims: list, crashes: list) -> list[dict]:
    """Every lossless failure with its kind (see the module docstring)."""
    out = []
    for c in claims:
        if c.get("group") != "lossless" or c.get("verdict") != "fails":
            continue
        if c["id"] in LAW_CHECKS:
            for e in c["evidence"]:
                if e["outcome"] == "fail" and not (e.get("test") or "").startswith(CRASH_TEST):
                    out.append({"kind": "law", "check": c["id"].removeprefix("conformance."), "instance": e["instance"],
                                "p_value": e.get("p_value"), "n": e.get("n"), "empirical_tv": e.get("measured"),
                                "cohens_w": _cohens_w(e), "test": e.get("test")})
        elif c["id"] == PROBE_CHECK:
            for e in c["evidence"]:
                if e["outcome"] == "fail":
                    note = e.get("note") or ""
                    out.append({"kind": "boundary", "check": "support_probes", "probe": e["instance"],
                                "event": _between(note, "stands for ", ". Output:"),
                                "violation": note.split("VIOLATION: ", 1)[-1].split(" [look")[0]})
    for cr in crashes:
        out.append({"kind": "crash", "instance": cr["instance"], "gamma": cr["gamma"], "exception": cr["exception"],
                    "location": cr.get("location"), "context": cr.get("context")})
    return out


def severity_of(found: list[dict]) -> str | None:
    kinds = {f["kind"] for f in found}
    return next((k for k in ORDER if k in kinds), None)


def summary(found: list[dict], claims: list) -> str:
    """One line: the worst case of each kind (the kind itself is the verdict's tag)."""
    kind = severity_of(found)
    parts = []
    law = [f for f in found if f["kind"] == "law"]
    if law:
        w = max(law, key=lambda f: f["empirical_tv"] or 0.0)
        eff = f"empirical TV {w['empirical_tv']:.3g}" if w["empirical_tv"] is not None else "effect not measured"
        if w["cohens_w"] is not None:
            eff += f", Cohen's w {w['cohens_w']:.2g}"
        checks = sorted({f["check"] for f in law})
        parts.append(f"the output law is wrong: {', '.join(checks)} reject{'s' if len(checks) == 1 else ''} "
                     f"(worst: {w['check']} on {w['instance']}, {eff}, p = {w['p_value']:.2g}, n = {w['n']})")
    crash = [f for f in found if f["kind"] == "crash"]
    if crash:
        c0 = crash[0]
        where = f" at {c0['location']}" if c0.get("location") else ""
        parts.append(f"the sampler crashed on {len(crash)} instance×γ on ordinary inputs ({c0['exception']}{where})")
    bound = [f for f in found if f["kind"] == "boundary"]
    if bound:
        law_v = {c["id"].removeprefix("conformance."): c["verdict"] for c in claims if c["id"] in LAW_CHECKS}
        said = ", ".join(f"{i} {v}" for i, v in law_v.items())
        lead = "" if law or crash or not law_v else (f"lossless in law ({said}) but " if all(v == "holds" for v in law_v.values())
                                        else f"the law not shown either way ({said}); ")
        b0 = bound[0]
        parts.append(f"{lead}fails on events of stated probability in {len(bound)} boundary probe(s): "
                     f"'{b0['probe']}' — {b0['violation']}; the event: {b0['event']}")
    return "; ".join(parts) if kind else ""
