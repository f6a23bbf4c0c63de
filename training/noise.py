"""Algorithm 2, line 8: the Gaussian noise N(0, σ² C² I), drawn once per step into one flat buffer.

Both engines of :mod:`training.step` add their clipped sums into this buffer in place,
so the noisy gradient costs one ``normal`` fill (scaled as drawn) and the sums' own
matrix products: no second copy of the gradient, no float64 detour.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch._utils import _unflatten_dense_tensors

from .clipping import Grads


def fill_flat_noise(flat: torch.Tensor, std: float, *, generator: Optional[torch.Generator]) -> torch.Tensor:
    """One run's noise for one step, N(0, std² I), drawn in place into ``flat`` (Algorithm 2, line 8).

    The one home of the draw: every engine (the eager ones through :func:`gaussian_noise`, the
    stacked one row by row, the captured step into its buffer) fills a flat buffer of all the
    parameters' coordinates with one ``normal_`` call from the run's generator, scaled as
    drawn, so a generator state gives the same noise whatever engine draws it.

    Args:
        flat: the 1-D buffer to fill, in the parameters' dtype and device.
        std: the standard deviation.
        generator: the draw's generator (None: torch's default).

    Returns:
        ``flat``, filled.
    """
    return flat.normal_(0.0, std, generator=generator)


def gaussian_noise(like: Grads, std: float, *, generator: Optional[torch.Generator]) -> Grads:
    """N(0, std² I) shaped like every tensor of ``like``, as views of ONE flat ``randn`` draw (Algorithm 2, line 8).

    The draw is in the tensors' own dtype and device (they must share them) and fills the
    tensors in the mapping's order, each one contiguous and row-major, so a given
    ``generator`` state gives the same noise whatever engine asks for it. Exact: i.i.d.
    N(0, 1) coordinates from torch's sampler, scaled by ``std`` in the same pass.

    Args:
        like: {name: tensor} whose shapes, dtype and device the noise takes.
        std: the standard deviation.
        generator: the draw's generator (None: torch's default).

    Returns:
        {name: noise of the tensor's shape}, views of one flat buffer.

    Raises:
        ValueError: the tensors mix dtypes or devices.
    """
    if not like:
        return {}
    tensors = list(like.values())
    dtype, device = tensors[0].dtype, tensors[0].device
    if any(t.dtype != dtype or t.device != device for t in tensors):
        kinds = {(t.dtype, t.device) for t in tensors}
        raise ValueError(f"the noisy gradient is drawn in one dtype on one device; the parameters mix {sorted(map(str, kinds))}")
    flat = fill_flat_noise(torch.empty(sum(t.numel() for t in tensors), dtype=dtype, device=device), std,
                           generator=generator)
    # the views of the flat draw in one C++ call (torch's DDP helper): a Python view per tensor costs more
    return dict(zip(like, _unflatten_dense_tensors(flat, tensors)))
