"""The tests' whole-run view of the Monte Carlo loop: every trial's released updates in one tensor."""
from __future__ import annotations

from typing import Any

import torch

from tsdp.attacks.montecarlo.constructions import Construction
from tsdp.attacks.montecarlo.trials import released_update_chunks


def released_updates(construction: Construction, world: str, trials: int, steps: int, generator: torch.Generator,
                     **loop: Any) -> torch.Tensor:
    """All chunks of :func:`tsdp.attacks.montecarlo.trials.released_update_chunks` as one tensor.

    Args:
        construction: The construction.
        world: ``"p"`` or ``"q"``.
        trials: The runs.
        steps: Compositions per run.
        generator: The loop's generator.
        **loop: ``released_update_chunks``'s keyword overrides.

    Returns:
        The (trials, steps) float64 centred released updates.
    """
    return torch.cat(list(released_update_chunks(construction, world, trials, steps, generator, **loop)))
