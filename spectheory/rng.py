"""Random-state handling: every public sampler takes ``seed`` and turns it into a Generator."""
from __future__ import annotations

import zlib

import numpy as np


def check_random_state(seed) -> np.random.Generator:
    """``None | int | SeedSequence | Generator`` → ``np.random.Generator`` (PCG64)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, (int, np.integer, np.random.SeedSequence)):
        return np.random.default_rng(seed)
    raise TypeError(f"seed must be None, an int, a SeedSequence or a Generator, got {type(seed).__name__}")


def derive_seed(seed: int, *labels: str) -> np.random.SeedSequence:
    """A stable child seed for ``labels`` (e.g. a claim id and an instance name).

    Stable across processes and Python versions (CRC32, not ``hash``), so a report is
    reproducible from its run seed.
    """
    key = tuple(zlib.crc32(label.encode()) for label in labels)
    return np.random.SeedSequence(int(seed), spawn_key=key)
