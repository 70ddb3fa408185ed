"""Random sources handed to a verifier under test.

:class:`ForcedUniforms` stands in for ``numpy.random.Generator`` with every uniform forced to
one value (0, the largest float below 1 in the consumer's dtype, or an exact ratio), so that
the boundary probes (:mod:`spectheory.conformance.probes`) can run a verifier at the extremes
of its random source. :func:`torch_uniforms` routes ``torch.rand``, ``torch.rand_like`` and
``torch.multinomial`` through such a source (or a real Generator) for code that draws its own
uniforms with torch, as Hugging Face ``transformers``' sampler does.

Inverse-CDF sampling here returns the smallest index whose cumulative mass exceeds ``u``
(never a zero-mass token, at u = 0 included) and validates its weights as NumPy/torch do
(NaN, negative or zero-sum weights raise).
"""
from __future__ import annotations

import contextlib

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


_FORCED_METHODS = {"random", "uniform", "integers", "choice", "uniform_value", "value", "draws"}


class ForcedUniforms(np.random.Generator):
    """A ``numpy.random.Generator`` whose uniforms all equal ``value`` (a subclass, so code that
    checks ``isinstance(rng, np.random.Generator)`` accepts it).

    value: a float in [0, 1), or ``"zero"``/``"max"`` (the largest float below 1 *in the dtype
    the caller asks for*, so a float32 consumer sees 1 − 2⁻²⁴ and a float64 one 1 − 2⁻⁵³).
    Supports ``random``, ``uniform``, ``choice`` (inverse CDF at the forced value, NumPy's
    argument checks) and ``integers``; any other sampling method raises
    :class:`ForcedSourceUnsupported` (the probe is then reported as not applied, never as
    passed). ``draws`` counts the uniforms handed out.
    """

    def __getattribute__(self, name):
        if not name.startswith("_") and name not in _FORCED_METHODS and name != "bit_generator" \
                and callable(getattr(np.random.Generator, name, None)):
            raise ForcedSourceUnsupported(f"the forced random source supports random/uniform/integers/"
                                          f"choice only, not {name}()")
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


def _uniform_array(rng, shape, np_dtype):
    """Uniforms in [0, 1) of ``np_dtype`` from a Generator or a ForcedUniforms."""
    if isinstance(rng, ForcedUniforms):
        return rng.random(shape, dtype=np_dtype)
    if np_dtype in (np.float32, np.float64):
        return rng.random(shape, dtype=np_dtype)
    # float16/bfloat16: multiples of 2^-11 below 1 (as torch.rand's 11-bit mantissa draws)
    return (rng.integers(0, 2 ** 11, size=shape) * 2.0 ** -11).astype(np.float32)


def torch_uniforms(rng):
    """Within the block, ``torch.rand``, ``torch.rand_like`` and ``torch.multinomial`` draw from
    ``rng`` (a NumPy Generator or :class:`ForcedUniforms`). ``torch.multinomial`` keeps torch's
    checks (NaN/inf/negative or zero-sum weights raise ``RuntimeError``) and samples by inverse
    CDF; only ``num_samples=1`` is supported."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator or ForcedUniforms, got {type(rng).__name__}")
    return _torch_uniforms(rng)


@contextlib.contextmanager
def _torch_uniforms(rng):
    import torch

    np_of = {torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16,
             torch.bfloat16: np.float16}

    def _rand_tensor(shape, dtype, device=None):
        dtype = dtype or torch.get_default_dtype()
        u = _uniform_array(rng, tuple(shape), np_of.get(dtype, np.float32))
        return torch.as_tensor(np.asarray(u, dtype=np.float64)).to(dtype=dtype, device=device)

    def rand(*size, dtype=None, device=None, generator=None, **kw):
        if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
            size = tuple(size[0])
        return _rand_tensor(size, dtype, device)

    def rand_like(t, dtype=None, device=None, **kw):
        return _rand_tensor(t.shape, dtype or t.dtype, device or t.device)

    def multinomial(input, num_samples, replacement=False, generator=None, out=None):
        if num_samples != 1:
            raise NotImplementedError("the forced random source supports num_samples=1 only")
        w = input.detach().to("cpu", torch.float64).numpy()
        rows = np.atleast_2d(w)
        picks = []
        for row in rows:
            if not np.isfinite(row).all() or (row < 0).any():
                raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
            if row.sum() <= 0:
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            picks.append(inverse_cdf(row, float(_uniform_array(rng, (), np.float64))))
        res = torch.tensor(picks, dtype=torch.long, device=input.device).reshape(-1, 1)
        return res if input.dim() == 2 else res.reshape(1)

    saved = (torch.rand, torch.rand_like, torch.multinomial)
    torch.rand, torch.rand_like, torch.multinomial = rand, rand_like, multinomial
    try:
        yield rng
    finally:
        torch.rand, torch.rand_like, torch.multinomial = saved
