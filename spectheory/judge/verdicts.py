"""Verdict aggregation: per evidence mode, per part of a claim, for the claim, and for negative
controls (docs/architecture.md, "Registry v2").

* A part's verdict is :func:`combine` over the evidence tagged with it; a part declared not
  checkable is ``not-checkable``.
* A claim's verdict comes from its parts: any ``fails`` → fails; else any ``inconclusive`` →
  inconclusive; else at least one ``holds`` → holds; else not-checkable.
* A control is ``fails`` only if it fails in every (part, mode) it is required in.
* A reading's verdict is the claim rule over its parts (:func:`reading_verdict`); the headline
  is the principal reading's (issue 24).
* A failing part fails ``strict``ly or by equality only (``tie``: every failing comparison is a
  strict inequality met with equality, :func:`failure_kind`).
* Real-model (``logits``) evidence gets its own verdict beside the paper-level one
  (:func:`real_pair_verdict`: holds / fails / underpowered, with n had and n needed; issue 25).
"""
from __future__ import annotations

import math
import re

from .evidence import MODES, SYNTHETIC_MODES, combine

NOT_CHECKABLE = "not-checkable"


def combine_exists(evidence) -> str:
    """The verdict of an ``exists`` part ("some setting achieves it"): its comparisons are alternatives
    (each counts the settings that achieve it on its own instances), so one that passes shows it
    (holds); it fails only when every graded comparison is decided against it; a comparison that
    could not decide (underpowered) where none passes leaves it inconclusive — a fail rests only on
    decided comparisons (issue 34, item 5)."""
    graded = [e for e in evidence if e.outcome != "info"]
    if any(e.outcome == "pass" for e in graded):
        return "holds"
    if graded and all(e.outcome == "fail" for e in graded):
        return "fails"
    return "inconclusive"


def combine_part(evidence, relation: str | None = None) -> str:
    """A part's verdict from its evidence under its relation: :func:`combine_exists` for ``exists``,
    :func:`combine` (any fail → fails) for every other relation."""
    return combine_exists(evidence) if relation == "exists" else combine(evidence)


def mode_verdicts(evidence, relation: str | None = None) -> dict[str, str]:
    """Verdict per evidence mode (``combine_part`` over that mode's evidence alone)."""
    return {m: combine_part([e for e in evidence if e.mode == m], relation) for m in MODES
            if any(e.mode == m for e in evidence)}


def part_verdict(evidence, part: str, checkable: bool = True) -> str:
    """``combine`` over the evidence of ``part``; ``not-checkable`` for a part declared so."""
    if not checkable:
        return NOT_CHECKABLE
    return combine([e for e in evidence if e.part == part])


def synthetic(evidence) -> list:
    """The evidence behind the paper-level verdict: exact, Monte Carlo and proof (not logits)."""
    return [e for e in evidence if e.mode in SYNTHETIC_MODES]


def failure_kind(evidence, part: str | None = None) -> str | None:
    """How a part fails: ``tie`` when every failing comparison is a strict inequality that fails
    by equality only (``Evidence.tie``), ``strict`` otherwise; None when nothing fails."""
    bad = [e for e in evidence if e.outcome == "fail" and (part is None or e.part == part)]
    if not bad:
        return None
    return "tie" if all(e.tie for e in bad) else "strict"


def reading_verdict(part_verdicts: dict, parts) -> str:
    """A reading's verdict: the claim rule (:func:`claim_verdict`) over the verdicts of its parts."""
    return claim_verdict([part_verdicts[p] for p in parts])


_N_NEEDED = re.compile(r"/\s*(\d+)\s*\(power 0\.9")


def n_needed(e) -> int | None:
    """The sample a graded test needs for its power statement (power 0.9 at its tolerance): read
    from its note when it states it (``n needed A (power 0.8) / B (power 0.9 ...``), else
    n·(detectable/tolerance)², exact for a test whose detectable deviation scales as n^(-1/2);
    None when the evidence states neither (an exact count)."""
    m = _N_NEEDED.search(getattr(e, "note", "") or "")
    if m:
        return int(m.group(1))
    n, d, t = e.n, e.detectable, e.tolerance
    if n and d is not None and t and math.isfinite(d) and d > 0 and t > 0:
        return int(math.ceil(n * (d / t) ** 2))
    return None


def real_pair_verdict(evidence) -> dict | None:
    """The real pair's own verdict from the ``logits`` evidence (issue 25, item 3): ``fails`` if a
    graded test fails; else ``underpowered`` if one could not see the tolerance; else ``holds``.
    ``n``/``n_needed``: the deciding test's sample and the sample its power statement needs (the
    test with the least n/n_needed). None when there is no graded logits evidence."""
    graded = [e for e in evidence if e.mode == "logits" and e.outcome != "info"]
    if not graded:
        return None
    if any(e.outcome == "fail" for e in graded):
        verdict, pool = "fails", [e for e in graded if e.outcome == "fail"]
    elif any(e.outcome == "underpowered" for e in graded):
        verdict, pool = "underpowered", [e for e in graded if e.outcome == "underpowered"]
    else:
        verdict, pool = "holds", graded
    sized = [(e.n / nn if nn else math.inf, e, nn) for e in pool if e.n is not None and (nn := n_needed(e))]
    out = {"verdict": verdict, "n": None, "n_needed": None, "tests": len(graded), "instance": pool[0].instance}
    ctl = [e for e in evidence if e.mode == "logits" and getattr(e, "control", "")]
    if ctl:   # the logits-mode negative controls: a broken verifier through the same real loop and test
        out["controls"] = {"rejected": sum(e.control == "rejected" for e in ctl), "total": len(ctl),
                           "not_rejected": [e.instance for e in ctl if e.control != "rejected"]}
    if sized:
        _, e, nn = min(sized, key=lambda r: r[0])
        out.update(n=int(e.n), n_needed=int(nn), instance=e.instance)
    return out


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


def control_verdict(required, evidence, relations: dict | None = None) -> tuple[str, dict[str, str],
                                                                                dict[str, dict[str, str]]]:
    """Verdict of a negative control: ``fails`` only if it fails in *every* (part, mode) it is
    required in (a broken algorithm caught by the exact engine alone leaves the Monte Carlo
    unchecked; one caught on one part leaves the others unchecked); otherwise its overall
    verdict, ``inconclusive`` at worst.

    ``required``: ``{part: modes}``, or a sequence of modes (every evidence counts, one part);
    ``relations``: ``{part: relation}`` (an ``exists`` part's comparisons combine as alternatives).
    Returns (verdict, verdict per mode over all its evidence, verdict per part per mode).
    ``logits`` is never required (real logits have no broken twin to replay)."""
    if not isinstance(required, dict):
        required = {None: tuple(required)}
    per_mode = mode_verdicts(evidence)
    per_part = {}
    ok = True
    for part, modes in required.items():
        ev = evidence if part is None else [e for e in evidence if e.part == part]
        pm = mode_verdicts(ev, (relations or {}).get(part))
        per_part[part] = pm
        if not all(pm.get(m) == "fails" for m in modes if m != "logits"):
            ok = False
    if ok:
        return "fails", per_mode, per_part
    overall = combine(evidence)
    return (overall if overall != "fails" else "inconclusive"), per_mode, per_part


# --- what a verdict rests on, and whether it persists across the open choices (issue 34) ----------------

#: what a holding verdict rests on: ``evidence`` (exact, Monte Carlo: support for the paper), ``identity``
#: (a proved identity of the paper's algebra: it cannot fail), ``reconstructed`` (a property of a model or
#: formula this project reconstructed: it cannot fail either, and speaks of our reconstruction). Only
#: ``evidence`` counts as support for the paper.
CLASSES = ("evidence", "identity", "reconstructed")
#: verdicts that decide something (the others say that nothing was decided)
DECIDED = ("holds", "fails")


def reading_class(part_verdicts: dict, part_classes: dict, parts) -> str:
    """What a reading's verdict rests on: among its parts that have the reading's verdict, ``evidence``
    if any is an evidence part, else ``reconstructed`` if any is one, else ``identity`` (a reading
    with no checkable part: ``evidence``)."""
    v = reading_verdict(part_verdicts, parts)
    mine = [part_classes.get(p, "evidence") for p in parts if part_verdicts[p] == v]
    for c in ("evidence", "reconstructed", "identity"):
        if c in mine:
            return c
    return "evidence"


def over_choices(default: str, swept: dict) -> dict:
    """The headline over a claim's open choices (issue 34, item 1): ``default`` is the principal
    reading's verdict with every choice at its default, ``swept`` ``{choice: {value: verdict}}`` its
    verdict at each value of each choice (one at a time, the others at their defaults; the default's
    own value may be among them). The verdict persists when it is the same at every value of every
    choice. A choice **splits** it when two of its values give different decided verdicts (holds at
    one end, fails at the other, in either direction): the headline is then ``depends``. Else a
    choice with a value that decides nothing (inconclusive, not-checkable) where the default decides,
    or decides where the default does not, leaves it **undecided**: the headline is ``inconclusive``.
    Returns ``{"verdict", "depends_on": [choices that split], "undecided_on": [choices with an
    undecided value]}``."""
    depends, undecided = [], []
    for name, by_value in swept.items():
        vs = [default] + list(by_value.values())
        decided = {v for v in vs if v in DECIDED}
        if len(decided) > 1:
            depends.append(name)
        elif len(set(vs)) > 1:
            undecided.append(name)
    verdict = "depends" if depends else "inconclusive" if undecided else default
    return {"verdict": verdict, "depends_on": depends, "undecided_on": undecided}
