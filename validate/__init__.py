"""Real models against spectheory's theory (evidence mode ``logits``).

NumPy side (no torch): compact traces (:mod:`spectheory.validate.trace`), replay of the SD estimators
(:mod:`spectheory.validate.replay`), run directories (:mod:`spectheory.validate.experiment`), theory vs measurement
(:mod:`spectheory.validate.analysis`), reports (:mod:`spectheory.validate.report`), ``logits`` evidence for
``spectheory verify --logits`` (:mod:`spectheory.validate.evidence`, the family loops' in
:mod:`spectheory.validate.replay_loops`), power by design (:mod:`spectheory.validate.power`: martingale tests and the
sample sizes they need). Torch side, imported lazily (``pip install 'spectheory[validate]'``):
the batched engine (:mod:`spectheory.validate.batch`), capture (:mod:`spectheory.validate.capture`), real speculative
decoding (:mod:`spectheory.validate.specdec`), each family's algorithm on the real pair
(:mod:`spectheory.validate.loops`), model pairs and the offline default pair (:mod:`spectheory.validate.models`).
See docs/validate.md.
"""
from .capture import FORMAT_VERSION, LogitTrace, capture_logits, capture_trace
from .compare import compare, evidence_from_report
from .replay import ReplayReport, replay, trace_exact_tokens
from .trace import TRACE_FORMAT, CompactTrace, sampling_probs, sufficient_statistics

__all__ = [
    "FORMAT_VERSION", "LogitTrace", "capture_logits", "capture_trace",
    "TRACE_FORMAT", "CompactTrace", "sampling_probs", "sufficient_statistics",
    "ReplayReport", "replay", "trace_exact_tokens",
    "compare", "evidence_from_report",
]
