"""Algorithm 2's clipped sum from layer factors: exact per-sample clipping at about the cost of one backward pass.

Algorithm 2 needs ĝ = Σ_i g_i / max(1, ||g_i||_2 / C) (paper Algorithm 2, lines 4-7), where
g_i is the gradient of window i's loss alone. :func:`training.step.per_sample_gradients`
gets every g_i by vmap(grad) and writes out a (M, P) tensor; for the forecasting models
that costs 3-7 batched backward passes. Here g_i is never assembled:

1. One batched forward records every call of a module that owns trainable parameters: its
   inputs and its output y (:class:`training.call_recorder.CallRecorder`; the modules found
   once per model, :mod:`training.parameter_owners`).
2. One backward of Σ_i L_i gives ∂(Σ_j L_j)/∂y for every recorded output. Its row i is
   ∂L_i/∂y_i, because the models never mix samples (no batch statistics; the same
   assumption vmap's per-sample semantics encode). A tied follower's outputs are not asked
   for: where the model declares that its calls reach the loss only through sums with the
   positions of a leader's single call (DeepAR's ``hh`` and ``ih``,
   :mod:`training.tied_gradients`) and the recorded calls have that structure, its output
   gradients are the leader's, one (M, P, o) tensor.
3. From these factors, per parameter-owning module: ``nn.Linear`` by
   :func:`training.linear_factors.linear_factors` (the norm by the cheapest exact route,
   the clipped sum by one matrix product per layer, no second backward pass; linears with
   the same output gradients, a tied follower with its leader, are one group); a module type
   with a registered rule (``nn.LayerNorm``) or any other module by its per-sample
   gradients (:mod:`training.per_sample_rules`), small and held in full.
4. The squared norms add up over modules to ||g_i||² (in float64), the clip factors c_i follow
   (Algorithm 2, line 6, with :func:`training.clipping.clip_margin`'s margin for rounding), and
   the clipped sum is taken with them: added in place into the step's noise buffer by
   :func:`factored_noisy_gradient` (Algorithm 2, line 8, fused). Steps 3 and 4 run under
   :func:`training.full_precision.full_precision` (IEEE matmuls, autocast off, whatever the user set; the factors
   autocast made bf16 upcast to the parameters' dtype); the forward and backward run at the user's precision.
   The large factors live in per-thread buffers reused from step to step
   (:class:`training.layer_factors.Workspace`).

The result equals :func:`training.step.clipped_sum` of vmap(grad) per-sample gradients up to
float rounding (tests/training/test_factored.py checks it, and checks the norms against a
per-example autograd loop, for all four models). It is exact per-sample clipping, not an
approximation: the sensitivity of ĝ is C, as Algorithm 2 requires.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

import torch
from torch import nn

from .call_recorder import CallRecorder
from .clipping import NORM_DTYPE, Grads, clip_factors
from .full_precision import full_precision, upcast
from .layer_factors import WORKSPACE, materialised_factors
from .linear_factors import linear_factors, same_gradients_key
from .noise import gaussian_noise
from .parameter_owners import FactoredGradientError, plan_of, trainable_parameters
from .per_sample_rules import PER_SAMPLE_RULES, register_per_sample_rule, rule_gradients, vmap_gradients
from .tied_gradients import applied_ties, declared_ties

__all__ = ["FactoredGradientError", "PER_SAMPLE_RULES", "factored_clipped_sum", "factored_noisy_gradient",
           "register_per_sample_rule", "trainable_parameters"]


def _factored_sum(
    model: nn.Module, context: torch.Tensor, forecast: torch.Tensor, clip: float, mask: Optional[torch.Tensor],
    make_out: Callable[[Dict[str, nn.Parameter]], Grads], weight: float, covariates: Optional[torch.Tensor] = None,
) -> Tuple[Grads, torch.Tensor]:
    """Lines 4-7 of Algorithm 2 from layer factors: adds weight · Σ_i c_i g_i into ``make_out(params)``'s buffers.
    ``covariates`` (M, ...), when given, is the model's third argument (DeepAR's time features).

    Returns (those buffers, the per-sample norms ||g_i||_2 before clipping, (M,), float64).
    """
    m = context.shape[0]
    plan = plan_of(model)
    recorder = CallRecorder(m, plan.owners(model))
    out = make_out(plan.params)
    out_dtype = next(iter(plan.params.values())).dtype  # the dtype the clipped sum is formed in
    if m == 0:  # an empty (Poisson) batch: no gradients, the step releases pure noise
        return out, context.new_zeros(0, dtype=NORM_DTYPE)
    with torch.enable_grad(), recorder:
        loss = model(context, forecast) if covariates is None else model(context, forecast, covariates)
    if loss.shape != (m,):
        raise FactoredGradientError(f"the model must return one loss per sample, shape ({m},); got {tuple(loss.shape)}")
    recorder.check_unmodified()
    called = [(name, mod, recorder.calls[id(mod)]) for name, mod, _ in recorder.owners if recorder.calls[id(mod)]]
    ties = [(f, l) for f, l in declared_ties(model, plan.modules(model)) if type(f) is nn.Linear and type(l) is nn.Linear]
    tied = applied_ties(ties, {id(mod): [ys for _, ys in calls] for _, mod, calls in called})
    asked = [(name, mod, calls) for name, mod, calls in called if id(mod) not in tied]  # followers: their leader's
    outputs = [y for _, _, calls in asked for _, ys in calls for y in ys]
    out_grads = iter(torch.autograd.grad(loss, outputs, grad_outputs=torch.ones_like(loss), allow_unused=True))
    # the factors below are data (no graph for them), their norms and sums taken at full precision, autocast off
    with torch.no_grad(), full_precision(context.device.type):
        factors, per_sample, other, linears, leaders = [], {}, [], {}, set(tied.values())
        for name, mod, calls in asked:
            grads = [[next(out_grads) for _ in ys] for _, ys in calls]
            if any(g is None for gy in grads for g in gy):  # an output the loss does not reach: a zero gradient
                grads = [[torch.zeros_like(y) if g is None else g for g, y in zip(gy, ys)]
                         for gy, (_, ys) in zip(grads, calls)]
            if type(mod) is nn.Linear:
                group = linears.setdefault(same_gradients_key(grads), ([], grads))[0]
                group.append((name, mod, calls))
                if id(mod) in leaders:  # its followers join its group: one set of factors, [leader | follower]
                    group.extend(entry for entry in called if tied.get(id(entry[1])) == id(mod))
            elif type(mod) in PER_SAMPLE_RULES:
                per_sample.update(rule_gradients(name, mod, calls, grads))
            else:
                other.append((name, mod, calls, grads))
        factors += [linear_factors(members, grads) for members, grads in linears.values()]
        if other:
            per_sample.update(vmap_gradients(other))
        if per_sample:  # in the parameters' dtype where autocast made them narrower (training.full_precision)
            factors.append(materialised_factors({k: upcast(g, out_dtype) for k, g in per_sample.items()}))
        sq = factors[0].sq_norms
        for f in factors[1:]:
            sq = sq.add_(f.sq_norms)
        norms = sq.sqrt_()  # float64; every term is ≥ 0 (products and sums of squares; ghost norms clamped)
        c = clip_factors(norms, clip, out_dtype, sum(p.numel() for p in plan.params.values()))
        if mask is not None:
            c = c.mul_(mask)  # c is a fresh tensor; the mask's 0/1 promote to c's dtype
        for f in reversed(factors):  # the last factors taken first: their large tensors are still in cache
            f.add_weighted_sum(c, weight, out)
    WORKSPACE.end_step()
    return out, norms


def factored_clipped_sum(
    model: nn.Module, context: torch.Tensor, forecast: torch.Tensor, clip: float, mask: Optional[torch.Tensor] = None,
    covariates: Optional[torch.Tensor] = None,
) -> Tuple[Grads, torch.Tensor]:
    """Algorithm 2, lines 4-7 (paper Alg. 2; the step every theorem T1-T14 assumes): ĝ = Σ_i g_i / max(1, ||g_i||/C).

    Exact per-sample clipping from layer factors (module docstring). Soundness: every clipped
    per-sample gradient has norm ≤ C, so ĝ has sensitivity C.

    Args:
        model: a model returning one loss per sample, shape (M,), without mixing samples.
        context: (M, L_C) contexts.
        forecast: (M, L_F) forecast targets.
        clip: the clip norm C.
        mask: (M,) 0/1, dropping padded slots; None keeps all.
        covariates: (M, ...) the model's third argument (DeepAR's time features), or None.

    Returns:
        ({name: tensor of the parameter's shape}, the per-sample norms ||g_i||_2 before clipping, (M,), float64).

    Raises:
        FactoredGradientError: the model is outside what the factored engine handles.
    """
    return _factored_sum(model, context, forecast, clip, mask,
                         lambda params: {k: torch.zeros_like(p) for k, p in params.items()}, 1.0, covariates)


def factored_noisy_gradient(
    model: nn.Module, context: torch.Tensor, forecast: torch.Tensor, *, clip: float, sigma: float, batch_size: int,
    generator: Optional[torch.Generator], mask: Optional[torch.Tensor] = None, covariates: Optional[torch.Tensor] = None,
) -> Grads:
    """Algorithm 2, lines 4-8 (paper Alg. 2): g̃ = (Σ_i g_i / max(1, ||g_i||/C) + N(0, σ² C² I)) / Λ, fused.

    The noise is drawn first (:func:`training.noise.gaussian_noise`, already scaled by
    σC/Λ), and the clipped sum, weighted by 1/Λ, is added into it in place by the factors'
    matrix products: no separate sum, no copy. Same clipping as :func:`factored_clipped_sum`
    (exact), same noise layout as :func:`training.step.noisy_mean`; equal to
    ``noisy_mean(factored_clipped_sum(...))`` up to float rounding.

    Args:
        model: a model returning one loss per sample, shape (M,), without mixing samples.
        context: (M, L_C) contexts.
        forecast: (M, L_F) forecast targets.
        clip: the clip norm C.
        sigma: the noise multiplier σ.
        batch_size: the expected batch size Λ (the divisor), not the realised one.
        generator: the noise's generator (None: torch's default).
        mask: (M,) 0/1, dropping padded slots; None keeps all.
        covariates: (M, ...) the model's third argument, or None.

    Returns:
        {name: g̃ of the parameter's shape}, in ``named_parameters`` order.

    Raises:
        FactoredGradientError: the model is outside what the factored engine handles.
        ValueError: the parameters mix dtypes or devices.
    """
    def noise(params: Dict[str, nn.Parameter]) -> Grads:
        return gaussian_noise(params, sigma * clip / batch_size, generator=generator)

    return _factored_sum(model, context, forecast, clip, mask, noise, 1.0 / batch_size, covariates)[0]
