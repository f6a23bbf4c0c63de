"""Algorithm 2, line 6 on materialised per-sample gradients: norms, the clip factor, clipped copies and sums.

``grads`` maps parameter names to tensors whose first ``sample_dims`` dims index samples
(trials, then windows); the rest is the parameter's shape. Every clip norm is accumulated in float64
(:func:`squared_row_norms`) and every clip factor clips to C (1 - κ) (:func:`clip_margin`), so that each clipped
per-sample gradient that enters a sum has norm ≤ C in the dtype it is summed in, rounding included: the sensitivity
C that T1-T14 assume. This module is the one home of both, for every DP engine. The norms and sums here run under
:func:`training.full_precision.full_precision` (full IEEE matmuls, autocast off, whatever the user set), as the other
engines' do.
"""
from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

import torch

from .full_precision import full_precision

Grads = Dict[str, torch.Tensor]

NORM_DTYPE = torch.float64
"""The dtype every clip norm is accumulated in (:func:`clip_margin` bounds its rounding)."""

PRODUCT_MAX_VALUES = 32768
"""Inputs of up to this many values (M × row length) get their squared norms as one float64 dot product per row (one
call); larger ones by a norm reduction, which holds no (M, d) elementwise product in memory. The two cost the same at
about this size on 1 CPU thread ((256, 128) and (64, 512) alike)."""

BLOCKED_MIN_VALUES = 131072
"""Inputs of more than this many values (M × row length) get their squared norms from blocks of :data:`NORM_BLOCK`
values, each block's norm taken in the input's dtype and their squares summed in float64: no float64 copy of the
input, 2.4x (simple-ff's (256, 1024) output gradient) to 4.7x (a materialised DeepAR G_i, (256, 12800)) faster than the
float64 reduction on 1 CPU thread; smaller ones, cache-resident, are as fast or faster in float64 ((256, 256))."""

NORM_BLOCK = 32
"""B, the values per block of the blocked route (:data:`BLOCKED_MIN_VALUES`); its rounding, ≤ (B + 2) u relative,
is one term of :func:`clip_margin`'s κ."""


def _flat(g: torch.Tensor, sample_dims: int) -> torch.Tensor:
    return g.reshape(*g.shape[:sample_dims], math.prod(g.shape[sample_dims:]))


def _blocked_squared_row_norms(flat: torch.Tensor) -> torch.Tensor:
    """Σ_b fl(||x_b||)² over the row's blocks x_b of :data:`NORM_BLOCK` values (the last one shorter), each block's
    norm in ``flat``'s dtype, their squares summed in float64, plus the underflow allowance d · 2^-149 (float32's; the
    dtype's least subnormal times 1, generally): a lower estimate of ||x_i||² by at most a factor (1 - u)^(B + 2)
    (:func:`clip_margin`)."""
    m, d = flat.shape
    whole = d - d % NORM_BLOCK
    blocks = flat[:, :whole].reshape(m, whole // NORM_BLOCK, NORM_BLOCK)
    sq = torch.linalg.vector_norm(blocks, dim=2).to(NORM_DTYPE).square_().sum(1)
    if whole < d:
        sq = sq.add_(torch.linalg.vector_norm(flat[:, whole:], dim=1).to(NORM_DTYPE).square_())
    finfo = torch.finfo(flat.dtype)
    return sq.add_(d * finfo.tiny * finfo.eps)


def squared_row_norms(x: torch.Tensor, m: int) -> torch.Tensor:
    """||x_i||² over all but the first dim, accumulated in float64 (:data:`NORM_DTYPE`; :func:`clip_margin` bounds
    its rounding, the sound side: never above C once clipped): the cheapest of a row-wise float64 dot product, a float64
    norm reduction and, past :data:`BLOCKED_MIN_VALUES`, blocks of :data:`NORM_BLOCK` values normed in the input's
    dtype, by the input's size (:data:`PRODUCT_MAX_VALUES`; a static shape, no read of the values).

    Args:
        x: (M, ...) tensor.
        m: M.

    Returns:
        (M,) squared norms, float64.
    """
    flat = x if x.dim() == 2 else x.reshape(m, -1)
    if flat.numel() <= PRODUCT_MAX_VALUES:
        flat = flat.to(NORM_DTYPE)
        return torch.linalg.vecdot(flat, flat)
    if flat.numel() <= BLOCKED_MIN_VALUES:
        return torch.linalg.vector_norm(flat, dim=1, dtype=NORM_DTYPE).square_()
    return _blocked_squared_row_norms(flat)


def squared_norms(grads: Grads, sample_dims: int) -> torch.Tensor:
    """||g_i||² summed over all parameters for each sample, in float64 (:func:`squared_row_norms`); the first
    ``sample_dims`` dims index samples.

    Args:
        grads: {name: (*samples, *param.shape)} per-sample gradients.
        sample_dims: how many leading dims index samples.

    Returns:
        (*samples,) the squared norms, float64.
    """
    total = None
    for g in grads.values():
        flat = _flat(g, sample_dims)
        sq = squared_row_norms(flat.reshape(-1, flat.shape[-1]), math.prod(flat.shape[:-1])).reshape(flat.shape[:-1])
        total = sq if total is None else total + sq
    return total


def sample_values(grads: Grads, sample_dims: int) -> int:
    """n, the values of one sample's gradient (over all parameters): :func:`clip_margin`'s argument.

    Args:
        grads: {name: (*samples, *param.shape)} per-sample gradients.
        sample_dims: how many leading dims index samples.

    Returns:
        n.
    """
    return sum(math.prod(g.shape[sample_dims:]) for g in grads.values())


def gradient_norms(grads: Grads, sample_dims: int) -> torch.Tensor:
    """Euclidean norm over all parameters of each sample's gradient; the first ``sample_dims`` dims index samples.

    Args:
        grads: {name: (*samples, *param.shape)} per-sample gradients.
        sample_dims: how many leading dims index samples.

    Returns:
        (*samples,) the norms, float64.
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


def clip_margin(dtype: torch.dtype, values: int) -> float:
    """κ, the relative margin by which Algorithm 2's clipping (line 6) clips below C, so that every clipped per-sample
    gradient that enters a sum in ``dtype`` has norm ≤ C, rounding included (the sensitivity C of T1-T14). Sound
    direction: the clipped norm is **at most** C; the cost is a factor ≥ 1 - κ on the clipped gradients, κ ≈ 1.4e-6
    in float32 (unclipped ones, ||g_i|| ≤ C (1 - κ), are untouched).

    κ = 6u + (B/2 + 2) u + 2 (n + 8) v, u the unit roundoff of ``dtype`` (2^-24 in float32), v = 2^-53 (float64's),
    B = :data:`NORM_BLOCK`, n = ``values``. Derivation, for g of n values of ``dtype`` and S = ||g||²: (1) the clip
    norm's S' is accumulated in float64 (:func:`squared_row_norms`), over whatever route an engine takes (sums of
    squares, products of two such sums, a sum over layers), at most 2n + 4 roundings of v deep. Its terms are either
    squares of values, exact in float64 (float32's squares are), or, on the blocked route, the squares of block norms
    p = fl(√(fl(Σ_b x_l²))) taken in ``dtype`` over ≤ B values: each square rounds once, each of the ≤ B - 1 additions
    once (any order: the terms are ≥ 0), the root once, so p² ≥ (1 - u)^(B + 2) Σ_b x_l², where the values are
    normal; where they underflow each square errs by at most half the least subnormal, which the route's allowance,
    d times the least subnormal, more than covers. So S' ≥ S (1 - u)^(B + 2) (1 - γ),
    γ = (2n + 4) v / (1 - (2n + 4) v); the ghost norm is an upper bound outright
    (:func:`training.linear_factors.ghost_squared_norms`). (2) N = fl(√S'), the bound C (1 - κ) (1 - κ and its
    product with C), N divided by it and the reciprocal: five roundings of v, so the float64 factor is
    c ≤ C (1 - κ) (1 + v)^5 / (||g|| √((1 - γ) (1 - u)^(B + 2))) where it clips, and where it does not (c = 1, exact)
    ||g|| ≤ C (1 - κ) (1 + v)^5 / √((1 - γ) (1 - u)^(B + 2)) ≤ C. (3) In ``dtype`` at most four roundings of u
    follow: c cast to ``dtype``, c times a row weight (the stacked engine's 1/Λ), c times an input row (the factored
    engines' scaled rows), and that times the other factor or g_i in the sum's products. That each rounds at u, the
    unit roundoff of ``dtype``, holds whatever the user's float32 matmul precision or autocast: every engine forms its
    norms and clipped sums under :func:`training.full_precision.full_precision` (IEEE matmuls, autocast off, factors
    that autocast made bf16/fp16 upcast to ``dtype``, exactly), where TF32 or bf16 products would round their inputs at
    2^-11 or 2^-8 and a contribution's norm could reach C (1 + 1e-3). So the contribution's norm is
    at most C (1 - κ) (1 + u)^4 (1 + v)^5 / √((1 - γ) (1 - u)^(B + 2))
    ≤ C (1 - κ)(1 + 5u + (B/2 + 2) u + 2 (n + 7) v) ≤ C for n v ≤ 2^-20 (n ≤ 2^33 values) and (B + 2) u ≤ 2^-10
    ((1 - u)^(-(B + 2)/2) ≤ 1 + (B/2 + 1) u + (B + 2)² u²/4; the spare u of κ's 6u covers the second-order terms).
    The rounding of the sum itself (the matrix product's accumulation over samples, the division by Λ) is the sum's,
    as the noise's; it is not a per-sample contribution.

    Args:
        dtype: the dtype the clipped gradients are formed and summed in.
        values: n, the values of one sample's gradient over all parameters clipped together.

    Returns:
        κ.
    """
    return (6 + NORM_BLOCK / 2 + 2) * (torch.finfo(dtype).eps / 2) + 2 * (values + 8) * 2.0**-53


def clip_factors(norms: torch.Tensor, clip: float, dtype: torch.dtype, values: int) -> torch.Tensor:
    """Algorithm 2, line 6: the factor 1 / max(1, ||g_i||_2 / (C (1 - κ))) that brings every norm to ≤ C in ``dtype``,
    rounding included (κ: :func:`clip_margin`, whose derivation it follows). Sound: clipped norms are at most C.

    Args:
        norms: the per-sample norms ||g_i||_2, accumulated in float64 (:func:`squared_row_norms`).
        clip: the clip norm C.
        dtype: the dtype the clipped gradients are formed and summed in.
        values: n, the values of one sample's gradient over all parameters.

    Returns:
        The factors, shaped as ``norms``, in ``dtype``.
    """
    bound = clip * (1 - clip_margin(dtype, values))
    return norms.to(NORM_DTYPE).div(bound).clamp_(min=1.0).reciprocal_().to(dtype)  # in place after the first op


def clip_gradients(grads: Grads, clip: float, sample_dims: int) -> Tuple[Grads, torch.Tensor]:
    """Algorithm 2, line 6: g_i / max(1, ||g_i||_2 / (C (1 - κ))) (:func:`clip_factors`); every clipped norm is ≤ C.

    Args:
        grads: {name: (*samples, *param.shape)} per-sample gradients.
        clip: the clip norm C.
        sample_dims: how many leading dims index samples.

    Returns:
        (clipped gradients, the norms before clipping, float64).
    """
    first = next(iter(grads.values()))
    with full_precision(first.device.type):
        norms = gradient_norms(grads, sample_dims)
        factor = clip_factors(norms, clip, first.dtype, sample_values(grads, sample_dims))
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
    first = next(iter(grads.values()))
    with full_precision(first.device.type):
        factor = clip_factors(gradient_norms(grads, sample_dims), clip, first.dtype, sample_values(grads, sample_dims))
        if mask is not None:
            factor = factor * mask.to(factor.dtype)
        return weighted_sum(factor, grads, sample_dims)
