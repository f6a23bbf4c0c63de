"""The data's gradients taken off a gradient-canary observation: white-box canaries that see through a training
without noise.

In the one-run game (Steinke, Nasr & Jagielski 2023, Sec. 3; Mahloujifar, Melis & Chaudhuri
2025) the auditor knows every element but the canaries: only their inclusion bits are secret.
At step t the optimizer steps on

    g̃_t = s (Σ_{w in the batch} c_w ∇ℓ_w(θ_t) + noise) + s Σ_i [i included] K_{t,i} C u_i,

where c_w ∈ (0, 1] is window w's clipping factor (1 without clipping). Whatever the batch, the
clipping or its absence, the data's part lies in S_t = span{∇ℓ_w(θ_t) : w a window of the
data}, which the auditor computes from θ_t (a function of the transcript) and the known data.
:class:`DataSpan` projects an observation off S_t before it is scored: without noise what is
left is the canaries' part alone (their directions lose the share n / d of their energy that
falls in S_t, n windows, d parameters); with noise the noise is projected alike, so a canary's
signal-to-noise ratio shrinks by about √(1 - n / d), which is why the span is used only when
n ≤ d / 4 (:data:`MAX_WINDOW_SHARE`) and n · d fits (:data:`MAX_ENTRIES`).

Soundness (the **lower**-bound direction) needs nothing of the span: the projected observation
is a function of the transcript and of the non-canary data, fixed before the run, so it is a
valid score of the one-run theorems whatever the loss given (a loss, a windowing or an
augmentation other than the training's leaves part of the data's gradient in, which only costs
power). The per-window gradients are those of ``loss(model, context, forecast) -> (B,)`` on a
copy of your model (hooks removed, eval mode), taken with ``torch.func`` (``vmap`` of ``grad``)
at the parameters the optimizer is about to step from; the span is an orthonormal basis by QR
in float64.
"""
from __future__ import annotations

import copy
import gc
from typing import Callable, List, Optional, Sequence, Tuple

import torch

MAX_WINDOW_SHARE = 0.25
"""The most windows per parameter (n / d) for which the span is taken off (module docstring: SNR × √(1 - n/d))."""

FAILED = "the per-window gradients failed"
"""How :attr:`DataSpan.reason` begins when the loss or the model failed under ``torch.func`` (not a size limit)."""

MAX_ENTRIES = 2 ** 24
"""The most n · d per-window gradient entries held per step (64 MiB in float32)."""


def owning_module(params: Sequence[torch.Tensor]) -> Optional[torch.nn.Module]:
    """The smallest live ``nn.Module`` whose parameters include every one of ``params`` (the deepest when several
    hold the same, e.g. a model and its Opacus ``GradSampleModule``), or None."""
    wanted = {id(p) for p in params}
    best, best_size = None, None
    for obj in gc.get_objects():
        if not issubclass(type(obj), torch.nn.Module):  # type(): no attribute access on lazy proxies
            continue
        own = {id(p) for p in obj.parameters()}
        if not wanted <= own:
            continue
        if best is None or len(own) < best_size or (len(own) == best_size and obj in set(best.modules())):
            best, best_size = obj, len(own)
    return best


def _bare_copy(module: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of ``module`` without its hooks (e.g. Opacus's), in eval mode, with no gradients held."""
    twin = copy.deepcopy(module)
    for sub in twin.modules():
        for name, value in vars(sub).items():
            if name.startswith(("_forward", "_backward", "_state_dict", "_load_state_dict")) and isinstance(value, dict):
                value.clear()
    for p in twin.parameters():
        p.grad = None
        for attr in ("grad_sample", "summed_grad"):
            if hasattr(p, attr):
                delattr(p, attr)
    return twin.eval()


class DataSpan:
    """Projects an observed gradient off the span of the data's per-window gradients at the current parameters
    (module docstring): a score of the one-run game (Steinke, Nasr & Jagielski 2023; Mahloujifar, Melis &
    Chaudhuri 2025), so the ε certified from it stays a **lower** bound whatever the span. Build with :meth:`of`;
    ``reason`` says why it is off (None when on)."""

    def __init__(self, twin: torch.nn.Module, names: List[str], loss: Callable, context: torch.Tensor,
                 forecast: torch.Tensor):
        self.twin, self.names, self.loss = twin, names, loss
        self.context, self.forecast = context, forecast
        self.reason: Optional[str] = None

    @classmethod
    def of(cls, params: Sequence[torch.Tensor], windows: Tuple[torch.Tensor, torch.Tensor],
           loss: Callable) -> "DataSpan":
        """The span for the optimizer's ``params`` over the data's ``windows`` (context (n, L_C), forecast
        (n, L_F)) under ``loss``; off (with its ``reason``) when it does not apply or fails on the current
        parameters."""
        context, forecast = windows
        n, d = context.shape[0], sum(p.numel() for p in params)
        span = cls(None, [], loss, context, forecast)
        if n > MAX_WINDOW_SHARE * d or n * d > MAX_ENTRIES:
            return span.off(f"{n} windows for {d} parameters: the span is taken off up to one window per four "
                            f"parameters and {MAX_ENTRIES:.3g} window-parameter entries")
        module = owning_module(params)
        if module is None:
            return span.off("no torch module holds the optimizer's parameters")
        try:
            twin = _bare_copy(module)
        except Exception as exc:  # noqa: BLE001 - any model that cannot be copied just keeps the data in
            return span.off(f"the model cannot be copied ({type(exc).__name__}: {exc})")
        by_id = {id(p): name for name, p in module.named_parameters()}
        device, dtype = params[0].device, params[0].dtype
        span.twin, span.names = twin.to(device), [by_id[id(p)] for p in params]
        span.context, span.forecast = context.to(device, dtype), forecast.to(device, dtype)
        span.basis(params)  # fails now rather than mid-run when the loss or the model does not fit torch.func
        return span

    def off(self, reason: str) -> "DataSpan":
        self.reason = reason
        return self

    def basis(self, params: Sequence[torch.Tensor]) -> Optional[torch.Tensor]:
        """(d, n) orthonormal basis of the per-window gradients at ``params`` (float64), or None when off."""
        if self.reason is not None:
            return None
        from torch.func import grad, vmap

        trainable = {name: p.detach() for name, p in zip(self.names, params)}
        fixed = {name: t for name, t in list(self.twin.named_parameters()) + list(self.twin.named_buffers())
                 if name not in trainable}

        def one_window(values, context, forecast):
            bound = _Bound(self.twin, {**fixed, **values})
            return self.loss(bound, context[None], forecast[None]).sum()

        try:
            per_window = vmap(grad(one_window), in_dims=(None, 0, 0))(trainable, self.context, self.forecast)
            jacobian = torch.cat([per_window[name].reshape(self.context.shape[0], -1) for name in self.names], 1)
            if not bool(torch.isfinite(jacobian).all()):
                raise ValueError("non-finite per-window gradients")
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a loss or model torch.func cannot take: said, not run
            self.off(f"{FAILED} ({type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:160]})")
            return None
        q, _ = torch.linalg.qr(jacobian.T.double())
        return q

    @staticmethod
    def residual(vector: torch.Tensor, basis: Optional[torch.Tensor]) -> torch.Tensor:
        """``vector`` (flat, d) less its projection on the span of ``basis`` (:meth:`basis`; unchanged for None)."""
        if basis is None:
            return vector
        v = vector.double()
        return (v - basis @ (basis.T @ v)).to(vector.dtype)


class _Bound:
    """``module`` called with the given parameters and buffers (``torch.func.functional_call``), as a loss calls a
    model."""

    def __init__(self, module: torch.nn.Module, values: dict):
        self.module, self.values = module, values

    def __call__(self, *args, **kwargs):
        from torch.func import functional_call

        return functional_call(self.module, self.values, args, kwargs)


__all__ = ["DataSpan", "FAILED", "MAX_ENTRIES", "MAX_WINDOW_SHARE", "owning_module"]
