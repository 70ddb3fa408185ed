"""spectheory: exact verifiers, closed forms and Monte Carlo for the theory of speculative decoding.

One import root. The engine is this package (``spectheory.exact``, ``spectheory.montecarlo``,
``spectheory.conformance``, ...); the claim registry is :mod:`spectheory.sims`, the real-model
replays :mod:`spectheory.validate` (optional extra ``validate``), the command line and the notebook
API :mod:`spectheory.cli`. The notebook API is re-exported here and loaded on first use, so
``import spectheory`` stays light (no Numba kernels, no torch)::

    import spectheory as st
    report = st.verify("sd.*", quick=True)     # a Report: report["sd.acceptance"].verdict
    st.load_report("reports/verify.json")      # a Report written earlier

In the repository, ``sims/``, ``validate/`` and ``cli/`` sit beside ``spectheory/`` and are
installed under the ``spectheory`` name (``pyproject.toml``); :func:`_find_checkout_subpackages`
maps them the same way when the package is imported from a source checkout.
"""
from __future__ import annotations

__version__ = "0.2.0"

#: the notebook API, loaded from :mod:`spectheory.cli.api` on first use (PEP 562)
_API = ("verify", "load_report", "Report", "ClaimResult", "EvidenceTable")
#: subpackage of ``spectheory`` -> its folder in a source checkout (beside ``spectheory/``)
_CHECKOUT_FOLDERS = {"sims": "sims", "validate": "validate", "cli": "cli"}



def __getattr__(name: str):
    if name in _API:
        from spectheory.cli import api   # the top floor, imported on first use only
        return getattr(api, name)
    raise AttributeError(f"module 'spectheory' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})


def _find_checkout_subpackages() -> None:
    """In a source checkout (``spectheory/`` without ``sims/`` inside, the folders beside it),
    resolve ``spectheory.sims``, ``spectheory.validate`` and ``spectheory.cli`` to those folders, so
    a checkout imports its own files (a scratch copy too) whether or not it was installed."""
    import importlib.util
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    root = here.parent
    folders = {f"{__name__}.{sub}": root / folder for sub, folder in _CHECKOUT_FOLDERS.items()
               if not (here / sub).exists() and (root / folder / "__init__.py").is_file()}
    if not folders or not (root / "pyproject.toml").is_file():
        return

    class CheckoutFinder:
        """Finds the three subpackages in the checkout's folders (their submodules are found
        through the package's ``__path__`` as usual)."""

        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            folder = folders.get(fullname)
            if folder is None:
                return None
            return importlib.util.spec_from_file_location(
                fullname, folder / "__init__.py", submodule_search_locations=[str(folder)])

    sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "__qualname__", "") != CheckoutFinder.__qualname__]
    sys.meta_path.insert(0, CheckoutFinder)   # once, also when the package is reloaded


_find_checkout_subpackages()
