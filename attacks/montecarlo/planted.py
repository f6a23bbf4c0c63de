"""Planted bugs in the loop the auditor runs (and the null pair): what the sequential test must catch.

Each variant changes the *loop* (the sampler, the noise, the clipping), never the statistics
or the claimed theory: the construction's pair, sound ε and test design stay those of the
correct loop, as a user's buggy training code would. Variants (``LOOP_VARIANTS``):

* ``correct``: the loop as built (:func:`attacks.montecarlo.constructions.build`).
* ``noise_halved``: the loop adds N(0, (σ/2)² C²) instead of N(0, σ² C²).
* ``sampling_doubled``: the top level draws its N' sequences from the first N/2 only, so the
  changed sequence 0 is drawn with probability 2N'/N instead of N'/N (batch size unchanged).
  WOR and Poisson top levels only.
* ``clip_doubled``: the loop clips to 2C while its noise stays calibrated to C (std σC). The
  construction's marked windows then give gradient 2C (the correct loop clips them to C, so
  its law is unchanged) while the others give -C as before.
* ``identical_worlds``: world Q runs world P's dataset (no bug; a null check: ε = 0).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Tuple

import torch

from tsdp.theorems.config import ConfigError, Top

from tsdp.training.samplers import make_sampler

from .constructions import Construction, GradientFunctionModel

LOOP_VARIANTS = ("correct", "noise_halved", "sampling_doubled", "clip_doubled", "identical_worlds")


class AmplifiedGradientModel(GradientFunctionModel):
    """The construction's gradient function with its positive gradients multiplied by ``gain`` (> 1: above C).

    Correct clipping to C maps them back to C, so the released law is the construction's pair.

    Args:
        base: The construction's gradient function.
        gain: The factor of its positive gradients.
    """

    def __init__(self, base: GradientFunctionModel, gain: float):
        super().__init__(base.clip, base.plus_above, base.minus_below, base.default)
        self.gain = float(gain)

    def gradient_value(self, context: torch.Tensor, forecast: torch.Tensor) -> torch.Tensor:
        """The base gradient function's value, its positive values multiplied by ``gain``.

        Args:
            context: The windows' context values.
            forecast: Their forecast values.

        Returns:
            The per-window gradient value.
        """
        c = super().gradient_value(context, forecast)
        return torch.where(c > 0, self.gain * c, c)


def planted_loop(construction: Construction, variant: str) -> Tuple[Construction, dict]:
    """(construction, loop overrides for :func:`attacks.montecarlo.trials.released_update_chunks`) of ``variant``.

    The returned construction keeps the claimed ``config`` and ``pair`` (the theory is the correct loop's).

    Args:
        construction: The audited construction.
        variant: One of :data:`LOOP_VARIANTS` ("correct": the loop itself).

    Returns:
        The construction the trials run, and the loop overrides (sampler, clip, σ) of the variant.

    Raises:
        ConfigError: Naming ``loop`` for an unknown variant, or one the configuration cannot plant.
    """
    cfg = construction.config
    if variant == "correct":
        return construction, {}
    if variant == "noise_halved":
        return construction, {"sigma": cfg.sigma / 2}
    if variant == "sampling_doubled":
        if cfg.top not in (Top.WOR, Top.POISSON) or 2 * cfg.sequences_per_step > cfg.N:
            raise ConfigError("loop", "sampling_doubled needs a WOR/Poisson top level with 2N' <= N", variant)
        return construction, {"sampler": make_sampler(cfg.with_(N=cfg.N // 2))}
    if variant == "clip_doubled":
        model = AmplifiedGradientModel(construction.model, 2.0).to(construction.data_p.device)
        return replace(construction, model=model), {"clip": 2 * construction.clip, "sigma": cfg.sigma / 2}
    if variant == "identical_worlds":
        return replace(construction, data_q=construction.data_p), {}
    raise ConfigError("loop", f"must be one of {', '.join(LOOP_VARIANTS)}", variant)


__all__ = ["AmplifiedGradientModel", "LOOP_VARIANTS", "planted_loop"]
