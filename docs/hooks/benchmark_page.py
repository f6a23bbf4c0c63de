"""Generate the benchmark page from the ``tsdp bench ... --json`` files in docs/benchmarks/.

No figure on that page is typed by hand: ``<!-- benchmarks -->`` in docs/benchmarks.md is
replaced, at build time, by one section per JSON file (sorted by name), each with the machine,
CPUs, thread settings and load it was measured under, and the bench's own text rendering of
the file (the ``format_bench`` of the module that produced it, so the page reads as the
command printed). A file whose bench is unknown or that does not parse fails the build.
"""
from __future__ import annotations

import importlib
import json
import pathlib
from typing import Iterator, List

MARKER = "<!-- benchmarks -->"
FOLDER = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def _environments(node) -> Iterator[dict]:
    """Every ``environment`` record in a bench result (a bench may hold one per row)."""
    if isinstance(node, dict):
        if isinstance(node.get("environment"), dict):
            yield node["environment"]
        for value in node.values():
            yield from _environments(value)
    elif isinstance(node, list):
        for value in node:
            yield from _environments(value)


def _measured_under(result: dict) -> str:
    from tsdp.bench.rounds import format_environment

    envs = list(_environments(result))
    if not envs:
        return "No timing: the figures do not depend on the machine."
    return f"Measured on {format_environment({'before': envs[0]['before'], 'after': envs[-1]['after']})}."


def section(path: pathlib.Path) -> str:
    """One bench file as Markdown: its command, where it was measured, what it printed."""
    from tsdp.cli.cmd_bench import BENCHES

    record = json.loads(path.read_text(encoding="utf-8"))
    what = record["bench"]
    module_name, _, formatter = BENCHES[what]
    text = getattr(importlib.import_module(module_name), formatter)(record)
    return "\n".join([f"## `{record['command']}`", "", _measured_under(record), "",
                      "```text", text, "```", ""])


def render(folder: pathlib.Path = FOLDER) -> str:
    files: List[pathlib.Path] = sorted(folder.glob("*.json"))
    if not files:
        raise ValueError(f"no benchmark files in {folder}")
    return "\n".join(section(p) for p in files)


def on_page_markdown(markdown: str, page, **kwargs) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, f'<div class="wide-output" markdown>\n\n{render()}\n</div>')
    return markdown
