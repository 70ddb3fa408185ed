"""Smoke test: the multi-draft figure script renders a non-trivial PNG (quick mode)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_fig_multidraft_be_quick(tmp_path):
    out = tmp_path / "fig.png"
    proc = subprocess.run([sys.executable, str(ROOT / "paper_figs" / "fig_multidraft_be.py"), "--quick",
                           "--seed", "2", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    img = mpimg.imread(out)
    assert img.ndim == 3 and img.shape[0] > 400 and img.shape[1] > 600
    rgb = img[..., :3].reshape(-1, 3)
    assert np.unique(np.round(rgb * 255).astype(np.uint8), axis=0).shape[0] > 20
