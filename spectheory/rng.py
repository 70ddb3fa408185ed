"""Random-state handling: every public sampler takes ``seed`` and turns it into a Generator."""
from __future__ import annotations

import zlib

import numpy as np


def check_random_state(seed) -> np.random.Generator:
    """``None | int | SeedSequence | Generator`` → ``np.random.Generator`` (PCG64)."""
    if isinstance(seed, np.random.Generator):
        return seed
    _check_seed_sign(seed)
    if seed is None or isinstance(seed, (int, np.integer, np.random.SeedSequence)):
        return np.random.default_rng(seed)
    raise TypeError(f"seed must be None, an int, a SeedSequence or a Generator, got {type(seed).__name__}")


def _check_seed_sign(seed) -> None:
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"seed must be None, an int, a SeedSequence or a Generator, got a bool ({seed!r})")
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise ValueError(f"seed must be ≥ 0, got {seed}")


def derive_seed(seed: int, *labels: str) -> np.random.SeedSequence:
    """A stable child seed for ``labels`` (e.g. a claim id and an instance name).

    Stable across processes and Python versions (CRC32, not ``hash``), so a report is
    reproducible from its run seed.
    """
    key = tuple(zlib.crc32(label.encode()) for label in labels)
    return np.random.SeedSequence(int(seed), spawn_key=key)


def stream_states(seed, n_streams: int) -> np.ndarray:
    """``(n_streams, 4)`` uint64 xoshiro256++ states for the in-kernel generator
    (:mod:`spectheory._kernels.core`), one per independent stream, spawned from ``seed``
    (``None | int | SeedSequence | Generator``; a Generator contributes one draw of entropy).
    Stream i depends only on (seed, i), never on how many threads run the streams."""
    if int(n_streams) != n_streams or n_streams < 1:
        raise ValueError(f"n_streams must be an integer ≥ 1, got {n_streams!r}")
    if isinstance(seed, np.random.Generator):
        ss = np.random.SeedSequence(int(seed.integers(0, 2**63)))
    elif isinstance(seed, np.random.SeedSequence):
        ss = seed
    elif seed is None or isinstance(seed, (int, np.integer)):
        _check_seed_sign(seed)
        ss = np.random.SeedSequence(seed)
    else:
        raise TypeError(f"seed must be None, an int, a SeedSequence or a Generator, got {type(seed).__name__}")
    out = np.empty((int(n_streams), 4), dtype=np.uint64)
    for i, child in enumerate(ss.spawn(int(n_streams))):
        st = child.generate_state(4, np.uint64)
        if not st.any():  # the all-zero state is a fixed point of xoshiro
            st[0] = 1
        out[i] = st
    return out


def sample_index(rng: np.random.Generator, p: np.ndarray) -> int:
    """One draw from the 1-D float64 distribution ``p``, exactly ``int(rng.choice(len(p), p=p))``.

    The same computation as ``Generator.choice`` with replacement (NumPy 1.17 – 2.x): the
    cumulative sum normalised by its last entry, one uniform ``rng.random()``, the first index
    whose cumulative value exceeds it. So the token and the generator's stream are identical,
    bit for bit. What it skips are choice's checks of ``p`` (no negative entry, sum within
    √eps of 1: a negation, a reduction and a serial Kahan sum over V entries); call it only on
    distributions the toolkit built itself, and ``rng.choice`` on anything from a user.
    """
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    return int(cdf.searchsorted(rng.random(), side="right"))
