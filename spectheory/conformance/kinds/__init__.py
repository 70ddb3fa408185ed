"""The kinds of sampler ``spectheory.conformance`` tests, one module each (:mod:`..kind` is the
protocol they implement). Adding a kind is one module here and one line below."""
from __future__ import annotations

import importlib

#: --kind name → "module:class" (imported on first use: a NumPy sampler never imports torch)
KINDS = {
    "block": "block:BlockKind",
    "step": "step:StepKind",
    "multidraft": "multidraft:MultiDraftKind",
    "assisted": "assisted:AssistedKind",
    "ragged": "ragged:RaggedKind",
}


def spelled() -> str:
    """The kinds as a sentence: 'block', 'step', … or 'ragged'."""
    names = [f"'{k}'" for k in KINDS]
    return ", ".join(names[:-1]) + " or " + names[-1]


def get_kind(name: str):
    """The :class:`..kind.Kind` subclass registered as ``name``."""
    if name not in KINDS:
        raise ValueError(f"kind must be {spelled()}, got {name!r}")
    module, cls = KINDS[name].split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)
