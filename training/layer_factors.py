"""What a layer contributes to the factored step: its per-sample squared norms and its weighted sum, and the
per-thread buffers its large factors live in."""
from __future__ import annotations

import threading
from typing import Callable, Dict, Tuple

import torch

from .clipping import Grads, squared_row_norms

AddWeightedSum = Callable[[torch.Tensor, float, Grads], None]
"""``(c (M,), w, out) -> None``: adds w Σ_i c_i g_i into ``out``'s buffers of the layer's parameters, in place."""


class LayerFactors:
    """Per-sample squared gradient norms of some parameters, and how to add their weighted sum into buffers.

    Attributes:
        sq_norms: ||g_i||² over these parameters, (M,), float64 (:func:`training.clipping.squared_row_norms`): a
            fresh tensor the caller may accumulate into.
        add_weighted_sum: adds w Σ_i c_i g_i into the parameters' buffers in place.
    """

    def __init__(self, sq_norms: torch.Tensor, add_weighted_sum: AddWeightedSum):
        """Pairs the norms with the sum.

        Args:
            sq_norms: the per-sample squared norms, (M,).
            add_weighted_sum: ``(c, w, out)`` adding w Σ_i c_i g_i into ``out``.
        """
        self.sq_norms = sq_norms
        self.add_weighted_sum = add_weighted_sum


def materialised_factors(per_sample: Grads) -> LayerFactors:
    """Factors of small per-sample gradients held in full, side by side in one (M, Σ numel) buffer.

    Args:
        per_sample: {qualified name: (M, *shape)} per-sample gradients.

    Returns:
        Their squared norms (one :func:`training.clipping.squared_row_norms` over all their values) and their weighted
        sum (one matrix-vector product over all of them, split into the parameters' buffers).
    """
    flats = [g.reshape(g.shape[0], -1) for g in per_sample.values()]
    m, widths = flats[0].shape[0], [f.shape[1] for f in flats]
    rows = flats[0] if len(flats) == 1 else torch.cat(
        flats, dim=1, out=WORKSPACE.take(("materialised",), (m, sum(widths)), flats[0]))

    def add(c: torch.Tensor, w: float, out: Grads) -> None:
        for k, part in zip(per_sample, (rows.T @ c).split(widths)):
            out[k].view(-1).add_(part, alpha=w)

    return LayerFactors(squared_row_norms(rows, m), add)


class Workspace(threading.local):
    """Per-thread buffers for a step's large factors (stacked a and g, materialised G_i), reused by the next step.

    A fresh multi-megabyte tensor per step costs page faults (the C allocator maps and
    unmaps it each time), a large share of DeepAR's step at batch 256 on CPU. Buffers are
    keyed by role, grown when a batch needs more rows and sliced to the batch; those a step
    did not use are dropped when it ends, so the memory held follows the model in use.
    Nothing read from them outlives the step that wrote them.

    Attributes:
        buffers: {key: buffer}.
    """

    def __init__(self):
        """An empty workspace."""
        self.buffers: Dict[tuple, torch.Tensor] = {}
        self._used: set = set()

    def take(self, key: tuple, shape: Tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        """Rows 0..shape[0] of the ``key`` buffer, uninitialised, grown or remade where it does not fit.

        Args:
            key: the buffer's role.
            shape: the shape wanted.
            like: a tensor of the dtype and device wanted.

        Returns:
            A ``shape`` tensor, valid until the next step takes the same key.
        """
        buf = self.buffers.get(key)
        if (buf is None or buf.shape[1:] != shape[1:] or buf.shape[0] < shape[0] or buf.dtype != like.dtype
                or buf.device != like.device):
            buf = self.buffers[key] = like.new_empty(shape)
        self._used.add(key)
        return buf[: shape[0]]

    def end_step(self) -> None:
        """Drops the buffers this step did not take."""
        for key in set(self.buffers) - self._used:
            del self.buffers[key]
        self._used = set()


WORKSPACE = Workspace()
"""The factored engine's buffers (one set per thread)."""
