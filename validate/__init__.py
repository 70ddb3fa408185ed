"""Replay spectheory's estimators on real model logits (CLAIMS evidence mode ``logits``).

Plain NumPy: torch/transformers are needed only by :func:`capture_logits`, which imports
them lazily (``pip install 'spectheory[validate]'``).
"""
from .capture import FORMAT_VERSION, LogitTrace, capture_logits
from .compare import compare, evidence_from_report
from .replay import ReplayReport, replay, trace_exact_tokens

__all__ = [
    "FORMAT_VERSION", "LogitTrace", "capture_logits",
    "ReplayReport", "replay", "trace_exact_tokens",
    "compare", "evidence_from_report",
]
