"""Verdict aggregation: per evidence mode, per part of a claim, for the claim, and for negative
controls (docs/architecture.md, "Registry v2").

* A part's verdict is :func:`combine` over the evidence tagged with it; a part declared not
  checkable is ``not-checkable``.
* A claim's verdict comes from its parts: any ``fails`` → fails; else any ``inconclusive`` →
  inconclusive; else at least one ``holds`` → holds; else not-checkable.
* A control is ``fails`` only if it fails in every (part, mode) it is required in.
"""
from __future__ import annotations

from .evidence import MODES, combine

NOT_CHECKABLE = "not-checkable"


def mode_verdicts(evidence) -> dict[str, str]:
    """Verdict per evidence mode (``combine`` over that mode's evidence alone)."""
    return {m: combine([e for e in evidence if e.mode == m]) for m in MODES
            if any(e.mode == m for e in evidence)}


def part_verdict(evidence, part: str, checkable: bool = True) -> str:
    """``combine`` over the evidence of ``part``; ``not-checkable`` for a part declared so."""
    if not checkable:
        return NOT_CHECKABLE
    return combine([e for e in evidence if e.part == part])


def claim_verdict(part_verdicts) -> str:
    """The claim's verdict from its parts' verdicts (a dict part → verdict, or a list)."""
    vs = list(part_verdicts.values()) if isinstance(part_verdicts, dict) else list(part_verdicts)
    if "fails" in vs:
        return "fails"
    if "inconclusive" in vs:
        return "inconclusive"
    if "holds" in vs:
        return "holds"
    return NOT_CHECKABLE


def summary(part_verdicts) -> str:
    """One line: ``holds`` for a one-part claim; ``fails (1 of 3 parts)``; ``holds (2 of 3 parts;
    1 not checkable)``: the claim's verdict, how many of its parts have that verdict, and how many
    parts could not be checked."""
    vs = list(part_verdicts.values()) if isinstance(part_verdicts, dict) else list(part_verdicts)
    verdict = claim_verdict(vs)
    if len(vs) <= 1:
        return verdict
    n_nc = vs.count(NOT_CHECKABLE)
    if verdict == NOT_CHECKABLE:
        return f"{verdict} ({len(vs)} parts)"
    text = f"{verdict} ({vs.count(verdict)} of {len(vs)} parts"
    return text + (f"; {n_nc} not checkable)" if n_nc else ")")


def control_verdict(required, evidence) -> tuple[str, dict[str, str], dict[str, dict[str, str]]]:
    """Verdict of a negative control: ``fails`` only if it fails in *every* (part, mode) it is
    required in (a broken algorithm caught by the exact engine alone leaves the Monte Carlo
    unchecked; one caught on one part leaves the others unchecked); otherwise its overall
    verdict, ``inconclusive`` at worst.

    ``required``: ``{part: modes}``, or a sequence of modes (every evidence counts, one part).
    Returns (verdict, verdict per mode over all its evidence, verdict per part per mode).
    ``logits`` is never required (real logits have no broken twin to replay)."""
    if not isinstance(required, dict):
        required = {None: tuple(required)}
    per_mode = mode_verdicts(evidence)
    per_part = {}
    ok = True
    for part, modes in required.items():
        ev = evidence if part is None else [e for e in evidence if e.part == part]
        pm = mode_verdicts(ev)
        per_part[part] = pm
        if not all(pm.get(m) == "fails" for m in modes if m != "logits"):
            ok = False
    if ok:
        return "fails", per_mode, per_part
    overall = combine(evidence)
    return (overall if overall != "fails" else "inconclusive"), per_mode, per_part
