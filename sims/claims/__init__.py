"""Claim modules, one per family of ``shared/CLAIMS.md``. Importing this package registers
every claim. To add a paper: write ``sims/claims/<family>.py`` with one ``register(...)`` per
catalog id and import it here."""
from . import sd  # noqa: F401
