"""The one home of tsdp's content-addressed files: atomic writes, canonical JSON digests, digested JSON files read back
only when intact."""
import hashlib
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsdp.verify import file_cache
from tsdp.verify.file_cache import (DAMAGED, StoredFileError, canonical_json, digest_of, digested_text, read_digested,
                                    write_atomic)

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=8), lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)


@given(JSON, JSON)
def test_a_digested_file_reads_back_intact_with_the_digest_of_its_canonical_json(key, body):
    """The digest is SHA-256 of the sorted, space-free JSON of {key, body} (computed here by hand), whatever the
    order the file lists its keys in."""
    text = digested_text(key, "result", body)
    stored = json.loads(text)
    by_hand = hashlib.sha256(json.dumps({"key": key, "result": body}, sort_keys=True, separators=(",", ":"))
                             .encode()).hexdigest()
    assert stored["digest"] == by_hand == digest_of(key, "result", body)
    assert canonical_json(stored) == json.dumps(stored, sort_keys=True, separators=(",", ":"))


def test_read_digested_tells_intact_damaged_and_foreign_files_apart(tmp_path):
    path = tmp_path / "f.json"
    write_atomic(path, digested_text({"a": 1}, "crps", {"x": 0.5}))
    stored = read_digested(path, "crps")
    assert (stored.key, stored.body, stored.intact()) == ({"a": 1}, {"x": 0.5}, True)
    edited = json.loads(path.read_text())
    edited["crps"]["x"] = 0.25
    path.write_text(json.dumps(edited))
    assert not read_digested(path, "crps").intact() and "edited or damaged" in DAMAGED
    for text, says in (("{cut", "unreadable (JSONDecodeError"), ("[]", "no key, crps and digest"),
                       (json.dumps({"key": 1, "crps": 2}), "no key, crps and digest"),
                       (json.dumps({**edited, "extra": 1}), "no key, crps and digest")):
        path.write_text(text)
        with pytest.raises(StoredFileError, match=says.replace("(", r"\(")):
            read_digested(path, "crps")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(StoredFileError, match="unreadable"):
        read_digested(path, "crps")
    with pytest.raises(FileNotFoundError):
        read_digested(tmp_path / "absent.json", "crps")


def test_a_non_finite_number_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError):
        digested_text({"a": 1}, "crps", {"x": math.nan})


def test_write_atomic_renames_a_whole_file_and_leaves_nothing_when_it_fails(tmp_path, monkeypatch):
    """Bytes and text land whole under the name; a failed rename leaves the old file and no temporary one."""
    path = tmp_path / "f.bin"
    write_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    write_atomic(path, "ε")
    assert path.read_text(encoding="utf-8") == "ε"

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(file_cache.os, "replace", fail)
    with pytest.raises(OSError):
        write_atomic(path, "new")
    assert path.read_text(encoding="utf-8") == "ε" and [p.name for p in tmp_path.iterdir()] == ["f.bin"]
