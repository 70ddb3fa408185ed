"""The command line every figure script shares: ``--out``, ``--quick``, ``--seed``, and saving
the figure (one copy for all families; the leading underscore keeps ``make figs`` from running
this file as a figure)."""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib.pyplot as plt


def figure_parser(doc: str, default_out: Path, quick_help: str) -> argparse.ArgumentParser:
    """Parser with the standard options; a script may add its own before parsing."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=default_out, help="output PNG path")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--seed", type=int, default=0, help="Monte Carlo seed")
    return ap


def save_figure(fig, out: Path, dpi: int = 150) -> Path:
    """Write the PNG (creating its folder), close the figure, say where it went."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    print(f"wrote {out}")
    return out
