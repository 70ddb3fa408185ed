"""Verdict aggregation: per evidence mode, and for negative controls."""
from __future__ import annotations

from .evidence import MODES, combine


def mode_verdicts(evidence) -> dict[str, str]:
    """Verdict per evidence mode (``combine`` over that mode's evidence alone)."""
    return {m: combine([e for e in evidence if e.mode == m]) for m in MODES
            if any(e.mode == m for e in evidence)}


def control_verdict(required_modes, evidence) -> tuple[str, dict[str, str]]:
    """A control counts as ``fails`` only if it fails in *every* mode it is required in: a
    broken algorithm caught by the exact engine alone leaves the Monte Carlo unchecked."""
    per_mode = mode_verdicts(evidence)
    need = [m for m in required_modes if m != "logits"]
    if all(per_mode.get(m) == "fails" for m in need):
        return "fails", per_mode
    overall = combine(evidence)
    return (overall if overall != "fails" else "inconclusive"), per_mode
