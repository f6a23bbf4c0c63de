"""One JSON convention for every output of tsdp (CLI ``--json``, ``results.json``, check records).

RFC 8259 has no token for NaN or infinity, so a non-finite number is written as ``null``;
numpy scalars and arrays, mpmath numbers and Fractions become plain floats and lists, dict
keys strings. The CLI (``tsdp.cli.output``), the report (``tsdp.reports.run``) and the checks
(``tsdp.verify.checks.result``) all convert with :func:`json_data`. A number that is legitimately
non-finite (ε = ∞: no noise, or an accountant that gives no guarantee) carries what its null means in
the sibling key ``<key>_note`` (:func:`with_note`).

Every frozen result dataclass of tsdp gets its ``as_dict()`` (the JSON form before this conversion) from one
place, :class:`Record`: its fields under their names, a nested record as its own ``as_dict()``, and the two
field kinds that shape the JSON declared on the field itself, :func:`noted` (a null's note) and
:func:`omitted_when_none` (a key absent rather than null).
"""
from __future__ import annotations

import math
import copy
from dataclasses import MISSING, field, fields, is_dataclass
from fractions import Fraction
from typing import Any

import numpy as np


class RepeatedKeyError(ValueError):
    """JSON text with an object that names a key twice: ``json.loads`` would keep the last value silently, so a file a
    user wrote (a configuration, a data file) is refused instead.

    Args:
        key: The key named twice.
    """

    def __init__(self, key: str):
        super().__init__(f"names {key!r} twice (JSON readers keep one of the values silently): give each key once")
        self.key = key


def loads_once_each(text: str) -> Any:
    """``json.loads(text)``, refusing an object that names a key twice.

    Args:
        text: JSON text.

    Returns:
        Its value.

    Raises:
        RepeatedKeyError: An object names a key twice.
        json.JSONDecodeError: Not JSON.
    """
    import json

    def once_each(pairs: list) -> dict:
        out = {}
        for key, value in pairs:
            if key in out:
                raise RepeatedKeyError(key)
            out[key] = value
        return out

    return json.loads(text, object_pairs_hook=once_each)


def json_data(x: Any) -> Any:
    """``x`` as plain JSON data: non-finite numbers to None (null), numbers to int/float, containers recursively.

    Args:
        x: Any value of a result's JSON form (dicts, lists, tuples, numpy and mpmath numbers, Fractions, ...).

    Returns:
        Its plain JSON data (what ``json.dumps(..., allow_nan=False)`` accepts).
    """
    if isinstance(x, dict):
        return {str(k): json_data(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_data(v) for v in x]
    if isinstance(x, np.ndarray):
        return json_data(x.tolist())
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating, Fraction)) or type(x).__name__ == "mpf":
        f = float(x)
        return f if math.isfinite(f) else None
    return x


NOTE = "_note"
"""The suffix of the key beside a non-finite number (written as null) that says what the null means."""


def with_note(payload: dict, key: str, note: str) -> dict:
    """``payload`` with ``<key>_note`` = ``note`` when ``payload[key]`` is (or holds) a non-finite number, which is
    written as null: what that null means (infinite: no noise; ...). A finite value gets no note.

    Args:
        payload: A JSON form (changed in place).
        key: The key whose value may be non-finite.
        note: What its null means.

    Returns:
        ``payload``.
    """
    value = payload.get(key)
    values = value if isinstance(value, (list, tuple)) else [value]
    if any(isinstance(v, (float, np.floating)) and not math.isfinite(v) for v in values):
        payload[key + NOTE] = note
    return payload


_NULL_NOTE = "tsdp.null_note"
_OMIT_NONE = "tsdp.omit_none"


def noted(note: str, default: Any = MISSING) -> Any:
    """A dataclass field whose non-finite value (written as null) carries ``note`` in ``<name>_note`` (:func:`with_note`).

    Args:
        note: What the null means (e.g. "null: undefined, the attained ε is 0").
        default: The field's default (none: a required field).

    Returns:
        The ``dataclasses.field`` to assign in a :class:`Record`'s body.
    """
    return field(default=default, metadata={_NULL_NOTE: note})


def omitted_when_none(default: Any = None) -> Any:
    """A dataclass field left out of the JSON form when it is None (an analysis that did not run).

    Args:
        default: The field's default.

    Returns:
        The ``dataclasses.field`` to assign in a :class:`Record`'s body.
    """
    return field(default=default, metadata={_OMIT_NONE: True})


def _plain(value: Any) -> Any:
    """``value`` as :func:`dataclasses.asdict` copies it, except that a nested object with an ``as_dict`` gives that."""
    if hasattr(value, "as_dict") and not isinstance(value, type):
        return value.as_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return record_dict(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_plain(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    return copy.deepcopy(value)


def record_dict(record: Any, of: Any = None) -> dict:
    """The JSON form (before :func:`json_data`) of a dataclass instance: what :class:`Record` gives as ``as_dict()``.

    Args:
        record: A dataclass instance.
        of: A dataclass whose fields alone to take (a base class of ``record``'s; default: all of ``record``'s).

    Returns:
        Its fields in declaration order, nested records as their ``as_dict()``; a field made by
        :func:`omitted_when_none` is left out when None; after the fields, ``<name>_note`` beside each
        :func:`noted` field whose value is non-finite.
    """
    out, notes = {}, []
    for f in fields(record if of is None else of):
        value = getattr(record, f.name)
        if value is None and f.metadata.get(_OMIT_NONE):
            continue
        out[f.name] = _plain(value)
        if _NULL_NOTE in f.metadata:
            notes.append((f.name, f.metadata[_NULL_NOTE]))
    for name, note in notes:
        with_note(out, name, note)
    return out


def extend(record: Any, base: Any, cls: Any, **more: Any) -> Any:
    """A ``cls`` built from ``record``'s fields of ``base`` and ``more``: one typed record from another's fields.

    Args:
        record: An instance of ``base`` (or of a subclass of it).
        base: The dataclass whose fields are copied from ``record``.
        cls: The dataclass to build, deriving from ``base`` (its JSON form then has ``base``'s fields first, in
            their order).
        **more: The values of the fields ``cls`` adds, and of any of ``base``'s it replaces.

    Returns:
        ``cls(**record's fields of base, **more)``, a value in ``more`` taking the place of the copied one.

    Raises:
        TypeError: A field of ``cls`` without a default that ``more`` does not give, or a name that is no field.
    """
    return cls(**{**{f.name: getattr(record, f.name) for f in fields(base)}, **more})


class Record:
    """The base of tsdp's frozen result dataclasses: one JSON form for all of them (:func:`record_dict`).

    A subclass is a ``@dataclass(frozen=True)``; its fields say what its JSON holds (:func:`noted`,
    :func:`omitted_when_none`), so no subclass writes its own ``as_dict``.
    """

    __slots__ = ()

    def as_dict(self) -> dict:
        """The JSON form: the fields under their names (:func:`record_dict`); :func:`json_data` then makes it plain."""
        return record_dict(self)


__all__ = ["NOTE", "Record", "extend", "json_data", "noted", "omitted_when_none", "record_dict", "with_note"]
