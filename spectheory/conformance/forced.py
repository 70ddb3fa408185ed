"""Forcing: the random values the checker hands a sampler, their domains, and the forced extremes.

Three sources stand in for ``numpy.random.Generator`` (subclasses, so code that checks
``isinstance(rng, np.random.Generator)`` accepts them):

* :class:`CountingGenerator` — the statistical runs: the run's generator, counting what it hands
  out by kind (uniforms, exponential keys, categorical draws) and the **extremes** among the
  uniforms (a value equal to 0 or to the largest float below 1 of its dtype), so that a failure
  seen in a run can be traced to the rare event that triggered it (:mod:`.severity`);
* :class:`NudgedGenerator` — the same stream with every extreme moved one step inside (0 → the
  smallest positive value of its dtype, the top → the value below it): a failure that disappears
  on the nudged replay of its call was triggered by that extreme;
* :class:`ForcedUniforms` — the boundary probes (:mod:`.probes`): every uniform forced to one
  value (0, the largest float below 1 in the consumer's dtype, or an exact ratio).

**Each routed transform keeps the real library's output domain** (:data:`TRANSFORMS`, tested
against the libraries themselves by driving their generators into chosen states:
``tests/test_conformance_certainty.py``): a stand-in never returns a value the library cannot, and
returns each extreme with the library's probability. Uniforms of torch's CPU kernels are
``k·2⁻²⁴`` (float32, k the low 24 bits of a 32-bit draw) or ``k·2⁻⁵³`` (float64); float16 and
bfloat16 are the float32 value rounded to nearest, 1.0 wrapping to 0; an exponential is
``−log1p(−u)`` of a 53-bit float64 uniform cast to the tensor's dtype (0 exactly with probability
2⁻⁵³ in float32/float64/bfloat16, about 2⁻²⁵ in float16, where small values underflow).

Inverse-CDF sampling here returns the smallest index whose cumulative mass exceeds ``u`` (never
a zero-mass token, at u = 0 included) and validates its weights as NumPy/torch do (NaN, negative
or zero-sum weights raise).
"""
from __future__ import annotations

import contextlib
import math
from functools import lru_cache

import numpy as np

#: Named forced values: "zero" is 0, "max" the largest float below 1 in the dtype asked for.
FORCED_NAMES = ("zero", "max")
#: Kinds of draws, counted separately: a value compared with an acceptance ratio ("uniform":
#: random, rand, uniform_, bernoulli), an exponential variate (exponential_, expovariate: the
#: keys of an exponential race) and a categorical draw (choice, multinomial, integers).
DRAW_KINDS = ("uniform", "exponential", "categorical")
#: Bits of a uniform in [0, 1) per dtype (the top is 1 − 2^-bits; float16/bfloat16: see TRANSFORMS).
UNIFORM_BITS = {np.dtype(np.float64): 53, np.dtype(np.float32): 24, np.dtype(np.float16): 11}
_TOP = {53: 1.0 - 2.0 ** -53, 24: 1.0 - 2.0 ** -24}
#: bfloat16 has no NumPy dtype: its values travel as float32 with this many mantissa bits
BFLOAT16_BITS = 8

#: The routed transforms, what the real library returns (torch's CPU kernels, NumPy, Python) and
#: what the stand-in returns: the same set of values, each extreme with the same probability.
#: ``zero``/``top``: the probability of a value equal to 0 / to the largest value below 1.
TRANSFORMS = (
    {"transform": "torch.rand, rand_like, Tensor.uniform_, bernoulli (float64)", "library":
     "k·2^-53, k the low 53 bits of a 64-bit draw", "stand-in": "NumPy's float64 uniform: k·2^-53",
     "zero": 2.0 ** -53, "top": 2.0 ** -53},
    {"transform": "torch.rand, rand_like, Tensor.uniform_ (float32)", "library":
     "k·2^-24, k the low 24 bits of a 32-bit draw", "stand-in": "NumPy's float32 uniform: k·2^-24",
     "zero": 2.0 ** -24, "top": 2.0 ** -24},
    {"transform": "torch.rand, rand_like, Tensor.uniform_ (float16)", "library":
     "the float32 value rounded to nearest float16; 1.0 wraps to 0", "stand-in": "the same rounding of a float32 "
     "uniform", "zero": (1 + 4096) * 2.0 ** -24, "top": 8191 * 2.0 ** -24},
    {"transform": "torch.rand, rand_like, Tensor.uniform_ (bfloat16)", "library":
     "the float32 value rounded to nearest bfloat16; 1.0 wraps to 0", "stand-in": "the same rounding of a float32 "
     "uniform", "zero": (1 + 32768) * 2.0 ** -24, "top": 65535 * 2.0 ** -24},
    {"transform": "Tensor.exponential_ (float32, float64, bfloat16)", "library":
     "−log1p(−u) of a 53-bit float64 uniform u, cast to the dtype: 0 exactly when u = 0",
     "stand-in": "the same, from NumPy's float64 uniform", "zero": 2.0 ** -53, "top": None},
    {"transform": "Tensor.exponential_ (float16)", "library": "as above; values below 2^-25 round to 0",
     "stand-in": "the same", "zero": 2.0 ** -25, "top": None},
    {"transform": "torch.multinomial (one sample)", "library": "torch's CPU kernel: argmax of p/E over exponential keys "
     "E; a key E = 0 (probability 2^-53) at a zero-mass index returns that index", "stand-in":
     "inverse CDF of one float64 uniform (side='right'): never a zero-mass index, the same law otherwise. Not "
     "reproduced: a sampler is not charged with torch's own 2^-53 event (pytorch#22557)", "zero": None, "top": None},
    {"transform": "np.random.random/rand/uniform, Generator.random, random.random", "library": "k·2^-53",
     "stand-in": "the run's Generator (float64)", "zero": 2.0 ** -53, "top": 2.0 ** -53},
    {"transform": "np.random.exponential, Generator.exponential", "library": "NumPy's ziggurat (> 0 but for 2^-53-rare "
     "cases)", "stand-in": "the run's Generator itself (probes: −log1p(−u) at the forced u)", "zero": None,
     "top": None},
)


def _below_one(dtype) -> float:
    return float(np.nextafter(np.array(1.0, dtype=dtype), np.array(0.0, dtype=dtype)))


def top_uniform(dtype=np.float64) -> float:
    """The largest uniform below 1 a generator of ``dtype`` returns (1 − 2^-53, 1 − 2^-24, 1 − 2^-11)."""
    return _below_one(dtype)


def smallest_uniform(dtype=np.float64) -> float:
    """The smallest positive uniform a generator of ``dtype`` returns: 2^-53 (float64), 2^-24
    (float32), 2^-11 (float16). Forced into the keys of an exponential race (more than one
    exponential drawn at once) in place of u = 0, it gives the smallest positive Exp(1) variate
    −log(1 − u) ≈ u for every key: u = 0 would give E = 0 for every key at once, every key
    p/E infinite — a tie that independent draws never produce (a single E = 0 is CPU torch's
    −log1p(−0), probability 2^-53, and stays forced)."""
    return 2.0 ** -UNIFORM_BITS.get(np.dtype(dtype), 53)


@lru_cache(maxsize=None)
def extreme_probability(which: str, dtype: str = "float64", transform: str = "uniform") -> float:
    """Probability per draw that a routed ``transform`` ("uniform" or "exponential") returns the
    extreme ``which`` ("zero" or "max") in ``dtype`` (see :data:`TRANSFORMS`)."""
    if transform == "exponential":
        return 2.0 ** -25 if dtype == "float16" else 2.0 ** -53
    row = {"float64": 0, "float32": 1, "float16": 2, "bfloat16": 3}.get(dtype, 0)
    return TRANSFORMS[row]["zero" if which == "zero" else "top"]


class DrawCounter:
    """Counts the values handed out, by kind (:data:`DRAW_KINDS`); ``kind(k)`` tags the draws
    made inside a ``with`` block (the routed torch/NumPy/Python functions tag theirs), and
    :attr:`extremes` counts uniforms equal to 0 or to their dtype's top."""

    def _init_counts(self):
        object.__setattr__(self, "by_kind", dict.fromkeys(DRAW_KINDS, 0))
        object.__setattr__(self, "_kind", None)
        #: exponential draws of one value (a transform of one uniform, e.g. u = 1 − exp(−E))
        object.__setattr__(self, "scalar_exponentials", 0)
        object.__setattr__(self, "extremes", 0)

    def _count(self, k: int, default: str = "uniform"):
        kind = self._kind or default
        self.by_kind[kind] += k
        if kind == "exponential" and k == 1:
            object.__setattr__(self, "scalar_exponentials", self.scalar_exponentials + 1)
        return kind

    def decision_values(self) -> int:
        """Values that can decide an acceptance test: uniforms and single exponential draws
        (not the keys of an exponential race, not categorical draws)."""
        return self.by_kind["uniform"] + self.scalar_exponentials

    @contextlib.contextmanager
    def kind(self, kind: str):
        saved = self._kind
        object.__setattr__(self, "_kind", kind)
        try:
            yield self
        finally:
            object.__setattr__(self, "_kind", saved)


def tagged(rng, kind: str):
    """``rng.kind(kind)`` for a counting source, a no-op block for any other generator."""
    return rng.kind(kind) if isinstance(rng, DrawCounter) else contextlib.nullcontext(rng)


def _size_of(size) -> int:
    """How many values a ``size`` argument asks for (None: one)."""
    if size is None:
        return 1
    if isinstance(size, tuple):
        return math.prod(int(k) for k in size)
    return int(np.prod(size))


_F32 = np.dtype(np.float32)


class CountingGenerator(np.random.Generator, DrawCounter):
    """A ``numpy.random.Generator`` on the same bit generator as ``rng`` (so the same stream)
    that counts what it hands out, by kind, and the extremes among its uniforms: the statistical
    runs compare, call by call, the uniforms a sampler drew with the acceptance decisions it made
    (a sampler reusing uniforms across calls draws fewer), and trace a failure to an extreme."""

    def __init__(self, rng: np.random.Generator):
        super().__init__(rng.bit_generator)
        self._init_counts()
        self._inside = False  # NumPy's choice calls integers/random itself: count the outer call once

    def total(self) -> int:
        return sum(self.by_kind.values())

    def _count(self, k: int, default: str = "uniform"):
        if not self._inside:
            DrawCounter._count(self, k, default)

    def _extreme(self, v, bits: int):
        """Count (and, nudging, move) the extremes of ``v``: 0 and 1 − 2^-bits."""
        top = _TOP[bits]
        if isinstance(v, float):
            if v == 0.0 or v == top:
                object.__setattr__(self, "extremes", self.extremes + 1)
                return self._moved(v, bits)
            return v
        n = v.size
        if n <= 8:  # a few values: cheaper in Python than two reductions
            vals = v.ravel().tolist() if n != 1 else [v.item()]
            hit = sum(1 for x in vals if x == 0.0 or x == top)
        else:
            hit = int((v == 0).sum() + (v == np.asarray(top, dtype=v.dtype)).sum()) \
                if v.min() == 0 or v.max() == np.asarray(top, dtype=v.dtype) else 0
        if hit:
            object.__setattr__(self, "extremes", self.extremes + hit)
            return self._moved(v, bits)
        return v

    def _moved(self, v, bits):
        return v

    def random(self, size=None, dtype=np.float64, out=None):
        if not self._inside:
            k = 1 if size is None else (size if type(size) is int else _size_of(size))
            kind = self._kind or "uniform"
            self.by_kind[kind] += k
            if kind == "exponential" and k == 1:
                object.__setattr__(self, "scalar_exponentials", self.scalar_exponentials + 1)
        v = super().random(size, dtype=dtype, out=out)
        return self._extreme(v, 53 if dtype is np.float64 or np.dtype(dtype) != _F32 else 24)

    def uniform(self, low=0.0, high=1.0, size=None):
        u = self.random(size)  # the same stream as Generator.uniform: low + (high − low)·next_double
        return low + (high - low) * u

    def exponential(self, scale=1.0, size=None):
        self._count(_size_of(size), "exponential")
        return super().exponential(scale, size)

    def standard_exponential(self, size=None, dtype=np.float64, method="zig", out=None):
        self._count(_size_of(size), "exponential")
        return super().standard_exponential(size, dtype=dtype, method=method, out=out)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        self._count(_size_of(size), "categorical")
        return super().integers(low, high, size, dtype=dtype, endpoint=endpoint)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        self._count(_size_of(size), "categorical")
        self._inside = True
        try:
            return super().choice(a, size, replace, p, axis, shuffle)
        finally:
            self._inside = False


class NudgedGenerator(CountingGenerator):
    """:class:`CountingGenerator` whose uniforms never hit an extreme: 0 becomes the smallest
    positive value of its dtype and the top the value below it. :attr:`nudged` lists what was
    moved: ``(extreme, dtype)``. Replaying a failing call on it tells whether an extreme
    triggered the failure (:mod:`.severity`)."""

    def __init__(self, rng: np.random.Generator):
        super().__init__(rng)
        self.nudged: list = []

    def _moved(self, v, bits):
        step, top = 2.0 ** -bits, _TOP[bits]
        name = "float32" if bits == 24 else "float64"
        if isinstance(v, float):
            self.nudged.append(("zero" if v == 0.0 else "max", name))
            return step if v == 0.0 else top - step
        v = np.array(v, copy=True)
        t = np.asarray(top, dtype=v.dtype)
        if (v == 0).any():
            self.nudged.append(("zero", name))
        if (v == t).any():
            self.nudged.append(("max", name))
        v[v == 0] = step
        v[v == t] = top - step
        return v


def inverse_cdf(weights, u: float, *, what: str = "probabilities") -> int:
    """Smallest index i with cumsum(w)[i] > u·Σw; weights must be finite, ≥ 0, sum > 0, u in [0, 1)."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"{what} must be a non-empty 1-D vector, got shape {w.shape}")
    if not 0.0 <= u < 1.0:
        raise ValueError(f"u must be a uniform in [0, 1), got {u!r}")
    cdf = np.cumsum(w)
    total = cdf[-1]
    if not (np.isfinite(total) and w.min() >= 0):
        if np.isnan(w).any():
            raise ValueError(f"{what} contain NaN")
        raise ValueError(f"{what} contain inf or a negative entry")
    if not total > 0:
        raise ValueError(f"{what} have zero total mass")
    i = int(np.searchsorted(cdf, u * total, side="right"))
    if i < len(w) and w[i] > 0:
        return i
    return int(np.flatnonzero(w)[-1]) if i >= len(w) else min(i, int(np.flatnonzero(w)[-1]))


class ForcedSourceUnsupported(NotImplementedError):
    """The verifier asked the forced source for a draw it cannot force (e.g. ``normal``)."""


_FORCED_METHODS = {"random", "uniform", "integers", "choice", "exponential", "standard_exponential",
                   "uniform_value", "value", "draws", "kind", "total", "decision_values", "extremes"}


class ForcedUniforms(np.random.Generator, DrawCounter):
    """A ``numpy.random.Generator`` whose uniforms all equal ``value``.

    value: a float in [0, 1), or ``"zero"``/``"max"`` (the largest float below 1 *in the dtype
    the caller asks for*, so a float32 consumer sees 1 − 2⁻²⁴ and a float64 one 1 − 2⁻⁵³).
    Supports ``random``, ``uniform``, ``choice`` (inverse CDF at the forced value, NumPy's
    argument checks), ``integers`` and ``exponential`` (inverse CDF); any other sampling method raises
    :class:`ForcedSourceUnsupported` (the probe is then reported as not applied, never as
    passed). ``draws`` counts the values handed out, ``by_kind`` the same by kind
    (:data:`DRAW_KINDS`). Each transform gets a value in its range: the keys of an exponential
    race at ``"zero"`` get the smallest positive uniform of their dtype (:func:`smallest_uniform`),
    not 0.
    """

    def __getattribute__(self, name):
        if not name.startswith("_") and name not in _FORCED_METHODS and name != "bit_generator" \
                and callable(getattr(np.random.Generator, name, None)):
            raise ForcedSourceUnsupported(f"the forced random source supports random/uniform/integers/"
                                          f"choice/exponential only, not {name}()")
        return super().__getattribute__(name)

    def __init__(self, value):
        super().__init__(np.random.PCG64(0))
        if isinstance(value, str):
            if value not in FORCED_NAMES:
                raise ValueError(f"forced value must be a float in [0, 1) or one of {FORCED_NAMES}, got {value!r}")
        elif not 0.0 <= float(value) < 1.0:
            raise ValueError(f"forced value must lie in [0, 1), got {value!r}")
        self.value = value
        self.draws = 0
        self._init_counts()

    def __repr__(self):
        return f"ForcedUniforms({self.value!r})"

    def total(self) -> int:
        return sum(self.by_kind.values())

    __str__ = __repr__

    def uniform_value(self, dtype=np.float64, size: int = 1) -> float:
        if self.value == "zero":
            # the keys of an exponential race all at E = 0 is a tie independent draws never give
            return smallest_uniform(dtype) if self._kind == "exponential" and size > 1 else 0.0
        if self.value == "max":
            return _below_one(dtype)
        return float(np.asarray(self.value, dtype=dtype))

    def random(self, size=None, dtype=np.float64, out=None):
        v = self.uniform_value(dtype, 1 if size is None else int(np.prod(size)))
        if size is None:
            self.draws += 1
            self._count(1)
            return np.dtype(dtype).type(v) if dtype is not np.float64 else v
        arr = np.full(size, v, dtype=dtype)
        self.draws += arr.size
        self._count(arr.size)
        return arr

    def uniform(self, low=0.0, high=1.0, size=None):
        u = self.random(size)
        return low + (high - low) * u

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        if high is None:
            low, high = 0, low
        span = high - low + (1 if endpoint else 0)
        with self.kind(self._kind or "categorical"):
            u = self.random(size)
        return (low + np.floor(np.asarray(u) * span)).astype(dtype) if size is not None else int(low + np.floor(u * span))

    def exponential(self, scale=1.0, size=None):
        """Exp(scale) by inverse CDF at the forced uniform: −scale·log(1 − u) (u > 0 at "zero")."""
        with self.kind("exponential"):
            u = self.random(size)
        return scale * -np.log1p(-np.asarray(u, dtype=np.float64)) if size is not None \
            else scale * -float(np.log1p(-u))

    def standard_exponential(self, size=None, dtype=np.float64, method="zig", out=None):
        return self.exponential(1.0, size)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        pop = np.arange(a) if isinstance(a, (int, np.integer)) else np.asarray(a)
        n = len(pop)
        w = np.ones(n) if p is None else np.asarray(p, dtype=np.float64)
        if p is not None:
            if w.shape != (n,):
                raise ValueError("a and p must have same size")
            if np.isnan(w).any():
                raise ValueError("probabilities contain NaN")
            if (w < 0).any():
                raise ValueError("probabilities are not non-negative")
            if abs(w.sum() - 1.0) > np.sqrt(np.finfo(np.float64).eps):
                raise ValueError("probabilities do not sum to 1")
        if size is None:
            self.draws += 1
            self._count(1, "categorical")
            return pop[inverse_cdf(w, self.uniform_value())]
        m = int(np.prod(size))
        self.draws += m
        self._count(m, "categorical")
        return np.full(size, pop[inverse_cdf(w, self.uniform_value())])


# --- the routed transforms (used by .sources) ----------------------------------------------------

def _round_bfloat16(u32: np.ndarray) -> np.ndarray:
    """float32 values rounded to nearest bfloat16 (ties to even), kept as float32."""
    b = np.atleast_1d(np.asarray(u32, dtype=np.float32)).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32)


def uniform_values(rng, shape, dtype: str = "float64"):
    """Uniforms of a tensor ``dtype`` ("float64", "float32", "float16", "bfloat16") as torch's
    CPU kernel makes them (:data:`TRANSFORMS`), from a Generator or a :class:`ForcedUniforms`;
    float16 values come back as float16, bfloat16 as float32 holding bfloat16 values."""
    if dtype in ("float64", "float32"):
        return rng.random(shape, dtype=np.float64 if dtype == "float64" else np.float32)
    if isinstance(rng, ForcedUniforms):
        if dtype == "float16":
            return rng.random(shape, dtype=np.float16)
        v = rng.random(shape, dtype=np.float32)
        return np.where(v == _below_one(np.float32), np.float32(1.0 - 2.0 ** -BFLOAT16_BITS), v).astype(np.float32)
    u = np.asarray(rng.random(shape, dtype=np.float32))
    v = u.astype(np.float16) if dtype == "float16" else _round_bfloat16(u).reshape(u.shape)
    return np.where(v == 1, v.dtype.type(0), v)  # torch: a value that rounds to 1.0 wraps to 0


def exponential_values(rng, shape, dtype: str = "float64") -> np.ndarray:
    """Exp(1) values as torch's CPU ``exponential_`` makes them: −log1p(−u) of a 53-bit float64
    uniform (float64 here; the caller casts to the tensor's dtype, where float16 underflows
    below 2^-25). Forced "zero" for several keys at once (a race) gives the smallest positive
    value of the tensor's dtype instead of a tie of zeros."""
    with tagged(rng, "exponential"):
        u = np.asarray(rng.random(shape, dtype=np.float64), dtype=np.float64)
    if isinstance(rng, ForcedUniforms) and dtype == "float16" and rng.value == "zero" and u.size > 1:
        u = np.full_like(u, 2.0 ** -24)  # the smallest float16 above 0: keys stay distinct from a tie of zeros
    return -np.log1p(-u)
