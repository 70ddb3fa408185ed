"""Package layout (the metadata is in pyproject.toml): one import root.

The repository keeps its floors in top-level folders (docs/architecture.md); the wheel installs
them under the one name ``spectheory``, so nothing but ``spectheory`` lands in site-packages.
"""
from setuptools import find_namespace_packages, setup

#: installed package -> its folder in the repository
FOLDERS = {"spectheory": "spectheory", "spectheory.sims": "sims",
           "spectheory.validate": "validate", "spectheory.cli": "cli"}

packages = []
for name, folder in FOLDERS.items():
    # namespace discovery: a data folder (sims/schemas) is a package to setuptools too
    packages += [name] + [f"{name}.{sub}" for sub in find_namespace_packages(folder, exclude=["*__pycache__*"])]

setup(packages=packages, package_dir=dict(FOLDERS))
