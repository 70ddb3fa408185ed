"""The API reference builds from the docstrings without a warning (issue 28, item 6): a broken
docstring or an annotation pdoc cannot resolve fails here; the building blocks a user writes
claims with are on their pages."""
from pathlib import Path

import pytest

pytest.importorskip("pdoc")

from spectheory.cli import apidocs  # noqa: E402


def test_api_reference_builds_without_warnings(tmp_path):
    pages = apidocs.build(tmp_path, strict=True)
    names = {p.relative_to(tmp_path).as_posix() for p in pages}
    for page in ("spectheory.html", "sims/registry.html", "sims/shapes.html", "sims/slack.html",
                 "spectheory/judge.html", "spectheory/markov.html", "spectheory/conformance.html",
                 "validate.html"):
        assert page in names, page
    assert not any("_kernels" in n for n in names), "private kernels are not part of the reference"
    registry = (tmp_path / "sims/registry.html").read_text()
    for name in ("register", "Part", "Control", "Reading", "Scope", "Choice"):
        assert f'id="{name}"' in registry, name


def test_a_broken_annotation_fails_the_strict_build(tmp_path, monkeypatch):
    """The strict build is not vacuous: a module whose annotation cannot be resolved fails it."""
    mod = tmp_path / "brokenmod.py"
    mod.write_text('"""A module."""\n\ndef f(x: "NoSuchType") -> int:\n    """Doc."""\n    return 1\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(apidocs, "MODULES", ("brokenmod",))
    with pytest.raises(apidocs.DocsError, match="NoSuchType"):
        apidocs.build(tmp_path / "out", strict=True)
