"""docs/DESIGN.md's layout matches the tree: its layout block names every top-level package folder (and no folder
that is not there), and every module file the page names (``x.py``, bare in a package's section or with its path)
exists."""
from __future__ import annotations

import re

from tsdp.layers import FOLDERS

from .fences import ROOT

DESIGN = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
_LAYOUT = DESIGN[DESIGN.index("```text", DESIGN.index("## Layout")) + len("```text"):]
_LAYOUT = _LAYOUT[:_LAYOUT.index("```")]
_LISTED = re.findall(r"^([\w.]+/?) ", _LAYOUT, re.M)
_MODULE = re.compile(r"`([A-Za-z_][\w./]*\.py)`")


def _package_files(folder: str):
    return {p.name for p in (ROOT / folder).rglob("*.py")} if (ROOT / folder).is_dir() else set()


def test_the_layout_lists_every_package_folder_and_only_folders_that_exist():
    folders = {entry.rstrip("/") for entry in _LISTED if entry.endswith("/")}
    assert set(FOLDERS) <= folders, set(FOLDERS) - folders
    assert all((ROOT / f).is_dir() for f in folders), [f for f in folders if not (ROOT / f).is_dir()]
    assert all((ROOT / f).exists() for f in _LISTED), [f for f in _LISTED if not (ROOT / f).exists()]


def test_every_module_the_page_names_exists():
    section, missing = "", []
    for number, line in enumerate(DESIGN.splitlines(), 1):
        heading = re.match(r"###\s+(\w+)/", line)
        if heading:
            section = heading.group(1)
        for name in _MODULE.findall(line):
            if "/" in name:
                found = (ROOT / name).is_file() or any((ROOT / f / name).is_file() for f in FOLDERS)
            else:  # a bare name: a module of the section's package, or of the façade (tsdp/, tsdp/cli/)
                found = name in _package_files(section) or name in _package_files("tsdp")
            if not found:
                missing.append((number, section, name))
    assert not missing
