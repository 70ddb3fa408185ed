"""``python -m spectheory``: the ``spectheory`` command line (:mod:`spectheory.cli`).

The one module of the ground floor that reaches the top floor: it is a script that nothing
imports (Python runs it for ``-m``), so no arrow of the library points up (docs/architecture.md)."""
from spectheory.cli.main import main

if __name__ == "__main__":
    main()
