"""The lowest-validation-loss checkpoint of a run on a benchmark split (the paper's model selection; **not** covered
by the run's ε: its validation windows are the ends of the same private series, THEOREMS.md errata)."""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from tsdp.theorems.config import TrainingConfig

from tsdp.datasets.benchmarks import ForecastSplit

from .evaluation import evaluate, validation_loss
from .result import CheckpointSelection
from .windows import covariates_of, forecast_covariates, padding_of


def _copy(model: torch.nn.Module) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


class BestCheckpoint:
    """The lowest-validation-loss state of ``model`` so far, scored every ``every`` steps on ``split``'s validation
    windows (the untrained model is step 0).

    Args:
        model: The model being trained.
        split: The benchmark split (:class:`~tsdp.datasets.benchmarks.ForecastSplit`).
        config: The run's configuration (L_C, L_F).
        freq: The data's step (DeepAR's covariates).
        device: The model's device.
        every: Training steps between validations (at least 1).
    """

    def __init__(self, model: torch.nn.Module, split: ForecastSplit, config: TrainingConfig, freq: Optional[str],
                 device: torch.device, every: int):
        self.model, self.every = model, max(1, int(every))
        self.contexts = torch.as_tensor(split.validation.contexts(config.context_length, padding_of(model)),
                                        dtype=torch.float32).to(device)
        self.targets = torch.as_tensor(split.validation.targets, dtype=torch.float32).to(device)
        self.covariates = (forecast_covariates(split.validation.starts, [len(h) for h in split.validation.histories],
                                               config.context_length, config.forecast_length, freq).to(device)
                           if covariates_of(model) else None)
        self.best, self.best_step = self._loss(), 0
        self.state = _copy(model)
        self.last_step = 0

    def due(self, step: int) -> bool:
        """Whether training step ``step`` is a validation step.

        Args:
            step: The training step (1-based, warm-up included).

        Returns:
            True every ``every`` steps.
        """
        return step % self.every == 0

    def after(self, step: int, loss: Optional[float] = None) -> None:
        """Record that training step ``step`` ran; on a validation step, keep the model if its loss is the lowest.

        Args:
            step: The training step (1-based, warm-up included).
            loss: The model's validation loss at this step where the caller computed it (runs trained together
                validate in one stacked forward, :mod:`tsdp.training.together`; the model must then hold the
                parameters it was computed from); None: computed here.
        """
        self.last_step = step
        if not self.due(step):
            return
        loss = self._loss() if loss is None else loss
        if loss < self.best:
            self.best, self.best_step = loss, step
            self.state = _copy(self.model)

    def _loss(self) -> float:
        return validation_loss(self.model, self.contexts, self.targets, self.covariates)

    def summary(self, model: torch.nn.Module, test_contexts: torch.Tensor, targets: np.ndarray, n_samples: int,
                generator: torch.Generator, test_covariates: Optional[torch.Tensor]) -> CheckpointSelection:
        """The selection after the last step (which competes too): the selected checkpoint's test CRPS, ``model``
        left at its last state.

        Args:
            model: The trained model.
            test_contexts: The test contexts.
            targets: The test targets.
            n_samples: Sample paths per test window.
            generator: The generator the paths are drawn from.
            test_covariates: The test windows' covariates (None: none).

        Returns:
            The :class:`~tsdp.training.result.CheckpointSelection`.
        """
        last = _copy(model)
        last_loss = self._loss()
        if last_loss <= self.best:
            self.best, self.best_step, self.state = last_loss, self.last_step, last
        model.load_state_dict(self.state)
        selected = evaluate(model, test_contexts, targets, n_samples=n_samples, generator=generator,
                            device=self.contexts.device, covariates=test_covariates)
        model.load_state_dict(last)
        return CheckpointSelection(validation_loss=last_loss, selected_validation_loss=self.best,
                                   selected_step=self.best_step, selected_crps=selected)


__all__ = ["BestCheckpoint"]
