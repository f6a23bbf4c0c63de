"""Algorithm 2 (noisy training step): per-sample gradients, clipping to C, Gaussian noise N(0, σ² C² I), / Λ.

Per-sample gradients follow the torch.func recipe (functional_call + grad + vmap), so a
step costs a few batched kernels, not one backward pass per window. Inputs may carry
leading *trial* dimensions: context of shape (*lead, M, L_C) gives one independent noisy
gradient per trial, shape (*lead, *param.shape) — the Monte Carlo auditors run many
trials of the same step this way.

A model here is an ``nn.Module`` whose ``forward(context, forecast)`` takes a batch
(B, L_C), (B, L_F) and returns the per-sample loss, shape (B,).
"""
from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

import torch
from torch import nn
from torch.func import functional_call, grad, vmap

Grads = Dict[str, torch.Tensor]


def per_sample_gradients(model: nn.Module, context: torch.Tensor, forecast: torch.Tensor, params: Optional[Grads] = None) -> Grads:
    """g_i = ∇_θ L(f_θ(y_C,i), y_F,i) for every window i (Algorithm 2, line 5), via vmap(grad(functional_call)).

    ``context`` (*lead, L_C) and ``forecast`` (*lead, L_F); returns {name: (*lead, *param.shape)}.
    ``params`` defaults to the model's trainable parameters (detached).
    """
    if params is None:
        params = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    lead = context.shape[:-1]

    def loss_one(p, c, f):
        return functional_call(model, (p, buffers), (c[None], f[None]))[0]

    flat_c = context.reshape(-1, context.shape[-1])
    flat_f = forecast.reshape(-1, forecast.shape[-1])
    if flat_c.shape[0] == 0:  # an empty (Poisson) batch: no gradients, the step releases pure noise
        return {k: p.new_zeros(*lead, *p.shape) for k, p in params.items()}
    grads = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, flat_c, flat_f)
    return {k: g.reshape(*lead, *g.shape[1:]) for k, g in grads.items()}


def _flat(g: torch.Tensor, sample_dims: int) -> torch.Tensor:
    return g.reshape(*g.shape[:sample_dims], math.prod(g.shape[sample_dims:]))


def gradient_norms(grads: Grads, sample_dims: int) -> torch.Tensor:
    """Euclidean norm over all parameters of each sample's gradient; the first ``sample_dims`` dims index samples."""
    total = None
    for g in grads.values():
        sq = torch.linalg.vector_norm(_flat(g, sample_dims), dim=-1).square()
        total = sq if total is None else total + sq
    return total.sqrt()


def clip_factors(norms: torch.Tensor, clip: float) -> torch.Tensor:
    """Algorithm 2, line 6: the factor 1 / max(1, ||g_i||_2 / C) that brings every norm to ≤ C."""
    return 1.0 / torch.clamp(norms / clip, min=1.0)


def clip_gradients(grads: Grads, clip: float, sample_dims: int) -> Tuple[Grads, torch.Tensor]:
    """Algorithm 2, line 6: g_i / max(1, ||g_i||_2 / C); every clipped norm is ≤ C.

    Returns (clipped gradients, the norms before clipping).
    """
    norms = gradient_norms(grads, sample_dims)
    factor = clip_factors(norms, clip)
    clipped = {k: g * factor.reshape(*factor.shape, *([1] * (g.dim() - sample_dims))) for k, g in grads.items()}
    return clipped, norms


def clipped_sum(grads: Grads, clip: float, sample_dims: int, mask: Optional[torch.Tensor] = None) -> Grads:
    """Algorithm 2, lines 4-7: ĝ = Σ_i g_i / max(1, ||g_i||_2 / C) over the last sample dim (masked slots skipped).

    Fused as one batched matrix product per parameter, without materialising clipped copies.
    Returns {name: (*lead, *param.shape)} with lead = the sample dims but the last.
    """
    factor = clip_factors(gradient_norms(grads, sample_dims), clip)
    if mask is not None:
        factor = factor * mask.to(factor.dtype)
    out = {}
    for k, g in grads.items():
        flat = _flat(g, sample_dims)
        out[k] = torch.einsum("...m,...mk->...k", factor, flat).reshape(g.shape[: sample_dims - 1] + g.shape[sample_dims:])
    return out


def noisy_mean(
    summed: Grads, *, clip: float, sigma: float, batch_size: int, generator: Optional[torch.Generator]
) -> Grads:
    """Algorithm 2, line 8: (ĝ + N(0, σ² C² I)) / Λ, one independent noise draw per trial."""
    out = {}
    for k, s in summed.items():
        noise = torch.randn(s.shape, generator=generator, device=s.device, dtype=s.dtype)
        out[k] = (s + (sigma * clip) * noise) / batch_size
    return out


def private_gradient(
    model: nn.Module,
    context: torch.Tensor,
    forecast: torch.Tensor,
    *,
    clip: float,
    sigma: float,
    batch_size: int,
    generator: Optional[torch.Generator],
    mask: Optional[torch.Tensor] = None,
    params: Optional[Grads] = None,
) -> Grads:
    """The noisy gradient g̃ of Algorithm 2: per-sample gradients, clip to C, sum, add N(0, σ² C² I), divide by Λ.

    ``context`` (*lead, M, L_C), ``forecast`` (*lead, M, L_F), optional ``mask`` (*lead, M)
    dropping padded slots (Poisson sampling). Returns {name: (*lead, *param.shape)}; with
    no lead dimensions, one gradient for the model's parameters. ``batch_size`` is the
    expected batch size Λ (the divisor of Algorithm 2), not the realised one.
    """
    grads = per_sample_gradients(model, context, forecast, params)
    summed = clipped_sum(grads, clip, context.dim() - 1, mask)
    return noisy_mean(summed, clip=clip, sigma=sigma, batch_size=batch_size, generator=generator)


def apply_gradient(model: nn.Module, optimizer: torch.optim.Optimizer, gradient: Grads) -> None:
    """Algorithm 2, line 9: hand g̃ to the optimizer (θ ← θ - η g̃ for SGD; Adam uses g̃ as its gradient)."""
    for name, p in model.named_parameters():
        if name in gradient:
            p.grad = gradient[name].detach().clone()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def dp_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    context: torch.Tensor,
    forecast: torch.Tensor,
    *,
    clip: float,
    sigma: float,
    batch_size: int,
    generator: Optional[torch.Generator],
) -> Grads:
    """One full noisy training step (Algorithm 2) on a batch (M, L_C), (M, L_F); returns the noisy gradient used."""
    gradient = private_gradient(model, context, forecast, clip=clip, sigma=sigma, batch_size=batch_size, generator=generator)
    apply_gradient(model, optimizer, gradient)
    return gradient


def nonprivate_step(model: nn.Module, optimizer: torch.optim.Optimizer, context: torch.Tensor, forecast: torch.Tensor) -> float:
    """Ordinary (non-private) SGD step on the mean loss — the ε = ∞ reference of the paper's tables."""
    loss = model(context, forecast).mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return float(loss.detach())
