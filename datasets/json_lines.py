"""GluonTS datasets as series: any iterable of GluonTS entries (a ``ListDataset``, a ``FileDataset``) and the JSON
lines files GluonTS writes (no gluonts needed), each series with its start where the step is known."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from tsdp.verify.json_data import RepeatedKeyError, loads_once_each

from .series import (DataError, SeriesData, SeriesStart, first_observed, normalize_freq, observed as _observed,
                     period_text)

JSONL_SUFFIXES = (".json", ".jsonl", ".json.gz", ".jsonl.gz")
"""The names of GluonTS JSON lines files (gzip when they end in .gz)."""


def _number(x) -> float:
    """A target value as a float; TypeError for a boolean (JSON's true/false, numpy's bool_), which float() would
    take as 1 and 0: a flag is not a measurement."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{x!r} is a boolean")
    return float(x)


def from_gluonts(dataset: Iterable[dict], *, source: str = "GluonTS dataset",
                 freq: Optional[str] = None) -> SeriesData:
    """A GluonTS dataset (``ListDataset``, ``FileDataset`` or any iterable of entries with a ``"target"``).

    Univariate targets only; NaN (GluonTS's missing value, "NaN" / "Nan" in its JSON) follows
    the module's rule: trimmed at the ends, refused inside.

    Starts: with ``freq`` (a pandas offset alias, e.g. the dataset's ``metadata.json`` "freq"), or where the
    entries' ``"start"`` are ``pandas.Period`` (a ``ListDataset``'s, which carry their step), every series
    starts at its entry's ``"start"`` moved past the leading missing values trimmed (written as the first instant of
    its period at the step, as GluonTS reads it: "2012-01-02/2012-01-08" weekly is "2012-01-02 00:00:00").
    Without a ``freq`` and with text starts (JSON lines: the file does not say its step), or when an entry has no
    ``"start"``, ``starts`` is None. A numeric ``freq`` is refused. Checking the starts at a ``freq`` needs pandas.

    Args:
        dataset: The entries, each a dict with a ``"target"`` (and ``"start"``, ``"item_id"``).
        source: The dataset's name in errors (the file it was read from).
        freq: The step of the entries' starts (a pandas offset alias), or None.

    Returns:
        The series in entry order, with their starts where the step is known.

    Raises:
        DataError: a malformed entry, or a ``"start"`` that pandas cannot read at the step (naming ``source``
            and the entry), or a ``freq`` that is no pandas frequency (parameter "freq").
    """
    out, raw_starts, leads = [], [], []
    for i, entry in enumerate(dataset):
        name = entry.get("item_id", i) if isinstance(entry, dict) else i
        if not isinstance(entry, dict) or "target" not in entry:
            raise DataError(f"{source}, entry {i}", "has no 'target' field")
        target = np.asarray(entry["target"], dtype=object)
        if target.ndim != 1:
            raise DataError(f"{source}, entry {i}", "target must be univariate (1-D)")
        try:
            values = np.asarray([np.nan if x is None or (isinstance(x, str) and x.lower() == "nan") else _number(x)
                                 for x in target], dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(f"{source}, entry {i}", f"target must be numeric ({str(list(target))[:40]!r})") from None
        out.append(_observed(values, source, name, list(range(len(values)))))
        raw_starts.append(entry.get("start"))
        leads.append(first_observed(values))
    if not out:
        raise DataError(source, "holds no series")
    return SeriesData(tuple(out), _gluonts_starts(raw_starts, leads, freq, source))


def _gluonts_starts(raw, leads: Sequence[int], freq, source: str) -> Optional[Tuple[SeriesStart, ...]]:
    """The starts of GluonTS entries (:func:`from_gluonts`): ``raw[i]`` entry i's "start" (None: absent),
    ``leads[i]`` the leading missing values trimmed from it. pandas is imported only when there is a step."""
    import sys

    if isinstance(freq, (bool, int, float, np.number)):
        raise DataError("freq", f"GluonTS entries start at times: their step is a pandas offset alias such as 'h' "
                                f"or 'D' (got {freq!r})")
    if any(r is None for r in raw):
        return None
    pd = sys.modules.get("pandas")  # a pd.Period exists only where pandas was imported
    is_period = (lambda r: isinstance(r, pd.Period)) if pd is not None else (lambda r: False)
    if freq is None:
        given = next((r for r in raw if is_period(r)), None)
        if given is None:
            return None  # text starts, no step: the calendar is unknown
        freq = given.freq
    step = normalize_freq(freq)
    try:  # a step of no pandas period (business hours) cannot hold a GluonTS start: the step is at fault, not the data
        SeriesStart("2000-01-03 09:00:00", step).period()
    except DataError:
        raise DataError("freq", f"{freq!r} has no pandas periods, and a GluonTS entry's start is a period at its step "
                                "(give the step as one that has, such as 'h' or 'D')") from None
    starts = []
    for i, (r, lead) in enumerate(zip(raw, leads)):
        where = f"{source}, entry {i}"
        if is_period(r):
            text = period_text(r)
        elif isinstance(r, str) or (pd is not None and isinstance(r, pd.Timestamp)) or hasattr(r, "isoformat"):
            text = str(r)
        else:
            raise DataError(where, f"has a start {r!r} that is no time (text such as '2014-01-01 00:00:00')")
        try:  # written as the first instant of its period at the step, as GluonTS reads it
            start = SeriesStart(text, step)
            starts.append(SeriesStart(period_text(start.period()), step).shifted(lead))
        except DataError:
            raise DataError(where, f"has a start {r!r} that pandas cannot read at the step {step!r}") from None
    return tuple(starts)


def load_gluonts_jsonl(path: Union[str, Path], *, freq: Optional[str] = None) -> SeriesData:
    """GluonTS JSON lines as GluonTS writes them (``JsonLinesWriter``; gzip when the name ends in .gz): one entry
    per line with "start", "target" (missing values as "NaN"), optional "item_id". No gluonts needed.

    Args:
        path: The file (.json, .jsonl, either .gz).
        freq: The step of the entries (a pandas offset alias; GluonTS keeps it in the dataset's ``metadata.json``,
            not in the file): with it every series keeps its start (:func:`from_gluonts`; pandas checks them),
            without it ``starts`` is None and no pandas is needed.

    Returns:
        The series in line order.

    Raises:
        DataError: An unreadable file, a line that is not JSON or names a key twice (naming the line), or a
            malformed entry (:func:`from_gluonts`).
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    entries: List[dict] = []
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, start=1):
                if line.strip():
                    try:
                        entries.append(loads_once_each(line))
                    except RepeatedKeyError as exc:
                        raise DataError(f"{path}, line {line_no}", str(exc)) from None
                    except json.JSONDecodeError as exc:
                        raise DataError(f"{path}, line {line_no}", f"is not JSON ({exc.msg})") from None
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise DataError(str(path), f"cannot be read as JSON lines ({type(exc).__name__})") from None
    return from_gluonts(entries, source=str(path), freq=freq)

