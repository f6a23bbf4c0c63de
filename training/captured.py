"""Algorithm 2's whole step as one compiled program: per-sample gradients, exact clipping, noise, update.

A step of the eager engines (:mod:`training.step`, :mod:`training.factored`) is a few hundred
to thousands of small operations launched from Python; on a GPU each is a kernel launch and
the step runs at the launcher's speed, not the device's. :class:`CapturedStep` compiles the
step with ``torch.compile(fullgraph=True)``: per-sample gradients by torch.func (the vmap
engine: ``functional_call`` + ``grad`` + ``vmap``), their exact clipping and masked sum
(:func:`training.clipping.clipped_sum`), the noise added and, for plain SGD, the update
θ ← θ - η g̃ made in place. ``fullgraph=True`` makes the compiler refuse any graph break:
compiling is the check that the step holds no ``.item()``, no Python branch on a tensor's
value and no data-dependent shape. Batches have one shape for the whole run
(:mod:`training.fixed_batch`), so the program is compiled once. It is traced and run inside
:func:`training.full_precision.full_precision`: a compiled program cannot switch its matmul precision
halfway, so the whole step, forward and backward too, runs at full IEEE precision without autocast,
whatever the user set (the eager engines keep the user's precision for the forward and backward).

On CUDA the mode is ``reduce-overhead``: the compiled step is captured in a CUDA graph and
replayed, one launch per step. The noise comes from the step's own ``torch.Generator``, one
``normal_`` fill of a flat buffer launched just before the compiled program (torch's compiler
does not take a ``Generator`` argument): the same draw, in the same order and dtype, as the
eager engines' (:func:`training.noise.gaussian_noise`), so a seed determines the run and the
compiled step equals the eager one at the same generator state, to float rounding
(tests/training/test_captured.py on CPU, tests/training/test_cuda_paths.py on CUDA).
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Union

import torch
from torch import nn

from tsdp.theorems.config import Choice

from .clipping import Grads, clipped_sum
from .full_precision import full_precision
from .noise import fill_flat_noise
from .step import _plain_sgd_targets, apply_gradient, per_sample_gradients

Compiler = Callable[[Callable], Callable]


class StepPath(Choice):
    """How the training loop runs its DP steps (``Loop(step_path=...)`` of :func:`tsdp.training.train.train`)."""

    AUTO = "auto"
    """``captured`` on CUDA, ``eager`` elsewhere."""
    EAGER = "eager"
    """Each step's batch compacted to its sampled windows (its own size), the factored engine, eagerly."""
    FIXED = "fixed"
    """Batches of one capacity (:mod:`training.fixed_batch`), the factored engine, eagerly: no host read per step."""
    CAPTURED = "captured"
    """Batches of one capacity and :class:`CapturedStep`: the step compiled whole (CUDA graphs on CUDA)."""


def resolve_step_path(path: Union[str, StepPath], device: torch.device) -> StepPath:
    """``path`` as a :class:`StepPath` member, ``auto`` resolved for ``device``.

    Args:
        path: a :class:`StepPath` or its value.
        device: the device the run trains on.

    Returns:
        The step path, never ``auto``.

    Raises:
        ConfigError: naming ``step_path``, for an unknown value.
    """
    path = StepPath.of("step_path", path)
    if path == StepPath.AUTO:
        return StepPath.CAPTURED if device.type == "cuda" else StepPath.EAGER
    return path


def default_compiler(device: torch.device) -> Compiler:
    """``torch.compile(fullgraph=True)``: mode ``reduce-overhead`` (CUDA graphs) on CUDA, inductor's default
    elsewhere.

    Args:
        device: the device the step runs on.

    Returns:
        A function compiling a step function.
    """
    mode = "reduce-overhead" if device.type == "cuda" else None
    return lambda fn: torch.compile(fn, fullgraph=True, mode=mode)


class CapturedStep:
    """The DP step (paper Algorithm 2; the mechanism of T1-T14) of one model, compiled whole (module docstring).

    Args:
        model: the model whose trainable parameters the step updates; ``forward(context, forecast[, covariates])``
            returns the per-sample loss and mixes no samples.
        clip: the clipping norm C.
        sigma: the noise multiplier σ (noise std σ·C on the summed gradient).
        batch_size: the expected batch size Λ, the divisor of Algorithm 2.
        compiler: turns the step's function into the compiled one (default :func:`default_compiler` of the
            model's device); ``torch.compile(fn, fullgraph=True, backend="aot_eager")`` compiles without C++.

    Soundness: each window's gradient is clipped to norm ≤ C exactly (the vmap engine's per-sample gradients)
    and masked-out slots weigh 0, so ĝ has sensitivity C, as the eager engines'.
    """

    def __init__(self, model: nn.Module, *, clip: float, sigma: float, batch_size: int,
                 compiler: Optional[Compiler] = None):
        self.model = model
        self.clip, self.sigma, self.batch_size = float(clip), float(sigma), int(batch_size)
        self.names: List[str] = [k for k, p in model.named_parameters() if p.requires_grad]
        self.params: List[nn.Parameter] = [p for p in model.parameters() if p.requires_grad]
        if not self.params:
            raise ValueError("the model has no trainable parameter")
        device = self.params[0].device
        self._device_type = device.type
        self._compiler = compiler or default_compiler(device)
        self._gradient = self._compiler(self._noisy_gradient)
        self._updates: Dict[float, Callable] = {}
        self._noise = torch.empty(sum(p.numel() for p in self.params), dtype=self.params[0].dtype, device=device)

    def _noisy_gradient(self, context, forecast, mask, covariates, noise) -> List[torch.Tensor]:
        """(ĝ + N(0, σ²C²I)) / Λ as a list in ``self.names`` order; ``noise`` the flat draw already scaled by σC/Λ."""
        params = {k: p.detach() for k, p in zip(self.names, self.params)}
        grads = per_sample_gradients(self.model, context, forecast, params, covariates)
        summed = clipped_sum(grads, self.clip, 1, mask)
        views = noise.split([p.numel() for p in self.params])
        return [v.view(p.shape) + summed[k] / self.batch_size for v, k, p in zip(views, self.names, self.params)]

    def _sgd_update(self, lr: float) -> Callable:
        def update(context, forecast, mask, covariates, noise) -> None:
            gradient = self._noisy_gradient(context, forecast, mask, covariates, noise)
            with torch.no_grad():
                torch._foreach_add_(self.params, gradient, alpha=-lr)
        return update

    def _draw(self, generator: Optional[torch.Generator]) -> torch.Tensor:
        """The step's noise N(0, (σC/Λ)² I) in the flat buffer: the eager engines' draw, from ``generator``."""
        return fill_flat_noise(self._noise, self.sigma * self.clip / self.batch_size, generator=generator)

    def gradient(self, context: torch.Tensor, forecast: torch.Tensor, mask: torch.Tensor, *,
                 generator: Optional[torch.Generator], covariates: Optional[torch.Tensor] = None) -> Grads:
        """The noisy gradient g̃ of Algorithm 2 on a batch (K, L_C), (K, L_F) whose ``mask`` (K,) marks the sampled
        windows (padding slots weigh 0); {name: tensor}, as :func:`training.step.private_gradient`'s. On CUDA its
        tensors are the graph's outputs: use them before the next step.

        Args:
            context: (K, L_C) contexts.
            forecast: (K, L_F) forecast targets.
            mask: (K,) bool, the sampled windows.
            generator: the noise's generator (None: torch's default).
            covariates: (K, W, F) the model's third argument, or None.

        Returns:
            {name: g̃ of the parameter's shape}.
        """
        noise = self._draw(generator)
        with full_precision(self._device_type):  # the whole program: its precision is fixed when it is compiled
            return dict(zip(self.names, self._gradient(context, forecast, mask, covariates, noise)))

    def step(self, optimizer: torch.optim.Optimizer, context: torch.Tensor, forecast: torch.Tensor,
             mask: torch.Tensor, *, generator: Optional[torch.Generator],
             covariates: Optional[torch.Tensor] = None) -> None:
        """One full noisy step (Algorithm 2, lines 4-9). For plain SGD (:func:`training.step._plain_sgd_targets`)
        the update θ ← θ - η g̃ is inside the compiled program (one per learning rate); any other optimizer gets
        g̃ as its gradient (:func:`training.step.apply_gradient`).

        Args:
            optimizer: the optimizer over the model's trainable parameters.
            context: (K, L_C) contexts.
            forecast: (K, L_F) forecast targets.
            mask: (K,) bool, the sampled windows.
            generator: the noise's generator (None: torch's default).
            covariates: (K, W, F) the model's third argument, or None.
        """
        plain = _plain_sgd_targets(self.model, optimizer, dict.fromkeys(self.names))
        if plain is None or len(plain[1]) != len(self.params) or any(a is not b for a, b in zip(plain[1], self.params)):
            apply_gradient(self.model, optimizer, self.gradient(context, forecast, mask, generator=generator,
                                                                covariates=covariates))
            return
        lr = plain[0]
        if lr not in self._updates:
            self._updates[lr] = self._compiler(self._sgd_update(lr))
        noise = self._draw(generator)
        with full_precision(self._device_type):
            self._updates[lr](context, forecast, mask, covariates, noise)
