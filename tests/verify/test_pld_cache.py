"""verify.pld_cache: the on-disk cache of one-step PLDs returns the PLD it was given or nothing.

The reference for every hit is the same PLD computed with the cache off (bit for bit), and
the ε the library reads from it.
"""
from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest

from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.theorems.registry import REGISTRY, substituted
from tsdp.verify import one_step, pld_cache
from tsdp.verify.events import training_event
from tsdp.verify.pld import PldSettings, resolve_memory_limit

GRID = 1e-2  # coarse: fast, and a sparse PMF at GRID_SPARSE
GRID_SPARSE = 0.5


def _event(config=DEFAULT_CONFIG, theorem=None):
    return training_event(config, steps=1, theorem=theorem).event


def _pmfs(pld):
    return [p for p in (pld._pmf_remove, None if pld._symmetric else pld._pmf_add) if p is not None]


def _same(a, b) -> bool:
    """Bit-for-bit equality of two library PLDs (type, grid, infinity mass, probabilities)."""
    if a._symmetric != b._symmetric:
        return False
    for x, y in zip(_pmfs(a), _pmfs(b)):
        if type(x) is not type(y) or (x._discretization, x._infinity_mass, x._pessimistic_estimate) != (
                y._discretization, y._infinity_mass, y._pessimistic_estimate):
            return False
        if hasattr(x, "_probs"):
            if x._lower_loss != y._lower_loss or not np.array_equal(x._probs, y._probs):
                return False
        elif list(x._loss_probs.items()) != list(y._loss_probs.items()):
            return False
    return True


def _fresh(event, estimate, grid=GRID):
    one_step._bound_pld.cache_clear()
    return one_step.one_step_pld(event, estimate, PldSettings(grid))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(pld_cache.CACHE_DIR_ENV, str(tmp_path))
    one_step._bound_pld.cache_clear()
    yield tmp_path / "pld"
    one_step._bound_pld.cache_clear()


def _uncached(monkeypatch, event, estimate, grid=GRID):
    with monkeypatch.context() as m:
        m.setenv(pld_cache.CACHE_DIR_ENV, "off")
        return _fresh(event, estimate, grid)


@pytest.mark.parametrize("estimate,grid", [("sound", GRID), ("attained", GRID), ("attained", GRID_SPARSE)])
def test_hit_returns_the_computed_pld_bit_for_bit(cache, monkeypatch, estimate, grid):
    event = _event()
    reference = _uncached(monkeypatch, event, estimate, grid)
    first = _fresh(event, estimate, grid)  # computed, then stored
    assert len(list(cache.glob("*.npz"))) == 1

    def no_build(*args):
        raise AssertionError("a hit must not compute")

    monkeypatch.setattr(one_step, "_build_pld", no_build)
    hit = _fresh(event, estimate, grid)
    assert _same(hit, reference) and _same(first, reference)
    assert hit.get_epsilon_for_delta(1e-5) == reference.get_epsilon_for_delta(1e-5)


def test_sparse_pmfs_round_trip(cache, monkeypatch):
    from dp_accounting.pld import pld_pmf

    pld = _uncached(monkeypatch, _event(), "attained", GRID_SPARSE)
    assert any(isinstance(p, pld_pmf.SparsePLDPmf) for p in _pmfs(pld))  # the case this test is about
    k = pld_cache.key(REGISTRY["T6"], DEFAULT_CONFIG, "attained", PldSettings(GRID_SPARSE), 2**31)
    pld_cache.store(k, pld)
    assert _same(pld_cache.load(k), pld)


def test_key_changes_with_every_defining_field(monkeypatch):
    base = dict(bound=REGISTRY["T6"], config=DEFAULT_CONFIG, estimate="sound",
                settings=PldSettings(1e-4, 0.5, log_mass_truncation_bound=-50.0), memory_limit=2**31)
    # the tail mass truncation (0.5 here) is no part of one step: it leaves the key as the default's
    assert pld_cache.key(**base) == pld_cache.key(**{**base, "settings": PldSettings(1e-4)})
    changes = [("bound", REGISTRY["T7"]), ("config", DEFAULT_CONFIG.with_(sigma=1.25)), ("estimate", "attained"),
               ("settings", PldSettings(2e-4, log_mass_truncation_bound=-50.0)), ("memory_limit", 2**30),
               ("settings", PldSettings(1e-4, log_mass_truncation_bound=-40.0))]
    text = pld_cache._key_text(pld_cache.key(**base))
    texts = {text}
    for field, value in changes:
        texts.add(pld_cache._key_text(pld_cache.key(**{**base, field: value})))
    for field in ("source_sha256", "tsdp", "numpy", "scipy"):
        code = dict(pld_cache.code_fingerprint(), **{field: "changed"})
        with monkeypatch.context() as m:
            m.setattr(pld_cache, "code_fingerprint", lambda code=code: code)
            texts.add(pld_cache._key_text(pld_cache.key(**base)))
    assert len(texts) == 1 + len(changes) + 4


def test_source_fingerprint_follows_the_source(tmp_path, monkeypatch):
    package = tmp_path / "tsdp_cache_probe"
    package.mkdir()
    (package / "__init__.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(pld_cache, "_SOURCES", ("tsdp_cache_probe",))
    pld_cache.code_fingerprint.cache_clear()
    try:
        before = pld_cache.code_fingerprint()["source_sha256"]
        (package / "__init__.py").write_text("X = 2\n")
        pld_cache.code_fingerprint.cache_clear()
        assert pld_cache.code_fingerprint()["source_sha256"] != before
    finally:
        pld_cache.code_fingerprint.cache_clear()


@pytest.mark.parametrize("damage", ["flip", "truncate", "foreign", "garbage"])
def test_a_damaged_or_foreign_file_is_a_miss_never_a_number(cache, monkeypatch, damage):
    event = _event()
    reference = _uncached(monkeypatch, event, "sound")
    _fresh(event, "sound")
    (path,) = cache.glob("*.npz")
    data = bytearray(path.read_bytes())
    if damage == "flip":  # inside the probabilities: the checksum no longer matches
        data[len(data) // 2] ^= 0x40
    elif damage == "truncate":
        data = data[: len(data) // 3]
    elif damage == "garbage":
        data = bytearray(b"not a cache file")
    else:  # another key's valid file under this name
        other = _uncached(monkeypatch, event, "attained")
        k = pld_cache.key(REGISTRY["T6"], DEFAULT_CONFIG, "attained", PldSettings(GRID), 2**31)
        pld_cache.store(k, other)
        data = bytearray(pld_cache._path(cache, pld_cache._key_text(k)).read_bytes())
    path.write_bytes(bytes(data))
    one_step._bound_pld.cache_clear()
    k = pld_cache.key(REGISTRY["T6"], DEFAULT_CONFIG, "sound", PldSettings(GRID), resolve_memory_limit())
    assert pld_cache.load(k) is None
    assert _same(_fresh(event, "sound"), reference)  # recomputed (and stored again)
    assert _same(pld_cache.load(k), reference)


def test_unwritable_location_and_off_compute_without_a_file(tmp_path, monkeypatch):
    event = _event()
    reference = _uncached(monkeypatch, event, "sound")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(pld_cache.CACHE_DIR_ENV, str(blocker))  # mkdir under a file fails, even for root
    assert _same(_fresh(event, "sound"), reference)
    for off in ("off", "0", "", "none"):
        monkeypatch.setenv(pld_cache.CACHE_DIR_ENV, off)
        assert pld_cache.cache_dir() is None
    assert _same(_fresh(event, "sound"), reference)
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]


def test_a_substituted_registry_is_never_stored(cache):
    event = _event()
    t6 = REGISTRY["T6"]
    with substituted(replace(t6, build=t6.build)):  # the same numbers, another object: still not stored
        _fresh(event, "sound")
    assert not cache.exists() or not list(cache.glob("*.npz"))
    with substituted(replace(REGISTRY["T10"], label="mutant")):  # a catalogue T6 while T10 is substituted
        _fresh(event, "attained")
    assert not cache.exists() or not list(cache.glob("*.npz"))


def test_trim_removes_the_oldest_files_first(tmp_path):
    sizes = {"a": 300, "b": 300, "c": 300}
    for age, (name, size) in enumerate(sizes.items()):
        path = tmp_path / f"{name}.npz"
        path.write_bytes(b"x" * size)
        os.utime(path, (1_000_000 + age, 1_000_000 + age))  # a oldest, c newest
    removed = pld_cache.trim(tmp_path, max_bytes=650)
    assert [p.name for p in removed] == ["a.npz"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.npz", "c.npz"]


def test_a_read_only_file_still_serves_its_pld(cache, monkeypatch):
    event = _event()
    reference = _uncached(monkeypatch, event, "sound")
    _fresh(event, "sound")

    def refuse(*args, **kwargs):
        raise PermissionError("read-only cache")

    monkeypatch.setattr(pld_cache.os, "utime", refuse)
    k = pld_cache.key(REGISTRY["T6"], DEFAULT_CONFIG, "sound", PldSettings(GRID), resolve_memory_limit())
    assert _same(pld_cache.load(k), reference)


# The key text (less the code fingerprint, which follows the source) of two fixed one-step PLDs, as the release
# before the accountant was split into its jobs wrote it: a cache written then is read now.
_RELEASED_KEYS = [
    (("T6", {}, "attained", PldSettings(1e-3), 2**31),
     '{"config":{"L":20,"N":320,"batch_size":32,"bottom":"wr","context_length":1,"derived":{"T":20,'
     '"compositions_per_epoch":10,"k":2,"phi":0.5,"q":0.05,"r":0.1,"rho":0.1,"sequences_per_step":32,'
     '"steps_per_epoch":10},"forecast_length":1,"instances":1,"lengths":null,"relation":"event","sigma":1.0,'
     '"sigma_context":0.0,"sigma_forecast":0.0,"top":"wor","v":1.0,"w":1},"discretization":0.001,'
     '"estimate":"attained","log_mass_truncation_bound":-50.0,"memory_limit":2147483648,"theorem":"T6"}'),
    (("T1", {"top": "deterministic"}, "sound", PldSettings(1e-2, log_mass_truncation_bound=-40), 2**30),
     '{"config":{"L":20,"N":320,"batch_size":32,"bottom":"wr","context_length":1,"derived":{"T":20,'
     '"compositions_per_epoch":1,"k":2,"phi":0.5,"q":0.05,"r":0.1,"rho":0.1,"sequences_per_step":32,'
     '"steps_per_epoch":10},"forecast_length":1,"instances":1,"lengths":null,"relation":"event","sigma":1.0,'
     '"sigma_context":0.0,"sigma_forecast":0.0,"top":"deterministic","v":1.0,"w":1},"discretization":0.01,'
     '"estimate":"sound","log_mass_truncation_bound":-40.0,"memory_limit":1073741824,"theorem":"T1"}'),
]


@pytest.mark.parametrize("args,released", _RELEASED_KEYS)
def test_key_text_is_the_released_one(args, released):
    from tsdp.verify.estimate import Estimate

    theorem, changes, estimate, settings, memory = args
    config = DEFAULT_CONFIG.with_(**changes)
    for spelled in (estimate, Estimate(estimate)):  # the member the accountant passes keys as its string
        k = pld_cache.key(REGISTRY[theorem], config, spelled, settings, memory)
        assert k.pop("code") == pld_cache.code_fingerprint()
        assert pld_cache._key_text(k) == released
