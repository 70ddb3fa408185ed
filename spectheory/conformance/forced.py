"""Random sources handed to a verifier under test.

:class:`ForcedUniforms` stands in for ``numpy.random.Generator`` with every uniform forced to
one value (0, the largest float below 1 in the consumer's dtype, or an exact ratio), so that
the boundary probes (:mod:`spectheory.conformance.probes`) can run a verifier at the extremes
of its random source. :func:`.sources.torch_uniforms` routes torch's (and NumPy's and Python's) global
random functions through such a source (or a real Generator) for code that draws its own
uniforms, as Hugging Face ``transformers``' sampler does (:mod:`.sources` does the routing).

Inverse-CDF sampling here returns the smallest index whose cumulative mass exceeds ``u``
(never a zero-mass token, at u = 0 included) and validates its weights as NumPy/torch do
(NaN, negative or zero-sum weights raise).
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

#: Named forced values: "zero" is 0, "max" the largest float below 1 in the dtype asked for.
FORCED_NAMES = ("zero", "max")
#: Kinds of draws, counted separately: a value compared with an acceptance ratio ("uniform":
#: random, rand, uniform_, bernoulli), an exponential variate (exponential_, expovariate: the
#: keys of an exponential race) and a categorical draw (choice, multinomial, integers).
DRAW_KINDS = ("uniform", "exponential", "categorical")
#: Bits of a uniform in [0, 1) per dtype (torch.rand, NumPy and Python draw multiples of 2^-bits).
UNIFORM_BITS = {np.dtype(np.float64): 53, np.dtype(np.float32): 24, np.dtype(np.float16): 11}


def _below_one(dtype) -> float:
    return float(np.nextafter(np.array(1.0, dtype=dtype), np.array(0.0, dtype=dtype)))


def smallest_uniform(dtype=np.float64) -> float:
    """The smallest positive uniform a generator of ``dtype`` returns: 2^-53 (float64), 2^-24
    (float32), 2^-11 (float16). Forced into the keys of an exponential race (more than one
    exponential drawn at once) in place of u = 0, it gives the smallest positive Exp(1) variate
    −log(1 − u) ≈ u for every key: u = 0 would give E = 0 for every key at once, every key
    p/E infinite — a tie that independent draws never produce (a single E = 0 is CPU torch's
    −log(1 − 0), probability 2^-53, and stays forced)."""
    return 2.0 ** -UNIFORM_BITS.get(np.dtype(dtype), 53)


class DrawCounter:
    """Counts the values handed out, by kind (:data:`DRAW_KINDS`); ``kind(k)`` tags the draws
    made inside a ``with`` block (the routed torch/NumPy/Python functions tag theirs)."""

    def _init_counts(self):
        object.__setattr__(self, "by_kind", dict.fromkeys(DRAW_KINDS, 0))
        object.__setattr__(self, "_kind", None)
        #: exponential draws of one value (a transform of one uniform, e.g. u = 1 − exp(−E))
        object.__setattr__(self, "scalar_exponentials", 0)

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


class CountingGenerator(np.random.Generator, DrawCounter):
    """A ``numpy.random.Generator`` on the same bit generator as ``rng`` (so the same stream)
    that counts what it hands out, by kind: the statistical runs compare, call by call, the
    uniforms a sampler drew with the acceptance decisions it made (a sampler reusing uniforms
    across calls draws fewer)."""

    def __init__(self, rng: np.random.Generator):
        super().__init__(rng.bit_generator)
        self._init_counts()
        self._inside = False  # NumPy's choice calls integers/random itself: count the outer call once

    def total(self) -> int:
        return sum(self.by_kind.values())

    def _count(self, k: int, default: str = "uniform"):
        if not self._inside:
            DrawCounter._count(self, k, default)

    def random(self, size=None, dtype=np.float64, out=None):
        self._count(_size_of(size))
        return super().random(size, dtype=dtype, out=out)

    def uniform(self, low=0.0, high=1.0, size=None):
        self._count(_size_of(size))
        return super().uniform(low, high, size)

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
                   "uniform_value", "value", "draws", "kind", "total", "decision_values"}


class ForcedUniforms(np.random.Generator, DrawCounter):
    """A ``numpy.random.Generator`` whose uniforms all equal ``value`` (a subclass, so code that
    checks ``isinstance(rng, np.random.Generator)`` accepts it).

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
