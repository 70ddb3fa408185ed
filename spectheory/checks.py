"""Argument checks shared by every public entry point (closed forms, Monte Carlo API,
sources, pairs, verifiers, CLI). Each raises ``ValueError`` (``TypeError`` for a wrong
type) with a message that names the argument, the allowed range and what was given, so
bad input fails early instead of giving a silent wrong answer.
"""
from __future__ import annotations

import numbers

import numpy as np


def check_int(value, name: str, *, min: int | None = None, max: int | None = None) -> int:
    """An integer (bool refused; integral floats such as 3.0 accepted) in [min, max]."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got a bool ({value!r})")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real) and np.isfinite(value) and float(value).is_integer():
        v = int(value)
    elif isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    else:
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if min is not None and v < min:
        raise ValueError(f"{name} must be ≥ {min}, got {v}")
    if max is not None and v > max:
        raise ValueError(f"{name} must be ≤ {max}, got {v}")
    return v


def check_real(value, name: str, *, lo: float | None = None, hi: float | None = None,
               lo_open: bool = False, hi_open: bool = False) -> float:
    """A finite real number in the interval given by lo/hi (closed unless ``*_open``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v!r}")
    left = "(" if lo_open else "["
    right = ")" if hi_open else "]"
    rng = f"{left}{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}{right}"
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ValueError(f"{name} must lie in {rng}, got {v!r}")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise ValueError(f"{name} must lie in {rng}, got {v!r}")
    return v


def check_probability(value, name: str) -> float:
    """A probability in [0, 1]."""
    return check_real(value, name, lo=0.0, hi=1.0)


def check_real_array(values, name: str, *, lo: float | None = None, hi: float | None = None) -> np.ndarray:
    """A float64 array of finite values in [lo, hi] (for vectorised closed forms)."""
    a = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {values!r}")
    if lo is not None and (a < lo).any():
        raise ValueError(f"{name} must be ≥ {lo:g}, got {a[a < lo].ravel()[0]!r}")
    if hi is not None and (a > hi).any():
        raise ValueError(f"{name} must be ≤ {hi:g}, got {a[a > hi].ravel()[0]!r}")
    return a


def check_state(state, n_states: int, name: str = "start_state") -> int:
    """A state index in [0, n_states) (negative indices are refused, not wrapped)."""
    return check_int(state, name, min=0, max=n_states - 1)
