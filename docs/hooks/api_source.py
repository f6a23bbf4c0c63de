"""Lay out tsdp's source as the installed package looks, for the API reference.

pyproject.toml installs the repository's layer folders as subpackages of ``tsdp``
(``theorems/`` is ``tsdp.theorems``, ...). mkdocstrings reads source files, not the installed
package, so before the build this hook copies them into ``build/api-src/tsdp/`` by that same
mapping (read from pyproject.toml, its one home); mkdocs.yml points the handler's ``paths``
there. Nothing is imported, so documenting a module never runs it.
"""
from __future__ import annotations

import pathlib
import shutil
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
TREE = ROOT / "build" / "api-src"


def lay_out(root: pathlib.Path = ROOT, tree: pathlib.Path = TREE) -> pathlib.Path:
    """Copy every package of pyproject's ``package-dir`` to its import path under ``tree``."""
    mapping = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    shutil.rmtree(tree, ignore_errors=True)
    skip = shutil.ignore_patterns("__pycache__")
    for name, folder in sorted(mapping.items()):  # "tsdp" first, then its layers inside it
        shutil.copytree(root / folder, tree.joinpath(*name.split(".")), ignore=skip, dirs_exist_ok=True)
    return tree


def on_startup(**kwargs):
    """Before the plugins read their configuration: mkdocstrings drops a ``paths`` entry that does not exist yet."""
    lay_out()


def on_pre_build(**kwargs):
    """Again before each build, so `mkdocs serve` documents the source as it is now."""
    lay_out()
