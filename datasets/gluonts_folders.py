"""GluonTS's on-disk dataset layout: ``<root>/<name>/metadata.json`` (its step, "freq") and ``train/`` and
``test/`` folders of JSON lines (optionally gzipped), in GluonTS's cache folder, downloaded through GluonTS when
asked. The paper's split of such a folder is :func:`tsdp.datasets.benchmarks.load_split`."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from tsdp.theorems.errors import MissingExtraError

from .json_lines import JSONL_SUFFIXES, load_gluonts_jsonl
from .series import DataError, SeriesData, normalize_freq

METADATA = "metadata.json"
"""The file of a GluonTS dataset folder that names its step ("freq")."""


def default_root() -> Path:
    """GluonTS's dataset cache.

    Returns:
        ``$GLUONTS_DATASETS``, or ``~/.gluonts/datasets`` where it is not set.
    """
    return Path(os.environ.get("GLUONTS_DATASETS", Path.home() / ".gluonts" / "datasets"))


def read_freq(folder: Path) -> Optional[str]:
    """The step of a GluonTS dataset folder: its ``metadata.json``'s "freq" (e.g. "H", "10min") as the current
    pandas alias (:func:`tsdp.datasets.series.normalize_freq`: "H" is "h", "T" "min").

    Args:
        folder: The dataset's folder (``<root>/<name>``).

    Returns:
        The alias, or None when the folder has no ``metadata.json`` or it names no freq.

    Raises:
        DataError: An unreadable ``metadata.json`` or a freq that is no pandas frequency, naming the file.
    """
    path = Path(folder) / METADATA
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(str(path), f"cannot be read as JSON ({type(exc).__name__})") from None
    freq = meta.get("freq") if isinstance(meta, dict) else None
    if freq is None:
        return None
    try:
        return normalize_freq(str(freq))
    except DataError:
        raise DataError(str(path), f"names the freq {freq!r}, which is not a pandas frequency") from None


def read_folder(folder: Path, freq: Optional[str] = None) -> SeriesData:
    """Every series of the JSON lines files in ``folder`` (``train/`` or ``test/``), in file-name order.

    Args:
        folder: The folder of JSON lines files.
        freq: The dataset's step (:func:`read_freq`): every series starts at its entry's start at that step; None:
            no starts.

    Returns:
        The series, with their starts where ``freq`` is given.

    Raises:
        DataError: A missing folder, one without JSON lines, or a malformed entry (naming the file). An error about
            the step itself keeps parameter "freq" (:func:`blamed_on_metadata` names the file it was read from).
    """
    if not folder.is_dir():
        raise DataError(str(folder), f"is {'not a folder' if folder.exists() else 'missing'}: a GluonTS dataset "
                                     "folder holds train/ and test/ folders of JSON lines (download it again, "
                                     "or point --data-dir at a complete copy)")
    files = sorted(p for p in folder.iterdir() if p.name.endswith(JSONL_SUFFIXES))
    if not files:
        raise DataError(str(folder), "holds no JSON lines file (data.json or data.json.gz)")
    parts = [load_gluonts_jsonl(p, freq=freq) for p in files]
    starts = None if any(part.starts is None for part in parts) else tuple(t for part in parts for t in part.starts)
    return SeriesData(tuple(s for part in parts for s in part.series), starts)


@contextmanager
def blamed_on_metadata(folder: Path, freq: Optional[str]) -> Iterator[None]:
    """A :class:`DataError` about the step (parameter "freq") raised inside, as one naming the folder's
    ``metadata.json``, where the step was read (a step nobody typed: no flag is at fault).

    Args:
        folder: The dataset's folder.
        freq: The step its ``metadata.json`` names (shown in the message).

    Raises:
        DataError: The error raised inside; one about the step names ``<folder>/metadata.json``.
    """
    try:
        yield
    except DataError as exc:
        if exc.parameter != "freq":
            raise
        raise DataError(str(folder / METADATA), f"names the freq {freq!r}: {exc.constraint}") from None


def missing_message(name: str, root: Path) -> str:
    """The one line that says what to download and where it goes.

    Args:
        name: The dataset's name in GluonTS's repository.
        root: The cache folder it is missing from.

    Returns:
        The line.
    """
    return (f"dataset {name!r} is not cached at {root / name} and cannot be downloaded here: on a machine with "
            f"internet run  python -c \"from gluonts.dataset.repository import get_dataset; get_dataset('{name}')\"  "
            f"and copy ~/.gluonts/datasets/{name} to {root / name} (or point --data-dir at its parent)")


def download(name: str, root: Path) -> None:
    """Download ``name`` through GluonTS into a temporary folder under ``root`` and rename it to ``root/name`` once
    it holds train/ and test/: a failed download leaves nothing behind (GluonTS itself would take any folder at
    ``root/name``, even an empty one, for a finished download).

    Args:
        name: The dataset's name in GluonTS's repository.
        root: The cache folder.

    Raises:
        MissingExtraError: GluonTS is not installed (the ``gluonts`` extra); nothing is made.
        DataError: A folder in the way, an unwritable ``root``, or a failed download (saying what to download).
    """
    import shutil
    import tempfile

    try:
        from gluonts.dataset.repository import get_dataset
    except ImportError:
        raise MissingExtraError(f"downloading {name!r} needs GluonTS", "gluonts") from None
    target = root / name
    if target.exists() and not (target.is_dir() and not any(target.iterdir())):
        raise DataError(str(target), "exists without a train/ folder (a download cut short, or another file): "
                                     "remove it and download again")
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.download-", dir=root))
    except OSError as exc:
        raise DataError("data_dir", f"cannot write the download to {root} ({exc.strerror or exc})") from None
    try:
        get_dataset(name, path=tmp)
        got = tmp / name
        if not ((got / "train").is_dir() and (got / "test").is_dir()):
            raise DataError("dataset", f"GluonTS's download of {name!r} holds no train/ and test/ folders")
        if target.is_dir():
            target.rmdir()  # empty (checked above)
        os.rename(got, target)
    except Exception:  # noqa: BLE001 - offline, a proxy, a failed recipe: the one line says what to do
        raise DataError("dataset", missing_message(name, root)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
