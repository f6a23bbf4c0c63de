"""The help a newcomer reads first. Every flag of every command (sub-commands of sub-commands
included) has a help text, no help shows "(default: None)", every command has a description, and the
catalogue range the help names is the registry's."""
import argparse
import re

import pytest

from cli_run import run_cli


def parsers():
    """(command path, parser) of `tsdp` and of every sub-command, recursively."""
    from tsdp.cli.main import build_parser

    def walk(parser, path):
        yield path, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{path} {name}")

    return list(walk(build_parser(), "tsdp"))


PARSERS = parsers()


def test_the_walk_reaches_every_command():
    from tsdp.cli.main import COMMANDS

    paths = {path for path, _ in PARSERS}
    assert {f"tsdp {name}" for name in COMMANDS} | {"tsdp forecast predict", "tsdp forecast tradeoff"} <= paths


@pytest.mark.parametrize("path,parser", PARSERS, ids=[p for p, _ in PARSERS])
def test_every_flag_has_help_and_no_default_none(path, parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            missing = [a.dest for a in action._choices_actions if not a.help]
            assert not missing, f"{path}: sub-commands without help: {missing}"
        else:
            assert action.help and action.help.strip(), f"{path} {action.option_strings or action.dest}: no help"
    text = parser.format_help()
    assert "(default: None)" not in text and "(default None)" not in text, path
    assert "T1-T14" not in text, path
    if path != "tsdp":
        assert parser.description, f"{path} has no description"


def test_shown_defaults_are_the_parsed_ones():
    """The help's "(default X)" is what the flag parses to when omitted (train --lr, forecast tradeoff --rates)."""
    paths = dict(PARSERS)
    train = paths["tsdp train"].format_help()
    assert re.search(r"--lr LR\s+learning rate \(default 0\.001\)", train)
    assert "(default 1.0 0.75 0.5)" in paths["tsdp forecast tradeoff"].format_help()


def test_catalogue_range_is_the_registry():
    """`tsdp --help` and `tsdp verify --help` name the catalogue T1-T<last>, the registry's first and last ids,
    and `tsdp theorems` lists the last one."""
    from tsdp.cli.config_args import CATALOGUE
    from tsdp.theorems.registry import REGISTRY

    numbers = sorted(int(m.group(1)) for m in (re.fullmatch(r"T(\d+)", i) for i in REGISTRY) if m)
    assert CATALOGUE == f"T{numbers[0]}-T{numbers[-1]}"
    code, top, _ = run_cli(["--help"])
    assert code == 0 and f"catalogue ({CATALOGUE})" in top
    code, verify, _ = run_cli(["verify", "--help"])
    assert code == 0 and f"catalogue {CATALOGUE}" in " ".join(verify.split())
    code, listed, _ = run_cli(["theorems"])
    assert code == 0 and re.search(rf"^T{numbers[-1]}\s", listed, re.M)


def test_data_flags_are_the_same_in_every_command_that_reads_series():
    """train, audit-fn, audit-model, forecast predict / tradeoff (and report) share --data --layout --item-id
    --timestamp --target with the same help for the layout flags."""
    paths = dict(PARSERS)
    readers = ["tsdp train", "tsdp audit-fn", "tsdp audit-model", "tsdp forecast predict", "tsdp forecast tradeoff"]
    helps = {}
    for path in readers:
        actions = {a.option_strings[0]: a for a in paths[path]._actions if a.option_strings}
        for flag in ("--data", "--layout", "--item-id", "--timestamp", "--target"):
            assert flag in actions, f"{path} lacks {flag}"
        helps[path] = tuple(actions[f].help for f in ("--layout", "--item-id", "--timestamp", "--target"))
        assert "parquet" in actions["--data"].help and ".gz" in actions["--data"].help
    assert len(set(helps.values())) == 1
