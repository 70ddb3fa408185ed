"""Shared smoke-test helpers for the figure scripts and derivation notebooks (one copy for
every family): run a notebook and require its success line; render a figure script in quick
mode and require a real picture (size, several colours, not one flat colour)."""
from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def run_notebook(name: str, capsys) -> dict:
    """Execute ``notebooks/<name>`` (its sympy asserts run); it must print its success line."""
    ns = runpy.run_path(str(ROOT / "notebooks" / name), run_name="__main__")
    assert "all derivations proved" in capsys.readouterr().out
    return ns


def render_quick(script: str, out: Path, *, seed: int = 3, min_shape=(200, 400), min_colours: int = 20,
                 timeout: float = 300, extra=()) -> subprocess.CompletedProcess:
    """Run ``paper_figs/<script> --quick --seed S --out OUT`` and check the PNG it writes."""
    proc = subprocess.run([sys.executable, str(ROOT / "paper_figs" / script), "--quick", "--seed", str(seed),
                           "--out", str(out), *extra], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    assert out.exists() and out.stat().st_size > 10_000
    img = mpimg.imread(out)
    assert img.ndim == 3 and img.shape[0] > min_shape[0] and img.shape[1] > min_shape[1], img.shape
    rgb = img[..., :3].reshape(-1, 3)
    assert float(rgb.std()) > 0.01, "image is (nearly) a single colour"
    n_colours = np.unique(np.round(rgb * 255).astype(np.uint8), axis=0).shape[0]
    assert n_colours > min_colours, f"only {n_colours} distinct colours"
    return proc
