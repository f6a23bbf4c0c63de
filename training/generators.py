"""A run's random streams: torch generators whose whole state comes from every bit of a seed, one stream per use.

Two properties the privacy of a seeded run needs, which ``torch.Generator().manual_seed(seed)`` does not give:

- *The whole seed.* torch's CPU generator (MT19937) keeps the low 32 bits of ``manual_seed``'s argument: seeds that
  agree there draw the same stream (torch 2.13), so a secret seed of 63 bits (``secrets.randbits(63)``,
  docs/DESIGN.md's rule) was a secret of 32, few enough to try every one. Here the MT19937 state (624 words) comes
  from ``numpy.random.SeedSequence`` of the seed, as numpy's own ``MT19937`` bit generator builds it (the same
  words, so the two draw the same raw stream: tests/training/test_run_streams.py checks it); a CUDA (Philox)
  generator takes 64 bits of it, all it has.
- *One stream per use.* Seeding two generators with one seed gives one stream twice. The initial model
  (:func:`tsdp.training.train.initial_model`, torch's global generator) and the run's batches and noise were both
  seeded with the run's seed, so on the CPU the first steps' noise was drawn from the very MT19937 outputs that
  drew the initial weights: given θ0, which DP-SGD's analysis lets an adversary know (tsdp's white-box audits
  score against it), that noise was known, not N(0, σ²C²) independent of the rest. Each use here is its own child
  of the seed's ``SeedSequence`` (:data:`RUN_STREAM`, :data:`INIT_STREAM`).
"""
from __future__ import annotations

import struct
from typing import Union

import numpy as np
import torch

from tsdp.theorems.config import SEED_MAX, check_int

RUN_STREAM = 0
"""The run's draws: batches, augmentation, noise, forecast sample paths."""
INIT_STREAM = 1
"""The initial model's parameters."""

_MT_WORDS = 624  # MT19937's state
_HEADER = struct.Struct("<qiiQ")  # torch's CPU generator state: initial seed, left, seeded, next, then 624 uint64 words
_MT_OFFSET = _HEADER.size


def _seed_sequence(seed: int, stream: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(check_int("seed", seed, 0, SEED_MAX), spawn_key=(stream,))


def _check_cpu_layout(state: torch.Tensor) -> None:
    """Refuse a torch whose CPU generator state is not the layout :func:`_mt19937_state` writes (checked on a
    generator seeded with a known word)."""
    probe = torch.Generator().manual_seed(0x5EED).get_state().numpy().tobytes()
    seed, left, seeded, _ = _HEADER.unpack_from(probe, 0)
    word = np.frombuffer(probe, dtype="<u8", count=1, offset=_MT_OFFSET)[0]
    if state.numel() != len(probe) or (seed, left, seeded, int(word)) != (0x5EED, 1, 1, 0x5EED):
        raise RuntimeError("this torch's CPU generator state is not the MT19937 layout tsdp seeds (torch 2.x)")


def _mt19937_state(seed: int, stream: int) -> torch.Tensor:
    """torch's CPU generator state holding numpy's ``MT19937(SeedSequence(seed, spawn_key=(stream,)))`` state (key
    and position; its initial seed reads ``seed``)."""
    numpy_state = np.random.MT19937(_seed_sequence(seed, stream)).state["state"]
    key, pos = numpy_state["key"], int(numpy_state["pos"])
    state = torch.Generator().get_state()
    _check_cpu_layout(state)
    raw = bytearray(state.numpy().tobytes())
    # numpy reads key[pos] next and twists at pos = 624; torch reads state[next] and twists when --left reaches 0
    _HEADER.pack_into(raw, 0, seed, _MT_WORDS + 1 - pos, 1, pos)
    raw[_MT_OFFSET:_MT_OFFSET + 8 * _MT_WORDS] = key.astype("<u8").tobytes()
    return torch.frombuffer(raw, dtype=torch.uint8).clone()


def seeded_generator(seed: int, device: Union[str, torch.device] = "cpu", stream: int = RUN_STREAM) -> torch.Generator:
    """A ``torch.Generator`` on ``device`` whose state comes from every bit of ``seed`` (module docstring): on the CPU
    numpy's ``MT19937(SeedSequence(seed, spawn_key=(stream,)))`` state, elsewhere a 64-bit seed drawn from that
    ``SeedSequence``. Streams of one seed are independent children of it.

    Args:
        seed: The seed, in [0, 2^63).
        device: The generator's device.
        stream: Which of the seed's streams (:data:`RUN_STREAM`, :data:`INIT_STREAM`).

    Returns:
        The generator.

    Raises:
        ConfigError: ``seed`` not an integer in [0, 2^63).
    """
    generator = torch.Generator(device=device)
    if generator.device.type == "cpu":
        generator.set_state(_mt19937_state(seed, stream))
    else:
        generator.manual_seed(int(_seed_sequence(seed, stream).generate_state(1, np.uint64)[0]))
    return generator


def seed_global_cpu(seed: int, stream: int) -> None:
    """Set torch's global CPU generator as :func:`seeded_generator` sets a CPU one (for code that draws from the global
    generator: ``nn.Module`` initialisation; call it inside ``torch.random.fork_rng``).

    Args:
        seed: The seed, in [0, 2^63).
        stream: Which of the seed's streams.

    Raises:
        ConfigError: ``seed`` not an integer in [0, 2^63).
    """
    torch.random.set_rng_state(_mt19937_state(seed, stream))


__all__ = ["INIT_STREAM", "RUN_STREAM", "seed_global_cpu", "seeded_generator"]
