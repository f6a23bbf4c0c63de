"""What :func:`tsdp.training.train.train` is asked, one frozen, validated object per concern.

:class:`Budget` is the accounting plan (how long the run trains and what its ε is accounted with), :class:`Loop`
how each step runs (the optimiser, the clip norm, the step path, DeepAR's lags, white-box canaries),
:class:`Evaluation` how the run is scored, :class:`Checkpoints` which models the run keeps. Each checks its own
fields when built (:class:`~tsdp.theorems.errors.ConfigError` naming the field); what needs the configuration or
the data is checked by :func:`tsdp.training.plan.plan_training`, before any training.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from tsdp.theorems.config import Choice, ConfigError, check_delta, check_int, check_real
from tsdp.verify.pld import DEFAULT_DISCRETIZATION

from .captured import StepPath

LR_MAX = 1e30
"""The largest learning rate: torch's optimizers turn it into a float32 step factor (Adam's first step multiplies it
by 1/(1 - β1) = 10), which above 3.4e38 is an overflow error, not a step; any lr near this diverges anyway (the
training then fails naming the learning rate)."""


class Optimizer(Choice):
    """The torch optimiser that applies the (noisy) gradients."""

    ADAM = "adam"
    """``torch.optim.Adam``."""
    SGD = "sgd"
    """``torch.optim.SGD`` (plain SGD)."""


def _set(obj, name: str, value) -> None:
    object.__setattr__(obj, name, value)


@dataclass(frozen=True)
class Budget:
    """The accounting plan of a run: how long it trains and what accounts its ε.

    Private training needs ``delta``: every step's event goes to a sound ``PldAccountant`` (bound ``theorem``,
    default the tightest sound upper bound; a lower-bound theorem is refused when the run is planned) and the
    result's ε is its ε(δ) of the steps that ran (an **upper** bound). With a budget ``epsilon`` the run takes the
    most steps whose sound ε stays within it (one more step, or epoch for deterministic/shuffled iteration, would
    exceed it) and a budget that buys no step is refused; ``epochs`` (or ``steps``, training steps) caps the run
    (or fixes it, without a budget). To spend a budget in exactly K epochs instead, calibrate σ first
    (:func:`tsdp.training.plan.fit_budget`).

    Attributes:
        epsilon: The ε budget the run stops at (None: none; private training only).
        delta: The δ of the reported ε (needed for private training).
        epochs: Epochs of the configuration's sampler to train (with ``epsilon``: at most; >= 1).
        steps: Training steps instead of ``epochs`` (>= 1).
        theorem: The sound upper bound that accounts the steps (None: the scheme's tightest).
        warmup_steps: Steps run first at noise ``warmup_sigma`` and accounted too (a heterogeneous run: the ledger
            composes both phases).
        warmup_sigma: The warm-up steps' noise multiplier.
        discretization: The accountant's PLD grid (coarser is faster and still an upper bound).
        private: Clipping and noise (DP-SGD); False: plain training, no ε.

    Raises:
        ConfigError: No budget, epochs or steps; both epochs and steps; a count out of range; a budget without
            privacy; private training without a δ in (0, 1); warm-up steps without privacy or their σ.
    """

    epsilon: Optional[float] = None
    delta: Optional[float] = None
    epochs: Optional[int] = None
    steps: Optional[int] = None
    theorem: Optional[str] = None
    warmup_steps: int = 0
    warmup_sigma: Optional[float] = None
    discretization: float = DEFAULT_DISCRETIZATION
    private: bool = True

    def __post_init__(self):
        if self.epsilon is None and self.epochs is None and self.steps is None:
            raise ConfigError("epsilon", "give an ε budget (epsilon), a number of epochs or of steps")
        if self.epochs is not None and self.steps is not None:
            raise ConfigError("steps", "give epochs or steps, not both", self.steps)
        if self.steps is not None:
            _set(self, "steps", check_int("steps", self.steps, 1))
        if self.epochs is not None:
            _set(self, "epochs", check_int("epochs", self.epochs, 1))
        if self.epsilon is not None and not self.private:
            raise ConfigError("epsilon", "an ε budget needs private training (private=True)")
        if self.private and self.delta is None:
            raise ConfigError("delta", "private training reports the ε it spends at a δ: give delta")
        _set(self, "warmup_steps", check_int("warmup_steps", self.warmup_steps, 0))
        if self.private:
            _set(self, "delta", check_delta(self.delta))
        if self.warmup_steps and (not self.private or self.warmup_sigma is None):
            raise ConfigError("warmup_sigma", "warm-up steps need private training and their noise multiplier",
                              self.warmup_sigma)


@dataclass(frozen=True)
class Loop:
    """How the loop trains the model: the optimiser, the DP step's clip norm and its step path, DeepAR's lags and
    white-box canaries.

    Attributes:
        clip: The clipping norm C (> 0).
        lr: The learning rate, in (0, :data:`LR_MAX`].
        weight_decay: The optimiser's weight decay, in [0, :data:`LR_MAX`].
        optimizer: ``adam`` or ``sgd`` (an :class:`Optimizer`).
        step_path: How the DP steps run (a :class:`~tsdp.training.captured.StepPath`): ``eager`` (each batch its
            own size), ``fixed`` (batches of one capacity, :mod:`tsdp.training.fixed_batch`; the result's
            ``batch_capacity`` and ``overflow_steps``), ``captured`` (fixed, and the step compiled whole, CUDA
            graphs on CUDA), ``auto`` (captured on CUDA, eager elsewhere).
        lags: DeepAR's lag indices (None: its own).
        canaries: White-box gradient canaries (:class:`attacks.canary.gradient.GradientCanaries` of this
            configuration and ``clip``), attached to the model and fed every step (not with warm-up steps, whose
            epochs restart); None: none.

    Raises:
        ConfigError: A value out of its range, naming it.
    """

    clip: float = 1.0
    lr: float = 1e-3
    weight_decay: float = 0.0
    optimizer: Optimizer = Optimizer.ADAM
    step_path: StepPath = StepPath.AUTO
    lags: Optional[Tuple[int, ...]] = None
    canaries: Any = None

    def __post_init__(self):
        _set(self, "step_path", StepPath.of("step_path", self.step_path))
        if self.lags is not None:
            _set(self, "lags", tuple(self.lags))
        if self.optimizer not in Optimizer.values():
            raise ConfigError("optimizer", "must be adam or sgd", self.optimizer)
        _set(self, "optimizer", Optimizer(self.optimizer))
        _set(self, "clip", check_real("clip", self.clip, low=0.0, low_open=True))
        _set(self, "lr", check_real("lr", self.lr, low=0.0, high=LR_MAX, low_open=True))
        _set(self, "weight_decay", check_real("weight_decay", self.weight_decay, low=0.0, high=LR_MAX))


@dataclass(frozen=True)
class Evaluation:
    """How a run is scored: the test CRPS of ``n_samples`` sample paths per window, against the seasonal-naive
    forecast of period ``season``.

    Attributes:
        season: The seasonal-naive baseline's period (>= 1).
        n_samples: Sample paths per test window (>= 1).

    Raises:
        ConfigError: A count below 1, naming it.
    """

    season: int = 24
    n_samples: int = 100

    def __post_init__(self):
        _set(self, "season", check_int("season", self.season, 1))
        _set(self, "n_samples", check_int("n_samples", self.n_samples, 1))


@dataclass(frozen=True)
class Checkpoints:
    """Which models a run keeps: on a benchmark split, the lowest-validation-loss checkpoint (scored every
    ``validate_every`` steps; the result's ``selection``, which the ε does **not** cover: its validation windows
    are the ends of the same private series, THEOREMS.md errata); and, with ``return_model``, the trained model.

    Attributes:
        validate_every: Training steps between validations (None: once per epoch); a split only.
        return_model: Put the trained model in the result (``trained_model``, not JSON), for audits.

    Raises:
        ConfigError: ``validate_every`` below 1.
    """

    validate_every: Optional[int] = None
    return_model: bool = False

    def __post_init__(self):
        if self.validate_every is not None:
            _set(self, "validate_every", check_int("validate_every", self.validate_every, 1))


__all__ = ["Budget", "Checkpoints", "Evaluation", "LR_MAX", "Loop", "Optimizer"]
