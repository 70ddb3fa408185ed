"""Quiet by default: the package builds without a packaging deprecation warning (an SPDX
``license`` string, a setuptools floor that reads it), and its metadata says MIT."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_states_its_license_as_an_spdx_string_with_a_setuptools_that_reads_it():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    assert meta["project"]["license-files"] == ["LICENSE"]
    floor = next(r for r in meta["build-system"]["requires"] if r.startswith("setuptools"))
    assert floor == "setuptools>=77", floor  # PEP 639 license expressions: setuptools 77


def test_the_wheel_builds_without_a_deprecation_warning(tmp_path):
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} here (the build asks for ≥ 77 in its own environment)")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    for pkg in ("spectheory", "sims", "validate", "spectheory_cli"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                          "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "deprecat" not in out.lower(), [line for line in out.splitlines() if "eprecat" in line]
    wheel = next((tmp_path / "dist").glob("spectheory-*.whl"))
    import zipfile
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in meta
