"""A bench's frozen record rebuilt from the JSON a bench published before its result was typed
(``docs/benchmarks/*.json``, written by ``tsdp bench WHAT --json`` from the dict-building code), so that a test can
check that the record's JSON form gives that JSON back: every key, in its order, with its value."""
import dataclasses
import json
import typing
from pathlib import Path

from tsdp.cli.output import dumps

PUBLISHED = Path(__file__).parents[1] / "docs" / "benchmarks"


def published(name: str) -> dict:
    """``docs/benchmarks/<name>.json`` without the CLI's own keys (``bench``, ``command``) around the result.

    Args:
        name: The file's stem.

    Returns:
        The bench's result as it was published.
    """
    form = json.loads((PUBLISHED / f"{name}.json").read_text(encoding="utf-8"))
    return {k: v for k, v in form.items() if k not in ("bench", "command")}


def _built(hint, value):
    """``value`` (JSON data) as the annotation ``hint`` types it: records, and tuples or dicts of records, rebuilt."""
    if value is None:
        return None
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is typing.Union and len(args) == 1:
        return _built(args[0], value)
    if dataclasses.is_dataclass(hint):
        return rebuilt(hint, value)
    if typing.get_origin(hint) is tuple and args and dataclasses.is_dataclass(args[0]):
        return tuple(rebuilt(args[0], v) for v in value)
    if typing.get_origin(hint) is dict and len(args) == 2:
        return {k: _built(args[1], v) for k, v in value.items()}
    return value


def rebuilt(cls, form: dict):
    """The ``cls`` record whose fields take ``form``'s values (a nested record, or a tuple of them, rebuilt too).

    Args:
        cls: A frozen record class.
        form: Its JSON form (extra keys, e.g. a derived one, are ignored; a field it leaves out takes its default).

    Returns:
        The record.
    """
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: _built(hints[f.name], form[f.name]) for f in dataclasses.fields(cls)
                  if f.init and f.name in form})


def key_order(x):
    """The keys of ``x`` in their order, recursively (lists element by element)."""
    if isinstance(x, dict):
        return [(k, key_order(v)) for k, v in x.items()]
    if isinstance(x, list):
        return [key_order(v) for v in x]
    return None


def assert_gives_back(record, form: dict) -> None:
    """``record``'s JSON form (through the CLI's ``dumps``) is ``form``: the same keys in the same order, the same values.

    Args:
        record: The record.
        form: The JSON it must give.
    """
    got = json.loads(dumps(record.as_dict()))
    assert key_order(got) == key_order(form)
    assert got == form
