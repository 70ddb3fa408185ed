"""Claims a researcher writes outside the package (docs/your_claims.md): a Python file or an
importable module that calls :func:`spectheory.sims.registry.register` with the same vocabulary the built-in
families use, run by ``spectheory verify --claims-from PATH_OR_MODULE`` (or
``spectheory.sims.runner.run_claims(..., claims_from=[...])``) with the same budgets, levels, shrinking,
least slack and report.

Where claims come from (``spec``):

* a path to a ``.py`` file: imported as the module named after the file (``my_paper.py`` →
  ``my_paper``), with its folder put first on ``sys.path`` so the report's one-line calls
  (``my_paper.measure(...)``) recompute from that folder;
* an importable module name (``mypkg.claims``);
* ``entry-points``: every module an installed package declares in the entry-point group
  ``spectheory.claims`` (``[project.entry-points."spectheory.claims"] mypaper = "mypkg.claims"``).

Safety (issue 29, item 4): a module that raises at import, registers an id twice or an id a
built-in claim already has, or registers nothing, is refused with :class:`UserClaimsError` naming
the problem, before anything runs; the command line turns it into a usage error (exit 2) and
never writes a half-finished report. Problems only a run can show (a checkable part that gets no
graded evidence, a negative control whose check never calls it) are refused the same way by the
runner (:func:`check_run`).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import traceback
from pathlib import Path

from . import registry

#: the entry-point group installed packages declare their claim modules in
ENTRY_POINT_GROUP = "spectheory.claims"
#: the ``spec`` that loads every installed entry point of :data:`ENTRY_POINT_GROUP`
ENTRY_POINTS = "entry-points"

#: what was loaded in this process: spec (a file by its resolved path) → the claim ids it registered
#: (workers replay the specs)
LOADED: dict[str, tuple[str, ...]] = {}
#: the same keys → ``{"spec", "module", "path"}``: what was given, the module imported, its file
SOURCES: dict[str, dict] = {}


class UserClaimsError(ValueError):
    """A user's claim module that cannot be used; the message names the module and the problem."""


def _where(err: BaseException, origin: str, fallback: str = "") -> str:
    """`` at file:line`` of the innermost frame of ``err`` inside ``origin``; else ``fallback`` when
    given (where the user's check is defined: the error arose in the toolkit's call of it, e.g. a
    check with the wrong signature), else the innermost frame; for a syntax error, the line of the
    file that does not parse (not the importer's)."""
    if isinstance(err, SyntaxError) and err.filename:
        return f" at {err.filename}:{err.lineno}" + (f":{err.offset}" if err.offset else "")
    frames = traceback.extract_tb(err.__traceback__)
    mine = [f for f in frames if origin and Path(f.filename).resolve() == Path(origin).resolve()]
    if not mine and fallback:
        return fallback
    f = (mine or frames or [None])[-1]
    return "" if f is None else f" at {f.filename}:{f.lineno}"


_UNEXPECTED = re.compile(r"^([\w.<>]+?)(?:\.__init__)?\(\) got an unexpected keyword argument '(\w+)'")


def _callable_named(name: str, err: BaseException):
    """The callable a TypeError names (``register``, ``Part``, ``Context.size``), looked up in the
    namespaces of the frames it passed through (innermost first), then in the public modules a
    claim file uses."""
    import types
    spaces = []
    tb = err.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for fr in reversed(frames):
        spaces += [fr.f_locals, fr.f_globals]
    head, *rest = name.split(".")
    mods = ("spectheory.sims.registry", "spectheory.sims.shapes", "spectheory.sims.slack", "spectheory.sims.shrink", "spectheory.sims.papers")
    spaces += [vars(sys.modules[m]) for m in mods if m in sys.modules]
    for ns in spaces:
        obj = ns.get(head)
        if obj is None:  # `registry.register(...)`: the name is an attribute of an imported module
            obj = next((getattr(v, head) for v in list(ns.values())
                        if isinstance(v, types.ModuleType) and hasattr(v, head)), None)
        for attr in rest:
            obj = getattr(obj, attr, None)
        if callable(obj):
            return obj
    return None


def keyword_hint(err: BaseException) -> str:
    """`` (did you mean 'relation'?)`` for a TypeError about an unexpected keyword argument, from
    the signature of the callable it names; '' otherwise (or when Python already suggests one)."""
    import difflib
    import inspect
    if not isinstance(err, TypeError) or "did you mean" in str(err).lower():
        return ""
    m = _UNEXPECTED.match(str(err))
    if not m:
        return ""
    fn = _callable_named(m.group(1).rsplit("<locals>.", 1)[-1], err)  # a nested function: by its own name
    try:
        params = [] if fn is None else [p for p in inspect.signature(fn).parameters
                                        if p not in ("self", "args", "kwargs")]
    except (TypeError, ValueError):
        params = []
    close = difflib.get_close_matches(m.group(2), params, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else (f" (it takes: {', '.join(params)})" if params else "")


def describe_error(err: BaseException, origin: str, fallback: str = "") -> str:
    """A user's error in their terms: ``TypeName: message (did you mean ...?) at FILE:LINE`` (a line
    of ``origin``, else ``fallback``: :func:`_where`); for a syntax error ``at FILE:LINE:COLUMN`` of
    the file that does not parse, and that line."""
    text = f"{type(err).__name__}: {err.msg if isinstance(err, SyntaxError) else err}{keyword_hint(err)}" \
        f"{_where(err, origin, fallback)}"
    if isinstance(err, SyntaxError) and err.text and err.text.strip():
        text += f": {err.text.strip()}"
    return text


def check_location(fn) -> str:
    """`` at FILE:LINE`` where a check function is defined ('' when it is not plain Python)."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return "" if code is None else f" at {code.co_filename}:{code.co_firstlineno}"


def _resolve(spec: str) -> tuple[str, str]:
    """``(module name, origin file)`` of a module spec (a .py path or a module name), checked."""
    path = Path(spec)
    if spec.endswith(".py") or path.suffix == ".py" or path.is_file():
        if not path.is_file():
            raise UserClaimsError(f"--claims-from {spec}: no such file")
        if path.suffix != ".py":
            raise UserClaimsError(f"--claims-from {spec}: a claim file must be a Python file (.py)")
        name = path.stem
        if not name.isidentifier():
            raise UserClaimsError(f"--claims-from {spec}: the file name must be a Python identifier "
                                  f"(it becomes the module name in the report's calls), got {name!r}")
        old = sys.modules.get(name)
        if old is not None and Path(getattr(old, "__file__", "") or "").resolve() != path.resolve():
            raise UserClaimsError(f"--claims-from {spec}: a different module named {name!r} is already imported "
                                  f"({getattr(old, '__file__', old)}); rename the file")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        return name, str(path)
    if spec == "spectheory.sims.claims" or spec.startswith("spectheory.sims.claims."):
        raise UserClaimsError(f"--claims-from {spec}: a built-in claim module; select built-in claims with --claims")
    importlib.invalidate_caches()  # a module written since this process started (a notebook's new file)
    try:
        found = importlib.util.find_spec(spec)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise UserClaimsError(f"--claims-from {spec}: no such file, and no importable module of that name")
    return spec, found.origin or ""


def _import(spec: str, name: str, origin: str):
    """Import the module ``name`` of ``spec``; any failure is a :class:`UserClaimsError` in the
    user's terms (file and line, the keyword they meant)."""
    try:
        return importlib.import_module(name)
    except UserClaimsError:
        raise
    except registry.RegistrationError as err:
        raise UserClaimsError(f"{spec}: {err}{_where(err, origin)}") from None
    except Exception as err:  # noqa: BLE001 - any import-time failure of user code is a usage error
        raise UserClaimsError(f"{spec}: importing it raised {describe_error(err, origin)}") from None


def _entry_point_modules() -> list[str]:
    from importlib.metadata import entry_points
    return [ep.value.partition(":")[0] for ep in entry_points(group=ENTRY_POINT_GROUP)]


def _key(spec: str) -> str:
    """What identifies a spec in :data:`LOADED`: a file by its resolved path (``x.py``, ``./x.py``
    and its absolute path are one file), a module by its name."""
    if spec != ENTRY_POINTS and (spec.endswith(".py") or Path(spec).is_file()):
        return str(Path(spec).resolve())
    return spec


def load(spec) -> tuple[str, ...]:
    """Import the claims of ``spec`` (a ``.py`` path, a module name, or :data:`ENTRY_POINTS`) into
    the registry, after the built-in claims; returns the ids it registered. Loading the same spec
    twice in one process is a no-op (returns the same ids), however the file's path is written."""
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise UserClaimsError(f"--claims-from expects a file path or a module name, got {spec!r}")
    spec = spec.strip()
    key = _key(spec)
    if key in LOADED:
        return LOADED[key]
    registry.load_all()  # built-ins first: a user id that clashes with one is refused
    if spec == ENTRY_POINTS:
        mods = _entry_point_modules()
        if not mods:
            raise UserClaimsError(f"--claims-from {ENTRY_POINTS}: no installed package declares the entry-point group "
                                  f"{ENTRY_POINT_GROUP!r}")
        ids: list[str] = []
        for m in mods:
            ids.extend(load(m))
        LOADED[key] = tuple(ids)
        SOURCES[key] = {"spec": spec, "module": None, "path": None}
        return LOADED[key]
    name, origin = _resolve(spec)
    if sys.modules.pop(name, None) is not None:  # imported before, not through load() (a notebook's `import`):
        for cid in [cid for cid, c in registry.REGISTRY.items() if c.check.__module__ == name]:
            del registry.REGISTRY[cid]          # import it afresh so that its register(...) calls run here
    before = set(registry.REGISTRY)
    builtin = {cid for cid, c in registry.REGISTRY.items() if c.check.__module__.startswith("spectheory.sims.claims.")}
    try:
        module = _import(spec, name, origin)
    except UserClaimsError as err:
        for cid in set(registry.REGISTRY) - before:  # never a half-registered module
            del registry.REGISTRY[cid]
        sys.modules.pop(name, None)
        if "registered twice" in str(err):
            clash = [cid for cid in builtin if repr(cid) in str(err)]
            if clash:
                raise UserClaimsError(f"{spec}: claim id {clash[0]!r} is a built-in claim's id; choose another "
                                      "(e.g. prefix your paper's key: 'mypaper.lossless')") from None
        raise
    new = tuple(cid for cid in registry.REGISTRY if cid not in before)
    if not new:
        raise UserClaimsError(f"{spec}: registers no claim (call spectheory.sims.registry.register(...) at module level; "
                              "docs/your_claims.md)")
    LOADED[key] = new
    file = getattr(module, "__file__", None)
    SOURCES[key] = {"spec": spec, "module": name, "path": str(Path(file).resolve()) if file else None}
    return new


def describe(spec) -> dict:
    """Where a loaded spec's claims came from, for the report (``run.claims_files``): ``{"spec",
    "module", "path", "claims"}``; ``path`` is the resolved file (None for entry points), so a
    report read back elsewhere can import it again (:meth:`spectheory.cli.Report` recompute)."""
    key = _key(os.fspath(spec).strip() if isinstance(spec, (str, os.PathLike)) else spec)
    if key not in LOADED:
        load(spec)
    return {**SOURCES[key], "claims": list(LOADED[key])}


def load_many(specs) -> tuple[str, ...]:
    """:func:`load` each spec in order; the ids of all of them."""
    out: list[str] = []
    for s in specs or ():
        out.extend(load(s))
    return tuple(out)


def unload_all() -> None:
    """Forget every user claim loaded in this process (their registry entries, modules and papers
    stay out of later runs: the Bonferroni split counts the registry). For tests and notebooks."""
    from . import papers
    ids = {cid for ids in LOADED.values() for cid in ids}
    mods = {registry.REGISTRY[cid].check.__module__ for cid in ids if cid in registry.REGISTRY}
    for cid in ids:
        registry.REGISTRY.pop(cid, None)
    for m in mods:
        sys.modules.pop(m, None)
    builtin = {k for c in registry.REGISTRY.values() for k in papers.keys_of(c.paper)}
    for key in [k for k in papers.PAPERS if k not in builtin and k not in papers.BUILTIN]:
        del papers.PAPERS[key]
    LOADED.clear()
    SOURCES.clear()


def is_user_claim(claim_id: str) -> bool:
    """Whether a registered claim came from a user's module (not ``spectheory.sims.claims``)."""
    return any(claim_id in ids for ids in LOADED.values())


def check_run(claim, subject_evidence, control_evidence: dict) -> None:
    """Refuse a user claim whose run shows a declaration problem: a negative control whose check
    gave exactly the subject's evidence (the check never used its ``subject`` argument, so the
    control cannot fail for its own reason). Raises :class:`UserClaimsError`."""
    def key(evs):
        return [(e.part, e.mode, e.instance, e.claimed, e.measured, e.outcome) for e in evs]
    mine = key(subject_evidence)
    for name, evs in control_evidence.items():
        if evs and key(evs) == mine:
            raise UserClaimsError(f"{claim.id}: negative control {name!r} never ran: its check gave exactly the "
                                  "subject's evidence (does the check use its `subject` argument?)")
