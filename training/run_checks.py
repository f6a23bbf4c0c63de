"""The training loop's refusals that read the device, the data or the trained model: each one line naming what to
change (:class:`~tsdp.theorems.errors.ConfigError`), before the first step where it can be known then."""
from __future__ import annotations

import math

import numpy as np
import torch

from tsdp.theorems.config import ConfigError, TrainingConfig

from tsdp.datasets.series import SeriesData

FLOAT32_MAX = float(np.finfo(np.float32).max)
"""The largest float32 magnitude: the models compute in float32, so a larger value of the data becomes inf."""


def resolve_device(device: str) -> torch.device:
    """The torch device a run trains on.

    Args:
        device: ``auto`` (cuda when available, else cpu), ``cpu`` or ``cuda[:N]``.

    Returns:
        The device.

    Raises:
        ConfigError: Naming ``device``: cuda without a CUDA device, or not a device.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("device", "cuda requested but torch sees no CUDA device; use cpu or auto", device)
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ConfigError("device", "must be auto, cpu or cuda[:N]", device) from exc


def largest_value(data: SeriesData) -> float:
    """The largest magnitude of the series' values.

    Args:
        data: The series.

    Returns:
        max |x| over every value.
    """
    return max(float(np.max(np.abs(s))) for s in data.series)


def check_magnitude(data: SeriesData) -> None:
    """Refuse data the float32 models cannot hold (|x| > 3.4e38 becomes inf).

    Args:
        data: The training series.

    Raises:
        ConfigError: Naming ``data``, with the largest magnitude.
    """
    largest = largest_value(data)
    if not largest <= FLOAT32_MAX:
        raise ConfigError("data", f"holds a value of magnitude {largest:.3g}, beyond float32 ({FLOAT32_MAX:.3g}), "
                                  "the models' precision; rescale the data")


def check_finite(model: torch.nn.Module, config: TrainingConfig, lr: float, ran: int, train_data: SeriesData) -> None:
    """Refuse a training that diverged: a parameter of the trained ``model`` is not finite after ``ran`` steps.

    Args:
        model: The trained model.
        config: The run's configuration (its augmentation is named when on).
        lr: The learning rate.
        ran: Training steps that ran.
        train_data: The training series (their scale is named).

    Raises:
        ConfigError: Naming ``lr``, with what else to lower (the data's scale, the augmentation).
    """
    diverged = [name for name, p in model.named_parameters() if not bool(torch.isfinite(p).all())]
    if diverged:
        noise = max(config.sigma_context, config.sigma_forecast) * config.v  # the augmentation's largest std
        raise ConfigError("lr", f"the training diverged: {len(diverged)} parameter tensor(s) of the model are not "
                                f"finite after {ran} steps at learning rate {lr:g}: lower it, or rescale "
                                f"the data (values up to {largest_value(train_data):.3g})"
                                + (f", or lower the augmentation (sigma_context={config.sigma_context:g}, "
                                   f"sigma_forecast={config.sigma_forecast:g}: a noise std up to {noise:.3g})"
                                   if noise > 0 else ""), lr)


def check_scores(crps: float, untrained: float, naive: float, train_data: SeriesData) -> None:
    """Refuse test scores that are not finite (values that overflow the float32 model).

    Args:
        crps: The trained model's test CRPS.
        untrained: The initial model's test CRPS.
        naive: The seasonal-naive forecast's test CRPS.
        train_data: The training series (their scale is named).

    Raises:
        ConfigError: Naming ``data``.
    """
    if not all(math.isfinite(x) for x in (crps, untrained, naive)):
        raise ConfigError("data", f"the test CRPS is not finite (trained {crps}, untrained {untrained}, seasonal "
                                  f"naive {naive}): values up to {largest_value(train_data):.3g} overflow the float32 "
                                  "model; rescale the data")


__all__ = ["FLOAT32_MAX", "check_finite", "check_magnitude", "check_scores", "largest_value", "resolve_device"]
