"""Smoke tests: the SE derivation notebook runs (its sympy asserts hold) and one SE figure
script renders a non-trivial PNG with --quick."""
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


def test_se_derivations_notebook_runs(capsys):
    ns = runpy.run_path(str(ROOT / "notebooks" / "se_derivations.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "all derivations proved" in out
    assert "THM36" in ns and "PROCESS" in ns


def test_fig_se_speedup_lambda_quick(tmp_path):
    out = tmp_path / "fig.png"
    proc = subprocess.run([sys.executable, str(ROOT / "paper_figs" / "fig_se_speedup_lambda.py"), "--quick",
                           "--seed", "3", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000
    img = mpimg.imread(out)
    assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 400
    rgb = img[..., :3].reshape(-1, 3)
    assert np.unique(np.round(rgb * 255).astype(np.uint8), axis=0).shape[0] > 20
    assert "MC 95% CIs covering" in proc.stdout
