"""Monash forecasting-repository files (``.tsf``) and the real multi-series dataset shipped with tsdp.

The ``.tsf`` format (Godahewa et al. 2021, "Monash Time Series Forecasting Archive") is a text
file: ``#`` comments, ``@attribute NAME TYPE`` lines naming each series' leading fields,
``@frequency``, ``@horizon``, ``@missing``, ``@equallength`` and, after ``@data``, one series a
line: its attribute values, then its comma-separated values, all separated by ``:``. Missing
values are ``?``; they follow the loader's rule (:mod:`datasets.formats`: leading / trailing
gaps are trimmed, an inner gap is refused).

Calendar: when the file has a ``@frequency`` that pandas has an alias for (:data:`MONASH_FREQUENCIES`) and a
``start_timestamp`` attribute (Monash writes "1990-01-01 00-00-00"), every series keeps its start
(``SeriesData.starts``, :class:`~datasets.series.SeriesStart`: that time, moved past leading ``?``, and the alias);
otherwise ``starts`` is None. Reading the starts needs no pandas (moving one past leading ``?`` does).

The shipped dataset is the M1 competition's 181 yearly series (Makridakis et al. 1982) as the
Monash repository distributes them (``m1_yearly_dataset.tsf``, licence CC BY 4.0), copied byte for
byte from the file that the ``aeon`` package ships (aeon 1.6.0, BSD-3-Clause,
``aeon/datasets/data/m1_yearly_dataset/``); a test compares the two. Reading it needs no extra.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Tuple, Union

import numpy as np

from .series import DataError, SeriesData, SeriesStart, observed

M1_YEARLY_TSF = Path(__file__).with_name("m1_yearly.tsf")
"""The shipped copy of the Monash repository's M1 yearly file (package data)."""

SHIPPED = "m1-yearly"
"""The name ``load_series`` gives the shipped real dataset."""

YEARLY = "YE-DEC"
"""The pandas offset alias of yearly data (calendar years): what ``to_offset("Y").freqstr`` is in pandas >= 2.2."""

MONASH_FREQUENCIES = {
    "yearly": YEARLY, "quarterly": "QE-DEC", "monthly": "ME", "weekly": "W-SUN", "daily": "D", "hourly": "h",
    "half_hourly": "30min", "10_minutes": "10min", "minutely": "min", "4_seconds": "4s",
}
"""The pandas offset alias of each Monash ``@frequency`` (as :func:`tsdp.datasets.series.normalize_freq` writes them,
pandas >= 2.2 names: "YE-DEC" is "Y", "QE-DEC" "Q", "ME" "M", "W-SUN" "W"); a file of any other frequency has no
calendar (``starts`` None)."""

_MONASH_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[ T](\d{2})-(\d{2})-(\d{2}))?")
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?")


def monash_time(text: str, where: str) -> str:
    """A Monash ``start_timestamp`` as the text of a :class:`SeriesStart`.

    Args:
        text: "1990-01-01 00-00-00" (dashes in the time part), or an ISO time.
        where: The file and line, for the error.

    Returns:
        "1990-01-01 00:00:00"; an ISO time is kept.

    Raises:
        DataError: Text that is no time, naming ``where``.
    """
    text = text.strip()
    monash = _MONASH_TIME.fullmatch(text)
    if monash:
        date, *clock = monash.groups()
        return f"{date} {':'.join(c or '00' for c in clock)}"
    if _ISO_TIME.fullmatch(text):
        return text
    raise DataError(where, f"start_timestamp {text!r} is not a time (Monash writes 1990-01-01 00-00-00)")


@dataclass(frozen=True)
class TsfFile:
    """A parsed ``.tsf`` file.

    Attributes:
        data: The series, in file order, with their starts where the file has them.
        names: Their names.
        header: The header's ``@`` fields.
    """

    data: SeriesData
    names: Tuple[str, ...]
    header: Dict[str, str] = field(default_factory=dict)

    @property
    def horizon(self):
        """The file's ``@horizon`` (the forecast length its creators used), or None."""
        value = self.header.get("horizon")
        return int(value) if value is not None else None

    @property
    def freq(self) -> Optional[str]:
        """The pandas offset alias of the file's ``@frequency`` (:data:`MONASH_FREQUENCIES`), or None."""
        return MONASH_FREQUENCIES.get(self.header.get("frequency", "").strip().lower())


def read_tsf(path: Union[str, Path]) -> TsfFile:
    """Parse a Monash ``.tsf`` file (module docstring): its series, names, header and, with a known ``@frequency``
    and a ``start_timestamp`` attribute, the series' starts.

    Args:
        path: The file.

    Returns:
        The parsed file.

    Raises:
        DataError: A malformed line (naming the file and line), or a file that is not UTF-8 text.
    """
    path = Path(path)
    source = str(path)
    attributes, header, names, series, times = [], {}, [], [], []
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
        if "start_timestamp" in attributes:
            lead = int(np.flatnonzero(~np.isnan(values))[0])
            times.append((fields[attributes.index("start_timestamp")], lead, where))
    if not in_data:
        raise DataError(source, "has no @data section (not a Monash .tsf file)")
    if not series:
        raise DataError(source, "holds no series after @data")
    freq = MONASH_FREQUENCIES.get(header.get("frequency", "").strip().lower())
    starts = None
    if freq is not None and times:
        starts = []
        for text, lead, where in times:
            try:
                starts.append(SeriesStart(monash_time(text, where), freq).shifted(lead))
            except DataError as exc:
                raise DataError(where, exc.constraint) from None
    return TsfFile(SeriesData(tuple(series), None if starts is None else tuple(starts)), tuple(names), header)


def m1_yearly() -> TsfFile:
    """The shipped M1 yearly dataset: 181 yearly series, lengths 15 to 58, horizon 6 (module docstring)."""
    return read_tsf(M1_YEARLY_TSF)
