"""Claim modules, one per family (a paper's claims). Importing this package registers
every claim: each module ``sims/claims/<family>.py`` is imported here in alphabetical order
(``sd`` first, as the reference family), so adding a paper needs no edit to this file."""
from __future__ import annotations

import importlib
import pkgutil

from . import sd  # noqa: F401  (the reference family registers first)

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if not _mod.startswith("_") and _mod != "sd":
        importlib.import_module(f"{__name__}.{_mod}")
