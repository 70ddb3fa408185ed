"""Evidence records and verdicts: the stable vocabulary of every report (verify, conformance, validate)."""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import asdict, dataclass

import numpy as np

#: a claim's headline verdict; ``depends``: the principal reading fails at the default of an open
#: modelling choice but not at every admissible value of it (issue 24, item 3; the parts and readings
#: themselves are always one of the other four)
VERDICTS = ("holds", "fails", "inconclusive", "not-checkable", "depends")
#: evidence modes: exact enumeration, Monte Carlo, real-model logits, and a symbolic ``proof`` of an
#: identity part (issue 24, item 4: pass/fail, made by the runner from the part's ``proof()``)
MODES = ("exact", "mc", "logits", "proof")
#: the modes of the paper-level ("synthetic") verdict; ``logits`` evidence gets its own verdict
#: beside it (issue 25, item 3)
SYNTHETIC_MODES = ("exact", "mc", "proof")
#: outcome of one piece of evidence: pass (consistent with the claim, with enough power),
#: fail (the claim is rejected), underpowered (not rejected, but the test could not see the
#: deviation that matters), info (reported, does not enter the verdict).
OUTCOMES = ("pass", "fail", "underpowered", "info")


#: the part of a claim being checked (set by :func:`tagging`): evidence created while it is set,
#: and naming no part itself, bears on that part
_CURRENT_PART: ContextVar[str | None] = ContextVar("spectheory_current_part", default=None)


@contextlib.contextmanager
def tagging(part: str):
    """Inside ``with tagging("iid"):`` every :class:`Evidence` created without a ``part`` gets
    ``part="iid"`` (what ``ctx.part("iid")`` of the claim registry uses)."""
    token = _CURRENT_PART.set(part)
    try:
        yield
    finally:
        _CURRENT_PART.reset(token)


def _num(x):
    if x is None:
        return None
    if isinstance(x, (np.integer,)):
        return int(x)
    x = float(x)
    return x if np.isfinite(x) else (None if np.isnan(x) else ("inf" if x > 0 else "-inf"))


@dataclass
class Evidence:
    """One comparison of a claimed value with a measured one.

    ``claimed``/``measured`` are numbers of the same quantity (for a distributional claim:
    the claimed distance 0 and the measured distance). ``alpha`` is the per-test error rate,
    ``detectable`` the deviation the test catches with probability ``power`` (the power
    statement), ``tolerance`` the deviation that matters for this claim (a test whose
    ``detectable`` exceeds it is ``underpowered``).

    ``part``: the id of the part of the claim this evidence bears on (registry v2; the runner
    tags evidence of a one-part claim with its only part). ``points``: for evidence graded at
    the worst point of a sweep, every point of the sweep (``{settings..., "claimed",
    "measured", "outcome"}``), so a curve can be drawn and any point re-read.
    """

    mode: str
    instance: str
    claimed: float | None
    measured: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    n: int | None = None
    test: str = ""
    alpha: float | None = None
    power: float | None = None
    detectable: float | None = None
    tolerance: float | None = None
    outcome: str = "info"
    note: str = ""
    part: str | None = None
    points: list | None = None
    #: a ``fail`` of a strict inequality (< or >) by equality only: claimed == measured within the
    #: comparison's tolerance (issue 24, item 4: reported as "fails by equality (tie)")
    tie: bool = False
    #: why the instance lies outside the claim's scope (issue 24, item 2): such evidence is
    #: ``info``, shown as "outside the claim's scope: ...", never a counterexample
    out_of_scope: str = ""
    #: a negative control's row in ``logits`` mode (issue 25): "rejected" when the broken
    #: verifier failed the test, as it must, "not rejected" when it did not; "" otherwise
    control: str = ""
    #: for an inequality comparison: the margin by which it holds (≥ 0 while it holds, negative by how
    #: much it fails), in the comparison's own units; None for an equality or law (issue 34: a hold's
    #: least slack over the open choices is the least of these and of the part's least-slack record)
    slack: float | None = None

    def __post_init__(self):
        if self.part is None:
            self.part = _CURRENT_PART.get()
        if self.mode not in MODES:
            raise ValueError(f"unknown evidence mode {self.mode!r}")
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}")
        if self.control not in ("", "rejected", "not rejected"):
            raise ValueError(f"control must be '', 'rejected' or 'not rejected', got {self.control!r}")
        if self.out_of_scope and self.outcome != "info":
            raise ValueError(f"evidence outside the claim's scope ({self.out_of_scope}) must be info, "
                             f"got outcome {self.outcome!r}")
        if self.tie and self.outcome != "fail":
            raise ValueError("tie=True marks a fail by equality only; the outcome must be 'fail'")

    def to_json(self) -> dict:
        d = asdict(self)
        for k in ("claimed", "measured", "ci_low", "ci_high", "p_value", "alpha", "power",
                  "detectable", "tolerance"):
            d[k] = _num(d[k])
        d["n"] = None if self.n is None else int(self.n)
        if not self.tie:
            del d["tie"]
        if not self.out_of_scope:
            del d["out_of_scope"]
        if not self.control:
            del d["control"]
        if self.slack is None:
            del d["slack"]
        else:
            d["slack"] = _num(self.slack)
        if self.points is None:
            del d["points"]
        else:
            d["points"] = [{k: (_num(v) if isinstance(v, (float, np.floating, np.integer)) else v)
                            for k, v in pt.items()} for pt in self.points]
        return d


def combine(evidence: list[Evidence]) -> str:
    """Verdict from evidence: any ``fail`` → fails; every non-info item ``pass`` → holds;
    otherwise (some underpowered, or nothing but info) → inconclusive."""
    graded = [e for e in evidence if e.outcome != "info"]
    if any(e.outcome == "fail" for e in graded):
        return "fails"
    if graded and all(e.outcome == "pass" for e in graded):
        return "holds"
    return "inconclusive"
