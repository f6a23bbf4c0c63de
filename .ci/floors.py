"""The floors of tsdp's core dependencies as pip pins, read from pyproject.toml (the one list of them).

Prints ``name==floor`` for every core dependency with a lower bound (``numpy>=1.24`` gives ``numpy==1.24``), except
torch: CI installs the local torch 2.13.0 CPU wheel, the torch floor is checked by hand (docs/index.md, "Tested
floors"). A floor below what the installed torch itself requires (torch 2.13 needs sympy>=1.13.3) is raised to
torch's, which is the lowest release that installs beside it. `.ci/run` installs these pins in a small venv and runs
a subset of the tests; tests/test_floors.py checks the pins against pyproject.toml.

Usage: python .ci/floors.py [pyproject.toml]   (Python 3.11+: tomllib)
"""
from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

_BOUND = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(.*)$")
_LOWER = re.compile(r">=\s*([0-9][0-9A-Za-z.]*)")
UNPINNED = ("torch",)
"""Installed apart: the local torch 2.13.0 CPU wheel, its floor checked by hand."""


def _key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lower_bounds(requirements) -> dict:
    """{normalised name: the version of its ``>=`` clause} of requirement strings (those with one)."""
    out = {}
    for req in requirements:
        req = req.split(";")[0]
        name, spec = _BOUND.match(req).groups()
        found = _LOWER.search(spec)
        if found:
            out[_name(name)] = found.group(1)
    return out


def pins(pyproject_text: str, torch_requires=()) -> list:
    """``name==floor`` of pyproject's core dependencies but torch, each floor raised to ``torch_requires``'s.

    Args:
        pyproject_text: pyproject.toml's text.
        torch_requires: the installed torch's requirement strings (``importlib.metadata.requires("torch")``).

    Returns:
        The pins, in pyproject's order.
    """
    floors = lower_bounds(tomllib.loads(pyproject_text)["project"]["dependencies"])
    torch_floors = lower_bounds(torch_requires)
    return [f"{name}=={max(floor, torch_floors.get(name, floor), key=_key)}"
            for name, floor in floors.items() if name not in UNPINNED]


def main(argv) -> None:
    path = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        torch_requires = metadata.requires("torch") or ()
    except metadata.PackageNotFoundError:
        torch_requires = ()
    print("\n".join(pins(path.read_text(encoding="utf-8"), torch_requires)))


if __name__ == "__main__":
    main(sys.argv[1:])
