"""Smoke tests: the derivation notebook runs (its sympy asserts hold) and the paper figure
script renders a non-trivial PNG. Fast tier: a few seconds in all."""
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
NOTEBOOK = ROOT / "notebooks" / "sd_derivations.py"
FIG_SCRIPT = ROOT / "paper_figs" / "fig_sd_expected_tokens.py"


def test_sd_derivations_notebook_runs(capsys):
    ns = runpy.run_path(str(NOTEBOOK), run_name="__main__")
    out = capsys.readouterr().out
    assert "all derivations proved" in out
    # the notebook's symbolic closed form is the library's sd.expected_tokens formula
    from spectheory.closed_forms import sd as cf
    for a, g in ((0.3, 1), (0.75, 4), (0.9, 7)):
        value = float(ns["CLOSED"].subs({ns["alpha"]: a, ns["gamma"]: g}))
        assert abs(value - cf.expected_tokens(a, g)) < 1e-12, (a, g)


def test_fig_sd_expected_tokens_quick(tmp_path):
    out = tmp_path / "fig.png"
    proc = subprocess.run([sys.executable, str(FIG_SCRIPT), "--quick", "--seed", "3", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.exists()
    assert out.stat().st_size > 10_000
    img = mpimg.imread(out)
    assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 400
    rgb = img[..., :3].reshape(-1, 3)
    assert float(rgb.std()) > 0.01, "image is (nearly) a single colour"
    n_colours = np.unique(np.round(rgb * 255).astype(np.uint8), axis=0).shape[0]
    assert n_colours > 20, f"only {n_colours} distinct colours"
