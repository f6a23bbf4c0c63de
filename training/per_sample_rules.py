"""Per-sample gradients of the parameter-owning modules that are not ``nn.Linear``: a registered closed-form rule
per module type (``nn.LayerNorm`` here), else torch.func on that one module.

Each gives {qualified name: (M, *shape)} from the module's recorded inputs and the gradients of
its outputs; the factored engine clips them materialised
(:func:`training.layer_factors.materialised_factors`).
"""
from __future__ import annotations

from typing import Callable, Dict, List, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from .call_recorder import Call, output_tensors
from .clipping import Grads
from .full_precision import upcast

PerSampleRule = Callable[[nn.Module, tuple, List[torch.Tensor]], Grads]
"""``rule(module, inputs, output_grads) -> {local parameter name: (M, *shape)}`` for one call."""
PER_SAMPLE_RULES: Dict[type, PerSampleRule] = {}
"""The registered rules by module type (:func:`register_per_sample_rule`)."""

RecordedModule = Tuple[str, nn.Module, List[Call], List[List[torch.Tensor]]]
"""(qualified name, module, its recorded calls, per call the gradients of its outputs)."""


def register_per_sample_rule(module_type: type) -> Callable[[PerSampleRule], PerSampleRule]:
    """Decorator registering ``rule(module, inputs, output_grads) -> {local parameter name: (M, *shape)}``.

    ``output_grads`` holds ∂L_i/∂y_i for each output tensor of one call. A rule must equal the
    vmap per-sample gradient of the module's own trainable parameters (the tests check each).

    Args:
        module_type: the exact module class the rule is for.

    Returns:
        The decorator (it returns the rule unchanged).
    """
    def register(rule: PerSampleRule) -> PerSampleRule:
        PER_SAMPLE_RULES[module_type] = rule
        return rule
    return register


@register_per_sample_rule(nn.LayerNorm)
def _layer_norm_rule(module: nn.LayerNorm, inputs: tuple, output_grads: List[torch.Tensor]) -> Grads:
    """y = x̂ ⊙ w + b with x̂ = (x - mean) / sqrt(var + eps): per sample Σ_t g_t ⊙ x̂_t and Σ_t g_t."""
    x, g = inputs[0].detach(), output_grads[0]
    sample_dims = tuple(range(1, x.dim() - len(module.normalized_shape)))

    def per_sample(t: torch.Tensor) -> torch.Tensor:  # torch's sum over dims () would reduce every dimension
        if all(x.shape[d] == 1 for d in sample_dims):  # one position (none, or dims of size 1): itself, a view
            return t.reshape(t.shape[0], *module.normalized_shape)
        return t.sum(sample_dims)

    out = {}
    if module.weight is not None and module.weight.requires_grad:
        x_hat = F.layer_norm(x, module.normalized_shape, eps=module.eps)
        out["weight"] = per_sample(g * x_hat)
    if module.bias is not None and module.bias.requires_grad:
        out["bias"] = per_sample(g)
    return out


def rule_gradients(name: str, module: nn.Module, calls: List[Call], out_grads: List[List[torch.Tensor]]) -> Grads:
    """A registered rule's per-sample gradients, summed over the module's calls.

    Args:
        name: the module's qualified name.
        module: the module (its type has a rule).
        calls: its recorded calls.
        out_grads: per call, the gradients of its outputs.

    Returns:
        {qualified name: (M, *shape)}.
    """
    rule = PER_SAMPLE_RULES[type(module)]
    total: Grads = {}
    for (args, _), gy in zip(calls, out_grads):
        for k, g in rule(module, args, gy).items():
            key = f"{name}.{k}" if name else k
            total[key] = total[key] + g if key in total else g
    return total


def vmap_gradients(owners: List[RecordedModule]) -> Grads:
    """Modules without a rule, all at once: per-sample gradients of their own parameters by one vmap over
    samples of grad(p ↦ Σ_calls ⟨module(p, x_i), g_i⟩), the torch.func per-sample recipe on each layer.

    Args:
        owners: the modules with their calls and output gradients.

    Returns:
        {qualified name: (M, *shape)}.
    """
    params = {f"{name}.{k}" if name else k: p.detach()
              for name, mod, _, _ in owners for k, p in mod._parameters.items() if p is not None and p.requires_grad}
    dtype = next(iter(params.values())).dtype  # inputs and output gradients autocast made narrower, in it
    # (training.full_precision: the factored engine calls this with autocast off)
    locals_of = [{k: f"{name}.{k}" if name else k for k, p in mod._parameters.items() if p is not None and p.requires_grad}
                 for name, mod, _, _ in owners]
    args = tuple(tuple(tuple(upcast(a.detach(), dtype) if isinstance(a, torch.Tensor) else a for a in call_args)
                       for call_args, _ in calls) for _, _, calls, _ in owners)
    in_dims = tuple(tuple(tuple(0 if isinstance(a, torch.Tensor) else None for a in call_args)
                          for call_args in module_args) for module_args in args)
    grads_out = tuple(tuple(tuple(upcast(g, dtype) for g in gy) for gy in out_grads) for _, _, _, out_grads in owners)

    def inner(p, args, grads_out):
        total = 0
        for (_, mod, _, _), names, module_args, module_grads in zip(owners, locals_of, args, grads_out):
            own = {k: p[full] for k, full in names.items()}
            for call_args, gy in zip(module_args, module_grads):
                batch_of_one = tuple(a[None] if isinstance(a, torch.Tensor) else a for a in call_args)
                out = output_tensors(functional_call(mod, own, batch_of_one))
                total = total + sum((o[0] * g).sum() for o, g in zip(out, gy))
        return total

    return vmap(grad(inner), in_dims=(None, in_dims, 0))(params, args, grads_out)
