"""Compiled code in a sampler that bypasses the random-source routing of :mod:`.sources`.

The routing replaces Python-level names (``torch.rand``, ``Tensor.exponential_``,
``np.random.*``, ``random.*``, generators in the sampler's namespaces). Code compiled by
TorchScript (``torch.jit.script``/``trace``), ``torch.compile`` (Dynamo), Numba or a C
extension calls the generators below Python: its draws never reach the checker's source (a
probe cannot force them; torch's global generator changes state, an *escaped* draw) or, for
Numba's own generator, are not even seen. :func:`compiled_in` walks the sampler's code — the
function, the globals its code names (through attribute chains like ``mod.fn``), its closure
cells, the callable objects' ``__call__`` and the Python helpers it calls, to a small depth — and
names what it finds, so the report's warning says why a probe could not be applied.
"""
from __future__ import annotations

import sys
import types

#: how deep to follow Python helpers called by the sampler
MAX_DEPTH = 4
_SKIP_MODULES = ("spectheory", "numpy", "torch", "scipy", "random", "builtins", "math", "functools", "typing",
                 "collections", "itertools", "operator")


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


def compiled_in(fn) -> list[str]:
    """``"<kind>: <name> (<where>)"`` for every compiled callable the sampler ``fn`` reaches."""
    found: dict = {}
    seen: set = set()

    def visit(obj, where: str, depth: int):
        if obj is None or id(obj) in seen or depth > MAX_DEPTH:
            return
        seen.add(id(obj))
        k = _kind(obj)
        if k is not None:
            found.setdefault(f"{k}: {_label(obj, where)}", None)
            return
        inner = getattr(obj, "fn", None)  # a BlockVerifier-like wrapper
        if inner is not None and callable(inner) and not isinstance(obj, types.FunctionType):
            visit(inner, where, depth)
        func = getattr(obj, "func", None)  # functools.partial
        if func is not None and callable(func) and not isinstance(obj, types.FunctionType):
            visit(func, where, depth)
        if isinstance(obj, types.MethodType):
            visit(obj.__func__, where, depth)
            return
        if not isinstance(obj, types.FunctionType):
            call = getattr(type(obj), "__call__", None)
            if isinstance(call, types.FunctionType) and not isinstance(obj, type):
                visit(call, where, depth)
                for k_, v in list(getattr(obj, "__dict__", {}).items()):
                    if isinstance(v, dict):  # e.g. an nn.Module's _modules
                        for k2, v2 in list(v.items()):
                            if callable(v2):
                                visit(v2, f"attribute {k_}[{k2!r}]", depth + 1)
                    elif callable(v):
                        visit(v, f"attribute {k_}", depth + 1)
            return
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
                if callable(val):
                    visit(val, f"called by {obj.__qualname__}", depth + 1)
        for cell in obj.__closure__ or ():
            try:
                val = cell.cell_contents
            except ValueError:
                continue
            if callable(val):
                visit(val, f"closure of {obj.__qualname__}", depth + 1)

    visit(fn, "the sampler", 0)
    return list(found)


def bypass_reason(found: list[str]) -> str:
    """The sentence the report and the probes give when compiled code was found."""
    return ("the sampler runs compiled code that draws random numbers below Python, bypassing the checker's routing "
            "of torch's/NumPy's/Python's random functions: " + "; ".join(found) + ". Its draws cannot be forced by "
            "the probes (and a compiled generator's draws are not reproducible from --seed); check the Python "
            "version (e.g. without @torch.jit.script / torch.compile) to have them routed")
