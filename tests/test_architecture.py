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

#: top-level package (or folder of scripts) → floor; a module imports only lower floors (and
#: its own package). Floor 4 (tests, benchmarks, notebooks) may import everything.
FLOORS = {"spectheory": 0, "sims": 1, "validate": 2, "paper_figs": 2, "spectheory.cli": 3,
          "benchmarks": 4, "tests": 4, "notebooks": 4}
#: inside the ground floor, the judge stays below everything else of ``spectheory``: it may
#: import only itself and the package's ``__init__`` (the version string)
JUDGE = "spectheory.judge"

#: scripts that run the top floor and that nothing imports: ``python -m spectheory`` (documented in
#: docs/architecture.md); the only modules whose arrows may point up
ENTRY_SCRIPTS = {"spectheory.__main__": "python -m spectheory runs the command line"}

#: circles allowed: plugin registration inside one package (every module of the circle lies
#: in the named package). Each is documented in docs/architecture.md.
ALLOWED_CYCLES = {
    "sims": "claim modules register on the registry (spectheory.sims.registry.load_all imports spectheory.sims.claims, "
            "whose modules import spectheory.sims.registry.register)",
}


def _modules() -> dict[str, Path]:
    out = {}
    for top in FLOORS:
        base = ROOT / top
        if not base.exists():
            continue
        for path in sorted(base.rglob("*.py")):
            if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
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
    return {m for m in found if m.split(".")[0] in FLOORS and m.split(".")[0] not in ("tests",)}


def _known(name: str) -> str | None:
    """The module of ours that an imported name refers to (longest existing prefix)."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        cand = ".".join(parts[:k])
        if cand in MODULES:
            return cand
    return None


GRAPH = {m: {k for k in map(_known, imports_of(m)) if k and k != m} for m in MODULES}


def upward_edges() -> list[str]:
    bad = []
    for mod, deps in GRAPH.items():
        top = mod.split(".")[0]
        if mod in ENTRY_SCRIPTS:
            continue
        for dep in deps:
            dtop = dep.split(".")[0]
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
        pkgs = {m.split(".")[0] for m in comp}
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


def test_importing_spectheory_loads_no_kernels_and_no_torch():
    code = ("import sys, spectheory, spectheory.judge, spectheory.instances\n"
            "bad = [m for m in ('numba', 'torch', 'sims', 'validate', 'spectheory.cli') if m in sys.modules]\n"
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
    exec(compile(code.replace("from ..", "from sims."), "docs/architecture.md", "exec"), module.__dict__)
    c = run_claims("f.*", quick=True, progress=False)["claims"][0]
    assert c["verdict"] == "holds" and c["relation"] == "≥", c["notes"]
    rec = c["parts"][0]["least_slack"]
    assert 0.0 <= rec["value"] < 0.05 and rec["instance"]["bound"] == "spectheory.sims.claims.f_example.product_bound"
    ctl = c["controls"][0]
    assert ctl["verdict"] == "fails" and ctl["least_slack"]["main"]["value"] < 0
    assert ctl["counterexample"] and "call" in ctl["counterexample"]
