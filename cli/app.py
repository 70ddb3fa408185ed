"""The Typer application every ``spectheory`` subcommand registers on, and the option checks
they share (run before any work starts, so a bad argument is a one-line usage error)."""
from __future__ import annotations

from pathlib import Path

import typer
from typer.core import TyperOption

_display_type_rich = TyperOption.display_type_rich


def _flag_display_type(self, ctx):
    """A flag (``--quick``, ``--html-report/--no-html``) takes no value: show no ``<bool>`` type."""
    if getattr(self, "is_flag", False) and self.metavar is None:
        return None
    return _display_type_rich(self, ctx)


TyperOption.display_type_rich = _flag_display_type

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Check the theory of speculative decoding claim by claim.")


def _version(value: bool):
    if value:
        from spectheory import __version__
        typer.echo(f"spectheory {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                              help="Print the version and exit.")):
    """Check the theory of speculative decoding claim by claim: `spectheory verify` writes the report
    (docs/report_schema.md), `spectheory list` lists the claims (docs/claims.md)."""


def check_writable(path: Path, option: str) -> None:
    """Fail before the run (not after it) if the report cannot be written to ``path``:
    its folder is created if missing; an existing directory, a parent that is a file or an
    unwritable location is a clean usage error."""
    if path.is_dir():
        raise typer.BadParameter(f"{path} is a directory, not a file", param_hint=option)
    for parent in (path.parent, *path.parent.parents):
        if parent.exists() and not parent.is_dir():
            raise typer.BadParameter(f"cannot write {path}: {parent} is a file, not a folder", param_hint=option)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise typer.BadParameter(f"cannot create the folder {path.parent}: {err.strerror or err}",
                                 param_hint=option) from None
    existed = path.exists()
    try:
        with open(path, "a"):
            pass
    except OSError as err:
        raise typer.BadParameter(f"cannot write {path}: {err.strerror or err}", param_hint=option) from None
    if not existed:
        path.unlink()
