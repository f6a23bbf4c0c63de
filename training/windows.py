"""Series storage with Algorithm 4's front padding, window cropping and the context/forecast split.

A dataset of N (possibly variable-length) series is stored as one tensor of shape
(N, L_C + L_max): L_C zeros in front (Algorithm 4's prepend_zeros), the series, then zeros
after a shorter series' end. A window with start t (0-based) is columns t, ..., t + L_C + L_F - 1;
for t < T_n = L_n - L_F + 1 it never reaches past the series' end.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple

import torch

from tsdp.theorems.config import window_starts

if TYPE_CHECKING:
    from tsdp.datasets.series import SeriesStart


def padding_of(model: torch.nn.Module) -> float:
    """The value a window's front padding holds for ``model``.

    Args:
        model: A forecaster.

    Returns:
        Its ``padding`` attribute (tsdp's forecasters: :data:`tsdp.training.models.UNOBSERVED`, GluonTS's unobserved
        values), else 0 (Algorithm 4's zeros).
    """
    return float(getattr(model, "padding", 0.0))


def covariates_of(model: torch.nn.Module) -> int:
    """How many covariates per window position ``model`` reads.

    Args:
        model: A forecaster.

    Returns:
        Its ``covariates`` (DeepAR's time features), else 0.
    """
    return int(getattr(model, "covariates", 0))


def pad_covariates(starts: Optional[Sequence["SeriesStart"]], lengths: Sequence[int],
                   context_length: int) -> torch.Tensor:
    """DeepAR's covariates of every series laid out as :func:`pad_series` lays out its values: (N, L_C + L_max, F)
    float32, column L_C + i holding position i of series n (:func:`tsdp.datasets.time_features.position_covariates`
    of its calendar ``starts[n]``, or none: ``starts`` None), the front padding 0 as GluonTS pads them; so
    :func:`gather_windows` crops a window's covariates with the same indices as its values.

    Args:
        starts: Each series' :class:`~tsdp.datasets.series.SeriesStart` (None: no calendar, the age alone).
        lengths: The series' lengths L_n.
        context_length: L_C, the front padding.

    Returns:
        The covariates, (N, L_C + L_max, F) float32.
    """
    from tsdp.datasets.time_features import covariate_count, position_covariates

    count = covariate_count(None if starts is None else starts[0].freq)
    out = torch.zeros(len(lengths), context_length + max(lengths), count, dtype=torch.float32)
    for n, length in enumerate(lengths):
        out[n, : context_length + length] = torch.from_numpy(
            position_covariates(None if starts is None else starts[n], -context_length, context_length + length))
    return out


def forecast_covariates(starts: Optional[Sequence["SeriesStart"]], history_lengths: Sequence[int],
                        context_length: int, forecast_length: int, freq: Optional[str]) -> torch.Tensor:
    """DeepAR's covariates of the windows that forecast the L_F values after histories of ``history_lengths``
    values (prefixes of series with calendars ``starts``, or None): positions h - L_C to h + L_F - 1 of each,
    (M, L_C + L_F, F) float32 (:func:`tsdp.datasets.time_features.window_covariates`).

    Args:
        starts: Each history's series start (None: no calendar).
        history_lengths: The histories' lengths h.
        context_length: L_C.
        forecast_length: L_F.
        freq: The data's step (sets F when M = 0).

    Returns:
        The covariates, (M, L_C + L_F, F) float32.
    """
    from tsdp.datasets.time_features import window_covariates

    return torch.from_numpy(window_covariates(starts, [h + forecast_length for h in history_lengths],
                                              context_length + forecast_length, freq))


def pad_series(series: Sequence[torch.Tensor], context_length: int,
               fill: float = 0.0) -> Tuple[torch.Tensor, torch.Tensor]:
    """Front-pad every series with L_C values ``fill`` (Algorithm 4, prepend_zeros; :func:`padding_of` a model)
    into one (N, L_C + L_max) tensor (after a shorter series' end: zeros, never inside a window).

    Args:
        series: The series (1-D).
        context_length: L_C.
        fill: The front padding's value.

    Returns:
        (padded, lengths): the (N, L_C + L_max) float32 tensor and the original lengths L_n (long, shape (N,)).
    """
    lengths = torch.tensor([len(s) for s in series], dtype=torch.long)
    width = context_length + int(lengths.max())
    padded = torch.zeros(len(series), width, dtype=torch.float32)
    padded[:, :context_length] = fill
    for n, s in enumerate(series):
        padded[n, context_length : context_length + len(s)] = torch.as_tensor(s, dtype=torch.float32)
    return padded, lengths


def gather_windows(padded: torch.Tensor, seq: torch.Tensor, start: torch.Tensor, window_length: int) -> torch.Tensor:
    """Crop windows x'_seq[start : start + L_C + L_F] (Algorithm 4's cropping) for index tensors of any shape.

    Args:
        padded: The padded series (N, width) (:func:`pad_series`), or their covariates (N, width, F)
            (:func:`pad_covariates`).
        seq: The windows' sequence indices, shape S.
        start: Their starts, shape S.
        window_length: L_C + L_F.

    Returns:
        The windows, shape S + (L_C + L_F,) (+ (F,) for covariates).
    """
    offsets = torch.arange(window_length, device=padded.device)
    return padded[seq[..., None], start[..., None] + offsets]


def split_window(windows: torch.Tensor, context_length: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Algorithm 2's split of windows into context y[1:L_C] and forecast y[L_C+1:L_C+L_F].

    Args:
        windows: Windows (..., L_C + L_F).
        context_length: L_C.

    Returns:
        (context (..., L_C), forecast (..., L_F)).
    """
    return windows[..., :context_length], windows[..., context_length:]


def every_window(series: Sequence, context_length: int, forecast_length: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Every window of ``series`` (Algorithm 4: front padding, each start 0..L_n - L_F), in series order, without
    augmentation: the windows a loader can draw.

    Args:
        series: The series (1-D).
        context_length: L_C.
        forecast_length: L_F.

    Returns:
        (context, forecast) of every window.
    """
    padded, lengths = pad_series([torch.as_tensor(s) for s in series], context_length)
    n_starts = window_starts(lengths, forecast_length)
    seq = torch.repeat_interleave(torch.arange(len(series)), n_starts)
    start = torch.cat([torch.arange(int(n)) for n in n_starts])
    return split_window(gather_windows(padded, seq, start, context_length + forecast_length), context_length)


def augment(
    context: torch.Tensor,
    forecast: torch.Tensor,
    *,
    sigma_context: float,
    sigma_forecast: float,
    v: float,
    generator: torch.Generator,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Online Gaussian augmentation of Section 4 / Theorem G.1: add Z_C ~ N(0, σ_C² v²) and Z_F ~ N(0, σ_F² v²).

    Fresh noise for every element of every window; σ = 0 leaves that part unchanged.

    Args:
        context: The windows' contexts.
        forecast: Their forecasts.
        sigma_context: σ_C.
        sigma_forecast: σ_F.
        v: The noise scale v.
        generator: The source of the noise.

    Returns:
        (augmented context, augmented forecast).
    """
    z_c = torch.randn(context.shape, generator=generator, device=context.device, dtype=context.dtype)
    z_f = torch.randn(forecast.shape, generator=generator, device=forecast.device, dtype=forecast.dtype)
    return context + (sigma_context * v) * z_c, forecast + (sigma_forecast * v) * z_f
