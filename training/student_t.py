"""The forecasters' output law: the Student-t negative log-likelihood, its sampler and the head projecting features
onto its parameters (GluonTS's ``StudentTOutput``)."""
from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy import special
from torch import nn

from .metrics import QUANTILES, quantile_ranks, sample_quantiles


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


def student_t_quantile(df: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The u-quantile of the standard Student-t law t_ν: ``scipy.stats.t.ppf(u, ν)`` bit for bit, faster.

    ``scipy.special.stdtrit(ν, u)`` is the routine ``stats.t.ppf`` evaluates on 0 < u < 1, here without the
    distribution's argument checks and broadcasting; at u = 0 the quantile is ppf's -inf, the support's lower end
    (stdtrit gives +inf there). A test checks the bits against ``stats.t.ppf`` over extreme u and ν.

    Args:
        df: the degrees of freedom ν (> 0), float64.
        u: levels in [0, 1), float64, of ``df``'s shape.

    Returns:
        The quantiles, float64.
    """
    z = special.stdtrit(df, u)
    np.putmask(z, u == 0, -np.inf)
    return z


def student_t_draws(df: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """loc + scale · the u-quantile of t_ν (:func:`student_t_quantile`), in ``loc``'s dtype: the draws of
    :func:`student_t_sample` at given levels.

    Args:
        df: the degrees of freedom ν.
        loc: the location.
        scale: the scale.
        u: levels in [0, 1), float64, of ``loc``'s shape.

    Returns:
        One draw per element, shaped as ``loc``.
    """
    z = student_t_quantile(df.detach().double().cpu().numpy(), u.cpu().numpy())
    return loc + scale * torch.as_tensor(z, dtype=loc.dtype, device=loc.device)


def student_t_sample(df: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Draws from t_ν(loc, scale) by inverting the CDF (:func:`student_t_quantile`) at float64 uniforms from
    ``generator`` (reproducible).

    Args:
        df: the degrees of freedom ν.
        loc: the location.
        scale: the scale.
        generator: the uniforms' generator.

    Returns:
        One draw per element, shaped as ``loc``.
    """
    u = torch.rand(loc.shape, generator=generator, device=generator.device, dtype=torch.float64)
    return student_t_draws(df, loc, scale, u)


ORDER_GAP = 2.0 ** -30
"""Levels u < v in [:data:`LEAST_ORDERED_LEVEL`, 1) with v - u > ORDER_GAP · v (2^22 float64 ulps of v) have
quantiles in their order: ``stdtrit`` is monotone in u only up to its root finder's rounding (levels a few ulps
apart can swap their quantiles; tests/training/test_sample_quantiles.py checks the order at this gap over ν from 2
to 1e300). :func:`student_t_sample_quantiles` sorts the draws of a sample whose sorted levels are closer than this."""

LEAST_ORDERED_LEVEL = 2.0 ** -53
"""The least positive level of the generator's float64 uniforms (multiples of 2^-53), down to which
:data:`ORDER_GAP` is checked: far below it (u < 1e-100) ``stdtrit``'s quantiles swap at any gap.
:func:`student_t_sample_quantiles` sorts the draws of a sample with a positive level below it (0's quantile is
-inf, below every other)."""


def student_t_sample_quantiles(df: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, n_samples: int,
                               generator: torch.Generator, quantiles: Sequence[float] = QUANTILES) -> np.ndarray:
    """The q-quantiles of ``n_samples`` draws of each element's t_ν(loc, scale) as
    :func:`tsdp.training.metrics.sample_quantiles` takes them from the (B, S, L) draws of :func:`student_t_sample` at
    ``df``, ``loc`` and ``scale`` expanded over S: the same uniforms from ``generator`` (left where it leaves it), the
    same quantiles, each from its draw's level and not from all S draws.

    A draw is g(u) = loc + scale · t_ν⁻¹(u), rounded to ``loc``'s dtype: monotone in u when scale > 0 (float rounding
    is monotone), up to ``stdtrit``'s ulp-level swaps (:data:`ORDER_GAP`). So in a sample whose sorted levels are
    all more than :data:`ORDER_GAP` apart the draw of rank r is g of the level of rank r, and only the ranks'
    draws are computed (9 of 100 for the default levels); a sample with closer levels, a positive level below
    :data:`LEAST_ORDERED_LEVEL`, a parameter not finite, ν or the scale not positive computes and sorts all its
    draws. The same numbers as sorting every draw, at the
    quantile inversions' cost of the ranks.

    Args:
        df: the degrees of freedom ν, (B, L).
        loc: the location, (B, L).
        scale: the scale, (B, L).
        n_samples: S, draws per element.
        generator: the uniforms' generator.
        quantiles: the quantile levels.

    Returns:
        The quantiles (Q, B, L), float64.
    """
    b, length = loc.shape
    u = torch.rand((b, n_samples, length), generator=generator, device=generator.device, dtype=torch.float64)
    return student_t_sample_quantiles_at(df, loc, scale, u.cpu().numpy(), quantiles)


def student_t_sample_quantiles_at(df: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, u: np.ndarray,
                        quantiles: Sequence[float] = QUANTILES) -> np.ndarray:
    """:func:`student_t_sample_quantiles` at given levels: the q-quantiles (Q, B, L) that
    :func:`tsdp.training.metrics.sample_quantiles` takes of the draws :func:`student_t_draws` makes at levels ``u``
    (B, S, L) of ``df``, ``loc`` and ``scale`` (B, L) expanded over S, computing the draws of the quantiles' ranks
    only where the sorted levels are :data:`ORDER_GAP` apart (:func:`student_t_sample_quantiles`).

    Args:
        df: the degrees of freedom ν, (B, L).
        loc: the location, (B, L).
        scale: the scale, (B, L).
        u: levels in [0, 1), float64, (B, S, L).
        quantiles: the quantile levels.

    Returns:
        The quantiles (Q, B, L), float64.
    """
    n_samples = u.shape[1]
    ordered = np.sort(u, axis=1)
    ranks = quantile_ranks(n_samples, quantiles)
    each = (loc.shape[0], len(ranks), loc.shape[1])
    out = student_t_draws(df[:, None].expand(each), loc[:, None].expand(each), scale[:, None].expand(each),
                          torch.as_tensor(ordered[:, ranks]))
    out = np.asarray(out.cpu().numpy(), dtype=np.float64)
    unordered = torch.as_tensor(np.any(np.diff(ordered, axis=1) <= ORDER_GAP * ordered[:, 1:], axis=1)
                                | np.any((ordered > 0) & (ordered < LEAST_ORDERED_LEVEL), axis=1))
    unordered = unordered.to(loc.device) | ~(torch.isfinite(df) & torch.isfinite(loc) & torch.isfinite(scale)
                                             & (df > 0) & (scale > 0))
    if bool(unordered.any()):
        i, j = torch.nonzero(unordered, as_tuple=True)
        every, at = (len(i), n_samples), (i.cpu().numpy(), slice(None), j.cpu().numpy())
        draws = student_t_draws(df[i, j][:, None].expand(every), loc[i, j][:, None].expand(every),
                                scale[i, j][:, None].expand(every), torch.as_tensor(u[at]))
        out[at] = sample_quantiles(draws.cpu().numpy()[:, :, None], quantiles)[:, :, 0].T
    return out.transpose(1, 0, 2)


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
