import os

os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_sessionstart(session):
    """Load every claim module once, before any test swaps in an empty registry: a claim module
    first imported while a test's empty registry is in place would register there and be lost
    (the tests would then depend on their order)."""
    from spectheory.sims.registry import load_all
    load_all()
