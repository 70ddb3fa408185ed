"""The house's floors (docs/architecture.md): arrows only point down.

Every module of the project is parsed (AST, imports at any depth: module level and inside
functions alike) and each import of one of our packages is checked against the floor table:
a module may import its own package and packages on lower floors, never one on its own floor or
above. Circles between modules are refused too, except plugin registration inside one package
(``ALLOWED_CYCLES``: a package's index imports its plugins, which import the index back to
register themselves). ``import spectheory`` alone loads no kernels and no torch.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: package (or folder of scripts) → floor; a module imports only lower floors (and its own
#: package). Floor 4 (tests, benchmarks, notebooks) may import everything. ``spectheory.sims``,
#: ``spectheory.validate`` and ``spectheory.cli`` are installed under the one import root but sit on
#: their own floors; the rest of ``spectheory`` is the ground floor.
FLOORS = {"spectheory": 0, "spectheory.sims": 1, "spectheory.validate": 2, "paper_figs": 2,
          "spectheory.cli": 3, "benchmarks": 4, "tests": 4, "notebooks": 4}
#: package → its folder in the repository (setup.py installs the folders under these names)
FOLDERS = {"spectheory": "spectheory", "spectheory.sims": "sims", "spectheory.validate": "validate",
           "paper_figs": "paper_figs", "spectheory.cli": "cli", "benchmarks": "benchmarks",
           "tests": "tests", "notebooks": "notebooks"}
#: inside the ground floor, the judge stays below everything else of ``spectheory``: it may
#: import only itself and the package's ``__init__`` (the version string)
JUDGE = "spectheory.judge"

#: modules whose arrows may point up, each documented in docs/architecture.md: ``python -m
#: spectheory`` (a script that nothing imports) and the notebook API's lazy re-export in
#: ``spectheory/__init__.py`` (imported on first use of ``spectheory.verify``, never at import time;
#: ``test_importing_spectheory_loads_no_kernels_and_no_torch`` checks that)
ENTRY_SCRIPTS = {"spectheory.__main__": "python -m spectheory runs the command line"}
LAZY_REEXPORTS = {"spectheory": {"spectheory.cli", "spectheory.cli.api"}}

#: circles allowed: plugin registration inside one package (every module of the circle lies
#: in the named package). Each is documented in docs/architecture.md.
ALLOWED_CYCLES = {
    "spectheory.sims": "claim modules register on the registry (spectheory.sims.registry.load_all "
                       "imports spectheory.sims.claims, whose modules import spectheory.sims.registry.register)",
}


def package_of(module: str) -> str | None:
    """The floor-table package a module belongs to (longest prefix)."""
    best = None
    for pkg in FLOORS:
        if (module == pkg or module.startswith(pkg + ".")) and (best is None or len(pkg) > len(best)):
            best = pkg
    return best


def _modules() -> dict[str, Path]:
    out = {}
    for pkg, folder in FOLDERS.items():
        base = ROOT / folder
        if not base.exists():
            continue
        for path in sorted(base.rglob("*.py")):
            if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
                continue
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([pkg, *parts])] = path
    return out


MODULES = _modules()


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> list[str]:
    """Module names an ``ImportFrom`` reaches (``from . import x`` may name submodule x)."""
    if node.level:
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    names = [f"{target}.{a.name}" for a in node.names]
    return [target] + [n for n in names if n in MODULES]


def imports_of(module: str) -> set[str]:
    """Every import (any depth) of ``module`` that names one of our packages, as module names."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= set(_resolve(module, is_pkg, node))
    return {m for m in found if package_of(m) not in (None, "tests")}


def _known(name: str) -> str | None:
    """The module of ours that an imported name refers to (longest existing prefix)."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        cand = ".".join(parts[:k])
        if cand in MODULES:
            return cand
    return None


#: the import graph; a lazy re-export (LAZY_REEXPORTS, an import inside a function that runs on
#: first use) is left out of it: ``test_the_lazy_reexport_stays_lazy`` checks it separately
GRAPH = {m: {k for k in map(_known, imports_of(m)) if k and k != m} - LAZY_REEXPORTS.get(m, set())
         for m in MODULES}


def upward_edges() -> list[str]:
    bad = []
    for mod, deps in GRAPH.items():
        top = package_of(mod)
        if mod in ENTRY_SCRIPTS:
            continue
        for dep in deps:
            dtop = package_of(dep)
            if FLOORS[top] >= 4 or dtop == top:
                continue
            if FLOORS[dtop] >= FLOORS[top]:
                bad.append(f"{mod} (floor {FLOORS[top]}) imports {dep} (floor {FLOORS[dtop]})")
    for mod, deps in GRAPH.items():
        if mod.startswith(JUDGE + ".") or mod == JUDGE:
            for dep in deps:
                if not (dep == "spectheory" or dep == JUDGE or dep.startswith(JUDGE + ".")):
                    bad.append(f"{mod} (the judge) imports {dep}: the judge sits below the rest of spectheory")
    return bad


def cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_the_scan_sees_the_house():
    """The scan is not vacuous: it finds the modules and known downward edges."""
    assert {"spectheory.judge.stats", "spectheory.sims.registry", "spectheory.cli.main", "spectheory.validate.evidence"} <= set(MODULES)
    assert "spectheory.judge.stats" in GRAPH["spectheory.conformance.checks"]
    assert "spectheory.sims.registry" in GRAPH["spectheory.cli.cmd_verify"]
    assert "spectheory.validate.evidence" in GRAPH["spectheory.cli.runs"]


def test_no_arrow_points_up():
    bad = upward_edges()
    assert not bad, "imports that climb a floor (docs/architecture.md):\n" + "\n".join(sorted(bad))


def test_the_command_line_is_imported_by_nothing_but_tests():
    users = [m for m, deps in GRAPH.items() if any(d.startswith("spectheory.cli") for d in deps)
             and not m.startswith(("spectheory.cli", "tests")) and m not in ENTRY_SCRIPTS]
    assert not users, users
    importers = [m for m, deps in GRAPH.items() if any(d in ENTRY_SCRIPTS for d in deps)]
    assert not importers, f"entry scripts are imported by nothing: {importers}"


def test_no_import_circle_except_plugin_registration():
    bad = []
    for comp in cycles():
        pkgs = {package_of(m) for m in comp}
        if len(pkgs) == 1 and pkgs <= set(ALLOWED_CYCLES):
            continue
        bad.append(" ↔ ".join(comp))
    assert not bad, "import circles:\n" + "\n".join(bad)


def test_the_rule_catches_a_climbing_import(monkeypatch):
    """A lower floor importing a higher one is reported, and so is a circle across packages."""
    monkeypatch.setitem(GRAPH, "spectheory.markov", GRAPH["spectheory.markov"] | {"spectheory.sims.registry"})
    assert any("spectheory.markov (floor 0) imports spectheory.sims.registry" in b for b in upward_edges())
    monkeypatch.setitem(GRAPH, "spectheory.judge.stats", GRAPH["spectheory.judge.stats"] | {"spectheory.markov"})
    assert any("the judge" in b for b in upward_edges())
    monkeypatch.setitem(GRAPH, "spectheory.sims.registry", GRAPH["spectheory.sims.registry"] | {"spectheory.markov"})
    assert any({"spectheory.markov", "spectheory.sims.registry"} <= set(c) for c in cycles())


def test_the_lazy_reexport_stays_lazy():
    """``spectheory/__init__.py`` reaches the top floor only inside a function (PEP 562
    ``__getattr__``), never at import time, and the names it re-exports exist there."""
    for mod, targets in LAZY_REEXPORTS.items():
        tree = ast.parse(MODULES[mod].read_text(encoding="utf-8"))
        top_level = {n for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                     for n in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])}
        assert not any(t.startswith(tuple(targets)) or t == "spectheory.cli" for t in top_level), top_level
        assert targets <= {_known(i) for i in imports_of(mod)}, f"{mod} no longer re-exports {targets}"
    import spectheory
    from spectheory.cli import api
    for name in spectheory._API:
        assert getattr(spectheory, name) is getattr(api, name)


def test_importing_spectheory_loads_no_kernels_and_no_torch():
    code = ("import sys, spectheory, spectheory.judge, spectheory.instances\n"
            "bad = [m for m in ('numba', 'torch', 'spectheory.sims', 'spectheory.validate', 'spectheory.cli')\n"
            "       if m in sys.modules]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_worked_example_of_the_architecture_page_runs(monkeypatch):
    """docs/architecture.md's "A claim end to end", executed as the claim module it shows: it
    registers, the subject holds with a least-slack record on its ≥ part, the wrong-constant
    control fails (on the instances and at the searched pair)."""
    import re
    import types

    from spectheory.sims import registry
    from spectheory.sims.runner import run_claims
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page[page.index("## A claim end to end"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.setattr(registry, "REGISTRY", {})
    module = types.ModuleType("spectheory.sims.claims.f_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(code.replace("from ..", "from spectheory.sims."), "docs/architecture.md", "exec"), module.__dict__)
    c = run_claims("f.*", quick=True, progress=False)["claims"][0]
    assert c["verdict"] == "holds" and c["relation"] == "≥", c["notes"]
    rec = c["parts"][0]["least_slack"]
    assert 0.0 <= rec["value"] < 0.05 and rec["instance"]["bound"] == "spectheory.sims.claims.f_example.product_bound"
    ctl = c["controls"][0]
    assert ctl["verdict"] == "fails" and ctl["least_slack"]["main"]["value"] < 0
    assert ctl["counterexample"] and "call" in ctl["counterexample"]


def test_one_import_root_in_a_fresh_process():
    """Every module of the installed packages imports under ``spectheory`` alone: after importing
    all of them (the validate extra included) no top-level ``sims``, ``validate`` or
    ``spectheory_cli`` module was loaded, and each module was loaded from this checkout."""
    names = sorted(m for m in MODULES if package_of(m) in ("spectheory", "spectheory.sims",
                                                          "spectheory.validate", "spectheory.cli")
                   and not m.endswith("__main__"))
    code = ("import importlib, sys\n"
            f"names = {names!r}\n"
            "for n in names:\n"
            "    importlib.import_module(n)\n"
            "stray = sorted(m for m in sys.modules if m.split('.')[0] in ('sims', 'validate', 'spectheory_cli'))\n"
            "assert not stray, stray\n"
            f"outside = [n for n in names if not sys.modules[n].__file__.startswith({str(ROOT)!r})]\n"
            "assert not outside, outside\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT / "tests")
