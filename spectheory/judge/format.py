"""Formatting primitives shared by every report (verify, conformance, validate): numbers and
intervals for tables, JSON writing, and the provenance block (package versions) of a run."""
from __future__ import annotations

import json
import platform
from pathlib import Path


def fmt(x, digits: int = 6) -> str:
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):
        return f"{x:.3e}"
    return f"{x:.{digits}g}"


def interval(e: dict | None) -> str:
    if not e or e.get("ci_low") is None:
        return "–"
    return f"[{fmt(e['ci_low'])}, {fmt(e['ci_high'])}]"


def write_json(report: dict, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return path


def versions() -> dict:
    """Versions of what a verdict depends on (recorded in every report's ``run`` block)."""
    import numba
    import numpy
    import scipy

    from spectheory import __version__
    return {"spectheory": __version__, "python": platform.python_version(), "numpy": numpy.__version__,
            "scipy": scipy.__version__, "numba": numba.__version__}
