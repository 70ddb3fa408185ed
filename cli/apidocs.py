"""API reference pages generated from the docstrings (pdoc): ``python -m spectheory.cli.apidocs
OUT`` (``make apidocs`` writes ``docs/api/``). It documents the notebook API
(``spectheory.cli``: :func:`~spectheory.cli.api.verify`, :class:`~spectheory.cli.api.Report`,
:class:`~spectheory.cli.api.ClaimResult`, :class:`~spectheory.cli.api.EvidenceTable`,
:func:`~spectheory.cli.api.load_report`, and where a run's report goes, :mod:`spectheory.cli.runs`),
then every public module of the package: the engine (theory, engines, Monte Carlo, conformance,
the judge), ``spectheory.sims`` (the claim registry, check shapes, least-slack search, shrinker,
runner, report) and ``spectheory.validate`` (real logits). Left out: ``spectheory._kernels`` (Numba kernels,
private: call them through ``spectheory.montecarlo``), the command line's own modules (its commands
are documented by ``spectheory --help``). It builds without the ``validate`` extra: the one module
that imports torch at its top (``spectheory.conformance.hf_models``) is documented where torch is
installed and left out (by pdoc, silently) where it is not. A docstring pdoc cannot render, or an
annotation it cannot resolve, is a warning, and :func:`build` with ``strict=True`` turns every
warning into an error (``tests/test_api_docs.py``)."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

#: what the reference documents (pdoc module specs; ``!`` excludes, a regular expression). One root:
#: ``spectheory`` brings every submodule; naming a submodule again would make pdoc warn that it was
#: added twice
MODULES = ("spectheory", r"!spectheory\.cli\.(app|main|cmd_\w+)$", r"!spectheory\._kernels")

#: subpackages installed under ``spectheory`` from folders of their own (``setup.py`` maps them)
MAPPED_SUBPACKAGES = ("spectheory.cli", "spectheory.sims", "spectheory.validate")


class DocsError(RuntimeError):
    """pdoc warned while rendering the reference: a broken docstring or annotation."""


def build(out: Path, *, strict: bool = True) -> list[Path]:
    """Render the reference into ``out`` and return the pages written. ``strict``: any pdoc
    warning raises :class:`DocsError` naming every warning."""
    import importlib

    import pdoc
    out = Path(out)
    # The subpackages that live in their own folders (the notebook API, the claim registry, real
    # logits) are not on spectheory's own path: imported first, they are its attributes, and pdoc
    # walks them from the one root like any other submodule.
    for name in MAPPED_SUBPACKAGES:
        importlib.import_module(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*MODULES, output_directory=out)
    messages = sorted({str(w.message) for w in caught})
    if strict and messages:
        raise DocsError("pdoc warned while building the API reference:\n" + "\n".join(f"- {m}" for m in messages))
    return sorted(out.rglob("*.html"))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m spectheory.cli.apidocs OUT_DIR", file=sys.stderr)
        return 2
    pages = build(Path(args[0]))
    print(f"wrote {len(pages)} pages to {args[0]} (start at {Path(args[0]) / 'index.html'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
