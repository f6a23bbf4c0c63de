"""Algorithm 2, line 6 on materialised per-sample gradients: norms, the clip factor, clipped copies and sums.

``grads`` maps parameter names to tensors whose first ``sample_dims`` dims index samples
(trials, then windows); the rest is the parameter's shape.
"""
from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

import torch

Grads = Dict[str, torch.Tensor]


def _flat(g: torch.Tensor, sample_dims: int) -> torch.Tensor:
    return g.reshape(*g.shape[:sample_dims], math.prod(g.shape[sample_dims:]))


def squared_norms(grads: Grads, sample_dims: int) -> torch.Tensor:
    """||g_i||² summed over all parameters for each sample; the first ``sample_dims`` dims index samples.

    Args:
        grads: {name: (*samples, *param.shape)} per-sample gradients.
        sample_dims: how many leading dims index samples.

    Returns:
        (*samples,) the squared norms.
    """
    total = None
    for g in grads.values():
        sq = torch.linalg.vector_norm(_flat(g, sample_dims), dim=-1).square()
        total = sq if total is None else total + sq
    return total


def gradient_norms(grads: Grads, sample_dims: int) -> torch.Tensor:
    """Euclidean norm over all parameters of each sample's gradient; the first ``sample_dims`` dims index samples.

    Args:
        grads: {name: (*samples, *param.shape)} per-sample gradients.
        sample_dims: how many leading dims index samples.

    Returns:
        (*samples,) the norms.
    """
    return squared_norms(grads, sample_dims).sqrt()


def weighted_sum(factor: torch.Tensor, grads: Grads, sample_dims: int) -> Grads:
    """Σ_i factor_i g_i over the last sample dim, one batched matrix product per parameter (no clipped copies).

    Args:
        factor: (*samples,) the weights.
        grads: {name: (*samples, *param.shape)} per-sample gradients.
        sample_dims: how many leading dims index samples.

    Returns:
        {name: (*lead, *param.shape)}.
    """
    return {k: torch.einsum("...m,...mk->...k", factor, _flat(g, sample_dims)).reshape(g.shape[: sample_dims - 1]
                                                                                      + g.shape[sample_dims:])
            for k, g in grads.items()}


def clip_factors(norms: torch.Tensor, clip: float) -> torch.Tensor:
    """Algorithm 2, line 6: the factor 1 / max(1, ||g_i||_2 / C) that brings every norm to ≤ C.

    Args:
        norms: the per-sample norms ||g_i||_2.
        clip: the clip norm C.

    Returns:
        The factors, shaped as ``norms``.
    """
    return norms.div(clip).clamp_(min=1.0).reciprocal_()  # one fresh tensor, the rest in place


def clip_gradients(grads: Grads, clip: float, sample_dims: int) -> Tuple[Grads, torch.Tensor]:
    """Algorithm 2, line 6: g_i / max(1, ||g_i||_2 / C); every clipped norm is ≤ C.

    Args:
        grads: {name: (*samples, *param.shape)} per-sample gradients.
        clip: the clip norm C.
        sample_dims: how many leading dims index samples.

    Returns:
        (clipped gradients, the norms before clipping).
    """
    norms = gradient_norms(grads, sample_dims)
    factor = clip_factors(norms, clip)
    clipped = {k: g * factor.reshape(*factor.shape, *([1] * (g.dim() - sample_dims))) for k, g in grads.items()}
    return clipped, norms


def clipped_sum(grads: Grads, clip: float, sample_dims: int, mask: Optional[torch.Tensor] = None) -> Grads:
    """Algorithm 2, lines 4-7: ĝ = Σ_i g_i / max(1, ||g_i||_2 / C) over the last sample dim (masked slots skipped).

    Args:
        grads: {name: (*samples, *param.shape)} per-sample gradients.
        clip: the clip norm C.
        sample_dims: how many leading dims index samples (trials, then windows).
        mask: (*samples,) 0/1 weights dropping padded slots, or None.

    Returns:
        {name: (*lead, *param.shape)}, lead = the sample dims but the last.
    """
    factor = clip_factors(gradient_norms(grads, sample_dims), clip)
    if mask is not None:
        factor = factor * mask.to(factor.dtype)
    return weighted_sum(factor, grads, sample_dims)
