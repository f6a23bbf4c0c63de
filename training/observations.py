"""What a forecaster reads of a window: its observed values (GluonTS's unobserved-value convention), the mean
scalers, and the :class:`Forecaster` base (its front padding and covariates)."""
from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
from torch import nn


MIN_SCALE_FF = 1e-5
"""GluonTS SimpleFeedForward's ``mean_abs_scaling`` floor (``min_scale``)."""
MIN_SCALE = 1e-10
"""GluonTS ``MeanScaler``'s ``minimum_scale``."""
DEFAULT_SCALE = 1.0
"""The ``MeanScaler`` scale of a context without an observed non-zero value (GluonTS ``MeanScaler``'s
``default_scale``; module docstring)."""


UNOBSERVED = math.nan
"""The value of an unobserved position of a window: Algorithm 4's front padding in tsdp's own loop
(:attr:`Forecaster.padding`). GluonTS's convention: its ``AddObservedValuesIndicator`` reads NaN as
unobserved, imputes 0 and passes the indicator (``past_observed_values``) to the model."""


def observed_values(context: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(values, observed) of a context: unobserved (:data:`UNOBSERVED`) positions as 0 and the 0/1 indicator of the
    observed ones, GluonTS's ``past_target`` and ``past_observed_values``.

    Args:
        context: (B, L_C) contexts, :data:`UNOBSERVED` where a value is unobserved.

    Returns:
        (values, observed), each (B, L_C).
    """
    observed = ~torch.isnan(context)
    return torch.where(observed, context, torch.zeros_like(context)), observed.to(context.dtype)


def mean_abs_scale(context: torch.Tensor, observed: Optional[torch.Tensor] = None) -> torch.Tensor:
    """GluonTS SimpleFeedForward's ``mean_abs_scaling``: mean |context| clamped at 1e-5, shape (B, 1). It reads no
    observed indicator (GluonTS's model takes ``past_target`` only): unobserved values count as their 0.

    Args:
        context: (B, L_C) values.
        observed: unread (the signature scalers share).

    Returns:
        (B, 1) scales.
    """
    return context.abs().mean(dim=-1, keepdim=True).clamp_min(MIN_SCALE_FF)


def mean_scale(context: torch.Tensor, observed: Optional[torch.Tensor] = None) -> torch.Tensor:
    """GluonTS ``MeanScaler`` (keepdim): mean |context| over the ``observed`` positions (all by default),
    :data:`DEFAULT_SCALE` where none is observed or every observed value is 0, clamped at :data:`MIN_SCALE`;
    shape (B, 1); no batch statistics.

    Args:
        context: (B, L_C) values.
        observed: (B, L_C) 0/1 indicator of the observed values; None: all observed.

    Returns:
        (B, 1) scales.
    """
    if observed is None:
        observed = torch.ones_like(context)
    count = observed.sum(dim=-1, keepdim=True)
    mean = (context.abs() * observed).sum(dim=-1, keepdim=True) / count.clamp_min(1.0)
    return torch.where(mean > 0, mean, torch.full_like(mean, DEFAULT_SCALE)).clamp_min(MIN_SCALE)


class Forecaster(nn.Module):
    """One of tsdp's forecasters: its windows' front padding is :data:`UNOBSERVED` (``padding``); it reads
    ``covariates`` values per window position besides the series' values."""

    padding = UNOBSERVED
    """What tsdp's loop puts in a window's front padding for this model (GluonTS's unobserved values)."""
    covariates = 0
    """Covariates per window position the model reads (:class:`DeepAR`'s time features; none for the others)."""
