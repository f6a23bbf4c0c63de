"""Monte Carlo trials of a worst-case construction through the real DP-SGD loop, batched over trials.

One trial = ``steps`` training steps (Algorithm 2) of the construction's scheme on one of the
two neighbouring datasets. Trials are a tensor dimension: the sampler draws the windows of
``trials × steps`` steps at once (:mod:`training.samplers`), the windows are cropped
(:func:`training.windows.gather_windows`), split, augmented, and the loop's
:func:`training.step.private_gradient` computes per-sample gradients (torch.func), clips
them to C, sums, adds N(0, σ²C²) and divides by Λ, one independent noise draw per step.
No Python loop runs per trial; chunks bound the memory.

Epoch-scoped schemes (deterministic top level, T1/T3/T4): one composition is one epoch; the
changed sequence 0 lies in the epoch's first step (Algorithm 3), and the other steps of the
epoch see identical data in both worlds and a gradient function that does not depend on θ,
so their releases have the same law in both worlds and are not simulated. Shuffled iteration
(the same constructions with ``top="shuffle"``) hides that step: its trials run every step of
whole epochs (``steps`` = the epochs' steps, rows starting at epoch boundaries) and
:mod:`attacks.montecarlo.shuffled` reads them.
"""
from __future__ import annotations

from typing import Iterator, Optional, Union

import torch

from tsdp.training.samplers import (BiLevelSampler, DeterministicTopLevel, PooledSampler, TopBatch, WindowIndex,
                                    make_sampler)
from tsdp.training.step import private_gradient
from tsdp.training.train import resolve_device
from tsdp.training.windows import augment, gather_windows, split_window
from tsdp.theorems.config import Bottom, Top

from .constructions import Construction

WINDOWS_PER_CHUNK = 1 << 21  # windows materialised at once (bounds peak memory)

Sampler = Union[BiLevelSampler, PooledSampler]
"""A sampler of :func:`training.samplers.make_sampler` (or one with the same ``sample``, in its place)."""


def slots_per_step(construction: Construction, sampler: Sampler) -> int:
    """Window slots M of one step of the construction's sampler (masked slots included).

    Args:
        construction: The construction.
        sampler: Its scheme's sampler (:func:`training.samplers.make_sampler`), or one that replaces it.

    Returns:
        The slots per step.
    """
    cfg = construction.config
    if cfg.top == Top.POOLED:
        return cfg.batch_size
    per_seq = cfg.instances if cfg.bottom == Bottom.WR else int(sampler.bottom.max_starts)
    return cfg.sequences_per_step * per_seq


def sample_steps(construction: Construction, sampler: Sampler, n_steps: int,
                 generator: torch.Generator) -> WindowIndex:
    """Windows of ``n_steps`` independent compositions of the construction's scheme (real samplers).

    Deterministic top level: every composition is the first step of an epoch (Algorithm 3,
    sequences 0..N'-1, which holds the changed sequence 0) with fresh bottom-level draws.

    Args:
        construction: The construction.
        sampler: Its scheme's sampler, or one that replaces it.
        n_steps: The compositions.
        generator: The generator the sampler draws from.

    Returns:
        The windows of every composition.
    """
    if isinstance(sampler, BiLevelSampler) and isinstance(sampler.top, DeterministicTopLevel):
        first = sampler.top.sample(1, generator)
        top = TopBatch(first.seq.expand(n_steps, -1), first.mask.expand(n_steps, -1))
        return sampler.bottom.sample(top, generator)
    return sampler.sample(n_steps, generator)


def released_update_chunks(construction: Construction, world: str, trials: int, steps: int,
                           generator: torch.Generator, *, sampler: Optional[Sampler] = None,
                           sigma: Optional[float] = None,
                           clip: Optional[float] = None,
                           sampler_generator: Optional[torch.Generator] = None) -> Iterator[torch.Tensor]:
    """Centred released updates (Λ g̃ / C - offset) of ``trials`` runs of ``steps`` steps, in chunks (n, steps) float64.

    ``world`` is ``"p"`` or ``"q"`` (the construction's datasets). ``sampler`` overrides the
    scheme's sampler (tests inject broken ones); ``sigma`` and ``clip`` override the noise
    multiplier and clipping bound the loop runs with (planted bugs, :mod:`attacks.montecarlo.planted`;
    the noise std is ``sigma * clip``, the centring keeps the construction's C). In world P the
    rows follow ``construction.pair.P`` in every step, in world Q ``pair.Q``. ``sampler_generator``: the generator
    the sampler draws from (default ``generator``; the audit gives a user's sampler a CPU one), its windows moved to
    ``generator``'s device.

    Args:
        construction: The construction.
        world: ``"p"`` or ``"q"``.
        trials: The runs.
        steps: Compositions per run.
        generator: The loop's generator (noise, augmentation), on the loop's device.
        sampler: A sampler in place of the scheme's (None: the scheme's).
        sigma: The noise multiplier the loop runs with (None: the configuration's).
        clip: The clipping bound the loop runs with (None: the construction's C).
        sampler_generator: The generator the sampler draws from (None: ``generator``).

    Yields:
        (n, steps) float64 tensors of centred released updates, n ≤ the chunk size, ``trials`` rows in all.

    Raises:
        ValueError: ``world`` is neither ``"p"`` nor ``"q"``.
    """
    if world not in ("p", "q"):
        raise ValueError(f"world must be 'p' or 'q', got {world!r}")
    cfg = construction.config
    data = construction.data_p if world == "p" else construction.data_q
    if sampler is None:
        sampler = make_sampler(cfg)
    per_chunk = max(1, WINDOWS_PER_CHUNK // max(1, slots_per_step(construction, sampler) * steps))
    for first in range(0, trials, per_chunk):
        n = min(per_chunk, trials - first)
        index = sample_steps(construction, sampler, n * steps, sampler_generator or generator).to(generator.device)
        windows = gather_windows(data, index.seq, index.start, cfg.window_length)
        context, forecast = split_window(windows, cfg.context_length)
        if cfg.augmented:
            context, forecast = augment(context, forecast, sigma_context=cfg.sigma_context,
                                        sigma_forecast=cfg.sigma_forecast, v=cfg.v, generator=generator)
        g = private_gradient(construction.model, context, forecast, clip=construction.clip if clip is None else clip,
                             sigma=cfg.sigma if sigma is None else sigma, batch_size=cfg.batch_size,
                             generator=generator, mask=index.mask)["theta"]
        y = g[:, 0].double() * (cfg.batch_size / construction.clip) - construction.offset
        yield y.reshape(n, steps).cpu()


def naive_released_update(construction: Construction, world: str, generator: torch.Generator,
                          sampler: Sampler) -> float:
    """One trial of one step the naive way (the benchmark's baseline): the same loop code, one trial per call.

    Pinned to the vmap engine, the one the batched trials use, so the benchmark compares batching alone.

    Args:
        construction: The construction.
        world: ``"p"`` or ``"q"``.
        generator: The generator of the sampler and the noise.
        sampler: The scheme's sampler.

    Returns:
        The centred released update.
    """
    cfg = construction.config
    data = construction.data_p if world == "p" else construction.data_q
    index = sample_steps(construction, sampler, 1, generator).step(0)
    windows = gather_windows(data, index.seq[0], index.start[0], cfg.window_length)
    context, forecast = split_window(windows, cfg.context_length)
    if cfg.augmented:
        context, forecast = augment(context, forecast, sigma_context=cfg.sigma_context,
                                    sigma_forecast=cfg.sigma_forecast, v=cfg.v, generator=generator)
    g = private_gradient(construction.model, context, forecast, clip=construction.clip, sigma=cfg.sigma,
                         batch_size=cfg.batch_size, generator=generator, engine="vmap")["theta"]
    return float(g[0]) * cfg.batch_size / construction.clip - construction.offset


__all__ = ["released_update_chunks", "naive_released_update", "resolve_device", "sample_steps", "slots_per_step"]
