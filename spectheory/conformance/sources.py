"""Every random source a sampler under test may draw from: routed to the checker's source, or
flagged.

While :meth:`RandomSources.active` is open, the common global sources draw from
``RandomSources.current`` (the ``numpy.random.Generator`` of the run, or a
:class:`~spectheory.conformance.forced.ForcedUniforms` during a boundary probe):

* torch's global generator: ``torch.rand``, ``rand_like``, ``randn``, ``randn_like``,
  ``randint``, ``multinomial``, ``bernoulli`` and the in-place ``Tensor.uniform_``,
  ``exponential_``, ``bernoulli_``, ``random_``, ``normal_`` and ``Tensor.multinomial``
  (an explicit ``generator=`` argument is routed too);
* NumPy's global generator (``np.random.random``, ``rand``, ``uniform``, ``choice``, ``randint``,
  ``exponential``, ``standard_normal``, ...) and ``np.random.default_rng()`` without a seed (it
  returns the current source);
* Python's ``random`` module (``random``, ``uniform``, ``choice``, ``choices``, ``randint``,
  ``randrange``, ``expovariate``, ``gauss``);
* in the sampler's own namespaces (its module globals, closure cells and, for a bound method
  or a callable object, its instance attributes): a NumPy ``Generator`` or ``RandomState``, a
  ``random.Random``, and names bound to any of the functions above (``from random import random``)
  are swapped for routed stand-ins during the call.

Whatever is not routed is **detected**: the states of the global generators (torch, NumPy,
``random``), of every generator found in the sampler's namespaces, of every generator the
sampler seeded itself (``default_rng(seed)``) and of every other NumPy bit generator and
``random.Random`` alive in the process (found by :meth:`RandomSources.scan`, run after the
trial call and before the probes; the checker's own generators excluded) are compared before
and after each block of calls (each probe call is its own block). A change means a draw *escaped* the checker's
source: a probe in that block is not applied, and the report warns that the sampler's
statistics are not reproducible from ``--seed``.

Torch is routed only when it is imported (a NumPy sampler never pays for importing it).
:func:`fixed_globals` seeds the global generators, Numba's included, for a whole run
(:func:`.driver.run`) and for each repeat of a probe whose draws escaped.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import random as _pyrandom
import sys
import types

import numpy as np

from bisect import bisect_right as _bisect_right
from itertools import accumulate as _accumulate
from math import isfinite as _isfinite

from .forced import (CountingGenerator, ForcedSourceUnsupported, ForcedUniforms, exponential_values, inverse_cdf,
                     tagged, uniform_values)

_BitGenerator = np.random.bit_generator.BitGenerator
#: ``torch.multinomial`` on a row this short samples in plain Python (per-call overhead of NumPy
#: conversions dominates there); longer rows take the NumPy path. Both draw the same token.
_SMALL_ROW = 64


def _uniform_array(rng, shape, np_dtype):
    """Float64/float32 uniforms in [0, 1) from a Generator or a ForcedUniforms (see
    :func:`.forced.uniform_values` for the torch dtypes)."""
    return uniform_values(rng, shape, "float32" if np.dtype(np_dtype) == np.float32 else "float64")


def _frozen(x):
    """A hashable, comparable copy of a generator state (arrays as bytes: repr of a 624-word
    Mersenne state costs milliseconds)."""
    if isinstance(x, dict):
        return tuple((k, _frozen(v)) for k, v in x.items())
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (list, tuple)):
        return tuple(_frozen(v) for v in x)
    return x


def _state(obj):
    """A comparable snapshot of a generator's state (None: not a generator we know)."""
    if isinstance(obj, _BitGenerator):
        return ("bit", _frozen(obj.state))
    if isinstance(obj, ForcedUniforms):
        return ("forced", obj.draws)
    if isinstance(obj, np.random.Generator):
        return ("np", _frozen(obj.bit_generator.state))
    if isinstance(obj, np.random.RandomState):
        st = obj.get_state(legacy=False)
        return ("rs", _frozen(st))
    if isinstance(obj, _pyrandom.Random):
        try:
            return ("py", obj.getstate())
        except NotImplementedError:  # SystemRandom: OS entropy, no state
            return None
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Generator):
        return ("torch", bytes(obj.get_state().numpy()))
    return None


def _is_generator(obj) -> bool:
    if isinstance(obj, (np.random.Generator, np.random.RandomState, _pyrandom.Random)):
        return True
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Generator)


#: Generators seeded by the sampler during calls that are kept for comparison.
MAX_CREATED = 64
#: What the report calls each global source.
GLOBAL_NAMES = {"torch": "torch's global generator", "numpy": "NumPy's global generator (np.random.*)",
                "random": "Python's random module"}


class _RoutedGenerator(np.random.Generator):
    """A ``numpy.random.Generator`` whose every public method is the current source's (swapped
    in for a generator the sampler keeps in its module or closure)."""

    def __init__(self, router):
        super().__init__(np.random.PCG64(0))
        object.__setattr__(self, "_router", router)

    def __getattribute__(self, name):
        if name.startswith("_") or name in ("bit_generator",):
            return super().__getattribute__(name)
        src = object.__getattribute__(self, "_router").source()
        return getattr(src, name)


class _RoutedRandomState:
    """Legacy ``RandomState`` API on the current source."""

    def __init__(self, router):
        self._router = router

    def __getattr__(self, name):
        fn = self._router.numpy_functions().get(name)
        if fn is None:
            raise ForcedSourceUnsupported(f"RandomState.{name} is not routed through the checker's source")
        return fn


class _RoutedPyRandom(_pyrandom.Random):
    """``random.Random`` API on the current source."""

    def __init__(self, router):
        object.__setattr__(self, "_router", router)
        super().__init__(0)

    def random(self):
        return float(self._router.source().random())

    def __getattribute__(self, name):
        if not name.startswith("_") and name != "random":
            fn = object.__getattribute__(self, "_router").python_functions().get(name)
            if fn is not None:
                return fn
        return super().__getattribute__(name)


class RandomSources:
    """Routing and escape detection for one sampler (see the module docstring)."""

    def __init__(self, fn=None):
        self.fn = fn
        self.current = None
        self._active = False
        #: escapes seen: list of (block label, source description)
        self.escapes: list[tuple[str, str]] = []
        #: generators the sampler seeded itself during calls (compared like the globals)
        self._created: list = []
        self._routed_names: list[str] = []
        self._np_fns = None
        self._py_fns = None
        #: the checker's own generators (drafting, the verifier's rng): never reported
        self._owned: dict = {}
        #: generators found alive by scan() (compared around every block)
        self._scanned: list = []

    def own(self, *generators) -> None:
        """Register generators the checker itself draws from during the calls (the drafting
        rng): their state changes are not escapes."""
        for g in generators:
            b = g.bit_generator if isinstance(g, np.random.Generator) else g
            self._owned[id(b)] = b

    def scan(self) -> int:
        """Find every NumPy bit generator and ``random.Random`` alive in the process (a
        generator the sampler keeps where routing cannot reach it); returns how many are
        watched from now on. The global ones are watched anyway; the checker's own are skipped."""
        skip = {id(np.random.mtrand._rand._bit_generator), id(_pyrandom._inst)} | set(self._owned)
        found = []
        kinds, not_kinds = (_BitGenerator, _pyrandom.Random), (_RoutedPyRandom, _pyrandom.SystemRandom)
        for o in gc.get_objects():
            t = type(o)  # not isinstance: some objects' __class__ properties warn when read
            if issubclass(t, kinds) and not issubclass(t, not_kinds) and id(o) not in skip:
                found.append(o)
        self._scanned = found
        return len(found)

    # --- the current source -----------------------------------------------------------------
    def source(self):
        if self.current is None:
            raise RuntimeError("no random source set for this call")
        return self.current

    # --- routed functions -------------------------------------------------------------------
    def numpy_functions(self) -> dict:
        if self._np_fns is not None:
            return self._np_fns
        src = self.source

        def _size(args, size):
            return size if size is not None else (tuple(args) if args else None)

        def random(size=None, *a, **k):
            return src().random(size)

        def rand(*args):
            return src().random(_size(args, None))

        def uniform(low=0.0, high=1.0, size=None):
            return src().uniform(low, high, size)

        def randint(low, high=None, size=None, dtype=int):
            return src().integers(low, high, size=size)

        def choice(a, size=None, replace=True, p=None):
            return src().choice(a, size=size, replace=replace, p=p)

        def exponential(scale=1.0, size=None):
            s = src()
            if isinstance(s, ForcedUniforms):
                return scale * s.exponential(1.0, size)
            return s.exponential(scale, size)

        def standard_exponential(size=None, *a, **k):
            return exponential(1.0, size)

        def standard_normal(size=None, *a, **k):
            return src().standard_normal(size)

        def randn(*args):
            return src().standard_normal(_size(args, None))

        def normal(loc=0.0, scale=1.0, size=None):
            return src().normal(loc, scale, size)

        def permutation(x):
            return src().permutation(x)

        def shuffle(x):
            return src().shuffle(x)

        self._np_fns = {"random": random, "random_sample": random, "sample": random, "ranf": random,
                        "rand": rand, "uniform": uniform, "randint": randint, "choice": choice,
                        "exponential": exponential, "standard_exponential": standard_exponential,
                        "standard_normal": standard_normal, "randn": randn, "normal": normal,
                        "permutation": permutation, "shuffle": shuffle}
        return self._np_fns

    def python_functions(self) -> dict:
        if self._py_fns is not None:
            return self._py_fns
        src = self.source

        def u():
            return float(src().random())

        def u_as(kind):
            s_ = src()
            with tagged(s_, kind):
                return float(s_.random())

        def uniform(a, b):
            return a + (b - a) * u()

        def randrange(start, stop=None, step=1):
            if stop is None:
                start, stop = 0, start
            n = len(range(start, stop, step))
            if n <= 0:
                raise ValueError("empty range for randrange()")
            return start + step * min(int(u_as("categorical") * n), n - 1)

        def randint(a, b):
            return randrange(a, b + 1)

        def choice(seq):
            if not len(seq):
                raise IndexError("Cannot choose from an empty sequence")
            return seq[min(int(u_as("categorical") * len(seq)), len(seq) - 1)]

        def choices(population, weights=None, *, cum_weights=None, k=1):
            n = len(population)
            if cum_weights is not None:
                w = np.diff(np.concatenate([[0.0], np.asarray(cum_weights, dtype=np.float64)]))
            elif weights is not None:
                w = np.asarray(weights, dtype=np.float64)
            else:
                w = np.ones(n)
            if w.shape != (n,):
                raise ValueError("The number of weights does not match the population")
            return [population[inverse_cdf(w, u_as("categorical"), what="weights")] for _ in range(k)]

        def expovariate(lambd=1.0):
            s_ = src()
            return float(exponential_values(s_, (), "float64")) / lambd

        def gauss(mu=0.0, sigma=1.0):
            return mu + sigma * float(src().standard_normal())

        self._py_fns = {"random": u, "uniform": uniform, "randrange": randrange, "randint": randint,
                        "choice": choice, "choices": choices, "expovariate": expovariate, "gauss": gauss,
                        "normalvariate": gauss}
        return self._py_fns

    def _torch_functions(self, torch) -> tuple[dict, dict]:
        src = self.source
        name_of = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
                   torch.bfloat16: "bfloat16"}
        torch_of = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
                    np.dtype(np.float16): torch.float16}

        def _shape(size):
            if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
                return tuple(size[0])
            return tuple(int(s) for s in size)

        def _tensor(values, dtype, device=None):
            return torch.as_tensor(np.asarray(values, dtype=np.float64)).to(dtype=dtype, device=device)

        def _uniform_tensor(shape, dtype, device=None):
            dtype = dtype or torch.get_default_dtype()
            vals = uniform_values(src(), tuple(shape), name_of.get(dtype, "float32"))
            if (device is None or str(device) == "cpu") and torch_of.get(getattr(vals, "dtype", None)) is dtype:
                return torch.from_numpy(np.asarray(vals))  # the same values, no float64 round trip
            return torch.as_tensor(np.asarray(vals)).to(dtype=dtype, device=device)

        def rand(*size, dtype=None, device=None, generator=None, out=None, requires_grad=False, **kw):
            t = _uniform_tensor(_shape(size), dtype, device)
            return t.requires_grad_(requires_grad) if requires_grad else t

        def rand_like(t, dtype=None, device=None, **kw):
            return _uniform_tensor(t.shape, dtype or t.dtype, device or t.device)

        def randn(*size, dtype=None, device=None, generator=None, **kw):
            dtype = dtype or torch.get_default_dtype()
            return _tensor(src().standard_normal(_shape(size)), dtype, device)

        def randn_like(t, dtype=None, device=None, **kw):
            return _tensor(src().standard_normal(tuple(t.shape)), dtype or t.dtype, device or t.device)

        def randint(*args, size=None, dtype=None, device=None, generator=None, **kw):
            args = list(args)
            if size is None:
                size = args.pop()
            low, high = (0, args[0]) if len(args) == 1 else (args[0], args[1])
            vals = src().integers(int(low), int(high), size=tuple(size))
            return torch.as_tensor(np.asarray(vals, dtype=np.int64)).to(dtype=dtype or torch.int64, device=device)

        def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
            if num_samples == 1 and input.dim() in (1, 2) and input.shape[-1] <= _SMALL_ROW \
                    and input.numel() <= _SMALL_ROW ** 2:
                # the common call on a small vocabulary, in plain Python (the same draws as below);
                # every row is checked before any draw, else the path below raises as torch does
                rows = input.tolist()
                rows = [rows] if input.dim() == 1 else rows
                cdfs = [list(_accumulate(row)) for row in rows]
                if rows and all(cdf and _isfinite(cdf[-1]) and cdf[-1] > 0 and min(row) >= 0
                                for row, cdf in zip(rows, cdfs)):
                    s_ = src()
                    picks = []
                    for row, cdf in zip(rows, cdfs):
                        if type(s_) is CountingGenerator:  # the statistical runs: counted as tagged() counts it
                            if not s_._inside:
                                s_.by_kind["categorical"] += 1
                            u = np.random.Generator.random(s_)
                        else:
                            with tagged(s_, "categorical"):
                                u = float(_uniform_array(s_, (), np.float64))
                        i = _bisect_right(cdf, u * cdf[-1])
                        if i >= len(row) or row[i] <= 0:
                            i = inverse_cdf(row, u)
                        picks.append(i)
                    if input.dim() == 1:
                        return torch.tensor(picks, dtype=torch.long, device=input.device)
                    return torch.tensor(picks, dtype=torch.long, device=input.device).reshape(-1, 1)
            if input.dim() == 1 and num_samples == 1:  # the common call, one pass (same draw as below)
                row = input.detach().to("cpu", torch.float64).numpy()
                cdf = np.cumsum(row)
                total = cdf[-1] if cdf.size else 0.0
                if np.isfinite(total) and total > 0 and row.min() >= 0:
                    s_ = src()
                    with tagged(s_, "categorical"):
                        u = float(_uniform_array(s_, (), np.float64))
                    i = int(np.searchsorted(cdf, u * total, side="right"))
                    if i >= row.size or row[i] <= 0:
                        i = inverse_cdf(row, u)
                    return torch.tensor([i], dtype=torch.long, device=input.device)
            w = input.detach().to("cpu", torch.float64).numpy()
            rows = np.atleast_2d(w)
            picks = []
            for row in rows:
                if not np.isfinite(row).all() or (row < 0).any():
                    raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
                if row.sum() <= 0:
                    raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
                if not replacement and num_samples > int((row > 0).sum()):
                    raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
                r = row.copy()
                got = []
                for _ in range(int(num_samples)):
                    s_ = src()
                    with tagged(s_, "categorical"):
                        i = inverse_cdf(r, float(_uniform_array(s_, (), np.float64)))
                    got.append(i)
                    if not replacement:
                        r[i] = 0.0
                picks.append(got)
            res = torch.tensor(picks, dtype=torch.long, device=input.device)
            return res if input.dim() == 2 else res.reshape(-1)

        def bernoulli(input, p=None, *, generator=None, out=None):
            probs = input if p is None else torch.full_like(input, float(p))
            u = _uniform_tensor(probs.shape, torch.float64)
            return (u < probs.detach().to(torch.float64)).to(input.dtype)

        def _fill(self, values):
            with torch.no_grad():
                self.copy_(torch.as_tensor(np.asarray(values)).to(dtype=self.dtype, device=self.device))
            return self

        def uniform_(self, a=0.0, b=1.0, *, generator=None):
            u = uniform_values(src(), tuple(self.shape), name_of.get(self.dtype, "float32"))
            return _fill(self, a + (b - a) * np.asarray(u, dtype=np.float64))

        def exponential_(self, lambd=1.0, *, generator=None):
            return _fill(self, exponential_values(src(), tuple(self.shape), name_of.get(self.dtype, "float64")) / lambd)

        def bernoulli_(self, p=0.5, *, generator=None):
            probs = p.detach().to("cpu", torch.float64).numpy() if torch.is_tensor(p) else float(p)
            u = np.asarray(_uniform_array(src(), tuple(self.shape), np.float64))
            return _fill(self, (u < probs).astype(np.float64))

        def random_(self, *args, generator=None, **kw):
            if len(args) == 0:
                raise ForcedSourceUnsupported("Tensor.random_() without bounds is not routed")
            low, high = (0, args[0]) if len(args) == 1 else (args[0], args[1])
            return _fill(self, src().integers(int(low), int(high), size=tuple(self.shape)))

        def normal_(self, mean=0.0, std=1.0, *, generator=None):
            return _fill(self, mean + std * np.asarray(src().standard_normal(tuple(self.shape))))

        def t_multinomial(self, num_samples, replacement=False, *, generator=None):
            return multinomial(self, num_samples, replacement)

        module = {"rand": rand, "rand_like": rand_like, "randn": randn, "randn_like": randn_like,
                  "randint": randint, "multinomial": multinomial, "bernoulli": bernoulli}
        methods = {"uniform_": uniform_, "exponential_": exponential_, "bernoulli_": bernoulli_,
                   "random_": random_, "normal_": normal_, "multinomial": t_multinomial}
        return module, methods

    # --- namespaces of the sampler ----------------------------------------------------------
    def _namespaces(self):
        """(kind, container, key) slots in the sampler's own namespaces."""
        fn = self.fn
        seen = set()
        out = []
        objs = [fn]
        inner = getattr(fn, "fn", None)  # a BlockVerifier-like wrapper
        if inner is not None and callable(inner):
            objs.append(inner)
        func = getattr(fn, "func", None)  # functools.partial
        if func is not None and callable(func):
            objs.append(func)
        for obj in list(objs):
            self_ = getattr(obj, "__self__", None)
            if self_ is not None and not isinstance(self_, types.ModuleType):
                objs.append(getattr(obj, "__func__", obj))
                if hasattr(self_, "__dict__") and id(self_.__dict__) not in seen:
                    seen.add(id(self_.__dict__))
                    out.extend(("dict", self_.__dict__, k) for k in list(self_.__dict__))
            elif not isinstance(obj, (types.FunctionType, types.MethodType)) and hasattr(obj, "__dict__") \
                    and hasattr(type(obj), "__call__") and not isinstance(obj, type):
                if id(obj.__dict__) not in seen:
                    seen.add(id(obj.__dict__))
                    out.extend(("dict", obj.__dict__, k) for k in list(obj.__dict__))
                call = getattr(type(obj), "__call__", None)
                if isinstance(call, types.FunctionType):
                    objs.append(call)
        for obj in objs:
            code_fn = getattr(obj, "__func__", obj)
            g = getattr(code_fn, "__globals__", None)
            if isinstance(g, dict) and id(g) not in seen and g.get("__name__", "").split(".")[0] not in \
                    ("spectheory", "numpy", "torch", "random"):
                seen.add(id(g))
                out.extend(("dict", g, k) for k in list(g))
            for cell in getattr(code_fn, "__closure__", None) or ():
                out.append(("cell", cell, None))
        return out

    def _install(self, torch, patches, swaps, watched):
        """Patch the global sources and swap the sampler's names (appending what to undo)."""
        routed_gen, routed_rs, routed_py = _RoutedGenerator(self), _RoutedRandomState(self), _RoutedPyRandom(self)
        originals = {}  # id(original object) -> routed stand-in

        def patch(target, name, value):
            saved = target.__dict__.get(name, _MISSING) if isinstance(target, type) else getattr(target, name, _MISSING)
            patches.append((target, name, saved))
            setattr(target, name, value)

        np_fns = self.numpy_functions()
        for name, f in np_fns.items():
            orig = getattr(np.random, name, None)
            if orig is not None:
                originals[id(orig)] = f
                patch(np.random, name, f)
        real_default_rng = np.random.default_rng
        router = self

        def default_rng(seed=None):
            if seed is None:
                return router.source()
            g = real_default_rng(seed)
            router._created.append((f"a generator the sampler seeded itself (default_rng({seed!r}))", g,
                                    _state(g)))
            return g

        originals[id(real_default_rng)] = default_rng
        patch(np.random, "default_rng", default_rng)
        for name, f in self.python_functions().items():
            orig = getattr(_pyrandom, name, None)
            if orig is not None:
                originals[id(orig)] = f
                patch(_pyrandom, name, f)
        if torch is not None:
            mod_fns, methods = self._torch_functions(torch)
            for name, f in mod_fns.items():
                orig = getattr(torch, name, None)
                if orig is not None:
                    originals[id(orig)] = f
                    patch(torch, name, f)
            for name, f in methods.items():
                patch(torch.Tensor, name, f)
        # the sampler's namespaces: routed stand-ins for generators and imported functions
        for kind, container, key in self._namespaces():
            try:
                val = container.cell_contents if kind == "cell" else container.get(key)
            except ValueError:  # empty cell
                continue
            new = originals.get(id(val))
            if new is None and _is_generator(val) and not isinstance(val, (ForcedUniforms, _RoutedGenerator,
                                                                              _RoutedPyRandom)):
                if isinstance(val, np.random.Generator):
                    new = routed_gen
                elif isinstance(val, np.random.RandomState):
                    new = routed_rs
                elif isinstance(val, _pyrandom.Random):
                    new = routed_py
                    # its raw bits (getrandbits, and shuffle, sample, randbytes built on them) come
                    # from the stand-in's own Mersenne state, not the checker's source: watched
                    if not any(obj is routed_py for _, obj in watched):
                        watched.append(("a random.Random of the sampler drawing raw bits (getrandbits, "
                                        "shuffle, sample, randbytes: not routed)", routed_py))
                else:  # torch.Generator: routed torch functions ignore it; watch it
                    watched.append((f"a torch.Generator of the sampler ({key or 'closure'})", val))
                    continue
            if new is None:
                continue
            swaps.append((kind, container, key, val))
            if kind == "cell":
                container.cell_contents = new
            else:
                container[key] = new

    # --- the active block -------------------------------------------------------------------
    def _snapshot(self, watched):
        snap = {"numpy": _state(np.random.mtrand._rand), "random": _pyrandom.getstate()}
        torch = sys.modules.get("torch")
        if torch is not None:
            snap["torch"] = bytes(torch.random.get_rng_state().numpy())
        for label, obj in watched:
            snap[label] = _state(obj)
        cur = self.current.bit_generator if isinstance(self.current, np.random.Generator) else self.current
        for obj in self._scanned:
            if obj is not cur and id(obj) not in self._owned:
                snap[f"a {type(obj).__name__} generator the checker cannot route (kept where routing does not "
                     f"reach, id {id(obj):#x})"] = _state(obj)
        return snap

    @contextlib.contextmanager
    def active(self, label: str = "calls"):
        """Route the global sources to :attr:`current` and detect escaped draws (see module
        docstring); escapes are appended to :attr:`escapes` as ``(label, source)``."""
        if self._active:  # nested: the outer block routes and detects
            yield self
            return
        torch = sys.modules.get("torch")
        patches: list = []  # (target, name, saved value or _MISSING)
        swaps: list = []    # (kind, container, key, saved value)
        watched: list = []  # (label, generator) compared but not routed
        before = None
        try:
            self._install(torch, patches, swaps, watched)
            self._routed_names = [k or "closure variable" for _, _, k, _ in swaps]
            before = self._snapshot(watched)
            self._active = True
            yield self
        finally:
            self._active = False
            for kind, container, key, val in reversed(swaps):
                if kind == "cell":
                    container.cell_contents = val
                else:
                    container[key] = val
            for target, name, saved in reversed(patches):
                if saved is _MISSING:
                    try:
                        delattr(target, name)
                    except AttributeError:
                        pass
                else:
                    setattr(target, name, saved)
            if before is not None:
                after = self._snapshot(watched)
                for key, st in before.items():
                    if after.get(key) != st:
                        self.escapes.append((label, GLOBAL_NAMES.get(key, key)))
                for desc, g, st in self._created:
                    if _state(g) != st:
                        self.escapes.append((label, desc))
                # compare the next block against the state now; keep the most recent ones only (a
                # sampler seeding a generator per call would otherwise grow this list per call)
                self._created = [(d, g, _state(g)) for d, g, _ in self._created[-MAX_CREATED:]]

    def escaped_in(self, label: str) -> list[str]:
        """Sources that escaped in the block(s) labelled ``label``."""
        return sorted({src for lab, src in self.escapes if lab == label})

    def routed_names(self) -> list[str]:
        """Names in the sampler's namespaces swapped for routed stand-ins (last block)."""
        return list(self._routed_names)


class _Missing:
    pass


_MISSING = _Missing()


def _seed_numba(seed):
    """Seeds Numba's own generators: inside ``@njit`` code, ``np.random`` and ``random`` draw from
    per-thread states apart from NumPy's and Python's, and only a compiled call reaches them."""
    np.random.seed(seed)
    _pyrandom.seed(seed)


@functools.cache
def _numba_seeder():
    """:func:`_seed_numba` compiled (on first use: a run without Numba never pays for it)."""
    from numba import njit
    return njit(cache=True)(_seed_numba)


def _numba_states():
    """Numba's generator states in this thread, to restore after seeding (None when numba is not
    imported: a sampler compiled with Numba has imported it; [] when this Numba does not expose
    its states, which are then seeded but not restored)."""
    if "numba" not in sys.modules:
        return None
    try:
        from numba import _helperlib as h
        return [(h, ptr, h.rnd_get_state(ptr)) for ptr in (h.rnd_get_np_state_ptr(), h.rnd_get_py_state_ptr())]
    except (ImportError, AttributeError):
        return []


@contextlib.contextmanager
def fixed_globals(seed: int):
    """torch's, NumPy's, Python's and Numba's (``np.random``/``random`` inside ``@njit``) global
    generators at a state fixed by ``seed`` inside the block (their states restored after): draws
    that escape the routing are then a function of ``seed``, whatever ran before in the process."""
    torch = sys.modules.get("torch")
    saved = (np.random.get_state(), _pyrandom.getstate(), torch.random.get_rng_state() if torch is not None else None)
    numba_saved = _numba_states()
    np.random.seed(seed)
    _pyrandom.seed(seed)
    if torch is not None:
        torch.random.manual_seed(seed)
    if numba_saved is not None:
        _numba_seeder()(seed)
    try:
        yield
    finally:
        np.random.set_state(saved[0])
        _pyrandom.setstate(saved[1])
        if torch is not None:
            torch.random.set_rng_state(saved[2])
        for h, ptr, state in numba_saved or ():
            h.rnd_set_state(ptr, state)


def torch_uniforms(rng):
    """Within the block, torch's global random functions (``torch.rand``, ``rand_like``,
    ``multinomial``, ``Tensor.uniform_``, ``exponential_``, ...), NumPy's and Python's global
    generators draw from ``rng`` (a NumPy Generator or :class:`ForcedUniforms`); see
    :mod:`spectheory.conformance.sources`. ``torch.multinomial`` keeps torch's checks (NaN/inf/
    negative or zero-sum weights raise ``RuntimeError``) and samples by inverse CDF."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator or ForcedUniforms, got {type(rng).__name__}")
    src = RandomSources()
    src.current = rng
    return src.active("torch_uniforms")
