"""The command-line reference page, generated from the argparse parsers (docs/reference/cli.md).

One section per command and sub-command, in the order ``tsdp --help`` lists them, each with the
help that command prints, at a fixed width so the page is the same on every terminal. The page is
committed; ``tests/docs/test_cli_reference.py`` regenerates it and fails when a flag changed without
it. Regenerate with ``python -m tsdp.cli.reference docs/reference/cli.md``.
"""
from __future__ import annotations

import argparse
import sys
from typing import Iterator, List, Tuple

#: columns of the help text on the page (argparse otherwise reads the terminal's width): what fits the
#: manual's content column beside its navigation
WIDTH = 76

HEADER = """# Command-line reference

Every `tsdp` command and flag, with the help each one prints (`tsdp COMMAND --help`). This page is
generated from the parsers (`python -m tsdp.cli.reference docs/reference/cli.md`) and a test keeps
it in sync with them. For a guided start, read the tutorials, e.g.
[Account a training run](../tutorials/account-a-run.md); the conventions every command shares (bad
input, `--json`, exit codes) are on the [home page](../index.md#conventions).
"""


def _sub_parsers(parser: argparse.ArgumentParser) -> List[Tuple[str, argparse.ArgumentParser]]:
    """The (name, parser) of each sub-command of ``parser``, in the order its help lists them."""
    for action in parser._actions:  # argparse keeps sub-commands only here
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def commands(parser: argparse.ArgumentParser, prefix: str = "tsdp") -> Iterator[Tuple[str, argparse.ArgumentParser]]:
    """``("tsdp", parser)`` and every command below it, depth first: ``("tsdp forecast epsilon", ...)``.

    Args:
        parser: The parser of ``tsdp``.
        prefix: The command line so far.

    Yields:
        (command line, parser).
    """
    yield prefix, parser
    for name, sub in _sub_parsers(parser):
        yield from commands(sub, f"{prefix} {name}")


def _help(parser: argparse.ArgumentParser) -> str:
    """``parser``'s ``--help`` at :data:`WIDTH` columns (its own formatter class, its own layout)."""
    kind = parser.formatter_class
    parser.formatter_class = lambda prog: kind(prog, width=WIDTH, max_help_position=32)
    try:
        return parser.format_help().rstrip()
    finally:
        parser.formatter_class = kind


def render(parser: argparse.ArgumentParser | None = None) -> str:
    """The reference page's Markdown: one section a command, its ``--help`` in a text block.

    Args:
        parser: The parser of ``tsdp`` (None: the CLI's own).

    Returns:
        The Markdown.
    """
    if parser is None:
        from .main import build_parser

        parser = build_parser()
    sections = [HEADER]
    for name, command in commands(parser):
        level = "#" * min(2 + name.count(" ") - 1, 4) if " " in name else "##"
        sections.append(f"{level} `{name}`\n\n```text\n{_help(command)}\n```\n")
    return "\n".join(sections)


def main(argv: List[str] | None = None) -> int:
    """Write the page to the path given (default: standard output).

    Args:
        argv: The path, or nothing.

    Returns:
        0.
    """
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if argv:
        with open(argv[0], "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
