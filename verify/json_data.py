"""One JSON convention for every output of tsdp (CLI ``--json``, ``results.json``, check records).

RFC 8259 has no token for NaN or infinity, so a non-finite number is written as ``null``;
numpy scalars and arrays, mpmath numbers and Fractions become plain floats and lists, dict
keys strings. The CLI (``tsdp.cli.output``), the report (``tsdp.reports.run``) and the checks
(``tsdp.verify.checks.result``) all convert with :func:`json_data`.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np


def json_data(x: Any) -> Any:
    """``x`` as plain JSON data: non-finite numbers to None (null), numbers to int/float, containers recursively."""
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
