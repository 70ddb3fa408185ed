"""Smoke tests for seed 004: the derivation notebook runs (its sympy asserts hold) and the Fig. 3
analogue renders a non-trivial PNG; the figure's theory and simulation agree on the optimal tree."""
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


def test_ersd_derivations_notebook_runs(capsys):
    runpy.run_path(str(ROOT / "notebooks" / "ersd_derivations.py"), run_name="__main__")
    assert "all derivations proved" in capsys.readouterr().out


def test_fig_ersd_expected_tokens_quick(tmp_path):
    out = tmp_path / "fig.png"
    proc = subprocess.run([sys.executable, str(ROOT / "paper_figs" / "fig_ersd_expected_tokens.py"), "--quick",
                           "--seed", "3", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    img = mpimg.imread(out)
    assert img.ndim == 3 and img.shape[0] > 300 and img.shape[1] > 800
    rgb = img[..., :3].reshape(-1, 3)
    assert np.unique(np.round(rgb * 255).astype(np.uint8), axis=0).shape[0] > 20
    # printed summary: theory and simulation of the optimal tree within 3% of each other
    for line in proc.stdout.splitlines():
        if "optimal tree" in line:
            th = float(line.split("theory ")[1].split(",")[0])
            sim = float(line.split("simulation ")[1].split(",")[0])
            bound = float(line.split("bound ")[1])
            assert abs(th - sim) / th < 0.03 and th <= bound
