"""``nn.Linear``'s factors: each window's gradient norm and the clipped sum from the layer's inputs and output
gradients, per-sample gradients never materialised unless that is the cheaper way to the norm.

y = a Wᵀ + b (any number of calls, any middle dims, stacked into positions t): the per-sample
gradient is G_i = Σ_t g_it a_itᵀ and Σ_t g_it for the bias. ||G_i||² is ||g_i||²·||a_i||² at
one position; otherwise the cheaper of Σ_{t,t'} (a_it·a_it')(g_it·g_it') (the ghost norm:
Goodfellow 2015, "Efficient per-example gradient computations"; Li et al. 2022, "Large
language models can be strong differentially private learners", Sec. 4; in float64 with its rounding bound,
:func:`ghost_squared_norms`: its rounding is relative to the positions' terms, which can cancel) or materialising G_i
(cost t²(i + o) against t·i·o per sample), as :func:`norm_route` chooses. The clipped sum Σ_i c_i G_i is then one matrix
product over all (sample, position) rows with row weights c_i, from the stored factors (the
book-keeping trick of Bu et al. 2023: no second backward pass). Linears whose outputs receive
the same gradients position by position share one set of factors: [W_ih | W_hh] on [x | h]
for an LSTM gate's x·W_ihᵀ + h·W_hhᵀ, whether the two are called once per position (the same
gradient tensors) or W_ih once on all positions and W_hh per position, a tied follower
(:mod:`training.tied_gradients`: its p-th call's gradient is position p of W_ih's). The stacked
engine (:mod:`training.stacked`) takes its route from :func:`norm_route` and its side-by-side
inputs from :func:`side_by_side` too.
"""
from __future__ import annotations

import math
from enum import Enum
from typing import List, Tuple

import torch
from torch import nn

from .call_recorder import Call
from .clipping import NORM_DTYPE, Grads, squared_row_norms
from .full_precision import upcast
from .layer_factors import WORKSPACE, LayerFactors

LinearMember = Tuple[str, nn.Linear, List[Call]]
"""(qualified name, the linear, its recorded calls)."""


def _positions_into(tensors: List[torch.Tensor], m: int, out: torch.Tensor) -> torch.Tensor:
    """Several calls' (M, *mid, d) tensors written by position into ``out`` (M, t, d) (any strides: a column block of
    a wider buffer too), in one op: ``stack`` where every call is one (M, d) position (the usual case, a recurrent
    layer's calls), about twice as fast on a strided block as ``cat`` of per-call views; else ``cat``."""
    if all(x.dim() == 2 for x in tensors):
        return torch.stack(tensors, dim=1, out=out)
    return torch.cat([x.reshape(m, -1, x.shape[-1]) for x in tensors], dim=1, out=out)


def stack_positions(tensors: List[torch.Tensor], m: int, key: tuple) -> torch.Tensor:
    """The calls' (M, *mid, d) tensors as one (M, t, d): every middle position of every call is a position t.

    Args:
        tensors: one tensor per call.
        m: the batch size M.
        key: the workspace buffer to stack into (several calls only).

    Returns:
        One 2-D (M, d) call as it is; else (M, t, d), a view where one call needs no copy.
    """
    if len(tensors) == 1:
        x = tensors[0]
        return x if x.dim() == 2 else x.reshape(m, -1, x.shape[-1])
    shape = (m, sum(math.prod(x.shape[1:-1]) for x in tensors), tensors[0].shape[-1])
    return _positions_into(tensors, m, WORKSPACE.take(key, shape, tensors[0]))


def side_by_side(calls_per_member: List[List[torch.Tensor]], out: torch.Tensor, m: int) -> torch.Tensor:
    """Several linears' inputs stacked by position straight into their column blocks of one buffer: [a¹ | a² | ...],
    the input of the group's one linear [W¹ | W² | ...].

    Args:
        calls_per_member: per member, its calls' (M, *mid, i) inputs (a member's calls give the positions in order).
        out: the (M, [t,] Σ i) buffer to write, the members' widths in order.
        m: the batch size M (rows of ``out``).

    Returns:
        ``out``, filled.
    """
    start = 0
    for calls in calls_per_member:
        width = calls[0].shape[-1]
        block = out[..., start:start + width]
        if len(calls) == 1:  # copy_, not cat(out=): cat writes nothing into a (1, 1, w) column block (torch 2.13)
            block.copy_(calls[0].reshape(block.shape))
        else:
            _positions_into(calls, m, block)
        start += width
    return out


def _width(calls_per_member: List[List[torch.Tensor]]) -> int:
    """Σ i over the members: the width of their inputs side by side."""
    return sum(calls[0].shape[-1] for calls in calls_per_member)


class NormRoute(Enum):
    """The exact route to a linear's per-sample ||G_i||² (:func:`norm_route`)."""

    ONE_POSITION = "one position"
    """||G_i||² = ||a_i||²·||g_i||² (t = 1)."""
    GHOST = "ghost norm"
    """Σ_{t,t'} (a_it·a_it')(g_it·g_it'), O(t²(i + o)) per sample."""
    MATERIALISED = "materialised"
    """G_i = Σ_t g_it a_itᵀ itself, O(t·i·o) per sample."""


def norm_route(positions: int, inputs: int, outputs: int) -> NormRoute:
    """The route both DP engines take to ||G_i||² of a linear (or a group side by side) of ``inputs`` → ``outputs``
    at ``positions`` positions per sample: one position, else the ghost norm where t²(i + o) < t·i·o (the cheaper
    count of multiply-adds per sample), else G_i materialised. Every route is exact (the same number up to float
    rounding, the ghost norm's taken in float64 with its rounding bound: :func:`ghost_squared_norms`); the choice is
    cost only, and a static shape: no read of the values.

    Args:
        positions: t, the positions per sample over all calls.
        inputs: i, the input width (Σ i of a group side by side).
        outputs: o, the output width.

    Returns:
        The route.
    """
    if positions == 1:
        return NormRoute.ONE_POSITION
    if positions * (inputs + outputs) < inputs * outputs:
        return NormRoute.GHOST
    return NormRoute.MATERIALISED


def ghost_squared_norms(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """||G_i||² of every sample by the ghost norm, G_i = Σ_t g_it a_itᵀ: Σ_{t,t'} (a_t·a_t')(g_t·g_t'), an **upper**
    bound (the route :data:`NormRoute.GHOST` of both DP engines).

    Its rounding is relative to S_i² = (Σ_t ||a_it|| ||g_it||)², not to ||G_i||²: where the positions' terms cancel
    (inputs nearly equal at positions whose output gradients are nearly opposite) ||G_i|| can be far below S_i, and
    in float32 the sum came out 0 for windows of norm 518 C, which then entered the clipped sum unclipped
    (tests/training/test_factored.py). So the products are taken in float64 and the sum's rounding bound is added:
    |fl(Σ) - Σ| ≤ (γ_i + γ_o + γ_{t²}) S_i² to first order, γ_n = n 2^-53, taken twice over. The clipped sum then
    forms c_i Σ_t g_it a_itᵀ from rows scaled in ``g``'s dtype (unit roundoff u): each scaled row, and each product
    with the other factor, is off by u of its own size, so the contribution's norm is off by up to 2u c_i S_i,
    again relative to S_i: the result is (√(that bound) + (2u + 4·2^-53) S_i)², ≥ (||G_i|| + 2u S_i)², so the clip
    factor it gives holds that contribution to ≤ C (:func:`training.clipping.clip_margin`). In float64; it is
    ||G_i||² to ``g``'s dtype's rounding wherever the cancellation leaves float64 any digit.

    Args:
        a: The layer's inputs by position, (M, t, i).
        g: Its output gradients by position, (M, t, o).

    Returns:
        (M,) the squared norms, float64.
    """
    m, t, o = g.shape
    a64, g64 = a.to(NORM_DTYPE), g.to(NORM_DTYPE)
    aa = torch.bmm(a64, a64.transpose(1, 2))
    gg = torch.bmm(g64, g64.transpose(1, 2))
    ghost = torch.linalg.vecdot(aa.reshape(m, -1), gg.reshape(m, -1))
    s = (aa.diagonal(dim1=1, dim2=2).clamp_min(0).sqrt() * gg.diagonal(dim1=1, dim2=2).clamp_min(0).sqrt()).sum(1)
    rounding = 2 * (a.shape[2] + o + t * t) * 2.0**-53
    scaled_rows = 2 * torch.finfo(g.dtype).eps / 2 + 4 * 2.0**-53  # the clipped sum's scaled rows and products
    return ghost.clamp_min_(0).add_(s.square().mul_(rounding)).sqrt_().add_(s.mul_(scaled_rows)).square_()


def _rows(x: torch.Tensor) -> torch.Tensor:
    """An (M, d) or (M, t, d) factor as its (M·t, d) rows, one per (sample, position); 2-D as it is."""
    return x if x.dim() == 2 else x.reshape(-1, x.shape[-1])


def same_gradients_key(out_grads: List[List[torch.Tensor]]) -> tuple:
    """A key equal for two modules exactly when their output gradients are the same tensors, call by call.

    Args:
        out_grads: per call, the gradients of the call's outputs.

    Returns:
        A hashable key (data pointers, shapes and strides).
    """
    return tuple((g.data_ptr(), g.shape, g.stride()) for gy in out_grads for g in gy)


def linear_factors(members: List[LinearMember], out_grads: List[List[torch.Tensor]]) -> LayerFactors:
    """nn.Linear: G_i = Σ_t g_it a_itᵀ; ||G_i||² by the cheapest exact route, Σ_i c_i G_i by one matrix product.

    ``members`` are linears whose outputs received the SAME gradients position by position
    (``out_grads``, the first member's; a tied follower's call p takes position p of its
    leader's one call, :mod:`training.tied_gradients`), as x·W_ihᵀ + h·W_hhᵀ in an LSTM
    gate: their weights act as one linear
    [W¹ | W² | ...] on the concatenated inputs [a¹ | a² | ...], so one set of factors serves
    them all (exact: the blocks of one G_i). Routes for the norm (:func:`norm_route`; t positions
    per sample, over all calls): t = 1, ||a_i||²·||g_i||²; the ghost norm Σ_{t,t'} (a_it·a_it')(g_it·g_it') when
    t²(i + o) < t·i·o; otherwise G_i itself by one batched product (then the clipped sum is
    c·G, a matrix-vector product). Without G_i, the clipped sum is ONE product over all
    (sample, position) rows with the row weights c_i (Bu et al. 2023, "Differentially private
    optimization on large model at small cost": no second backward pass).

    Args:
        members: (qualified name, linear, recorded calls) of each linear of the group.
        out_grads: per call, ∂(Σ_j L_j)/∂y of the call's output (row i is ∂L_i/∂y_i).

    Returns:
        The group's factors: per-sample squared norms over all its parameters and its weighted sum.
    """
    m = out_grads[0][0].shape[0]
    tag = tuple(name for name, _, _ in members)
    own = [mod._parameters for _, mod, _ in members]  # the dict itself: Module.__getattr__ is slow Python
    # the factors in the parameters' dtype where autocast recorded them narrower (training.full_precision); the
    # inputs of several members follow g's dtype, the buffer side_by_side writes them into
    g = upcast(stack_positions([gy[0] for gy in out_grads], m, (tag, "g")), own[0]["weight"].dtype)
    prefixes = [f"{name}." if name else "" for name, _, _ in members]
    weights = [(prefix + "weight", p["weight"].shape[1]) for prefix, p in zip(prefixes, own) if p["weight"].requires_grad]
    biases = [prefix + "bias" for prefix, p in zip(prefixes, own) if p["bias"] is not None and p["bias"].requires_grad]
    inputs = [[args[0] for args, _ in calls] for (_, _, calls), p in zip(members, own) if p["weight"].requires_grad]
    if len(inputs) > 1:  # the members' inputs side by side, (M, i¹ + i² + ...) or (M, t, i¹ + i² + ...)
        a = side_by_side(inputs, WORKSPACE.take((tag, "a"), (*g.shape[:-1], _width(inputs)), g), m)
    else:
        a = upcast(stack_positions(inputs[0], m, (tag, "a")), g.dtype) if inputs else None
    t, o = g.shape[1] if g.dim() == 3 else 1, g.shape[-1]
    i = 0 if a is None else a.shape[-1]
    route = norm_route(t, i, o)
    per_sample = None  # G_i flattened, (M, i·o), when materialising it is the cheaper way to its norm
    if route is NormRoute.ONE_POSITION:  # one position: ||G_i||² = ||a_i||²·||g_i||², each bias adds ||g_i||²
        if g.dim() == 3:  # (M, o) and (M, i) from here
            g = g.reshape(m, o)
            a = None if a is None else a.reshape(m, i)
        bias_grad = g if biases else None
        sq_g, nb = squared_row_norms(g, m), len(biases)
        if a is None:
            sq = sq_g.mul_(nb)
        elif nb == 1:  # the usual Linear: ||g||² ||a||² + ||g||² in one op
            sq = torch.addcmul(sq_g, sq_g, squared_row_norms(a, m))
        else:
            sq = sq_g.mul_(squared_row_norms(a, m).add_(nb))
    else:
        bias_grad = g.sum(1) if biases else None  # the same Σ_t g_it for every member's bias
        sq = None
        if biases:
            sq = squared_row_norms(bias_grad, m)
            if len(biases) > 1:
                sq = sq.mul_(len(biases))
        if a is not None and route is NormRoute.GHOST:
            ghost = ghost_squared_norms(a, g)
            sq = ghost if sq is None else sq.add_(ghost)
        elif a is not None:
            # G_i or G_iᵀ, whichever puts the longer side last: the faster operand order for CPU bmm
            left, right = (a, g) if i <= o else (g, a)
            per_sample = torch.bmm(left.transpose(1, 2), right, out=WORKSPACE.take(
                (tag, "G"), (m, left.shape[2], right.shape[2]), g)).view(m, i * o)
            sq_w = squared_row_norms(per_sample, m)
            sq = sq_w if sq is None else sq.add_(sq_w)
        if sq is None:
            sq = g.new_zeros(m, dtype=NORM_DTYPE)

    def add_clipped_linear_sum(c: torch.Tensor, w: float, out: Grads) -> None:
        g_rows_t = None  # gᵀ over all (sample, position) rows, when taken: at one position, also the bias's
        if a is not None and per_sample is None:  # one product over all (sample, position) rows, the smaller
            scale = c[:, None] if t == 1 else c[:, None, None]  # factor's rows scaled by c
            if i <= o:
                g_rows_t = _rows(g).T
                left, right = g_rows_t, _rows(a * scale)
            else:
                left, right = _rows(g * scale).T, _rows(a)
            # each member's columns of [W¹ | W² | ...] straight into its own buffer: no (o, Σ i) temporary
            for (key, _), columns in zip(weights, right.split([width for _, width in weights], dim=1)):
                out[key].addmm_(left, columns, alpha=w)
        elif a is not None:
            dest = out[weights[0][0]] if len(weights) == 1 else g.new_zeros(o, i)
            if i > o:  # G_i as (o, i): the layout of dest (contiguous, as out's are)
                dest.view(-1).addmv_(per_sample.T, c, alpha=w)
            else:  # G_iᵀ as (i, o)
                dest.add_((per_sample.T @ c).view(i, o).T, alpha=w)
            if len(weights) > 1:
                for (key, _), block in zip(weights, dest.split([width for _, width in weights], dim=1)):
                    out[key].add_(block)  # w is in dest already
        if bias_grad is not None:
            bias_grad_t = g_rows_t if t == 1 and g_rows_t is not None else bias_grad.T
            for key in biases:
                out[key].addmv_(bias_grad_t, c, alpha=w)

    return LayerFactors(sq, add_clipped_linear_sum)
