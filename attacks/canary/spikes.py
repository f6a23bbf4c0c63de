"""Spike canaries in a series: where they go, the data with them, and the windows that hold each one.

A canary is a marked spike of ±``spike`` standard deviations added to one element at a
random position of a random series. The canaries lie at distinct positions at least
L_C + L_F apart, so no window holds two of them; each is scored on its *canary windows*
(the windows of Algorithm 4, front padding included, that hold its element). The spike's
sign is random, so no rule learnt from other canaries predicts it: only memorisation (the
influence of the canary itself) separates inserted from left-out canaries.
"""
from __future__ import annotations

import numpy as np
import torch

from tsdp.theorems.config import ConfigError, TrainingConfig

from tsdp.datasets.series import SeriesData


def place_canaries(data: SeriesData, m: int, config: TrainingConfig, rng: np.random.Generator,
                   spike: float = 10.0):
    """(series, position, spike) of m canaries at random distinct slots of the training parts.

    Slots are every k = L_C + L_F elements from a random offset per series, so no window holds
    two canaries. The spike is ``spike`` standard deviations of its series with a random sign.

    Args:
        data: The series.
        m: The canaries.
        config: The window geometry.
        rng: The placements' and signs' random stream.
        spike: The spikes' size in standard deviations of their series.

    Returns:
        (series, position, spike), each (m,).

    Raises:
        ConfigError: The canaries do not fit, or a series is too short to hold out L_F (naming ``canaries``).
    """
    try:
        train_part, _ = data.split(config.forecast_length)
    except ValueError as exc:  # a series too short to hold out L_F
        raise ConfigError("canaries", str(exc), m) from None
    k = config.window_length
    offsets = rng.integers(0, k, size=train_part.N)
    slots = [np.arange(o, len(s), k) for o, s in zip(offsets, train_part.series)]
    counts = np.array([len(x) for x in slots])
    if m > counts.sum():
        raise ConfigError("canaries", f"must fit into the data's {counts.sum()} slots (one per L_C + L_F = {k} "
                                      "elements)", m)
    flat = rng.choice(int(counts.sum()), size=m, replace=False)
    first = np.cumsum(counts) - counts
    series = np.searchsorted(first, flat, side="right") - 1
    position = np.array([slots[n][i] for n, i in zip(series, flat - first[series])], dtype=np.int64)
    scale = np.array([train_part.series[n].std() + 1e-6 for n in series])
    values = spike * scale * rng.choice([-1.0, 1.0], size=m)
    with np.errstate(over="ignore", invalid="ignore"):
        placed = np.array([train_part.series[n][p] for n, p in zip(series, position)]) + values
    if not np.isfinite(placed).all():
        raise ConfigError("spike", f"{spike:g} standard deviations of a series overflow float64 on this data (a "
                                   "canary would be inf): choose a smaller spike", spike)
    return series, position, values


def with_canaries(data: SeriesData, series, position, spike, mask) -> SeriesData:
    """``data`` with canary i (series[i], position[i], spike[i]) added where ``mask[i]`` (positions 0-based).

    Args:
        data: The series.
        series: (m,) the canaries' series.
        position: (m,) their positions.
        spike: (m,) their values.
        mask: (m,) which canaries are added.

    Returns:
        The series with the canaries.
    """
    out = [s.copy() for s in data.series]
    for n, p, a in zip(series[mask], position[mask], spike[mask]):
        out[n][p] += a
    return SeriesData(tuple(out), data.starts)


def canary_windows(config: TrainingConfig, series, position, n_starts: torch.Tensor):
    """Windows holding each canary (padded column pos + L_C; starts t with t ≤ col < t + L_C + L_F, t < T_n):
    (m, L_C + L_F) sequence and start tensors plus validity mask.

    Args:
        config: The window geometry.
        series: (m,) the canaries' series.
        position: (m,) their positions in the training parts.
        n_starts: Per series, the number of window starts.

    Returns:
        (seq, start, valid): the windows' series, starts and validity, each (m, L_C + L_F).
    """
    k = config.window_length
    pos = torch.as_tensor(position)[:, None]
    offs = torch.arange(k)[None]
    start = pos + config.context_length - offs
    valid = (start >= 0) & (start < n_starts[torch.as_tensor(series)][:, None])
    seq = torch.as_tensor(series)[:, None].expand(-1, k)
    return seq, torch.where(valid, start, 0), valid


__all__ = ["canary_windows", "place_canaries", "with_canaries"]
