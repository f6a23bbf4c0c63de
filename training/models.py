"""Forecasting models with Student-t outputs (paper Appendix "Models"), all per-sample-gradient compatible.

Every model maps a context window (B, L_C) to a Student-t law per forecast step and is
written for torch.func: no in-place ops, no batch statistics (no batch-norm), no
data-dependent control flow; the LSTM of DeepAR is written out with torch ops (nn.LSTM
runs under vmap only through a slow per-sample fallback).

``forward(context, forecast)`` returns the per-sample Student-t negative log-likelihood,
averaged over the L_F forecast steps (the training loss of Algorithm 2; DeepAR's, as GluonTS's, also over
its teacher-forced context steps);
``sample(context, n_samples, generator)`` returns forecast sample paths (B, S, L_F). A model with
``covariates`` > 0 (DeepAR) also takes the window's covariates, (B, L_C + L_F, covariates), as a third argument.

Inputs are mean-scaled as GluonTS scales them, with no learned parameter. simple-ff uses GluonTS's
SimpleFeedForward scaling (``mean_abs_scaling``: mean |context| clamped at 1e-5); DLinear, iTransformer and
DeepAR use GluonTS's ``MeanScaler`` (mean |context| over the observed values, over DeepAR's last L_C values, a
``default_scale`` where none is observed, then clamped at ``minimum_scale`` 1e-10). GluonTS's ``MeanScaler``
without a ``default_scale`` takes a batch mean there, a cross-sample statistic that per-sample clipping cannot
bound, so tsdp's is a fixed 1.0 (GluonTS's ``default_scale`` option), also where every observed value is 0
(GluonTS: 1e-10). A context's unobserved values are :data:`UNOBSERVED` (NaN, GluonTS's convention): tsdp's loop
pads windows with it for these models (their ``padding``), as GluonTS marks its padding unobserved; a window
padded with zeros (a user's ``DataLoader``) is read as observed zeros. simple-ff and DLinear are scale-free (data × c
gives the same forecasts × c above the floor); iTransformer and DeepAR feed log(scale) to their networks, as
GluonTS's do, so they see the data's level.

With equal weights simple-ff, DLinear and iTransformer are GluonTS 0.17's modules as the paper's official
configurations build them, DeepAR with its time and age covariates (:class:`DeepAR`).
tests/integrations/test_gluonts_models.py checks each against ``gluonts.torch`` with copied weights.
"""
from __future__ import annotations

import math
from typing import Tuple

import numpy as np
import torch
from torch import nn

from .deepar import DEFAULT_LAGS, DeepAR, deepar_window
from .observations import (DEFAULT_SCALE, MIN_SCALE, MIN_SCALE_FF, UNOBSERVED, Forecaster, mean_abs_scale, mean_scale,
                           observed_values)
from .student_t import SCALE_EPS, StudentTHead, student_t_nll, student_t_sample, student_t_sample_quantiles


class DirectForecaster(Forecaster):
    """A model whose L_F Student-t laws are conditionally independent given the context.

    Subclasses implement ``features(scaled_context, scale) -> (B, L_F, h)`` and may set ``scaler`` (the
    scale of a context's values given its observed indicator, (B, 1); by default :func:`mean_abs_scale`). The
    context's unobserved positions (:data:`UNOBSERVED`) enter the features as 0, as GluonTS imputes them.

    Args:
        context_length: L_C.
        forecast_length: L_F.
        hidden: the width of the features per forecast step.

    Raises:
        ValueError: ``context_length`` below 1.
    """

    scaler = staticmethod(mean_abs_scale)

    def __init__(self, context_length: int, forecast_length: int, hidden: int):
        super().__init__()
        if context_length < 1:
            raise ValueError("context_length L_C must be >= 1 for a forecasting model")
        self.context_length = context_length
        self.forecast_length = forecast_length
        self.head = StudentTHead(hidden)

    def distribution(self, context: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(ν, loc, scale), each (B, L_F), in the data's units.

        Args:
            context: (B, L_C) contexts.

        Returns:
            (ν, loc, scale), each (B, L_F).
        """
        values, observed = observed_values(context)
        scale = self.scaler(values, observed)
        df, loc, s = self.head(self.features(values / scale, scale))
        return df, loc * scale, s * scale

    def forward(self, context: torch.Tensor, forecast: torch.Tensor) -> torch.Tensor:
        """The per-sample training loss: the Student-t NLL averaged over the L_F forecast steps.

        Args:
            context: (B, L_C) contexts.
            forecast: (B, L_F) forecast targets.

        Returns:
            (B,) losses.
        """
        df, loc, scale = self.distribution(context)
        return student_t_nll(forecast, df, loc, scale).mean(dim=-1)

    @torch.no_grad()
    def sample(self, context: torch.Tensor, n_samples: int, generator: torch.Generator) -> torch.Tensor:
        """Forecast sample paths from the model's laws.

        Args:
            context: (B, L_C) contexts.
            n_samples: S, paths per context.
            generator: the draws' generator.

        Returns:
            (B, S, L_F) paths.
        """
        df, loc, scale = self.distribution(context)
        shape = (context.shape[0], n_samples, self.forecast_length)
        return student_t_sample(
            df[:, None].expand(shape), loc[:, None].expand(shape), scale[:, None].expand(shape), generator
        )

    @torch.no_grad()
    def path_quantiles(self, context: torch.Tensor, n_samples: int, generator: torch.Generator) -> np.ndarray:
        """The quantiles of :data:`~tsdp.training.metrics.QUANTILES` that :func:`~tsdp.training.metrics.sample_quantiles`
        takes of :meth:`sample`'s paths (the same ``context``, ``n_samples`` and generator state), bit for bit, with
        the generator left where :meth:`sample` leaves it; only the draws of the quantiles' ranks are computed
        (:func:`~tsdp.training.student_t.student_t_sample_quantiles`: a window's L_F laws do not depend on its
        draws). What :func:`tsdp.training.evaluation.evaluate` scores.

        Args:
            context: (B, L_C) contexts.
            n_samples: S, paths per context.
            generator: the draws' generator.

        Returns:
            The quantiles (Q, B, L_F), float64.
        """
        df, loc, scale = self.distribution(context)
        return student_t_sample_quantiles(df, loc, scale, n_samples, generator)


def _gluonts_linear(dim_in: int, dim_out: int) -> nn.Linear:
    """GluonTS SimpleFeedForward's ``make_linear_layer``: weights uniform on [-0.07, 0.07], zero bias."""
    lin = nn.Linear(dim_in, dim_out)
    nn.init.uniform_(lin.weight, -0.07, 0.07)
    nn.init.zeros_(lin.bias)
    return lin


class SimpleFeedForward(DirectForecaster):
    """GluonTS SimpleFeedForward with ``hidden_dimensions=[64, 64]`` (``gluonts.torch.model.simple_feedforward``):
    L_C → 64 (ReLU) → L_F × 64 features, GluonTS's init, no batch-norm. GluonTS's layers are
    ``[L_C] + hidden_dimensions[:-1]`` then a last layer to L_F × ``hidden_dimensions[-1]``: one hidden layer.

    Args:
        context_length: L_C.
        forecast_length: L_F.
        hidden: the hidden width (GluonTS's ``hidden_dimensions`` [hidden, hidden]).
    """

    def __init__(self, context_length: int, forecast_length: int, hidden: int = 64):
        super().__init__(context_length, forecast_length, hidden)
        self.hidden = hidden
        self.mlp = nn.Sequential(_gluonts_linear(context_length, hidden), nn.ReLU(),
                                 _gluonts_linear(hidden, forecast_length * hidden))

    def features(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """The hidden layer's features per forecast step.

        Args:
            x: (B, L_C) scaled contexts.
            scale: (B, 1) their scales (unread: the model is scale-free).

        Returns:
            (B, L_F, hidden) features.
        """
        return self.mlp(x).reshape(x.shape[0], self.forecast_length, self.hidden)


class DLinear(DirectForecaster):
    """DLinear (Zeng et al. 2023) as GluonTS's ``DLinearModel(hidden_dimension=20, kernel_size=25, scaling="mean")``:
    moving-average trend/seasonal split (edge-padded), one linear map each to L_F × 20 features, GluonTS's
    ``make_linear_layer`` init, ``MeanScaler`` (:func:`mean_scale`). GluonTS pads (k - 1) // 2 values at both ends,
    which fits only an odd kernel; an even one is padded one more at the back here.

    Args:
        context_length: L_C.
        forecast_length: L_F.
        hidden: features per forecast step.
        kernel_size: the moving average's width.
    """

    scaler = staticmethod(mean_scale)

    def __init__(self, context_length: int, forecast_length: int, hidden: int = 20, kernel_size: int = 25):
        super().__init__(context_length, forecast_length, hidden)
        self.hidden = hidden
        self.kernel_size = kernel_size
        self.seasonal = _gluonts_linear(context_length, forecast_length * hidden)
        self.trend = _gluonts_linear(context_length, forecast_length * hidden)

    def features(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """The seasonal and trend maps' summed features per forecast step.

        Args:
            x: (B, L_C) scaled contexts.
            scale: (B, 1) their scales (unread).

        Returns:
            (B, L_F, hidden) features.
        """
        front = (self.kernel_size - 1) // 2
        back = self.kernel_size - 1 - front
        padded = torch.cat([x[:, :1].expand(-1, front), x, x[:, -1:].expand(-1, back)], dim=1)
        sums = torch.cat([padded.new_zeros(padded.shape[0], 1), torch.cumsum(padded, dim=1)], dim=1)
        trend = (sums[:, self.kernel_size:] - sums[:, : -self.kernel_size]) / self.kernel_size
        h = self.seasonal(x - trend) + self.trend(trend)
        return h.reshape(x.shape[0], self.forecast_length, self.hidden)


class _EncoderLayer(nn.Module):
    """Post-norm transformer encoder layer with hand-written multi-head attention (vmap-friendly): torch's
    ``nn.TransformerEncoderLayer(norm_first=False, activation="relu", dropout=0)``, ``qkv`` its attention's
    ``in_proj`` (rows q, k, v), ``out`` its ``out_proj``. Initialised as the official code's DP module initialises
    it: there opacus's ``DPMultiheadAttention`` replaces torch's attention, with ``nn.Linear``'s default init for
    q, k, v and out (not torch's xavier-uniform ``in_proj`` with zero biases)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        attn = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.n_heads), dim=-1)
        mixed = (attn @ v).transpose(1, 2).reshape(b, n, d)
        x = self.norm1(x + self.out(mixed))
        return self.norm2(x + self.ff(x))


class ITransformer(DirectForecaster):
    """iTransformer (Liu et al. 2024) as GluonTS's ``ITransformerModel`` in the paper's configuration (d = 32,
    4 heads, FF 128, 2 post-norm layers, ReLU, no dropout, ``scaling="mean"``): each variate is one token, the
    embedding of its scaled context, log(1 + |loc|) (0: ``MeanScaler``'s loc) and log(scale); the encoder ends
    in a LayerNorm; each token is projected to L_F × d / heads features for the Student-t head. The series here
    are univariate, so there is one token per sample.

    Args:
        context_length: L_C.
        forecast_length: L_F.
        d_model: the token width d.
        n_heads: attention heads.
        d_ff: the feed-forward width.
        n_layers: encoder layers.
    """

    scaler = staticmethod(mean_scale)

    def __init__(self, context_length: int, forecast_length: int, d_model: int = 32, n_heads: int = 4,
                 d_ff: int = 128, n_layers: int = 2):
        super().__init__(context_length, forecast_length, d_model // n_heads)
        self.hidden = d_model // n_heads
        self.embed = nn.Linear(context_length + 2, d_model)
        self.layers = nn.ModuleList(_EncoderLayer(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.project = nn.Linear(d_model, forecast_length * self.hidden)

    def features(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """The encoded token's features per forecast step.

        Args:
            x: (B, L_C) scaled contexts.
            scale: (B, 1) their scales (log(scale) is an input).

        Returns:
            (B, L_F, d / heads) features.
        """
        log_scale = torch.log(scale)
        tokens = self.embed(torch.cat([x, torch.zeros_like(log_scale), log_scale], dim=-1))[:, None, :]
        for layer in self.layers:
            tokens = layer(tokens)
        return self.project(self.norm(tokens)[:, 0]).reshape(x.shape[0], self.forecast_length, self.hidden)


class MLP(nn.Module):
    """Point forecaster L_C → 256 → 256 → L_F (ReLU) with per-sample squared error: the step benchmark's plain MLP.

    Not one of the paper's four models; ``tsdp bench loop`` uses it to time the DP step on
    nothing but ``nn.Linear`` layers, where the per-sample clipping overhead is at its purest.

    Args:
        context_length: L_C.
        forecast_length: L_F.
        hidden: the hidden layers' width.
    """

    def __init__(self, context_length: int, forecast_length: int, hidden: int = 256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(context_length, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, forecast_length))

    def forward(self, context: torch.Tensor, forecast: torch.Tensor) -> torch.Tensor:
        """The per-sample squared error averaged over the forecast steps.

        Args:
            context: (B, L_C) contexts.
            forecast: (B, L_F) targets.

        Returns:
            (B,) losses.
        """
        return (self.net(context) - forecast).square().mean(dim=-1)


MODELS = {"simple-ff": SimpleFeedForward, "deepar": DeepAR, "dlinear": DLinear, "itransformer": ITransformer}


def make_model(name: str, context_length: int, forecast_length: int, **kwargs) -> nn.Module:
    """One of the paper's four models by CLI name (simple-ff | deepar | dlinear | itransformer).

    Args:
        name: the model's CLI name.
        context_length: its context length (DeepAR: the window W it reads).
        forecast_length: L_F.

    Returns:
        The model, initialised from torch's global generator.

    Raises:
        ValueError: an unknown name.
    """
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    return MODELS[name](context_length, forecast_length, **kwargs)


__all__ = ["DEFAULT_LAGS", "DEFAULT_SCALE", "MIN_SCALE", "MIN_SCALE_FF", "MODELS", "SCALE_EPS", "UNOBSERVED", "DLinear",
           "DeepAR", "DirectForecaster", "Forecaster", "ITransformer", "MLP", "SimpleFeedForward", "StudentTHead",
           "deepar_window", "make_model", "mean_abs_scale", "mean_scale", "observed_values", "student_t_nll",
           "student_t_sample"]
