"""The forecasters' output law: the Student-t negative log-likelihood, its sampler and the head projecting features
onto its parameters (GluonTS's ``StudentTOutput``)."""
from __future__ import annotations

import math
from typing import Tuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy import special
from torch import nn


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
    z = student_t_quantile(df.detach().double().cpu().numpy(), u.cpu().numpy())
    return loc + scale * torch.as_tensor(z, dtype=loc.dtype, device=loc.device)


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
