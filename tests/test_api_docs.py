"""The API reference builds from the docstrings without a warning (issue 28, item 6), without torch
installed (what `make apidocs` sets up has no validate extra), and documents the notebook API first
(verify, Report, ClaimResult, EvidenceTable, load_report) beside the building blocks a user writes
claims with; a broken docstring or an annotation pdoc cannot resolve fails here."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pdoc")

from spectheory.cli import apidocs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: the build in a process where torch and transformers cannot be imported (as after `pip install
#: -e '.[docs]'`): strict, so any pdoc warning fails it
NO_TORCH = """
import importlib.abc, json, sys
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NotInstalled())
from pathlib import Path
from spectheory.cli import apidocs
out = Path(sys.argv[1])
pages = apidocs.build(out, strict=True)
print(json.dumps([p.relative_to(out).as_posix() for p in pages]))
"""


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("api")
    res = subprocess.run([sys.executable, "-c", NO_TORCH, str(out)], capture_output=True, text=True, cwd=ROOT,
                         timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    return out, set(json.loads(res.stdout.strip().splitlines()[-1]))


def test_api_reference_builds_without_torch_and_without_warnings(reference):
    out, names = reference
    for page in ("spectheory/cli.html", "spectheory.html", "spectheory/sims/registry.html",
                 "spectheory/sims/shapes.html", "spectheory/sims/slack.html", "spectheory/judge.html",
                 "spectheory/markov.html", "spectheory/conformance.html", "spectheory/validate.html"):
        assert page in names, page
    assert not any("_kernels" in n for n in names), "private kernels are not part of the reference"
    assert not any(n.startswith("spectheory/cli/cmd_") for n in names), "the command line's modules are not API"
    assert "spectheory/conformance/hf_models.html" not in names  # it imports torch at its top
    registry = (out / "spectheory/sims/registry.html").read_text()
    for name in ("register", "Part", "Control", "Reading", "Scope", "Choice"):
        assert f'id="{name}"' in registry, name


def test_the_reference_documents_the_notebook_api(reference):
    out, _ = reference
    page = (out / "spectheory/cli.html").read_text()
    for name in ("verify", "load_report", "Report", "ClaimResult", "EvidenceTable", "Report.to_frame",
                 "Report.records", "Report.write", "ClaimResult.recompute", "ClaimResult.to_frame",
                 "ClaimResult.plot", "EvidenceTable.to_frame"):
        assert f'id="{name}"' in page, name
    root = (out / "spectheory.html").read_text()  # the index redirects to the one root's page
    for sub in ("spectheory.cli", "spectheory.sims", "spectheory.validate"):
        assert f'href="spectheory/{sub.rpartition(".")[2]}.html"' in root, sub


def test_the_torch_module_is_documented_where_torch_is_installed(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    monkeypatch.setattr(apidocs, "MODULES", ("spectheory.conformance.hf_models",))
    pages = apidocs.build(tmp_path, strict=True)
    assert [p.name for p in pages if p.name == "hf_models.html"]


def test_a_broken_annotation_fails_the_strict_build(tmp_path, monkeypatch):
    """The strict build is not vacuous: a module whose annotation cannot be resolved fails it."""
    mod = tmp_path / "brokenmod.py"
    mod.write_text('"""A module."""\n\ndef f(x: "NoSuchType") -> int:\n    """Doc."""\n    return 1\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(apidocs, "MODULES", ("brokenmod",))
    with pytest.raises(apidocs.DocsError, match="NoSuchType"):
        apidocs.build(tmp_path / "out", strict=True)
