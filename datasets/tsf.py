"""Monash forecasting-repository files (``.tsf``) and the real multi-series dataset shipped with tsdp.

The ``.tsf`` format (Godahewa et al. 2021, "Monash Time Series Forecasting Archive") is a text
file: ``#`` comments, ``@attribute NAME TYPE`` lines naming each series' leading fields,
``@frequency``, ``@horizon``, ``@missing``, ``@equallength`` and, after ``@data``, one series a
line: its attribute values, then its comma-separated values, all separated by ``:``. Missing
values are ``?``; they follow the loader's rule (:mod:`datasets.formats`: leading / trailing
gaps are trimmed, an inner gap is refused).

The shipped dataset is the M1 competition's 181 yearly series (Makridakis et al. 1982) as the
Monash repository distributes them (``m1_yearly_dataset.tsf``, licence CC BY 4.0), copied byte for
byte from the file that the ``aeon`` package ships (aeon 1.6.0, BSD-3-Clause,
``aeon/datasets/data/m1_yearly_dataset/``); a test compares the two. Reading it needs no extra.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Tuple

import numpy as np

from .series import DataError, SeriesData, observed

M1_YEARLY_TSF = Path(__file__).with_name("m1_yearly.tsf")
"""The shipped copy of the Monash repository's M1 yearly file (package data)."""

SHIPPED = "m1-yearly"
"""The name ``load_series`` gives the shipped real dataset."""


@dataclass(frozen=True)
class TsfFile:
    """A parsed ``.tsf`` file: the series (in file order), their names, and the header's ``@`` fields."""

    data: SeriesData
    names: Tuple[str, ...]
    header: Dict[str, str] = field(default_factory=dict)

    @property
    def horizon(self):
        """The file's ``@horizon`` (the forecast length its creators used), or None."""
        value = self.header.get("horizon")
        return int(value) if value is not None else None


def read_tsf(path) -> TsfFile:
    """Parse a Monash ``.tsf`` file (module docstring); every malformed line is one :class:`DataError` naming the
    file and line."""
    path = Path(path)
    source = str(path)
    attributes, header, names, series = [], {}, [], []
    in_data = False
    try:
        text = path.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise DataError(source, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}, line {number}"
        if not in_data:
            if not line.startswith("@"):
                raise DataError(where, "expected an @ header line or a # comment before @data")
            key, _, rest = line[1:].partition(" ")
            key = key.lower()
            if key == "data":
                if not attributes:
                    raise DataError(where, "@data before any @attribute line")
                in_data = True
            elif key == "attribute":
                parts = rest.split()
                if len(parts) != 2:
                    raise DataError(where, "an @attribute line needs a name and a type")
                attributes.append(parts[0])
            else:
                header[key] = rest.strip()
            continue
        fields = line.split(":")
        if len(fields) != len(attributes) + 1:
            raise DataError(where, f"expected {len(attributes)} attribute field(s) and the values, separated by ':' "
                                   f"(got {len(fields)} fields)")
        cells = fields[-1].split(",")
        try:
            values = np.array([np.nan if c.strip() == "?" else float(c) for c in cells], dtype=np.float64)
        except ValueError:
            raise DataError(where, "holds a value that is not a number or '?'") from None
        name = fields[0]
        series.append(observed(values, source, name, range(1, len(values) + 1)))
        names.append(name)
    if not in_data:
        raise DataError(source, "has no @data section (not a Monash .tsf file)")
    if not series:
        raise DataError(source, "holds no series after @data")
    return TsfFile(SeriesData(tuple(series)), tuple(names), header)


def m1_yearly() -> TsfFile:
    """The shipped M1 yearly dataset: 181 yearly series, lengths 15 to 58, horizon 6 (module docstring)."""
    return read_tsf(M1_YEARLY_TSF)
