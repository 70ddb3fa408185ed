"""Compiled code in a sampler that bypasses the random-source routing of :mod:`.sources`.

The routing replaces Python-level names (``torch.rand``, ``Tensor.exponential_``,
``np.random.*``, ``random.*``, generators in the sampler's namespaces). Code compiled by
TorchScript (``torch.jit.script``/``trace``), ``torch.compile`` (Dynamo), Numba, a C extension
(Cython, a builtin of a compiled module) or a C function reached through ``ctypes`` calls its
generators below Python: its draws never reach the checker's source (a probe cannot force them;
torch's global generator changes state, an *escaped* draw) or, for Numba's own generator and C's
``rand``, are not even seen. :func:`compiled_in` walks everything the sampler can reach, to a small
depth — the function, the globals and module attributes its code names (through attribute chains
like ``mod.fn``), its closure cells and default arguments, a bound method's instance, a callable
object's attributes (an ``nn.Module``'s submodules and attributes included), the attributes and
methods of its class, and the lists, tuples and dicts they hold — and names what it finds with
where it was found, so the report's warning says why a probe could not be applied.
"""
from __future__ import annotations

import sys
import types

#: how deep to follow what the sampler reaches
MAX_DEPTH = 5
_SKIP_MODULES = ("spectheory", "numpy", "torch", "scipy", "random", "builtins", "math", "functools", "typing",
                 "collections", "itertools", "operator", "abc", "enum", "ctypes")
#: objects visited at most (a large model's attributes stop here)
MAX_VISITS = 5000


def _library(obj) -> bool:
    mod = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "") or ""
    return mod.split(".")[0] in _SKIP_MODULES


def _kind(obj) -> str | None:
    """What kind of compiled callable ``obj`` is (None: not one)."""
    t = type(obj)
    mod, name = getattr(t, "__module__", "") or "", t.__name__
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        jit = getattr(torch, "jit", None)
        if jit is not None and isinstance(obj, tuple(c for c in (getattr(jit, "ScriptFunction", None),
                                                                  getattr(jit, "ScriptModule", None)) if c)):
            return "TorchScript (torch.jit.script/trace)"
    if hasattr(obj, "_torchdynamo_orig_callable") or name == "OptimizedModule":
        return "torch.compile (TorchDynamo)"
    if mod.startswith("numba") and "Dispatcher" in name:
        return "Numba (@njit: its own random generator, which the checker can neither route nor see)"
    if name in ("cython_function_or_method", "fused_cython_function"):
        return "a Cython extension"
    if "ctypes" in sys.modules and isinstance(obj, sys.modules["ctypes"]._CFuncPtr):
        return "a C function through ctypes (its draws, e.g. libc's rand, are neither routed nor seen)"
    if isinstance(obj, types.BuiltinFunctionType):
        owner = getattr(obj, "__module__", None) or ""
        if owner and owner.split(".")[0] not in _SKIP_MODULES and owner not in sys.builtin_module_names \
                and not owner.startswith("_"):
            return f"a C extension ({owner})"
    return None


def _label(obj, where: str) -> str:
    # a TorchScript function's qualified_name is mangled when its module is loaded twice: its name
    if isinstance(obj, (types.FunctionType, types.MethodType)):
        name = obj.__qualname__
    else:
        name = getattr(obj, "original_name", None) or (obj.name if isinstance(getattr(obj, "name", None), str)
                                                       else None) or getattr(obj, "__name__", None) or type(obj).__name__
    return f"{name} ({where})" if where else str(name)


def _own_module(g: dict) -> bool:
    return isinstance(g, dict) and g.get("__name__", "").split(".")[0] not in _SKIP_MODULES


_SCALARS = (str, bytes, int, float, complex, bool, type(None))


def compiled_in(fn) -> list[str]:
    """``"<kind>: <name> (<where>)"`` for every compiled callable the sampler ``fn`` reaches."""
    found: dict = {}
    seen: set = set()

    def visit(obj, where: str, depth: int):
        if obj is None or isinstance(obj, _SCALARS) or id(obj) in seen or depth > MAX_DEPTH or len(seen) > MAX_VISITS:
            return
        seen.add(id(obj))
        k = _kind(obj)
        if k is not None:
            found.setdefault(f"{k}: {_label(obj, where)}", None)
            return
        if isinstance(obj, types.ModuleType):
            return
        if isinstance(obj, (list, tuple, set, frozenset)):
            for i, v in enumerate(list(obj)[:64]):
                visit(v, f"{where}[{i}]", depth + 1)
            return
        if isinstance(obj, dict):
            for key, v in list(obj.items())[:256]:
                visit(v, f"{where}[{key!r}]", depth + 1)
            return
        if isinstance(obj, types.MethodType):
            visit(obj.__func__, where, depth)
            visit(obj.__self__, f"the instance of {obj.__qualname__}", depth + 1)
            return
        if isinstance(obj, types.FunctionType):
            _function(obj, where, depth)
            return
        if isinstance(obj, type):
            _class(obj, where, depth)
            return
        if _library(obj) and not hasattr(obj, "__dict__"):
            return
        # an object: a callable object, a bound method's instance, an attribute's value
        inner = getattr(obj, "fn", None) if hasattr(obj, "sources") else None  # a sampler the checker wrapped
        if inner is not None and callable(inner):
            visit(inner, where, depth)
        func = getattr(obj, "func", None)  # functools.partial
        if func is not None and callable(func):
            visit(func, where, depth)
        for key, v in list(getattr(obj, "__dict__", {}).items()):
            if isinstance(v, dict):  # e.g. an nn.Module's _modules
                for k2, v2 in list(v.items())[:256]:
                    visit(v2, f"attribute {key}[{k2!r}]", depth + 1)
            else:
                visit(v, f"attribute {key}", depth + 1)
        _class(type(obj), where, depth)

    def _class(cls, where, depth):
        for c in cls.__mro__:
            if c is object or _library(c) or id(c) in seen:
                continue
            seen.add(id(c))
            for key, v in list(vars(c).items()):
                if key.startswith("__") and key not in ("__call__",):
                    continue
                if isinstance(v, (staticmethod, classmethod)):
                    v = v.__func__
                if isinstance(v, property):
                    v = v.fget
                visit(v, f"class attribute {c.__name__}.{key}", depth + 1)

    def _function(obj, where, depth):
        g = obj.__globals__
        if not _own_module(g):
            return
        codes = [obj.__code__]
        while codes:
            code = codes.pop()
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
            names = code.co_names
            for nm in names:
                val = g.get(nm)
                if val is None:
                    continue
                if isinstance(val, types.ModuleType):
                    if val.__name__.split(".")[0] in _SKIP_MODULES:
                        continue
                    for attr in names:  # mod.fn: the attribute names the code uses
                        sub = getattr(val, attr, None)
                        if sub is not None and not isinstance(sub, types.ModuleType):
                            visit(sub, f"{val.__name__}.{attr}", depth + 1)
                    continue
                visit(val, f"called by {obj.__qualname__}" if callable(val) else f"global {nm} of {obj.__qualname__}",
                      depth + 1)
        for cell in obj.__closure__ or ():
            try:
                val = cell.cell_contents
            except ValueError:
                continue
            visit(val, f"closure of {obj.__qualname__}", depth + 1)
        for v in (obj.__defaults__ or ()) + tuple((obj.__kwdefaults__ or {}).values()):
            visit(v, f"default argument of {obj.__qualname__}", depth + 1)

    visit(fn, "the sampler", 0)
    return list(found)


def bypass_reason(found: list[str]) -> str:
    """The sentence the report and the probes give when compiled code was found."""
    return ("the sampler runs compiled code that draws random numbers below Python, bypassing the checker's routing "
            "of torch's/NumPy's/Python's random functions: " + "; ".join(found) + ". Its draws cannot be forced by "
            "the probes (and a compiled generator's draws are not reproducible from --seed); check the Python "
            "version (e.g. without @torch.jit.script / torch.compile) to have them routed")
