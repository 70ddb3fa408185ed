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

import numpy as np

#: Named forced values: "zero" is 0, "max" the largest float below 1 in the dtype asked for.
FORCED_NAMES = ("zero", "max")


def _below_one(dtype) -> float:
    return float(np.nextafter(np.array(1.0, dtype=dtype), np.array(0.0, dtype=dtype)))


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
                   "uniform_value", "value", "draws"}


class ForcedUniforms(np.random.Generator):
    """A ``numpy.random.Generator`` whose uniforms all equal ``value`` (a subclass, so code that
    checks ``isinstance(rng, np.random.Generator)`` accepts it).

    value: a float in [0, 1), or ``"zero"``/``"max"`` (the largest float below 1 *in the dtype
    the caller asks for*, so a float32 consumer sees 1 − 2⁻²⁴ and a float64 one 1 − 2⁻⁵³).
    Supports ``random``, ``uniform``, ``choice`` (inverse CDF at the forced value, NumPy's
    argument checks), ``integers`` and ``exponential`` (inverse CDF); any other sampling method raises
    :class:`ForcedSourceUnsupported` (the probe is then reported as not applied, never as
    passed). ``draws`` counts the uniforms handed out.
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

    def __repr__(self):
        return f"ForcedUniforms({self.value!r})"

    __str__ = __repr__

    def uniform_value(self, dtype=np.float64) -> float:
        if self.value == "zero":
            return 0.0
        if self.value == "max":
            return _below_one(dtype)
        return float(np.asarray(self.value, dtype=dtype))

    def random(self, size=None, dtype=np.float64, out=None):
        v = self.uniform_value(dtype)
        if size is None:
            self.draws += 1
            return np.dtype(dtype).type(v) if dtype is not np.float64 else v
        arr = np.full(size, v, dtype=dtype)
        self.draws += arr.size
        return arr

    def uniform(self, low=0.0, high=1.0, size=None):
        u = self.random(size)
        return low + (high - low) * u

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        if high is None:
            low, high = 0, low
        span = high - low + (1 if endpoint else 0)
        u = self.random(size)
        return (low + np.floor(np.asarray(u) * span)).astype(dtype) if size is not None else int(low + np.floor(u * span))

    def exponential(self, scale=1.0, size=None):
        """Exp(scale) by inverse CDF at the forced uniform: −scale·log(1 − u)."""
        return scale * -np.log1p(-np.asarray(self.random(size), dtype=np.float64)) if size is not None \
            else scale * -float(np.log1p(-self.random()))

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
            return pop[inverse_cdf(w, self.uniform_value())]
        m = int(np.prod(size))
        self.draws += m
        return np.full(size, pop[inverse_cdf(w, self.uniform_value())])
