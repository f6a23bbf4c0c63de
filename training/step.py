"""Algorithm 2 (noisy training step): per-sample gradients, clipping to C, Gaussian noise N(0, σ² C² I), / Λ.

Two engines compute the clipped sum ĝ = Σ_i g_i / max(1, ||g_i||/C), with the same result:

- ``vmap``: per-sample gradients by the torch.func recipe (functional_call + grad + vmap),
  materialised, then clipped (:mod:`training.clipping`). Inputs may carry leading
  *trial* dimensions: context (*lead, M, L_C) gives one independent noisy gradient per
  trial, shape (*lead, *param.shape); the Monte Carlo auditors run many trials this way.
- ``factored``: exact per-sample clipping from layer factors, one batched forward and
  backward, per-sample gradients never materialised (:mod:`training.factored`);
  one batch (M, L_C) at a time, at the model's own parameters, its clipped sum added in place into the step's noise
  (:func:`training.factored.factored_noisy_gradient`). The training loop uses it.

Both draw the noise the same way (:func:`training.noise.gaussian_noise`: one flat
draw in the parameters' dtype, in ``named_parameters`` order), so one generator state
gives the same g̃ under either engine, to float rounding.

A model here is an ``nn.Module`` whose ``forward(context, forecast)`` takes a batch
(B, L_C), (B, L_F) and returns the per-sample loss, shape (B,), without mixing samples.
"""
from __future__ import annotations

import contextlib
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.overrides import TorchFunctionMode
from torch.optim import optimizer as torch_optimizer

from tsdp.theorems.config import ConfigError

from .clipping import Grads, clipped_sum
from .factored import FactoredGradientError, factored_noisy_gradient, trainable_parameters
from .full_precision import autocast_enabled
from .noise import gaussian_noise

ENGINES = ("auto", "factored", "vmap")
FLOAT32_MAX = float(torch.finfo(torch.float32).max)


def check_noise_std(sigma: float, clip: float) -> None:
    """Refuses a noise std σ·C of the summed gradient that is not a finite float32, the loop's precision (the
    noise would be inf and every update NaN).

    Args:
        sigma: the noise multiplier σ.
        clip: the clip norm C.

    Raises:
        ConfigError: naming σ or C, the larger, when σ·C exceeds float32's largest value.
    """
    if not sigma * clip <= FLOAT32_MAX:
        name, value = ("sigma", sigma) if sigma >= clip else ("clip", clip)
        raise ConfigError(name, f"gives the noise std σ·C = {sigma * clip:.3g}, beyond float32 ({FLOAT32_MAX:.3g}), "
                                "the loop's precision", value)


def per_sample_gradients(model: nn.Module, context: torch.Tensor, forecast: torch.Tensor, params: Optional[Grads] = None,
                         covariates: Optional[torch.Tensor] = None) -> Grads:
    """g_i = ∇_θ L(f_θ(y_C,i), y_F,i) for every window i (Algorithm 2, line 5), via vmap(grad(functional_call)).

    Args:
        model: a model returning one loss per sample without mixing samples.
        context: (*lead, L_C) contexts.
        forecast: (*lead, L_F) forecast targets.
        params: the parameters to differentiate at, {name: tensor}; None: the model's trainable ones (detached).
        covariates: (*lead, W, F) the model's third argument (DeepAR's time features of each window), or None.

    Returns:
        {name: (*lead, *param.shape)}.
    """
    if params is None:
        params = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    lead = context.shape[:-1]

    def loss_one(p, c, f, *z):
        return functional_call(model, (p, buffers), (c[None], f[None], *(x[None] for x in z)))[0]

    flat_c = context.reshape(-1, context.shape[-1])
    flat_f = forecast.reshape(-1, forecast.shape[-1])
    flat_z = () if covariates is None else (covariates.reshape(-1, *covariates.shape[-2:]),)
    if flat_c.shape[0] == 0:  # an empty (Poisson) batch: no gradients, the step releases pure noise
        return {k: p.new_zeros(*lead, *p.shape) for k, p in params.items()}
    autocast = not torch.compiler.is_compiling() and autocast_enabled(context.device.type)
    with _LayerNormAtWeightDtype() if autocast else contextlib.nullcontext():
        grads = vmap(grad(loss_one), in_dims=(None, 0, 0, *(0 for _ in flat_z)))(params, flat_c, flat_f, *flat_z)
    return {k: g.reshape(*lead, *g.shape[1:]) for k, g in grads.items()}


class _LayerNormAtWeightDtype(TorchFunctionMode):
    """Layer norms of an input narrower than their weight (bf16/fp16 under CPU autocast, which leaves ``layer_norm`` in
    its input's dtype where CUDA's autocast runs it in float32) computed on the input upcast to the weight's dtype
    (exact) and the result rounded back to the input's dtype, as the mixed-dtype kernel returns it.

    Why: torch.func's batched backward of such a layer norm fails (``expected scalar type BFloat16 but found
    Float``): it applies the weight itself and calls the layer-norm backward kernel without one, and that kernel then
    wants the saved mean and rstd in the input's dtype, while the mixed forward saved them in float32 (measured on
    torch 2.13: iTransformer's residual stream is bf16 under CPU autocast, so :func:`per_sample_gradients` raised).
    Upcast, the forward and backward are plain float32 layer norms, which vmap handles; the per-sample gradient is
    still a function of sample i alone (what Algorithm 2 needs; its norms and sums are taken at full precision by
    :mod:`training.full_precision` whatever the forward's dtype).
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _LAYER_NORMS:
            x = args[0] if args else kwargs["input"]
            weight = args[2] if len(args) > 2 else kwargs.get("weight")
            if (weight is not None and x.is_floating_point() and weight.is_floating_point()
                    and torch.finfo(x.dtype).bits < torch.finfo(weight.dtype).bits):
                if args:
                    args = (x.to(weight.dtype), *args[1:])
                else:
                    kwargs = {**kwargs, "input": x.to(weight.dtype)}
                return func(*args, **kwargs).to(x.dtype)
        return func(*args, **kwargs)


_LAYER_NORMS = (F.layer_norm, torch.layer_norm)
"""What :class:`_LayerNormAtWeightDtype` widens: ``nn.LayerNorm``'s call and torch's own."""


def noisy_mean(
    summed: Grads, *, clip: float, sigma: float, batch_size: int, generator: Optional[torch.Generator]
) -> Grads:
    """Algorithm 2, line 8: (ĝ + N(0, σ² C² I)) / Λ, one independent noise draw per trial.

    The noise is one flat draw (:func:`training.noise.gaussian_noise`, in ``summed``'s
    order and dtype, scaled by σC/Λ); ĝ/Λ is added into it in place.

    Args:
        summed: the clipped sums ĝ, {name: (*lead, *param.shape)}.
        clip: the clip norm C.
        sigma: the noise multiplier σ.
        batch_size: the expected batch size Λ.
        generator: the noise's generator (None: torch's default).

    Returns:
        {name: g̃}, shaped as ``summed``.
    """
    out = gaussian_noise(summed, sigma * clip / batch_size, generator=generator)
    for k, s in summed.items():
        out[k].add_(s, alpha=1.0 / batch_size)
    return out


def private_gradient(
    model: nn.Module,
    context: torch.Tensor,
    forecast: torch.Tensor,
    *,
    clip: float,
    sigma: float,
    batch_size: int,
    generator: Optional[torch.Generator],
    mask: Optional[torch.Tensor] = None,
    engine: str = "auto",
    covariates: Optional[torch.Tensor] = None,
) -> Grads:
    """The noisy gradient g̃ of Algorithm 2 (paper Alg. 2; the mechanism of T1-T14): clip to C, sum, add N(0, σ² C² I), / Λ.

    With no lead dimensions, one gradient for the model's parameters. Soundness: each window's
    clipped gradient has norm ≤ C under either engine. At other parameters than the model's,
    compose :func:`per_sample_gradients`, :func:`training.clipping.clipped_sum` and :func:`noisy_mean`.

    Args:
        model: a model returning one loss per sample without mixing samples.
        context: (*lead, M, L_C) contexts; lead dims are independent trials.
        forecast: (*lead, M, L_F) forecast targets.
        clip: the clip norm C.
        sigma: the noise multiplier σ.
        batch_size: the expected batch size Λ (the divisor of Algorithm 2), not the realised one.
        generator: the noise's generator (None: torch's default).
        mask: (*lead, M) 0/1, dropping padded slots (Poisson sampling); None keeps all.
        engine: ``factored`` (one batch (M, L_C)), ``vmap`` (any lead dims), or ``auto`` (factored where it
            applies, else vmap).
        covariates: (*lead, M, W, F) the model's third argument (DeepAR's time features of each window), or None.

    Returns:
        {name: (*lead, *param.shape)}.

    Raises:
        ValueError: an unknown engine, or ``factored`` given lead dimensions.
        FactoredGradientError: ``factored`` asked for a model it does not handle.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    single = context.dim() == 2
    if engine == "factored" and not single:
        raise ValueError("the factored engine takes one batch (M, L_C); use engine='vmap'")
    if engine == "factored" or (engine == "auto" and single):
        return factored_noisy_gradient(model, context, forecast, clip=clip, sigma=sigma, batch_size=batch_size,
                                       generator=generator, mask=mask, covariates=covariates)
    grads = per_sample_gradients(model, context, forecast, None, covariates)
    summed = clipped_sum(grads, clip, context.dim() - 1, mask)
    return noisy_mean(summed, clip=clip, sigma=sigma, batch_size=batch_size, generator=generator)


def _plain_sgd_targets(model: nn.Module, optimizer: torch.optim.Optimizer, gradient: Grads) -> Optional[Tuple[float, list]]:
    """(η, the parameters named in ``gradient``, in its order) when ``optimizer.step()`` would do nothing but
    θ ← θ - η g̃ on exactly them: torch's SGD, one group, a float lr, no momentum, weight decay, maximize or
    step hooks, every named parameter in the group and no other parameter of the group holding a ``.grad``.
    Else None."""
    if (type(optimizer) is not torch.optim.SGD or len(optimizer.param_groups) != 1 or optimizer._optimizer_step_pre_hooks
            or optimizer._optimizer_step_post_hooks or torch_optimizer._global_optimizer_pre_hooks
            or torch_optimizer._global_optimizer_post_hooks):
        return None
    group = optimizer.param_groups[0]
    if (group["momentum"] != 0 or group["weight_decay"] != 0 or group["maximize"] or group["differentiable"]
            or not isinstance(group["lr"], float)):
        return None
    try:
        params = trainable_parameters(model)
    except FactoredGradientError:  # tied parameters: no plan
        return None
    if any(name not in params for name in gradient):
        return None
    targets = [params[name] for name in gradient]
    if len(targets) == len(group["params"]) and all(p is q for p, q in zip(targets, group["params"])):
        return group["lr"], targets  # the usual case: g̃ names the group's parameters, in its order
    named = set(map(id, targets))
    if not named <= {id(p) for p in group["params"]} or any(p.grad is not None and id(p) not in named
                                                            for p in group["params"]):
        return None
    return group["lr"], targets


def apply_gradient(model: nn.Module, optimizer: torch.optim.Optimizer, gradient: Grads) -> None:
    """Algorithm 2, line 9: hand g̃ to the optimizer (θ ← θ - η g̃ for SGD; Adam uses g̃ as its gradient).

    ``p.grad`` IS g̃'s tensor (no copy): the optimizer must not modify gradients in place
    (torch's optimizers do not), or the caller's g̃ would change with it. Where ``SGD.step``
    would do nothing but θ ← θ - η g̃ (:func:`_plain_sgd_targets`), the update is made here
    as one ``_foreach_add_`` of -η g̃: the same arithmetic without the optimizer's per-step
    bookkeeping. Either way the optimizer's parameters hold no ``.grad`` afterwards.

    Args:
        model: the model whose parameters ``gradient`` names.
        optimizer: the optimizer over them.
        gradient: g̃, {qualified parameter name: tensor of its shape}.
    """
    plain = _plain_sgd_targets(model, optimizer, gradient)
    if plain is None:
        for name, p in model.named_parameters():
            if name in gradient:
                p.grad = gradient[name].detach()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return
    lr, targets = plain
    with torch.no_grad():
        torch._foreach_add_(targets, list(gradient.values()), alpha=-lr)
    for p in targets:  # as zero_grad(set_to_none=True); the group's other parameters hold none already
        p.grad = None


def dp_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    context: torch.Tensor,
    forecast: torch.Tensor,
    *,
    clip: float,
    sigma: float,
    batch_size: int,
    generator: Optional[torch.Generator],
    engine: str = "auto",
) -> Grads:
    """One full noisy training step (Algorithm 2, lines 4-9) on one batch.

    Args:
        model: a model returning one loss per sample without mixing samples.
        optimizer: the optimizer over its trainable parameters.
        context: (M, L_C) contexts.
        forecast: (M, L_F) forecast targets.
        clip: the clip norm C.
        sigma: the noise multiplier σ.
        batch_size: the expected batch size Λ.
        generator: the noise's generator (None: torch's default).
        engine: as :func:`private_gradient`'s.

    Returns:
        The noisy gradient g̃ used, {name: tensor}.
    """
    gradient = private_gradient(model, context, forecast, clip=clip, sigma=sigma, batch_size=batch_size,
                                generator=generator, engine=engine)
    apply_gradient(model, optimizer, gradient)
    return gradient


def nonprivate_step(model: nn.Module, optimizer: torch.optim.Optimizer, context: torch.Tensor, forecast: torch.Tensor,
                    extra: Optional[List[torch.Tensor]] = None, covariates: Optional[torch.Tensor] = None) -> float:
    """Ordinary (non-private) SGD step on the mean loss — the ε = ∞ reference of the paper's tables.

    Args:
        model: a model returning one loss per sample.
        optimizer: the optimizer over its trainable parameters.
        context: (M, L_C) contexts (M may be 0).
        forecast: (M, L_F) forecast targets.
        extra: tensors added to the trainable parameters' gradients, in order, before the step (white-box
            canaries); an empty batch then steps on ``extra`` alone. None adds nothing.
        covariates: the model's third argument, or None.

    Returns:
        The mean loss of the batch (0 for an empty one).
    """
    optimizer.zero_grad(set_to_none=True)
    inputs = (context, forecast) if covariates is None else (context, forecast, covariates)
    loss = model(*inputs).mean() if context.shape[0] > 0 else torch.zeros(())
    if context.shape[0] > 0:
        loss.backward()
    if extra is not None:
        for p, e in zip((p for p in model.parameters() if p.requires_grad), extra):
            p.grad = e.clone() if p.grad is None else p.grad + e
    optimizer.step()
    return float(loss.detach())
