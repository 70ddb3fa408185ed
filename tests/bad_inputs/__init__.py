"""Rows of the table-driven bad-input test (``tests/test_bad_inputs.py``).

Each family adds a module ``tests/bad_inputs/<family>.py`` defining ``ROWS``, a list of
:func:`bad` rows, one per (public entry point × bad input); the test collects every module
here. A row names the call, its arguments, the exception type and a regular expression the
message must contain, e.g.::

    from . import bad
    from spectheory.closed_forms import se as cf
    ROWS = [bad("se.speedup alpha=NaN", cf.speedup, float("nan"), 4, exc=ValueError, match="finite")]

For the command line, call :func:`run_cli` (a clean usage error raises :class:`CLIError`
with the printed message; a traceback re-raises the original exception, which then fails
the row on its type).
"""
from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple


class Bad(NamedTuple):
    id: str
    call: Callable
    args: tuple
    kwargs: dict
    exc: type
    match: str


def bad(id: str, call: Callable, *args: Any, exc: type = ValueError, match: str = "", **kwargs: Any) -> Bad:
    """One row: ``call(*args, **kwargs)`` must raise ``exc`` with a message matching ``match``."""
    return Bad(id, call, args, kwargs, exc, match)


class CLIError(Exception):
    """The CLI exited with a non-zero status and a clean message (no traceback)."""


def run_cli(*argv: str):
    """Invoke ``spectheory`` in-process; raise :class:`CLIError` on a clean non-zero exit."""
    from typer.testing import CliRunner

    from spectheory.cli.main import app

    res = CliRunner().invoke(app, [str(a) for a in argv])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    if res.exit_code != 0:
        flat = " ".join(re.sub(r"[│╭╮╰╯─┃━]", " ", res.output).split())
        raise CLIError(f"exit {res.exit_code}: {flat}")
    return res
