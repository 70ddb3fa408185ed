"""The ``spectheory`` command line: the top floor of the house.

It imports everything below it (``spectheory``, ``sims``, ``validate``) and nothing imports it.
:mod:`.app` holds the Typer application and the shared option checks; each ``cmd_*`` module
adds its subcommands to it; :mod:`.main` imports them all and is the console-script entry point
(``spectheory = "spectheory_cli.main:main"``). See docs/architecture.md.
"""
