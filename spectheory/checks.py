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


def as_float_array(values, name: str, error: type = ValueError) -> np.ndarray:
    """``values`` as a float64 array; ``error`` naming the argument for text, ragged nesting
    or complex numbers (NumPy would raise an anonymous error, or drop the imaginary part)."""
    try:
        a = np.asarray(values)
        out = None if a.dtype.kind == "c" else np.asarray(a, dtype=np.float64)
    except (ValueError, TypeError) as err:
        raise error(f"{name} must be a numeric array, got {values!r:.80} ({err})") from None
    if out is None:
        raise error(f"{name} must be real, got complex values")
    return out


def check_real_array(values, name: str, *, lo: float | None = None, hi: float | None = None) -> np.ndarray:
    """A float64 array of finite values in [lo, hi] (for vectorised closed forms)."""
    a = as_float_array(values, name)
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


def _article(word: str) -> str:
    """'an' before a vowel sound (an ERSDRule, an SDRule), else 'a'."""
    acronym = len(word) > 1 and word[:2].isupper()
    return "an" if word[0] in "AEIOU" or (acronym and word[0] in "FHLMNRSX") else "a"


def check_type(value, types, name: str, hint: str = ""):
    """``value`` must be an instance of ``types`` (a class or tuple of classes); TypeError
    naming the argument, the expected class(es) and what was given otherwise."""
    if not isinstance(value, types):
        ts = types if isinstance(types, tuple) else (types,)
        want = " or ".join(_article(t.__name__) + " " + t.__name__ for t in ts)
        raise TypeError(f"{name} must be {want}{hint}, got {type(value).__name__}")
    return value


def check_costs(costs, name: str = "costs", *, n: int | None = None) -> np.ndarray:
    """Per-member call costs: a non-empty 1-D array of finite values ≥ 0, not all zero (a
    throughput divides by the total), of length ``n`` when given."""
    if np.ndim(costs) != 1:
        raise ValueError(f"{name} must be a 1-D sequence of per-member costs, got {costs!r}")
    t = check_real_array(costs, name, lo=0.0)
    if n is not None and t.shape != (n,):
        raise ValueError(f"{name}: give one cost per member ({n}), got {t.shape[0]}")
    if t.size == 0 or t.sum() <= 0:
        raise ValueError(f"{name} must have a positive total (a throughput divides by it), got {costs!r}")
    return t


def check_log_base(base, name: str = "base") -> float:
    """A logarithm base: finite, > 0 and ≠ 1."""
    b = check_real(base, name, lo=0.0, lo_open=True)
    if b == 1.0:
        raise ValueError(f"{name} must not be 1 (log base 1 is undefined), got {base!r}")
    return b


#: Largest number of sequences an exact first-tokens law enumerates (V**n_tokens).
MAX_SEQUENCES = 1 << 24


def check_enumerable(V: int, length: int, name: str = "n_tokens", limit: int = MAX_SEQUENCES) -> int:
    """``V**length`` sequences must fit an exact enumeration; returns ``length``."""
    if V ** length > limit:
        raise ValueError(f"V**{name} = {V}**{length} sequences is too many to enumerate (limit {limit})")
    return length


def check_order_states(S: int, V: int, name: str = "tables") -> int:
    """The order n ≥ 0 of a Markov state space of ``S = V**n`` states (``next = (s·V + x) mod S``
    is only a context update when S is a power of V)."""
    n, s = 0, 1
    while s < S and V > 1:
        s *= V
        n += 1
    if s != S:
        raise ValueError(f"{name} has {S} states, not a power of V = {V} (an order-n Markov state space has V**n)")
    return n


def check_subprobability(values, name: str, *, atol: float = 1e-9) -> np.ndarray:
    """A non-empty 1-D vector of probabilities in [0, 1] with total ≤ 1 (a law that may leave
    mass to an implicit last outcome, e.g. an acceptance-index distribution)."""
    a = as_float_array(values, name) if not isinstance(values, str) else None
    if a is None or a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D vector of probabilities, got {values!r}")
    a = check_real_array(a, name, lo=0.0, hi=1.0)
    if a.sum() > 1.0 + atol:
        raise ValueError(f"{name} must have total mass ≤ 1, got {a.sum()!r}")
    return a


def check_int_array(values, name: str, *, min: int | None = None, max: int | None = None,
                    ndim: int | None = None) -> np.ndarray:
    """An int64 array of integer values (floats with integral values accepted, bools refused)
    in [min, max], of ``ndim`` dimensions when given."""
    a = np.asarray(values)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)
                                or (a.size == 0 and a.dtype == object)):
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.floating) and not (np.isfinite(a).all() and (a == np.round(a)).all()):
        raise ValueError(f"{name} must hold integers, got non-integral values")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {a.shape}")
    a = a.astype(np.int64)
    if a.size and min is not None and a.min() < min:
        raise ValueError(f"{name} must be ≥ {min}, got {a.min()}")
    if a.size and max is not None and a.max() > max:
        raise ValueError(f"{name} must be ≤ {max}, got {a.max()}")
    return a


def check_level(alpha, name: str = "alpha") -> float:
    """A test level (or family-wise error rate) in the open interval (0, 1)."""
    return check_real(alpha, name, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
