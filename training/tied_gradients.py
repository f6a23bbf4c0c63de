"""Tied output gradients: a linear whose output gradients are another linear's, position by position, declared by
the model and applied only where the recorded calls have the declared structure.

An LSTM unrolled layer by layer (:meth:`training.deepar._LSTM.unroll`) calls its input projection ``ih`` once on
the (B, P, ·) inputs of all positions and its hidden projection ``hh`` once per position p on (B, ·), the gates'
pre-activations ``ih_out[:, p] + hh_out_p``. The sum is the only use of ``hh_out_p``, so ∂L/∂hh_out_p =
∂L/∂ih_out[:, p] exactly: stacked over p, ``hh``'s output gradients ARE ``ih``'s, which autograd returns as one
(B, P, o) tensor. An engine that knows it asks autograd for the leader's (``ih``'s) output gradient only and uses
it for the follower (``hh``) too: no P separate gradients to stack, and the two share one set of factors.

A model declares its ties by a method ``tied_output_gradients()`` on any of its submodules, returning (follower,
leader) pairs of its current submodules (:func:`declared_ties`). The claim is the model's: a declared tie that
does not hold would give wrong per-sample norms, hence wrong clipping (a privacy bug); the engines check only the
structure of the calls (:func:`applied_ties`) and fall back to asking autograd for every output where it differs.
tests/training/test_tied_gradients.py checks both engines' norms and sums with ties against per-sample autograd.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import torch
from torch import nn

Tie = Tuple[nn.Module, nn.Module]
"""(follower, leader): each call p of the follower reaches the loss only through a sum with position p (dim 1) of the
leader's single call's output."""

_DECLARE = "tied_output_gradients"
"""The name of the method by which a submodule declares its ties."""


def declared_ties(model: nn.Module, modules: Optional[Iterable[nn.Module]] = None) -> List[Tie]:
    """Every tie ``model``'s submodules declare, in module order.

    Args:
        model: the model; a submodule declares ties by a method ``tied_output_gradients()`` (of its class, or set
            on the instance) returning (follower, leader) pairs of modules.
        modules: ``model.modules()`` where the caller holds them already (the factored engine's cached plan,
            :meth:`training.parameter_owners.OwnerPlan.modules`: no walk of the model); None reads them.

    Returns:
        The (follower, leader) pairs.
    """
    ties: List[Tie] = []
    for module in model.modules() if modules is None else modules:
        # looked up on the class and the instance's own attributes only: ``getattr`` on a module without the method
        # falls through to Module.__getattr__ and raises, about 8 µs per module per step
        if hasattr(type(module), _DECLARE) or _DECLARE in module.__dict__:
            declare = getattr(module, _DECLARE)
            if callable(declare):
                ties.extend(declare())
    return ties


def _has_tied_structure(leader: Sequence[Sequence[torch.Tensor]], follower: Sequence[Sequence[torch.Tensor]]) -> bool:
    """Whether the calls are those a tie describes: the leader one call, one output (B, P, o); the follower P calls,
    each one output (B, o), of the leader's dtype and device."""
    if len(leader) != 1 or len(leader[0]) != 1 or leader[0][0].dim() != 3:
        return False
    y = leader[0][0]
    b, p, o = y.shape
    return len(follower) == p and all(
        len(ys) == 1 and ys[0].shape == (b, o) and ys[0].dtype == y.dtype and ys[0].device == y.device
        for ys in follower)


def applied_ties(ties: Sequence[Tie], outputs: Dict[int, List[List[torch.Tensor]]]) -> Dict[int, int]:
    """The declared ties whose recorded calls have the tied structure: the leader one call with one output (B, P, o),
    the follower P calls each with one output (B, o). Any other (a loss that calls the layers position by position,
    as :meth:`training.deepar._LSTM.step`; a module not called; a follower declared twice or that leads a tie
    itself) is left out, and its follower's gradients are asked of autograd as any module's (exact, slower).

    Args:
        ties: declared (follower, leader) pairs (:func:`declared_ties`).
        outputs: {id(module): per call, its output tensors} of the recorded modules.

    Returns:
        {id(follower): id(leader)} of the ties applied.
    """
    followers = [id(f) for f, _ in ties]
    applied = {}
    for follower, leader in ties:
        f, l = id(follower), id(leader)
        if f == l or followers.count(f) > 1 or l in followers or f not in outputs or l not in outputs:
            continue
        if _has_tied_structure(outputs[l], outputs[f]):
            applied[f] = l
    return applied
