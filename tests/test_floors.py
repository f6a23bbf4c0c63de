""".ci/floors.py, the pins of CI's floors step: pyproject's core floors, read by a second parser (packaging's), each
pinned at its own lower bound but torch, raised only where torch's own requirement is higher, and every pin admitted
by pyproject's specifier (a floor above an upper bound, a pin outside its range, would fail here)."""
from __future__ import annotations

import importlib.util
import pathlib
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def floors():
    spec = importlib.util.spec_from_file_location("ci_floors", ROOT / ".ci" / "floors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def core_requirements():
    return [Requirement(r) for r in tomllib.loads(PYPROJECT)["project"]["dependencies"]]


def lower_bound(req):
    return next(Version(s.version) for s in req.specifier if s.operator == ">=")


def test_every_core_floor_is_pinned_at_its_lower_bound_but_torch(floors):
    pins = dict(p.split("==") for p in floors.pins(PYPROJECT))
    want = {req.name.lower(): lower_bound(req) for req in core_requirements() if req.name != "torch"}
    assert {name: Version(v) for name, v in pins.items()} == want
    for req in core_requirements():
        if req.name != "torch":
            assert req.specifier.contains(pins[req.name.lower()], prereleases=False), req


def test_a_floor_below_torchs_own_requirement_is_raised_to_it_and_no_other(floors):
    sympy = next(req for req in core_requirements() if req.name == "sympy")
    higher = f"{lower_bound(sympy).major}.{lower_bound(sympy).minor + 1}.3"
    pins = dict(p.split("==") for p in floors.pins(PYPROJECT, [f"sympy>={higher}", "numpy>=1.0", "filelock",
                                                               'networkx>=2.5.1; python_version >= "3.10"']))
    assert pins["sympy"] == higher
    assert Version(pins["numpy"]) == lower_bound(next(r for r in core_requirements() if r.name == "numpy"))
    assert "networkx" not in pins and "torch" not in pins
