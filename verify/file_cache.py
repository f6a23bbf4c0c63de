"""The one home of tsdp's content-addressed files: atomic writes, canonical JSON, digests, and the digested JSON file.

Three caches keep results on disk and must never hand back a stale, cut or edited one: the one-step PLDs
(:mod:`tsdp.verify.pld_cache`), a grid's cell files (:mod:`tsdp.experiments.store`) and its baselines
(:mod:`tsdp.experiments.stored_baselines`). All three write through :func:`write_atomic` (a temporary file
beside the target, flushed to disk and renamed over it: a reader sees the old file or the whole new one, never a
part), name or check their contents by the SHA-256 of :func:`canonical_json`, and the two JSON ones store
``{"key": ..., <body>: ..., "digest": ...}`` (:func:`digested_text`, read back by :func:`read_digested`): a file
is used only when its key is the one asked for and its digest matches its contents; anything else is recomputed.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

DIGEST = "digest"
"""The key of a digested JSON file that holds the SHA-256 of its key and body (:func:`digest_of`)."""


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: keys sorted, no spaces (the text a key or digest is the hash of).

    Args:
        value: JSON data (dicts, lists, strings, numbers, None).

    Returns:
        Its canonical text (``json.dumps(value, sort_keys=True, separators=(",", ":"))``).

    Raises:
        TypeError: A value JSON cannot spell.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def sha256_text(text: str) -> str:
    """The SHA-256 hex digest of ``text`` (UTF-8).

    Args:
        text: The text.

    Returns:
        64 hex digits.
    """
    return hashlib.sha256(text.encode()).hexdigest()


def digest_of(key: Any, body_name: str, body: Any) -> str:
    """The digest of a digested JSON file: SHA-256 of the canonical JSON of ``{"key": key, body_name: body}``.

    Args:
        key: The file's key (everything its body depends on).
        body_name: The name of the body's field (``result``, ``crps``).
        body: The body.

    Returns:
        64 hex digits; a file edited or damaged after writing fails it.
    """
    return sha256_text(canonical_json({"key": key, body_name: body}))


def write_atomic(path: Union[str, Path], data: Union[str, bytes]) -> None:
    """Write ``data`` to a temporary file beside ``path``, flush it to disk and rename it over ``path``.

    Args:
        path: The file to (over)write; its folder must exist.
        data: Its contents (text is written as UTF-8).

    Raises:
        OSError: The folder cannot be written (the temporary file is removed; ``path`` is unchanged).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def digested_text(key: Any, body_name: str, body: Any) -> str:
    """The text of a digested JSON file: ``{"key", body_name, "digest"}``, indented by one, keys sorted.

    Args:
        key: The file's key (JSON data).
        body_name: The name of the body's field.
        body: The body (JSON data, finite numbers only).

    Returns:
        The file's text.

    Raises:
        ValueError: A non-finite number in ``key`` or ``body``.
    """
    return json.dumps({"key": key, body_name: body, DIGEST: digest_of(key, body_name, body)}, indent=1,
                      sort_keys=True, allow_nan=False)


class StoredFileError(ValueError):
    """A stored file that cannot be used: ``reason`` says why, in the words of a note."""


@dataclass(frozen=True)
class Digested:
    """A digested JSON file as read: its key, body and stored digest (not yet compared: :meth:`intact`).

    Attributes:
        key: The stored key.
        body_name: The name of the body's field.
        body: The stored body.
        digest: The stored digest.
    """

    key: Any
    body_name: str
    body: Any
    digest: Any

    def intact(self) -> bool:
        """Whether the stored digest is the digest of the key and body (:func:`digest_of`).

        Returns:
            False for a file edited or damaged after writing.
        """
        return self.digest == digest_of(self.key, self.body_name, self.body)


def read_digested(path: Union[str, Path], body_name: str) -> Digested:
    """Parse the digested JSON file at ``path`` (:func:`digested_text`).

    Args:
        path: The file.
        body_name: The name of its body's field.

    Returns:
        Its key, body and digest.

    Raises:
        StoredFileError: Unreadable (``unreadable (<exception>)``), or not an object of exactly the fields
            ``key``, ``body_name`` and ``digest``.
        FileNotFoundError: No file at ``path``.
    """
    try:
        stored = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise StoredFileError(f"unreadable ({type(exc).__name__}: {exc})") from None
    if not (isinstance(stored, dict) and set(stored) == {"key", body_name, DIGEST}):
        raise StoredFileError(f"no key, {body_name} and digest")
    return Digested(stored["key"], body_name, stored[body_name], stored[DIGEST])


DAMAGED = "its digest does not match its contents (edited or damaged)"
"""The note of a file whose digest is not that of its contents."""
