"""A skip reason that names an extra names the one that brings the package: every ``importorskip("module", reason=...)``
in the tests whose reason says "tsdp[X]" (else "the X extra") has X an extra of pyproject whose own requirements list the
module's distribution (read by packaging's parser), so that a reader installs what the skipped test needs."""
from __future__ import annotations

import ast
import pathlib
import re
import tomllib

from packaging.requirements import Requirement

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
INSTALL_NAME = re.compile(r"tsdp\[([\w-]+)\]")
NAMED_EXTRA = re.compile(r"\bthe ([\w-]+) extra\b")
DISTRIBUTIONS = {"dask": "dask", "distributed": "dask"}  # a module whose distribution is named otherwise


def skips_naming_an_extra():
    """(file:line, module, extra named) of every importorskip whose reason names an extra."""
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "importorskip"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                continue
            reason = next((k.value.value for k in node.keywords if k.arg == "reason"
                           and isinstance(k.value, ast.Constant)), "")
            for extra in INSTALL_NAME.findall(reason) or NAMED_EXTRA.findall(reason):  # tsdp[X] when it is given
                yield f"{path.relative_to(ROOT)}:{node.lineno}", node.args[0].value, extra


def test_every_extra_a_skip_reason_names_brings_the_package():
    found = list(skips_naming_an_extra())
    assert len(found) >= 15  # the scan reads the tests' skips (the data extra's pandas alone is skipped 15 times)
    wrong = []
    for where, module, extra in found:
        top = module.split(".")[0]
        distribution = DISTRIBUTIONS.get(top, top)
        brought = {Requirement(r).name.lower() for r in EXTRAS.get(extra, ())}
        if distribution not in brought:
            wrong.append(f"{where}: {module} is not in the {extra!r} extra ({sorted(brought) or 'no such extra'})")
    assert not wrong, "\n".join(wrong)
