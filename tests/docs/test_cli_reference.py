"""The command-line reference page (docs/reference/cli.md) is the parsers' help, every command and flag."""
from __future__ import annotations

import re

from tsdp.cli.main import build_parser
from tsdp.cli.reference import commands, render

from .fences import ROOT

PAGE = ROOT / "docs" / "reference" / "cli.md"


def test_the_committed_page_is_what_the_parsers_generate():
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/reference/cli.md is stale: regenerate it with `python -m tsdp.cli.reference docs/reference/cli.md`")


def test_every_command_has_a_section_listing_each_of_its_flags():
    text = render()
    sections = dict(re.findall(r"^#+ `(tsdp[^`]*)`\n\n```text\n(.*?)\n```", text, flags=re.S | re.M))
    listed = list(commands(build_parser()))
    assert len(listed) > 15 and set(sections) == {name for name, _ in listed}
    for name, parser in listed:
        for action in parser._actions:
            for flag in action.option_strings:
                assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", sections[name]), (name, flag)
    assert "`tsdp audit-model`" in text and "`tsdp forecast epsilon`" in text
