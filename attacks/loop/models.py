"""Forecasting models with Student-t outputs (paper Appendix "Models"), all per-sample-gradient compatible.

Every model maps a context window (B, L_C) to a Student-t law per forecast step and is
written for torch.func: no in-place ops, no batch statistics (no batch-norm), no
data-dependent control flow; the LSTM of DeepAR is written out with torch ops (nn.LSTM
runs under vmap only through a slow per-sample fallback).

``forward(context, forecast)`` returns the per-sample Student-t negative log-likelihood,
averaged over the L_F forecast steps (the training loss of Algorithm 2);
``sample(context, n_samples, generator)`` returns forecast sample paths (B, S, L_F).

Inputs are mean-scaled (GluonTS "target scaling"): scale = mean |context| + e^a with a
learned floor a, so all-padding contexts stay well defined without batch statistics.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats
from torch import nn

from .factored import register_per_sample_rule

DEFAULT_LAGS = (1, 2, 3, 4, 5, 6, 7, 23, 24, 25)


def student_t_nll(y: torch.Tensor, df: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Elementwise negative log-density of the Student-t law t_ν(loc, scale) at y."""
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
    """Draws from t_ν(loc, scale) by inverting the CDF of uniforms from ``generator`` (reproducible)."""
    u = torch.rand(loc.shape, generator=generator, device=generator.device, dtype=torch.float64)
    z = stats.t.ppf(u.cpu().numpy(), df.detach().double().cpu().numpy())
    return loc + scale * torch.as_tensor(np.asarray(z), dtype=loc.dtype, device=loc.device)


class StudentTHead(nn.Module):
    """Projects features (..., h) to Student-t parameters: ν = 2 + softplus, loc, scale = softplus + 1e-4."""

    def __init__(self, hidden: int):
        super().__init__()
        self.proj = nn.Linear(hidden, 3)

    def forward(self, h: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a = self.proj(h)
        return 2.0 + F.softplus(a[..., 0]), a[..., 1], F.softplus(a[..., 2]) + 1e-4


class MeanScaler(nn.Module):
    """Per-sample scale mean |context| + e^a (a learned), shape (B, 1); no batch statistics."""

    def __init__(self):
        super().__init__()
        self.log_floor = nn.Parameter(torch.zeros(()))

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        return context.abs().mean(dim=-1, keepdim=True) + torch.exp(self.log_floor)


@register_per_sample_rule(MeanScaler)
def _mean_scaler_rule(module: MeanScaler, inputs: tuple, output_grads) -> dict:
    """Per-sample gradient of the floor a for the factored engine: ∂y_i/∂a = e^a, so e^a · Σ_j g_ij."""
    g = output_grads[0]
    return {"log_floor": torch.exp(module.log_floor.detach()) * g.reshape(g.shape[0], -1).sum(1)}


class DirectForecaster(nn.Module):
    """A model whose L_F Student-t laws are conditionally independent given the context.

    Subclasses implement ``features(scaled_context) -> (B, L_F, h)``.
    """

    def __init__(self, context_length: int, forecast_length: int, hidden: int):
        super().__init__()
        if context_length < 1:
            raise ValueError("context_length L_C must be >= 1 for a forecasting model")
        self.context_length = context_length
        self.forecast_length = forecast_length
        self.scaler = MeanScaler()
        self.head = StudentTHead(hidden)

    def distribution(self, context: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(ν, loc, scale), each (B, L_F), in the data's units."""
        scale = self.scaler(context)
        df, loc, s = self.head(self.features(context / scale))
        return df, loc * scale, s * scale

    def forward(self, context: torch.Tensor, forecast: torch.Tensor) -> torch.Tensor:
        df, loc, scale = self.distribution(context)
        return student_t_nll(forecast, df, loc, scale).mean(dim=-1)

    @torch.no_grad()
    def sample(self, context: torch.Tensor, n_samples: int, generator: torch.Generator) -> torch.Tensor:
        df, loc, scale = self.distribution(context)
        shape = (context.shape[0], n_samples, self.forecast_length)
        return student_t_sample(
            df[:, None].expand(shape), loc[:, None].expand(shape), scale[:, None].expand(shape), generator
        )


class SimpleFeedForward(DirectForecaster):
    """GluonTS SimpleFeedForward: MLP L_C → 64 → 64 → L_F × 64 features, ReLU, no batch-norm."""

    def __init__(self, context_length: int, forecast_length: int, hidden: int = 64):
        super().__init__(context_length, forecast_length, hidden)
        self.hidden = hidden
        self.mlp = nn.Sequential(
            nn.Linear(context_length, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, forecast_length * hidden),
        )

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x).reshape(x.shape[0], self.forecast_length, self.hidden)


class DLinear(DirectForecaster):
    """DLinear (Zeng et al. 2023): moving-average (kernel 25) trend/seasonal split, one linear map each, hidden 20."""

    def __init__(self, context_length: int, forecast_length: int, hidden: int = 20, kernel_size: int = 25):
        super().__init__(context_length, forecast_length, hidden)
        self.hidden = hidden
        self.kernel_size = kernel_size
        self.seasonal = nn.Linear(context_length, forecast_length * hidden)
        self.trend = nn.Linear(context_length, forecast_length * hidden)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        front = (self.kernel_size - 1) // 2
        back = self.kernel_size - 1 - front
        padded = torch.cat([x[:, :1].expand(-1, front), x, x[:, -1:].expand(-1, back)], dim=1)
        sums = torch.cat([padded.new_zeros(padded.shape[0], 1), torch.cumsum(padded, dim=1)], dim=1)
        trend = (sums[:, self.kernel_size:] - sums[:, : -self.kernel_size]) / self.kernel_size
        h = self.seasonal(x - trend) + self.trend(trend)
        return h.reshape(x.shape[0], self.forecast_length, self.hidden)


class _EncoderLayer(nn.Module):
    """Post-norm transformer encoder layer with hand-written multi-head attention (vmap-friendly)."""

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
    """iTransformer (Liu et al. 2024): each variate's context is one token; d = 32, 4 heads, FF 128, 2 layers.

    The series here are univariate, so there is one token per sample (as in GluonTS).
    """

    def __init__(self, context_length: int, forecast_length: int, d_model: int = 32, n_heads: int = 4,
                 d_ff: int = 128, n_layers: int = 2):
        super().__init__(context_length, forecast_length, d_model)
        self.d_model = d_model
        self.embed = nn.Linear(context_length, d_model)
        self.layers = nn.ModuleList(_EncoderLayer(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.project = nn.Linear(d_model, forecast_length * d_model)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x)[:, None, :]
        for layer in self.layers:
            tokens = layer(tokens)
        return self.project(tokens[:, 0]).reshape(x.shape[0], self.forecast_length, self.d_model)


class _LSTM(nn.Module):
    """Stacked LSTM written with torch ops (per-sample-gradient friendly); ``step`` advances one time step."""

    def __init__(self, input_size: int, hidden: int, n_layers: int):
        super().__init__()
        self.hidden = hidden
        self.cells = nn.ModuleList(
            nn.ModuleDict({"ih": nn.Linear(input_size if i == 0 else hidden, 4 * hidden), "hh": nn.Linear(hidden, 4 * hidden)})
            for i in range(n_layers)
        )

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


class DeepAR(nn.Module):
    """DeepAR (Salinas et al. 2020): 2-layer LSTM (hidden 40) over lagged, mean-scaled values, Student-t output.

    Inputs at position p are the values at p - l for the lags l ≤ L_C and log(scale);
    training uses teacher forcing over the window, the loss is the NLL of the L_F forecast
    positions; sampling is ancestral (autoregressive).
    """

    def __init__(self, context_length: int, forecast_length: int, hidden: int = 40, n_layers: int = 2,
                 lags: Optional[Sequence[int]] = None):
        super().__init__()
        lags = tuple(l for l in (DEFAULT_LAGS if lags is None else lags) if 1 <= l <= context_length)
        if not lags:
            raise ValueError("DeepAR needs at least one lag in [1, L_C]; context_length L_C must be >= 1")
        self.context_length = context_length
        self.forecast_length = forecast_length
        self.lags = lags
        self.first = max(lags)
        self.register_buffer("lag_index", torch.tensor(lags, dtype=torch.long), persistent=False)
        self.scaler = MeanScaler()
        self.rnn = _LSTM(len(lags) + 1, hidden, n_layers)
        self.head = StudentTHead(hidden)

    def _inputs(self, series: torch.Tensor, p: int, log_scale: torch.Tensor) -> torch.Tensor:
        return torch.cat([series[:, p - self.lag_index], log_scale], dim=-1)

    def forward(self, context: torch.Tensor, forecast: torch.Tensor) -> torch.Tensor:
        scale = self.scaler(context)
        log_scale = torch.log(scale)
        series = torch.cat([context, forecast], dim=-1) / scale
        state = self.rnn.initial_state(context.shape[0], context)
        outputs = []
        for p in range(self.first, self.context_length + self.forecast_length):
            h, state = self.rnn.step(self._inputs(series, p, log_scale), state)
            if p >= self.context_length:
                outputs.append(h)
        df, loc, s = self.head(torch.stack(outputs, dim=1))
        return student_t_nll(forecast, df, loc * scale, s * scale).mean(dim=-1)

    @torch.no_grad()
    def sample(self, context: torch.Tensor, n_samples: int, generator: torch.Generator) -> torch.Tensor:
        b = context.shape[0]
        scale = self.scaler(context).repeat_interleave(n_samples, dim=0)
        log_scale = torch.log(scale)
        series = context.repeat_interleave(n_samples, dim=0) / scale
        state = self.rnn.initial_state(series.shape[0], series)
        for p in range(self.first, self.context_length):
            _, state = self.rnn.step(self._inputs(series, p, log_scale), state)
        for p in range(self.context_length, self.context_length + self.forecast_length):
            h, state = self.rnn.step(self._inputs(series, p, log_scale), state)
            df, loc, s = self.head(h)
            series = torch.cat([series, student_t_sample(df, loc, s, generator)[:, None]], dim=1)
        paths = series[:, self.context_length:] * scale
        return paths.reshape(b, n_samples, self.forecast_length)


class MLP(nn.Module):
    """Point forecaster L_C → 256 → 256 → L_F (ReLU) with per-sample squared error: the step benchmark's plain MLP.

    Not one of the paper's four models; ``tsdp bench loop`` uses it to time the DP step on
    nothing but ``nn.Linear`` layers, where the per-sample clipping overhead is at its purest.
    """

    def __init__(self, context_length: int, forecast_length: int, hidden: int = 256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(context_length, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, forecast_length))

    def forward(self, context: torch.Tensor, forecast: torch.Tensor) -> torch.Tensor:
        return (self.net(context) - forecast).square().mean(dim=-1)


MODELS = {"simple-ff": SimpleFeedForward, "deepar": DeepAR, "dlinear": DLinear, "itransformer": ITransformer}


def make_model(name: str, context_length: int, forecast_length: int, **kwargs) -> nn.Module:
    """One of the paper's four models by CLI name (simple-ff | deepar | dlinear | itransformer)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    return MODELS[name](context_length, forecast_length, **kwargs)
