"""Docs that run (issue 20 item 6): every fenced ``bash`` and ``python`` block of README.md and
docs/*.md is executed, so an example cannot drift from the code.

A block runs in the fast tier unless the line before its fence marks it::

    <!-- docs-run: slow (why) -->       run by the slow tier (`make test-slow`): long runs
    <!-- docs-run: models (why) -->     needs the real model pair: the slow tier runs it when
                                        SPECTHEORY_DOCS_MODELS=1 and the default pair is installed
    <!-- docs-run: tests/test_x.py -->  executed by that test (which must name the doc)
    <!-- docs-run: sketch (why) -->     not runnable as written: a signature, a template with
                                        ``...`` placeholders, or commands on code or a cluster only
                                        the reader has (the reason is required)

Blocks run in a sandbox folder that links every top-level entry of the repository except
``reports/`` (so what a command writes stays in the sandbox), with ``.venv/bin`` first on PATH.
The python blocks of one file run in order in one interpreter (later blocks see earlier names).
``text``, ``json`` and unlabelled blocks are outputs, data or file layouts: the README's quoted
outputs are checked by :func:`test_readme_quotes_the_current_outputs`.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```\s*$", re.S | re.M)
_MARK = re.compile(r"<!--\s*docs-run:\s*(?P<kind>[\w./:-]+)\s*(?P<why>\(.*?\))?\s*-->\s*$")
RUNNABLE = ("bash", "sh", "python")


def blocks(path: Path) -> list[dict]:
    """The fenced blocks of a Markdown file: language, body, line, marker kind and reason."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        out.append({"file": path, "lang": m.group("lang"), "body": m.group("body"), "line": line,
                    "kind": mark.group("kind") if mark else "fast", "why": (mark.group("why") or "") if mark else ""})
    return out


ALL = [b for p in DOCS for b in blocks(p)]
RUN = [b for b in ALL if b["lang"] in RUNNABLE]


def _id(b) -> str:
    return f"{b['file'].relative_to(ROOT)}:{b['line']}"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A folder that looks like the checkout (links to every top-level entry but reports/)."""
    box = tmp_path_factory.mktemp("docs-sandbox")
    for entry in ROOT.iterdir():
        if entry.name in ("reports", ".git", ".pytest_cache") or entry.name.startswith(".spectheory"):
            continue
        (box / entry.name).symlink_to(entry)
    return box


def _env():
    env = dict(os.environ)
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("MPLBACKEND", "Agg")
    env["COLUMNS"] = "120"
    return env


def run_block(b, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    if b["lang"] == "python":
        cmd = [sys.executable, "-c", b["body"]]
    else:
        cmd = ["bash", "-e", "-o", "pipefail", "-c", b["body"]]
    return subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)


def _python_file_script(path: Path, kinds) -> str:
    """The python blocks of one file that run in ``kinds``, in order, as one script (a later block
    may use names an earlier one defined)."""
    parts = [b["body"] for b in blocks(path) if b["lang"] == "python" and b["kind"] in kinds]
    return "\n\n".join(parts)


def test_every_block_is_run_or_marked():
    """Each runnable block is fast, slow, models, tested by a named test that names the doc, or a
    sketch that says why it cannot run; unknown markers are refused."""
    bad = []
    for b in RUN:
        kind = b["kind"]
        if kind in ("fast", "slow", "models"):
            continue
        if kind == "sketch":
            if not b["why"].strip("() "):
                bad.append(f"{_id(b)}: a sketch must say why it cannot run: <!-- docs-run: sketch (why) -->")
            continue
        test = ROOT / kind.split("::")[0]
        if not (test.is_file() and str(b["file"].relative_to(ROOT)) in test.read_text()):
            bad.append(f"{_id(b)}: marker {kind!r} is not a test file that names {b['file'].relative_to(ROOT)}")
    assert not bad, "\n".join(bad)


FAST_SHELL = [b for b in RUN if b["kind"] == "fast" and b["lang"] != "python"]
FAST_PY_FILES = sorted({b["file"] for b in RUN if b["kind"] == "fast" and b["lang"] == "python"})


@pytest.mark.parametrize("block", FAST_SHELL, ids=[_id(b) for b in FAST_SHELL])
def test_fast_shell_blocks_run(block, sandbox):
    res = run_block(block, sandbox)
    assert res.returncode == 0, f"{_id(block)} failed:\n{block['body']}\n--- output ---\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"


@pytest.mark.parametrize("path", FAST_PY_FILES, ids=[str(p.relative_to(ROOT)) for p in FAST_PY_FILES])
def test_fast_python_blocks_run(path, sandbox):
    script = _python_file_script(path, ("fast",))
    res = run_block({"lang": "python", "body": script}, sandbox)
    assert res.returncode == 0, f"{path.relative_to(ROOT)}'s python blocks failed:\n{res.stderr[-4000:]}"


SLOW = [b for b in RUN if b["kind"] == "slow"]


@pytest.mark.slow
@pytest.mark.parametrize("block", SLOW, ids=[_id(b) for b in SLOW])
def test_slow_blocks_run(block, sandbox):
    if block["lang"] == "python":  # with the fast blocks of its file before it, as a reader runs them
        earlier = [b["body"] for b in blocks(block["file"]) if b["lang"] == "python" and b["kind"] == "fast"
                   and b["line"] < block["line"]]
        block = {**block, "body": "\n\n".join(earlier + [block["body"]])}
    res = run_block(block, sandbox, timeout=3600)
    assert res.returncode == 0, f"{_id(block)} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"


MODELS = [b for b in RUN if b["kind"] == "models"]


@pytest.mark.slow
@pytest.mark.parametrize("block", MODELS, ids=[_id(b) for b in MODELS])
def test_model_blocks_run(block, sandbox):
    if os.environ.get("SPECTHEORY_DOCS_MODELS") != "1":
        pytest.skip("set SPECTHEORY_DOCS_MODELS=1 to run the blocks that load the real model pair (≈10 GB RAM)")
    from spectheory.validate.models import default_pair_installed
    if not default_pair_installed():
        pytest.skip("the default model pair is not installed (spectheory validate install)")
    res = run_block(block, sandbox, timeout=4 * 3600)
    assert res.returncode == 0, f"{_id(block)} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"


# --- quoted outputs ------------------------------------------------------------------------------

def test_readme_quotes_the_current_outputs():
    """The README's quoted outputs are what `python -m spectheory.sims.readme_outputs` writes: the library
    example's output is recomputed; the verify table is rendered from its stored rows, which
    must list the registry's claims with their relations (`--check` says how to regenerate)."""
    from spectheory.sims import readme_outputs as ro
    from spectheory.sims.registry import load_all
    have = ro.quoted()
    assert set(have) == {"verify-table", "library-example"}, sorted(have)
    fresh = ro.outputs(rerun=False)
    hint = f"README.md is stale: regenerate it with `{ro.COMMAND}`"
    assert have["library-example"] == fresh["library-example"], hint
    assert have["verify-table"] == fresh["verify-table"], hint
    rows = json.loads(ro.STORED.read_text())
    claims = load_all()
    assert [r["id"] for r in rows["claims"]] == list(claims), (
        f"{ro.STORED.relative_to(ROOT)} does not list the registry's claims: rerun `{ro.COMMAND}`")
    assert [r["relation"] for r in rows["claims"]] == [c.relation_label for c in claims.values()], hint


@pytest.mark.slow
def test_readme_verify_table_is_what_verify_prints_now():
    """The slow tier reruns the default verify and compares the README's rows (timing aside)."""
    from spectheory.sims import readme_outputs as ro
    rows = ro.run_verify()
    stored = json.loads(ro.STORED.read_text())
    assert rows["claims"] == stored["claims"], f"the verify table changed: rerun `{ro.COMMAND}`"
