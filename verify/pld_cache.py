"""On-disk cache of one-step PLDs (the accountant's most expensive step), never a stale or wrong one.

A one-step PLD (:func:`tsdp.verify.accountant.one_step_pld`) is defined by the bound, the
training configuration, the estimate (sound / attained / attained_upper), the grid
(discretisation, log-mass truncation), the memory ceiling, and the code that computes it.
All of these make up the key (:func:`key`): the theorem id, ``config.as_dict()``, the
estimate, the grid, the ceiling, the versions of tsdp, numpy and scipy, and a SHA-256 of
the source of every module that computes a PLD (``tsdp.theorems``, ``verify/pld/``,
``verify/accountant.py``, this module, and dp-accounting's ``pld`` package), so a code change
(ours or the library's) never reads an old PLD. Only the catalogue's own bounds are stored, and only while the registry holds
exactly them: a bound substituted in the registry
(:func:`tsdp.theorems.registry.substituted`), whose construction may lean on another
substituted bound, is computed every time.

Location: ``$TSDP_CACHE_DIR``, else ``$XDG_CACHE_HOME/tsdp``, else ``~/.cache/tsdp`` (a
``pld`` folder inside). ``TSDP_CACHE_DIR=off`` (or ``0``, ``no``, ``false``, ``none``, empty)
disables it. Writes are atomic (:func:`tsdp.verify.file_cache.write_atomic`, the one home of tsdp's caches); a
file is read back only if its stored key equals the key asked for and the SHA-256 of its
contents matches the one stored with it, so a corrupt, truncated or foreign file is a miss,
never a number. An unwritable or unreadable folder is a miss too (the PLD is computed).
Size bounded by :data:`MAX_BYTES`: after a write the oldest files (by modification time,
refreshed on every hit) are removed until the folder fits. A PLD whose grid the memory
ceiling coarsened is not stored (its :class:`tsdp.verify.pld.PldCoarsenedWarning` must be
seen every time).
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

from .file_cache import canonical_json, sha256_text, write_atomic
from .pld import PldSettings, adapter, discretization_of

CACHE_DIR_ENV = "TSDP_CACHE_DIR"
"""Environment variable: the cache folder, or ``off`` to disable the cache."""

OFF_VALUES = ("", "off", "0", "no", "false", "none")

MAX_BYTES = 512 * 2**20
"""Size ceiling of the cache folder (512 MiB: about 200 one-step PLDs of the paper's default grid)."""

_SUFFIX = ".npz"
_SOURCES = ("tsdp.theorems", "tsdp.verify.pld", "tsdp.verify.accountant", "tsdp.verify.pld_cache", "tsdp.verify.file_cache",
            "dp_accounting.pld")


def cache_dir() -> Optional[Path]:
    """The folder PLDs are stored in, or None when ``TSDP_CACHE_DIR`` disables the cache."""
    text = os.environ.get(CACHE_DIR_ENV)
    if text is not None:
        return None if text.strip().lower() in OFF_VALUES else Path(text).expanduser() / "pld"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tsdp" / "pld"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> Dict[str, str]:
    """The SHA-256 of the source of every module that computes a PLD (tsdp's and dp-accounting's ``pld``
    package), and the versions of tsdp, numpy and scipy (compiled code whose source is not hashed)."""
    import importlib

    import scipy

    import tsdp

    digest = hashlib.sha256()
    for name in _SOURCES:
        module = importlib.import_module(name)
        paths = sorted(Path(module.__path__[0]).rglob("*.py")) if hasattr(module, "__path__") \
            else [Path(module.__file__)]
        for path in paths:
            digest.update(f"{name}/{path.name}".encode())
            digest.update(path.read_bytes())
    return {"source_sha256": digest.hexdigest(), "tsdp": tsdp.__version__, "numpy": np.__version__,
            "scipy": scipy.__version__}


def _catalogue_bound(bound) -> bool:
    """Whether ``bound`` is a catalogue bound and the registry holds exactly the catalogue (nothing substituted)."""
    from tsdp.theorems import registry
    from tsdp.theorems.bounds import augmentation, bilevel, bottom_level, inference, pooled

    catalogue = {b.id: b for m in (bottom_level, bilevel, augmentation, pooled, inference) for b in m.BOUNDS}
    if catalogue.keys() != registry.REGISTRY.keys() or any(registry.REGISTRY[k] is not b for k, b in catalogue.items()):
        return False
    return catalogue.get(bound.id) is bound


def key(bound, config, estimate: str, settings: PldSettings, memory_limit: int) -> Dict:
    """Everything that defines a one-step PLD (module docstring), as a JSON-ready dict.

    Args:
        bound: The catalogue bound.
        config: The configuration it is applied to.
        estimate: The estimate's name (sound, attained, attained_upper).
        settings: The grid (``discretization``) and where it ends (``log_mass_truncation_bound``); the tail mass
            truncation is no part of one step, nor of the key.
        memory_limit: The memory ceiling the PLD was built under (bytes).

    Returns:
        The key: theorem, configuration, estimate, the two grid settings, the ceiling and the code's fingerprint.
    """
    return {"theorem": bound.id, "config": config.as_dict(), "estimate": str(estimate),
            "discretization": settings.discretization,
            "log_mass_truncation_bound": settings.log_mass_truncation_bound,
            "memory_limit": int(memory_limit), "code": code_fingerprint()}


def _key_text(k: Dict) -> str:
    return canonical_json(k)


def _path(folder: Path, text: str) -> Path:
    return folder / (sha256_text(text) + _SUFFIX)


def _checksum(meta: str, arrays: Dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256(meta.encode())
    for name in sorted(arrays):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(arrays[name]).tobytes())
    return digest.hexdigest()


def _encode(pld, text: str) -> Dict[str, np.ndarray]:
    """The arrays of a library PLD: per direction its scalars, and dense probabilities or sparse (loss, prob)."""
    from dp_accounting.pld import pld_pmf

    arrays = {}
    for side, pmf in zip(("remove", "add"), adapter.pmfs(pld)):
        if pmf is None:
            continue
        arrays[f"{side}_scalars"] = np.array([adapter.gap(pmf), adapter.infinity_mass(pmf),
                                              float(adapter.pessimistic(pmf))])
        if isinstance(pmf, pld_pmf.DensePLDPmf):
            arrays[f"{side}_lower"] = np.array([adapter.lower_loss(pmf)], dtype=np.int64)
            arrays[f"{side}_probs"] = np.asarray(adapter.probs(pmf), dtype=float)
        else:
            arrays[f"{side}_losses"] = np.fromiter(adapter.loss_probs(pmf).keys(), dtype=np.int64)
            arrays[f"{side}_sparse"] = np.fromiter(adapter.loss_probs(pmf).values(), dtype=float)
    checksum = _checksum(text, arrays)
    return {**arrays, "meta": np.array(text), "checksum": np.array(checksum)}


def _decode(arrays: Dict[str, np.ndarray]):
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    pmfs = []
    for side in ("remove", "add"):
        if f"{side}_scalars" not in arrays:
            pmfs.append(None)
            continue
        d, inf_mass, pess = arrays[f"{side}_scalars"].tolist()
        if f"{side}_probs" in arrays:
            pmfs.append(pld_pmf.DensePLDPmf(d, int(arrays[f"{side}_lower"][0]), arrays[f"{side}_probs"], inf_mass,
                                            bool(pess)))
        else:
            losses = dict(zip(arrays[f"{side}_losses"].tolist(), arrays[f"{side}_sparse"].tolist()))
            pmfs.append(pld_pmf.SparsePLDPmf(losses, d, inf_mass, bool(pess)))
    return PrivacyLossDistribution(*pmfs)


def load(k: Dict):
    """The PLD stored under key ``k``, or None (disabled, absent, unreadable, corrupt, or another key's file).

    Args:
        k: The key (:func:`key`).

    Returns:
        The PLD, or None.
    """
    folder = cache_dir()
    if folder is None:
        return None
    text = _key_text(k)
    path = _path(folder, text)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        meta, stored = str(arrays.pop("meta")), str(arrays.pop("checksum"))
        if meta != text or stored != _checksum(meta, arrays):
            return None
        pld = _decode(arrays)
    except Exception:  # noqa: BLE001 - any unreadable or malformed file is a miss, never an answer
        return None
    try:
        os.utime(path)  # a hit is recent use: eviction removes the oldest first
    except OSError:  # a read-only cache still serves its PLDs
        pass
    return pld


def store(k: Dict, pld) -> None:
    """Write ``pld`` under key ``k`` atomically, then trim the folder to :data:`MAX_BYTES`; silent on any OS error.

    Args:
        k: The key (:func:`key`).
        pld: The one-step PLD.
    """
    folder = cache_dir()
    if folder is None:
        return
    text = _key_text(k)
    data = io.BytesIO()
    np.savez(data, **_encode(pld, text))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(_path(folder, text), data.getvalue())
        trim(folder)
    except OSError:
        pass


def trim(folder: Path, max_bytes: int = MAX_BYTES) -> List[Path]:
    """Remove the oldest cache files (modification time) until the folder holds at most ``max_bytes``;
    returns the removed paths. Files vanishing meanwhile (another process) are skipped.

    Args:
        folder: The cache folder.
        max_bytes: The most it may hold.

    Returns:
        The removed paths.
    """
    entries = []
    for path in folder.glob("*" + _SUFFIX):
        try:
            st = path.stat()
        except OSError:
            continue
        entries.append((st.st_mtime, st.st_size, path))
    total = sum(size for _, size, _ in entries)
    removed = []
    for _, size, path in sorted(entries, key=lambda e: (e[0], str(e[2]))):
        if total <= max_bytes:
            break
        try:
            path.unlink()
            removed.append(path)
        except OSError:
            continue
        total -= size
    return removed


def cached(bound, config, estimate: str, settings: PldSettings, memory_limit: int, build: Callable[[], object]):
    """``build()``'s one-step PLD, read from or written to the disk cache where the bound qualifies (module docstring).

    Args:
        bound: The catalogue bound (a substituted or foreign bound is never cached).
        config: The configuration it is applied to.
        estimate: The estimate's name.
        settings: The grid settings (:func:`key`).
        memory_limit: The memory ceiling (bytes).
        build: Builds the PLD when the cache has none.

    Returns:
        The one-step PLD, from the disk or built (and stored, unless the memory ceiling coarsened its grid).
    """
    if cache_dir() is None or not _catalogue_bound(bound):
        return build()
    k = key(bound, config, estimate, settings, memory_limit)
    try:
        _key_text(k)
    except (TypeError, ValueError):  # a configuration value JSON cannot spell: not cached
        return build()
    pld = load(k)
    if pld is not None:
        return pld
    pld = build()
    if discretization_of(pld) == settings.discretization:  # a coarsened grid is rebuilt (and announced) every time
        store(k, pld)
    return pld
