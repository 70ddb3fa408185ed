"""The package installs beside others: one import root and quiet by default.

The wheel puts ``spectheory`` (the engine, with ``spectheory.sims``, ``spectheory.validate`` and
``spectheory.cli`` from the repository's folders ``sims/``, ``validate/``, ``cli/``: setup.py) and
its ``.dist-info`` into site-packages, and nothing else: no top-level ``sims``, ``validate`` or
``spectheory_cli`` that another distribution ships too (configobj ships a top-level
``validate``). It builds without a packaging deprecation warning (an SPDX ``license`` string, a
setuptools floor that reads it), and its metadata says MIT.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: installed package -> its folder in the repository (setup.py's table)
FOLDERS = {"spectheory": "spectheory", "spectheory/sims": "sims", "spectheory/validate": "validate",
           "spectheory/cli": "cli"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel built from a copy of the source tree (what `pip install .` builds), with the
    build's own output."""
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} here (the build asks for ≥ 77 in its own environment)")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    for folder in FOLDERS.values():
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                          "-w", str(tmp / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    return next((tmp / "dist").glob("spectheory-*.whl")), out


def test_pyproject_states_its_license_as_an_spdx_string_with_a_setuptools_that_reads_it():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    assert meta["project"]["license-files"] == ["LICENSE"]
    floor = next(r for r in meta["build-system"]["requires"] if r.startswith("setuptools"))
    assert floor == "setuptools>=77", floor  # PEP 639 license expressions: setuptools 77


def test_the_wheel_builds_without_a_deprecation_warning(wheel):
    path, out = wheel
    assert "deprecat" not in out.lower(), [line for line in out.splitlines() if "eprecat" in line]
    assert "Warning" not in out, [line for line in out.splitlines() if "Warning" in line]
    with zipfile.ZipFile(path) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in meta


def test_the_wheel_installs_one_import_root_with_every_module(wheel):
    """Top-level names: ``spectheory`` and its dist-info only; every module and data file of the four
    folders is in the wheel under its installed name (setup.py's package list misses none)."""
    path, _ = wheel
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"spectheory"}, sorted(tops)
    expected = set()
    for installed, folder in FOLDERS.items():
        for f in (ROOT / folder).rglob("*"):
            rel = f.relative_to(ROOT / folder)
            if f.is_file() and "__pycache__" not in rel.parts and (f.suffix == ".py" or f.parent.name == "schemas"
                                                                    or f.name == "py.typed"):
                # spectheory/'s own files that are the other folders' installed homes do not exist
                expected.add(f"{installed}/{rel.as_posix()}")
    missing = sorted(expected - names)
    assert not missing, missing


def _fetch_configobj(tmp: Path) -> Path:
    res = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "configobj==5.0.9", "-d",
                          str(tmp)], capture_output=True, text=True, timeout=300)
    found = list(tmp.glob("configobj-*.whl"))
    if res.returncode != 0 or not found:
        pytest.skip(f"configobj could not be downloaded here: {res.stderr.strip()[-300:]}")
    return found[0]


def test_the_wheel_installs_beside_configobj_and_both_work(wheel, tmp_path):
    """configobj ships a top-level ``validate`` module. In a fresh virtual environment with both
    installed, ``import validate`` is configobj's and works, ``import spectheory`` runs the
    registry and the command line, and uninstalling spectheory leaves configobj's files intact."""
    path, _ = wheel
    cfg = _fetch_configobj(tmp_path / "dl")
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    py = env_dir / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*pip, str(cfg)], check=True, timeout=300)
    subprocess.run([*pip, str(path)], check=True, timeout=300)
    # spectheory's own dependencies (numpy, scipy, numba, ...) from this environment, after the
    # fresh environment's site-packages: the packages under test come from the fresh one
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    code = ("import sys, validate, configobj, spectheory, spectheory.validate.evidence\n"
            "from spectheory.sims import registry\n"
            f"site = {str(site)!r}\n"
            "assert validate.__file__.startswith(site) and hasattr(validate, 'Validator'), validate.__file__\n"
            "assert validate.Validator().check('integer', '3') == 3\n"
            "assert spectheory.__file__.startswith(site) and spectheory.validate.__file__.startswith(site)\n"
            "assert len(registry.load_all()) >= 46\n"
            "assert callable(spectheory.verify) and spectheory.Report.__module__ == 'spectheory.cli.api'\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('sims', 'spectheory_cli')]\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    res = subprocess.run([str(py), "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    res = subprocess.run([str(env_dir / "bin" / "spectheory"), "list"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=600)
    assert res.returncode == 0 and "sd.acceptance" in res.stdout, res.stderr[-3000:]
    subprocess.run([str(py), "-m", "pip", "uninstall", "-y", "-q", "spectheory"], check=True, timeout=300)
    res = subprocess.run([str(py), "-c", "import validate; assert validate.Validator().check('integer', '4') == 4"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
