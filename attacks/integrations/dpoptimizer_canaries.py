"""White-box gradient canaries inside an Opacus ``DPOptimizer`` (optional extra ``tsdp[opacus]``).

:func:`add_canaries` hooks :class:`tsdp.attacks.canary.gradient.GradientCanaries` into an Opacus
DP optimizer (``PrivacyEngine.make_private``'s optimizer) at the place Algorithm 2 puts an
element's clipped gradient: after ``clip_and_accumulate`` and before ``add_noise``, the
canaries' clipped sum Σ_i [i included] K_{t,i} C u_i is added to every parameter's
``summed_grad`` (C = the optimizer's ``max_grad_norm``); Opacus then adds N(0, σ² C² I),
divides by its expected batch size and calls the wrapped optimizer's ``step``, after which the
canaries are scored on the gradient it stepped on (Opacus leaves g̃_t in ``.grad``): what
DP-SGD releases, so a wrapped Adam does not blur them (as :mod:`tsdp.attacks.canary.optimizer_canaries`
observes torch's optimizers). A step Opacus skips (gradient accumulation) adds no canary and
is not observed.

The canaries take part in steps with the law of one element of ``config``'s scheme: give the
configuration your loader draws (e.g. ``BiLevelBatchSampler``'s ``dataset.config``) with the σ
your accounting claims; the claim's ε then bounds each canary (the soundness argument of
:mod:`tsdp.attacks.canary.gradient`), so a certified lower bound above it is a violation.
"""
from __future__ import annotations

try:
    from opacus.optimizers import DPOptimizer
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("Opacus canaries need opacus: pip install 'tsdp[opacus]'") from exc

from tsdp.theorems.config import TrainingConfig

from tsdp.attacks.canary.gradient import GradientCanaries


def add_canaries(optimizer: DPOptimizer, config: TrainingConfig, m: int, *, seed=0) -> GradientCanaries:
    """Hook m gradient canaries into ``optimizer`` (module docstring: where they enter Algorithm 2).

    The claim's ε (an **upper** bound) bounds each canary, so a certified **lower** bound above it is a violation.

    Args:
        optimizer: An Opacus ``DPOptimizer`` (``PrivacyEngine.make_private``'s optimizer); the canaries' norm is
            its ``max_grad_norm``.
        config: The configuration your loader draws (e.g. ``BiLevelBatchSampler``'s ``dataset.config``) with the σ
            your accounting claims; the canaries take part in steps with the law of one element of its scheme.
        m: The number of canaries.
        seed (int): Seeds the canaries.

    Returns:
        The canaries (their ``evidence()`` after training).

    Raises:
        TypeError: ``optimizer`` is not a ``DPOptimizer``.
    """
    if not isinstance(optimizer, DPOptimizer):
        raise TypeError(f"gradient canaries hook into an Opacus DPOptimizer, got {type(optimizer).__name__}")
    canaries = GradientCanaries(config, m, clip=optimizer.max_grad_norm, seed=seed).attach(optimizer.params)
    add_noise = optimizer.add_noise
    inner_step = optimizer.original_optimizer.step

    def add_noise_with_canaries():
        for p, g in zip(canaries.params, canaries.gradient()):
            p.summed_grad.add_(g)
        add_noise()

    def observed_step(*args, **kwargs):
        out = inner_step(*args, **kwargs)
        canaries.observe_gradient()  # the noisy gradient the wrapped optimizer stepped on
        return out

    optimizer.add_noise = add_noise_with_canaries
    optimizer.original_optimizer.step = observed_step
    return canaries


__all__ = ["add_canaries"]
