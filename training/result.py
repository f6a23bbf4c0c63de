"""What :func:`tsdp.training.train.train` returns: the run's facts, its privacy ledger and its checkpoint choice.

``as_dict()`` is the JSON form (`tsdp train --json` prints it, with the CLI's ``sigma_calibrated`` and ``note``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Optional, Tuple

import torch

from tsdp.verify.events import LedgerEntry
from tsdp.verify.json_data import Record


@dataclass(frozen=True)
class CheckpointSelection(Record):
    """The lowest-validation-loss checkpoint of a run on a benchmark split (the paper's model selection).

    Its validation windows are the ends of the same private series, so the run's ε does **not** cover the choice
    (THEOREMS.md errata).

    Attributes:
        validation_loss: the last step's mean negative log-likelihood of the validation windows.
        selected_validation_loss: the lowest validation loss seen (at a validation step or the last step).
        selected_step: the training step of the selected checkpoint (0: the untrained model).
        selected_crps: the selected checkpoint's test CRPS.
    """

    validation_loss: float
    selected_validation_loss: float
    selected_step: int
    selected_crps: float


_NOT_FLAT = ("ledger", "selection", "trained_model")


@dataclass(frozen=True)
class TrainResult:
    """One run of the training loop (Algorithm 1 with Algorithm 2 steps).

    Attributes:
        model: the forecaster's name (``simple-ff``, ``deepar``, ``dlinear``, ``itransformer``).
        private: trained with clipping and noise (DP-SGD); False: plain training, no ε.
        top: the configuration's top level of the batching.
        bottom: the configuration's bottom level.
        sigma: the noise multiplier of the main phase (0.0 without privacy).
        warmup_steps: steps run first at ``warmup_sigma`` (0: none).
        warmup_sigma: their noise multiplier (None without a warm-up).
        clip: the clipping norm C (None without privacy).
        epsilon_budget: the ε budget the run stopped at (None: none given).
        epsilon: the sound accountant's ε at ``delta`` of the steps that ran, warm-up included: an **upper** bound
            (None without privacy).
        delta: the δ of ``epsilon`` (None without privacy).
        theorem: the id of the bound that accounts the main phase (None without privacy).
        discretization: the accountant's PLD grid (None without privacy).
        steps: training steps that ran, warm-up included.
        compositions: the accountant's composed events (one per step, or per touched epoch for an epoch-scoped
            scheme; None without privacy).
        epochs: ``steps`` in epochs of the main phase's sampler.
        crps: the trained model's test CRPS (last step).
        untrained_crps: the initial model's test CRPS.
        seasonal_naive_crps: the seasonal-naive forecast's test CRPS.
        seconds: wall-clock seconds of the training steps (evaluation excluded).
        device: the torch device trained on.
        ledger: the accountant's ledger, one :class:`~tsdp.verify.events.LedgerEntry` per phase (None without
            privacy).
        selection: the checkpoint chosen on the validation windows, with a benchmark split only (its four keys sit
            at the top level of ``as_dict()``).
        trained_model: the trained model, with ``Checkpoints(return_model=True)`` only; not part of ``as_dict()``.
        batch_capacity: the slots of every DP step's batch on a fixed-shape step path (``Loop(step_path=...)``
            ``fixed`` or ``captured``; :mod:`tsdp.training.fixed_batch`); None: each batch its own size.
        overflow_steps: the DP steps whose sampled windows exceeded ``batch_capacity`` and ran as variable-size steps
            (exactly, none dropped); 0 on the eager path.
    """

    model: str
    private: bool
    top: str
    bottom: str
    sigma: float
    warmup_steps: int
    warmup_sigma: Optional[float]
    clip: Optional[float]
    epsilon_budget: Optional[float]
    epsilon: Optional[float]
    delta: Optional[float]
    theorem: Optional[str]
    discretization: Optional[float]
    steps: int
    compositions: Optional[int]
    epochs: float
    crps: float
    untrained_crps: float
    seasonal_naive_crps: float
    seconds: float
    device: str
    ledger: Optional[Tuple[LedgerEntry, ...]]
    selection: Optional[CheckpointSelection] = None
    trained_model: Optional[torch.nn.Module] = field(default=None, repr=False, compare=False)
    batch_capacity: Optional[int] = None
    overflow_steps: int = 0

    def as_dict(self) -> dict:
        """The JSON form: every attribute under its name, the ledger as a list of entries (or None), the selection's
        keys at the top level; without the trained model, and without ``batch_capacity`` and ``overflow_steps`` on
        the eager step path (no fixed shape: the JSON of the eager path is the one released before the fixed path)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_FLAT}
        if self.batch_capacity is None:
            del out["batch_capacity"], out["overflow_steps"]
        out["ledger"] = None if self.ledger is None else [e.as_dict() for e in self.ledger]
        if self.selection is not None:
            out.update(self.selection.as_dict())
        return out


__all__ = ["CheckpointSelection", "TrainResult"]
