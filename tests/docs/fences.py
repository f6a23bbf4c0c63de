"""The code fences of the README and the manual, as the executed-examples harness reads them.

Rules (docs/contributing.md says them to writers):

* every ```python fence runs; the fences of one page run in order in one namespace, so a page
  reads as one program;
* a ```console fence runs each line that starts with ``$ `` through bash (a plain ``tsdp ...``
  line in the runner's process: :mod:`run_page`); the other lines are
  the output a reader sees (compared only after ``<!-- check-output -->``, as lines that must
  appear in the command's output, whitespace-normalised);
* ```bash and ```sh fences run every line;
* ``<!-- skip: reason -->`` on the line right before a fence keeps it from running, with its
  reason; ``<!-- exit: N -->`` there makes N the expected exit status of its commands;
* any other fence (```text, ```json, ```yaml ...) is shown, never run.
"""
from __future__ import annotations

import dataclasses
import pathlib
import re
from typing import List, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNNABLE = {"python", "console", "bash", "sh"}
_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
_DIRECTIVE = re.compile(r"^\s*<!--\s*(?P<key>skip|exit|check-output)\s*:?\s*(?P<value>.*?)\s*-->\s*$")


@dataclasses.dataclass(frozen=True)
class Fence:
    """One fenced block: where it starts (1-based line of the opening fence), its language and text."""

    page: pathlib.Path
    line: int
    lang: str
    code: str
    skip: Optional[str] = None
    exit_code: int = 0
    check_output: bool = False

    @property
    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUNNABLE and self.skip is None

    def commands(self) -> List[Tuple[str, List[str]]]:
        """Shell commands of a console/bash fence, each with the output lines shown after it."""
        lines = self.code.splitlines()
        if self.lang != "console":
            return [(line, []) for line in lines if line.strip() and not line.lstrip().startswith("#")]
        out: List[Tuple[str, List[str]]] = []
        for line in lines:
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif out and line.strip():
                out[-1][1].append(line)
        return out


def fences(page: pathlib.Path) -> List[Fence]:
    """Every fenced block of a Markdown page, with the directive on the line before it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: List[Fence] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m.group("fence"), len(m.group("indent"))
        body: List[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        options = {}
        back = i - 1
        while back >= 0 and _DIRECTIVE.match(lines[back]):
            d = _DIRECTIVE.match(lines[back])
            options[d.group("key")] = d.group("value")
            back -= 1
        if "skip" in options and not options["skip"]:
            raise ValueError(f"{page}:{i + 1}: a skipped fence must give its reason (<!-- skip: why -->)")
        found.append(Fence(page, i + 1, m.group("lang").lower(), "\n".join(body) + "\n", options.get("skip"),
                           int(options.get("exit") or 0), "check-output" in options))
        i = j + 1
    return found


def pages() -> List[pathlib.Path]:
    """The README and every page of the manual."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


if __name__ == "__main__":  # `python tests/docs/fences.py`: what the harness runs and skips, page by page
    total = skipped = 0
    for page in pages():
        found = fences(page)
        runs = sum(f.runs for f in found)
        skips = [f for f in found if f.lang in RUNNABLE and f.skip is not None]
        total, skipped = total + runs, skipped + len(skips)
        if runs or skips:
            print(f"{page.relative_to(ROOT)}: {runs} run, {len(skips)} skipped")
        for f in skips:
            print(f"    skipped {f.where}: {f.skip}")
    print(f"{total} code blocks run, {skipped} skipped (each with its reason)")
