"""The accountant's plan of a run, made before it trains anything: every check, and the training steps its budget buys.

The plan asks the one accountant of :mod:`tsdp.verify.accountant` for the most steps the budget buys
(:func:`tsdp.verify.accountant.max_steps`, sound ε) and states the whole run's sound ε before the first step, so a
run the accountant cannot state (too many compositions, a δ below its resolution, a lower-bound theorem, a scheme
without a proven bound) is refused before any training. :func:`tsdp.training.train.train` and the runs trained
together (:mod:`tsdp.training.together`) share it.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

import numpy as np

from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.verify.accountant import PldAccountant, max_steps
from tsdp.verify.events import training_event, unit_event
from tsdp.verify.pld import PldSettings
from tsdp.verify.resolution import resolve_event
from tsdp.verify.rounded import rounded_up

from tsdp.datasets.benchmarks import ForecastSplit
from tsdp.datasets.series import SeriesData

from .metrics import crps_scale
from .options import Budget, Loop
from .run_checks import check_magnitude
from .samplers import make_sampler
from .step import check_noise_std

if TYPE_CHECKING:
    from tsdp.verify.calibration import CalibrationResult


@contextmanager
def _warmup_named(warmup: bool, warmup_sigma):
    """In the warm-up phase, a refusal of its σ names ``warmup_sigma`` (the flag the user typed), not ``sigma``."""
    try:
        yield
    except ConfigError as exc:
        if not (warmup and exc.parameter == "sigma"):
            raise
        raise ConfigError("warmup_sigma", exc.constraint, warmup_sigma) from None


def _planned_epsilon(config: TrainingConfig, warm: Optional[TrainingConfig], steps: int, budget: Budget) -> float:
    """The sound ε(δ) of the planned run (``budget``'s warm-up, then ``steps``), or the accountant's refusal before any
    training: too many compositions (naming ``warmup_steps`` when the warm-up alone is too long; ``warmup_sigma`` when
    its σ has no finite privacy-loss grid) or a δ below its resolution."""
    acc = PldAccountant("sound", discretization=budget.discretization)
    if warm is not None:
        acc.compose(training_event(warm, steps=budget.warmup_steps, theorem=budget.theorem))
        try:
            with _warmup_named(True, warm.sigma):
                acc.get_epsilon(budget.delta)
        except ConfigError as exc:
            if exc.parameter != "steps":
                raise
            raise ConfigError("warmup_steps", exc.constraint, budget.warmup_steps) from None
    if steps:
        acc.compose(training_event(config, steps=steps, theorem=budget.theorem))
    return acc.get_epsilon(budget.delta)


@dataclass(frozen=True)
class RunPlan:
    """A checked run (:func:`plan_training`).

    Attributes:
        train_data: The training series.
        targets: The test targets (M, L_F).
        histories: The test windows' histories (each forecast follows its history's last value).
        warm: The warm-up phase's configuration (None without).
        clip: The checked clip norm.
        lr: The checked learning rate.
        weight_decay: The checked weight decay.
        delta: The checked δ (as given, unchecked, without DP).
        bound_id: The id of the sound bound that accounts the main phase (None without DP).
        total_steps: The training steps after the warm-up: the most the budget buys under the sound accountant,
            or the cap.
        sampler: The configuration's sampler on the training series.
    """

    train_data: SeriesData
    targets: np.ndarray
    histories: list
    warm: Optional[TrainingConfig]
    clip: float
    lr: float
    weight_decay: float
    delta: Optional[float]
    bound_id: Optional[str]
    total_steps: int
    sampler: object


def _series(config: TrainingConfig, data: Union[SeriesData, ForecastSplit]):
    """(training series, test targets, test histories) of ``data``: a split's own, or each series' last L_F values
    held out."""
    if isinstance(data, ForecastSplit):
        return data.train, data.test.targets, data.test.histories
    train_data, targets = data.split(config.forecast_length)
    return train_data, targets, train_data.series


def _check_data(config: TrainingConfig, train_data: SeriesData, targets: np.ndarray) -> None:
    """The training series fit ``config``: its N, L no longer than the shortest series (else the accountant would
    understate r = k/T), test targets that leave the CRPS defined."""
    if train_data.N != config.N:
        raise ConfigError("N", f"the data has {train_data.N} series (set --N {train_data.N})", config.N)
    try:
        crps_scale(targets)  # before any step: all-zero targets leave the CRPS undefined
    except ValueError as err:
        raise ConfigError("data", str(err)) from None
    if min(train_data.lengths) < config.L:
        raise ConfigError(
            "L", f"the shortest training series has length {min(train_data.lengths)}; the accountant would "
            f"understate r = k/T (set --L {min(train_data.lengths)})", config.L)
    config.check_covers(train_data.lengths)  # a longer series' elements in more windows than the accounted k


def _warmup_took_budget(budget: Budget, spent: float) -> ConfigError:
    """The refusal of a warm-up whose sound ε ``spent`` leaves no step of the budget, naming ``warmup_steps``."""
    return ConfigError("warmup_steps", f"the {budget.warmup_steps} warm-up steps at σ = {budget.warmup_sigma:g} spend "
                       f"ε = {rounded_up(spent)} of the budget ε = {budget.epsilon:g} at δ = {budget.delta:g}, "
                       "leaving no training step (lower --warmup-steps, raise --warmup-sigma, or raise the budget)",
                       budget.warmup_steps)


def _total_steps(config: TrainingConfig, warm: Optional[TrainingConfig], budget: Budget, steps_per_epoch: int) -> int:
    """The training steps after the warm-up: the cap (``budget``'s steps or epochs), or the most the ε budget buys
    within it; a budget that buys no step is refused (naming the warm-up when it took the budget)."""
    cap = budget.steps
    if cap is None and budget.epochs is not None:
        cap = budget.epochs * steps_per_epoch
    if budget.epsilon is None:
        return cap
    epsilon, delta, theorem, settings = budget.epsilon, budget.delta, budget.theorem, PldSettings(budget.discretization)
    before = None if warm is None else training_event(warm, steps=budget.warmup_steps, theorem=theorem)
    total = max_steps(config, epsilon, delta, theorem=theorem, cap=cap, before=before, settings=settings)
    if total == 0 and cap != 0 and warm is not None and max_steps(
            config, epsilon, delta, theorem=theorem, cap=1, settings=settings):  # the warm-up took it
        raise _warmup_took_budget(budget, _planned_epsilon(config, warm, 0, budget))
    if total == 0 and cap != 0:
        raise ConfigError("epsilon", f"the budget ε = {epsilon:g} at δ = {delta:g} is spent before the first "
                          "step (raise --sigma, lower --batch-size, or raise the budget)", epsilon)
    return total


def plan_training(config: TrainingConfig, data: Union[SeriesData, ForecastSplit], budget: Budget,
                  loop: Loop) -> RunPlan:
    """Every check of a run that reads the configuration or the data, and the accountant's plan of it (the sound ε of
    the next step decides when a budget is spent; the whole run's sound ε is stated before any training).

    Args:
        config: The training configuration.
        data: The series (each one's last L_F values the test set), or a benchmark split.
        budget: The accounting plan.
        loop: How the steps run (its clip norm bounds the noise; canaries allow no warm-up).

    Returns:
        The checked plan.

    Raises:
        ConfigError: L_C below 1; values beyond float32; canaries with a warm-up; data that do not fit the
            configuration; a noise std the step cannot draw; a budget that buys no step; a run the accountant
            cannot state.
        TheoremError: A lower-bound theorem, or a scheme without a proven sound bound.
    """
    if config.context_length < 1:  # the accountant allows L_C = 0; a forecaster reads at least one past value
        raise ConfigError("context_length", "must be >= 1 to train a forecaster (it reads the last L_C values)",
                          config.context_length)
    check_magnitude(data.train if isinstance(data, ForecastSplit) else data)
    if loop.canaries is not None and budget.warmup_steps:
        raise ConfigError("warmup_steps", "gradient canaries follow one batching from the first step: no warm-up")
    train_data, targets, histories = _series(config, data)
    _check_data(config, train_data, targets)
    warm = config.with_(sigma=budget.warmup_sigma) if budget.warmup_steps else None
    phases = [phase for phase in (warm, config) if phase is not None]
    bound_id = None
    if budget.private:  # refusals (a lower-bound theorem, a scheme without a proven bound) come before any training
        for phase in phases:
            with _warmup_named(phase is warm, budget.warmup_sigma):
                check_noise_std(phase.sigma, loop.clip)
        for phase in phases:
            PldAccountant("sound", discretization=budget.discretization).compose(unit_event(phase, budget.theorem))
        bound_id = resolve_event(unit_event(config, budget.theorem)).bound.id
    sampler = make_sampler(config, train_data.lengths)
    total_steps = _total_steps(config, warm, budget, sampler.steps_per_epoch)
    if budget.private:  # the whole run's sound ε, before any training: a run the accountant cannot state is refused
        _planned_epsilon(config, warm, total_steps, budget)
    return RunPlan(train_data, targets, histories, warm, loop.clip, loop.lr, loop.weight_decay,
                   budget.delta, bound_id, total_steps, sampler)


def fit_budget(config: TrainingConfig, budget: Budget) -> "CalibrationResult":
    """σ such that ``budget``'s warm-up (at its own σ, when it has one) and then its epochs (or steps) of ``config``
    spend the budget ε at δ, as Opacus's ``make_private_with_epsilon`` for a run without warm-up:
    :func:`tsdp.verify.calibration.calibrate_sigma` under the **sound** accountant (paper Appendix B.3 accounting of
    the scheme's tightest upper bound, or ``budget.theorem``), the warm-up composed ahead of the calibrated steps, so
    the whole run's sound ε is ≤ ``budget.epsilon`` (an **upper** bound, within the calibration's relative tolerance
    of the budget) and the run trains every step of its schedule.

    Args:
        config: The training configuration (its σ is the one calibrated).
        budget: The accounting plan: ε, δ, epochs or steps, theorem, warm-up, the accountant's grid.

    Returns:
        The :class:`~tsdp.verify.calibration.CalibrationResult`; train ``config.with_(sigma=result.sigma)``.

    Raises:
        ConfigError: A budget or schedule the calibration refuses; a warm-up that spends the budget alone (naming
            ``warmup_steps``).
    """
    from tsdp.verify.calibration import calibrate_sigma

    before = None
    if budget.warmup_steps:
        warm = config.with_(sigma=budget.warmup_sigma)
        spent = _planned_epsilon(config, warm, 0, budget)
        if not spent < budget.epsilon:
            raise _warmup_took_budget(budget, spent)
        before = training_event(warm, steps=budget.warmup_steps, theorem=budget.theorem)
    return calibrate_sigma(config, budget.epsilon, budget.delta, steps=budget.steps, epochs=budget.epochs,
                           theorem=budget.theorem, discretization=budget.discretization, before=before)


__all__ = ["RunPlan", "fit_budget", "plan_training"]
