"""Grunfeld's investment panel, shipped with tsdp (``grunfeld.csv``, package data): read with the csv module, no extra
needed."""
from __future__ import annotations

from pathlib import Path
from typing import Tuple

import numpy as np

from .series import DataError, SeriesData, SeriesStart

GRUNFELD_CSV = Path(__file__).with_name("grunfeld.csv")
"""Grunfeld's panel shipped with tsdp (package data): its header names the source, statsmodels' copy."""
GRUNFELD_TARGETS = ("invest", "value", "capital")
"""The variables of the panel, one series per firm each."""


def grunfeld(target: str = "invest") -> Tuple[SeriesData, Tuple[str, ...]]:
    """Grunfeld's investment data, 11 US firms, 1935-1954, from the copy shipped with tsdp (no extra needed).

    The file (:data:`GRUNFELD_CSV`) holds statsmodels' ``grunfeld`` dataset (Grunfeld 1958, recreated by Kleiber &
    Zeileis 2010) value for value; a test compares the two. Read with the csv module: neither pandas nor statsmodels
    is imported.

    Args:
        target: The variable: invest, value or capital (:data:`GRUNFELD_TARGETS`).

    Returns:
        (data, firm names): 11 yearly series of length 20 of ``target``, in the file's firm order, each starting in
        its first year ("1935-01-01 00:00:00", step :data:`tsdp.datasets.tsf.YEARLY`).

    Raises:
        DataError: An unknown ``target``.
    """
    import csv

    if target not in GRUNFELD_TARGETS:
        raise DataError("grunfeld", f"target must be one of {', '.join(GRUNFELD_TARGETS)} (got {target!r})")
    by_firm = {}
    with GRUNFELD_CSV.open(newline="") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            by_firm.setdefault(row["firm"], []).append((int(row["year"]), float(row[target])))
    from .tsf import YEARLY

    series = tuple(np.array([v for _, v in sorted(rows)]) for rows in by_firm.values())
    starts = tuple(SeriesStart(f"{min(rows)[0]:04d}-01-01 00:00:00", YEARLY) for rows in by_firm.values())
    return SeriesData(series, starts), tuple(by_firm)
