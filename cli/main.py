"""Entry point of the ``spectheory`` command: import every subcommand module (each registers its
commands on :data:`spectheory.cli.app.app`), then run the application."""
from __future__ import annotations

# registration order is the order `spectheory --help` lists the commands in
from . import cmd_verify  # noqa: F401,I001  (verify, list)
from . import cmd_conformance  # noqa: F401
from . import cmd_sweep  # noqa: F401
from . import cmd_validate  # noqa: F401
from .app import app

__all__ = ["app", "main"]


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
