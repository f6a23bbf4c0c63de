"""One JSON convention for every output of tsdp (CLI ``--json``, ``results.json``, check records).

RFC 8259 has no token for NaN or infinity, so a non-finite number is written as ``null``;
numpy scalars and arrays, mpmath numbers and Fractions become plain floats and lists, dict
keys strings. The CLI (``tsdp.cli.output``), the report (``tsdp.reports.run``) and the checks
(``tsdp.verify.checks.result``) all convert with :func:`json_data`. A number that is legitimately
non-finite (ε = ∞: no noise, or an accountant that gives no guarantee) carries what its null means in
the sibling key ``<key>_note`` (:func:`with_note`).
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np


def json_data(x: Any) -> Any:
    """``x`` as plain JSON data: non-finite numbers to None (null), numbers to int/float, containers recursively.

    Args:
        x: A value.

    Returns:
        Plain JSON data.
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
        payload: The JSON object.
        key: The field that may be non-finite.
        note: What its null means.

    Returns:
        ``payload``, with the note where it applies.
    """
    value = payload.get(key)
    values = value if isinstance(value, (list, tuple)) else [value]
    if any(isinstance(v, (float, np.floating)) and not math.isfinite(v) for v in values):
        payload[key + NOTE] = note
    return payload
