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
from typing import Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats
from torch import nn


DEFAULT_LAGS = (1, 2, 3, 4, 5, 6, 7, 23, 24, 25)


def student_t_nll(y: torch.Tensor, df: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Elementwise negative log-density of the Student-t law t_ν(loc, scale) at y.

    Args:
        y: the values.
        df: the degrees of freedom ν (> 0).
        loc: the location.
        scale: the scale (> 0).

    Returns:
        -log p(y), broadcast over the arguments.
    """
    z = (y - loc) / scale
    log_density = (
        torch.lgamma((df + 1) / 2)
        - torch.lgamma(df / 2)
        - 0.5 * torch.log(df * math.pi)
        - torch.log(scale)
        - (df + 1) / 2 * torch.log1p(z * z / df)
    )
    return -log_density


def student_t_sample(df: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Draws from t_ν(loc, scale) by inverting the CDF of uniforms from ``generator`` (reproducible).

    Args:
        df: the degrees of freedom ν.
        loc: the location.
        scale: the scale.
        generator: the uniforms' generator.

    Returns:
        One draw per element, shaped as ``loc``.
    """
    u = torch.rand(loc.shape, generator=generator, device=generator.device, dtype=torch.float64)
    z = stats.t.ppf(u.cpu().numpy(), df.detach().double().cpu().numpy())
    return loc + scale * torch.as_tensor(np.asarray(z), dtype=loc.dtype, device=loc.device)


class StudentTHead(nn.Module):
    """Projects features (..., h) to Student-t parameters as GluonTS's ``StudentTOutput`` (``domain_map``):
    ν = 2 + softplus, loc, scale = softplus clamped at float32's machine epsilon. One ``nn.Linear(h, 3)`` whose
    rows are GluonTS's three ``nn.Linear(h, 1)`` projections (df, loc, scale), with the same default init.

    Args:
        hidden: the features' width h.
    """

    def __init__(self, hidden: int):
        super().__init__()
        self.proj = nn.Linear(hidden, 3)

    def forward(self, h: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The Student-t parameters of features ``h``.

        Args:
            h: (..., h) features.

        Returns:
            (ν, loc, scale), each (...).
        """
        a = self.proj(h)
        return 2.0 + F.softplus(a[..., 0]), a[..., 1], F.softplus(a[..., 2]).clamp_min(SCALE_EPS)


SCALE_EPS = float(torch.finfo(torch.float32).eps)
"""The floor of the Student-t scale (GluonTS's ``StudentTOutput.domain_map``: the dtype's machine epsilon)."""
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


class _LSTM(nn.Module):
    """Stacked LSTM written with torch ops (per-sample-gradient friendly); ``step`` advances one time step.

    ``nn.LSTM``'s gates (rows i, f, g, o) and init: every weight and bias uniform on ±1/√hidden (as opacus's
    ``DPLSTM``, which the official code trains, initialises them too)."""

    def __init__(self, input_size: int, hidden: int, n_layers: int):
        super().__init__()
        self.hidden = hidden
        self.cells = nn.ModuleList(
            nn.ModuleDict({"ih": nn.Linear(input_size if i == 0 else hidden, 4 * hidden), "hh": nn.Linear(hidden, 4 * hidden)})
            for i in range(n_layers)
        )
        bound = 1.0 / math.sqrt(hidden)
        for weight in self.parameters():
            nn.init.uniform_(weight, -bound, bound)

    def initial_state(self, batch: int, like: torch.Tensor):
        zero = like.new_zeros(batch, self.hidden)
        return [(zero, zero) for _ in self.cells]

    def step(self, x: torch.Tensor, state):
        new_state = []
        for cell, (h, c) in zip(self.cells, state):
            i, f, g, o = (cell["ih"](x) + cell["hh"](h)).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            new_state.append((h, c))
            x = h
        return x, new_state


def deepar_window(context_length: int, lags: Sequence[int]) -> int:
    """The context DeepAR reads: L_C + max lag - 1 values, GluonTS's ``past_length`` (``context_length +
    max(lags_seq)`` with its ``lags_seq`` the lags less 1), the context length the official code's accountant is given
    (jan-schuchardt/dp_forecasting, models/dp_estimator.py: ``splitter.past_length``) and tsdp's accountant sees: every
    one of those values enters the loss.

    Args:
        context_length: L_C.
        lags: the lags read.

    Returns:
        W = L_C + max lag - 1.
    """
    return context_length + max(lags) - 1


class DeepAR(Forecaster):
    """DeepAR (Salinas et al. 2020) as GluonTS 0.17's ``DeepARModel`` in the official configuration: a 2-layer LSTM
    (hidden 40) over lagged, mean-scaled values and covariates, Student-t output.

    ``context_length`` is the window's context it reads, W = L_C + max lag - 1 (:func:`deepar_window`, GluonTS's
    ``past_length``). The scale is GluonTS's ``MeanScaler`` of the last L_C = W - max lag + 1 context values
    (:func:`mean_scale`). Teacher-forced, the LSTM unrolls over the L_C - 1 + L_F positions that follow the first of
    those L_C values: the input at position p is the values at p - l for every lag l (so the oldest value, W - L_C +
    1 - max lag = 0, is read), a learned constant (GluonTS's embedding of the single static category, cardinality [1],
    dimension 1), log(scale) and position p's ``covariates`` (GluonTS's time features: the frequency's calendar
    features and the age feature, :mod:`tsdp.datasets.time_features`); its output is the Student-t law of the value
    at p. The training loss is GluonTS's (``DeepARModel.loss`` as ``DeepARLightningModule.training_step`` calls it,
    ``future_only=False``): the NLL in data units averaged over all L_C - 1 + L_F unrolled positions, context and
    forecast. Sampling unrolls the context the same way, then draws the L_F forecast values ancestrally. Given
    ``lags`` are all kept (a lag longer than the window is refused); by default :data:`DEFAULT_LAGS` up to
    context_length.

    ``forward(context, forecast, covariates)`` and ``sample(context, n, generator, covariates)`` take the window's
    covariates (B, W + L_F, ``covariates``), position by position; tsdp's loop computes them from each window's
    position in its series (:func:`tsdp.datasets.time_features.window_covariates`). Without them (None: a window
    whose position is unknown, as an audit's worst-case window) they are 0, GluonTS's value for positions before a
    series' start.

    With equal weights, tsdp's loss and laws are those of GluonTS's ``DeepARModel(context_length=L_C, lags_seq=lags,
    num_feat_dynamic_real=covariates, num_layers=2, hidden_size=40, dropout_rate=0, scaling=True)`` on the same
    window and covariates (tests/integrations/test_gluonts_models.py), front padding included: tsdp's loop pads
    with :data:`UNOBSERVED`, which the scale leaves out and whose terms of the loss are 0, as GluonTS treats its
    padding (unobserved). GluonTS's input also holds a static real 0, which adds nothing (its weights get no
    gradient) and is left out here; and the ``default_scale`` 1.0 of a context without an observed non-zero value
    (module docstring) is tsdp's.

    Args:
        context_length: the window's context W = L_C + max lag - 1.
        forecast_length: L_F.
        hidden: the LSTM's width.
        n_layers: the LSTM's layers.
        lags: the lags read (None: :data:`DEFAULT_LAGS` up to ``context_length``).
        covariates: covariates per window position.

    Raises:
        ValueError: a lag outside [1, context_length] or a negative ``covariates``.
    """

    def __init__(self, context_length: int, forecast_length: int, hidden: int = 40, n_layers: int = 2,
                 lags: Optional[Sequence[int]] = None, covariates: int = 1):
        super().__init__()
        if lags is None:
            lags = tuple(l for l in DEFAULT_LAGS if l <= context_length)
        lags = tuple(int(l) for l in lags)
        if not lags or min(lags) < 1 or max(lags) > context_length:
            raise ValueError(f"DeepAR's lags must be in [1, context_length] (context_length {context_length} = "
                             f"L_C + max lag - 1; got lags {lags}): give context_length >= L_C + max lag - 1 with "
                             "L_C >= 1")
        if int(covariates) < 0:
            raise ValueError(f"DeepAR's covariates per position must be >= 0, got {covariates}")
        self.context_length = context_length
        self.forecast_length = forecast_length
        self.lags = lags
        self.covariates = int(covariates)
        self.first = max(lags)
        """The first unrolled position: L_C - 1 positions before the forecast (W - L_C + 1 = max lag)."""
        self.register_buffer("lag_index", torch.tensor(lags, dtype=torch.long), persistent=False)
        self.static = nn.Linear(1, 1, bias=False)
        """GluonTS's ``FeatureEmbedder`` of the one static category: a learned constant, N(0, 1) as ``nn.Embedding``
        initialises it (a bias-free ``nn.Linear`` on 1, so the factored engine clips it as a Linear)."""
        nn.init.normal_(self.static.weight)
        self.rnn = _LSTM(len(lags) + 2 + self.covariates, hidden, n_layers)
        self.head = StudentTHead(hidden)

    def _scale(self, values: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
        return mean_scale(values[:, self.first - 1:], observed[:, self.first - 1:])

    def _covariates(self, context: torch.Tensor, covariates: Optional[torch.Tensor]) -> torch.Tensor:
        width = self.context_length + self.forecast_length
        if covariates is None:
            return context.new_zeros(context.shape[0], width, self.covariates)
        if covariates.shape[1:] != (width, self.covariates):
            raise ValueError(f"DeepAR's covariates must have shape (B, {width}, {self.covariates}) (W + L_F positions, "
                             f"{self.covariates} per position), got {tuple(covariates.shape)}")
        return covariates.to(context.dtype)

    def _unroll(self, series: torch.Tensor, covariates: torch.Tensor, positions: range, log_scale: torch.Tensor,
                state):
        """LSTM outputs (B, len(positions), h) at ``positions`` of the scaled ``series`` and the state after them."""
        static = torch.cat([self.static(torch.ones_like(log_scale)), log_scale], dim=-1)
        outputs = []
        for p in positions:
            x = torch.cat([series[:, p - self.lag_index], static, covariates[:, p]], dim=-1)
            h, state = self.rnn.step(x, state)
            outputs.append(h)
        return outputs, state

    def forward(self, context: torch.Tensor, forecast: torch.Tensor,
                covariates: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The per-sample training loss: the NLL averaged over the unrolled context and forecast positions.

        Args:
            context: (B, W) contexts.
            forecast: (B, L_F) forecast targets.
            covariates: (B, W + L_F, covariates) time features, or None (0).

        Returns:
            (B,) losses.
        """
        values, observed = observed_values(context)
        scale = self._scale(values, observed)
        window = torch.cat([values, forecast], dim=-1)
        positions = range(self.first, self.context_length + self.forecast_length)
        outputs, _ = self._unroll(window / scale, self._covariates(context, covariates), positions, torch.log(scale),
                                  self.rnn.initial_state(context.shape[0], context))
        df, loc, s = self.head(torch.stack(outputs, dim=1))
        nll = student_t_nll(window[:, self.first:], df, loc * scale, s * scale)
        return (nll * torch.cat([observed, torch.ones_like(forecast)], dim=-1)[:, self.first:]).mean(dim=-1)

    @torch.no_grad()
    def sample(self, context: torch.Tensor, n_samples: int, generator: torch.Generator,
               covariates: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Forecast sample paths, drawn ancestrally after the context's unrolling.

        Args:
            context: (B, W) contexts.
            n_samples: S, paths per context.
            generator: the draws' generator.
            covariates: (B, W + L_F, covariates) time features, or None (0).

        Returns:
            (B, S, L_F) paths.
        """
        b = context.shape[0]
        values, observed = observed_values(context)
        scale = self._scale(values, observed).repeat_interleave(n_samples, dim=0)
        log_scale = torch.log(scale)
        series = values.repeat_interleave(n_samples, dim=0) / scale
        covariates = self._covariates(context, covariates).repeat_interleave(n_samples, dim=0)
        _, state = self._unroll(series, covariates, range(self.first, self.context_length), log_scale,
                                self.rnn.initial_state(series.shape[0], series))
        for p in range(self.context_length, self.context_length + self.forecast_length):
            (h,), state = self._unroll(series, covariates, range(p, p + 1), log_scale, state)
            df, loc, s = self.head(h)
            series = torch.cat([series, student_t_sample(df, loc, s, generator)[:, None]], dim=1)
        paths = series[:, self.context_length:] * scale
        return paths.reshape(b, n_samples, self.forecast_length)


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
