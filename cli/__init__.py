"""The ``spectheory`` command line: the top floor of the house.

It imports everything below it (``spectheory``, ``sims``, ``validate``) and nothing imports it.
:mod:`.app` holds the Typer application and the shared option checks; each ``cmd_*`` module
adds its subcommands to it; :mod:`.main` imports them all and is the console-script entry point
(``spectheory = "spectheory.cli.main:main"``). See docs/architecture.md.

The Python API (:mod:`.api`) lives here too, for the same reason: a run with real-model evidence
needs ``validate``. ``from spectheory.cli import verify`` runs claims and returns a
:class:`~spectheory.cli.api.Report`; ``load_report(path)`` reads a report back. ``python -m
spectheory`` runs the command line.
"""
from .api import ClaimResult, EvidenceTable, Report, load_report, verify

__all__ = ["verify", "load_report", "Report", "ClaimResult", "EvidenceTable"]
