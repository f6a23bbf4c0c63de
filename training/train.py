"""Training entry point: Algorithm 1's epoch loop over Algorithm 2 steps, to an ε budget or for a number of epochs.

The loop accounts through the one accountant of :mod:`tsdp.verify.accountant`: before
training it asks for the most steps the budget buys (:func:`tsdp.verify.accountant.max_steps`,
sound ε; :mod:`tsdp.training.plan`), and after each phase it composes the event of the steps that phase ran
(:func:`tsdp.verify.events.training_event`) into a ``PldAccountant`` (:mod:`tsdp.training.loop`); the ε it reports is
that accountant's sound ε of the ledger, so it is the ε of the steps that actually ran.

:func:`train` takes the configuration, the model's name, the data and one options object per concern
(:mod:`tsdp.training.options`); the modules it is made of: ``options`` (what it is asked), ``plan`` (the checks and
the accountant's plan), ``loop`` (the phases and steps), ``evaluation`` (the test CRPS), ``checkpoints`` (the
validation checkpoint), ``run_checks`` (the refusals that read the device, the data or the trained model),
``result`` (what it answers).
"""
from __future__ import annotations

import secrets
from typing import Optional, Sequence, Union

import torch

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import ledger_summary

from tsdp.datasets.benchmarks import ForecastSplit
from tsdp.datasets.series import SeriesData
from tsdp.datasets.time_features import covariate_count

from .captured import resolve_step_path
from .checkpoints import BestCheckpoint
from .evaluation import evaluate, run_tensors
from .generators import INIT_STREAM, seed_global_cpu, seeded_generator
from .loop import Trainee, run_phases
from .metrics import point_crps, seasonal_naive
from .models import make_model
from .options import Budget, Checkpoints, Evaluation, Loop, Optimizer
from .plan import fit_budget, plan_training
from .result import TrainResult
from .run_checks import FLOAT32_MAX, check_finite, check_scores, resolve_device

_Checkpoints = BestCheckpoint
"""The name the runs trained together (:mod:`tsdp.training.together`) use for the validation checkpoint."""


def initial_model(model_name: str, config: TrainingConfig, data: SeriesData, *, seed: int,
                  lags: Optional[Sequence[int]] = None) -> torch.nn.Module:
    """The model :func:`train` starts from, drawn from the seed's own initialisation stream
    (:data:`~tsdp.training.generators.INIT_STREAM`), never from the stream of the run's batches and noise: given θ0,
    which DP-SGD's analysis lets an adversary know, noise drawn from θ0's random numbers would be known too.

    Args:
        model_name: ``simple-ff``, ``deepar``, ``dlinear`` or ``itransformer``.
        config: The configuration (its L_C and L_F).
        data: The training series (DeepAR reads the covariates of their step,
            :func:`tsdp.datasets.time_features.covariate_count`).
        seed: The run's seed, in [0, 2^63).
        lags: DeepAR's lag indices (None: its own).

    Returns:
        The initialised model (on the CPU).

    Raises:
        ConfigError: ``seed`` outside [0, 2^63).
    """
    extra = {}
    if model_name == "deepar":
        extra = {"covariates": covariate_count(data.freq), **({"lags": lags} if lags is not None else {})}
    with torch.random.fork_rng(devices=[]):
        seed_global_cpu(seed, INIT_STREAM)
        return make_model(model_name, config.context_length, config.forecast_length, **extra)


def train(config: TrainingConfig, model_name: str, data: Union[SeriesData, ForecastSplit], *, budget: Budget,
          loop: Loop = Loop(), evaluation: Evaluation = Evaluation(), checkpoints: Checkpoints = Checkpoints(),
          seed: Optional[int] = None, device: str = "auto", progress: bool = True) -> TrainResult:
    """Train ``model_name`` on ``data`` with Algorithm 1 (batching of ``config``) and Algorithm 2 steps.

    Private training accounts the steps it ran in a sound ``PldAccountant``: the result's ``epsilon`` is its ε(δ)
    of the steps that ran, warm-up included (an **upper** bound; ``budget`` says how long the run trains and with
    which bound). Without privacy (``Budget(private=False)``) the steps have no clipping and noise (no ε). Each
    series' last L_F steps are the test set; with a benchmark split, its test windows, and its validation windows
    choose a checkpoint (``checkpoints``; the ε does **not** cover the choice). The ε covers the trained model; the
    scores (test CRPS, validation losses) read held-out values of the same series and are not covered by it.
    DeepAR reads the covariates of every window's positions (:mod:`tsdp.datasets.time_features`: the calendar
    features of the data's step from each series' ``starts``, and the age feature), in training, validation and test
    alike.

    Example: ``train(config, "dlinear", data, budget=Budget(epsilon=2.0, delta=1e-7, epochs=50), device="cpu")``.

    Args:
        config: The training configuration (batching, σ, augmentation).
        model_name: ``simple-ff``, ``deepar``, ``dlinear`` or ``itransformer``.
        data: The series (each one's last L_F values the test set), or a benchmark
            :class:`~tsdp.datasets.benchmarks.ForecastSplit` (its training series, validation and test windows).
        budget: The accounting plan: ε budget, δ, epochs or steps, theorem, warm-up, the accountant's grid, private
            or not (:class:`~tsdp.training.options.Budget`).
        loop: How the steps run: clip norm, optimiser, learning rate, weight decay, step path, DeepAR's lags,
            white-box canaries (:class:`~tsdp.training.options.Loop`).
        evaluation: Sample paths per test window and the seasonal-naive season
            (:class:`~tsdp.training.options.Evaluation`).
        checkpoints: How often a split's validation windows are scored, and whether the result keeps the trained
            model (:class:`~tsdp.training.options.Checkpoints`).
        seed: The seed of initialisation, sampling, augmentation, noise and sample paths, in [0, 2^63), every bit of
            it used, the initialisation from a stream of its own (:mod:`tsdp.training.generators`) (None: a fresh one
            from the operating system's entropy; a seed others know lets them redraw the batches and noise, which voids
            the trained model's ε: give one only to reproduce a run).
        device: ``auto`` (cuda when available, else cpu), ``cpu`` or ``cuda[:N]``.
        progress: Show a progress bar.

    Returns:
        The :class:`~tsdp.training.result.TrainResult` (``crps``, ``untrained_crps``, ``seasonal_naive_crps``,
        ``epsilon``, ``steps``, ``compositions``, ``epochs``, ``seconds``, ``ledger``, ...; ``as_dict()`` is its
        JSON).

    Raises:
        ConfigError: Input the run refuses before its first step, naming the parameter
            (:func:`tsdp.training.plan.plan_training`, the device); or a training that diverged (naming ``lr``) or
            scores that are not finite (naming ``data``).
        TheoremError: A lower-bound theorem, or a scheme without a proven sound bound.
    """
    split = data if isinstance(data, ForecastSplit) else None
    seed = secrets.randbits(63) if seed is None else seed  # the run's draws: secret
    plan = plan_training(config, data, budget, loop)
    private = budget.private
    accountant = PldAccountant("sound", discretization=budget.discretization) if private else None
    dev = resolve_device(device)
    generator = seeded_generator(seed, dev)
    model = initial_model(model_name, config, plan.train_data, seed=seed, lags=loop.lags).to(dev)
    optimizer = torch.optim.Adam if loop.optimizer == Optimizer.ADAM else torch.optim.SGD
    opt = optimizer(model.parameters(), lr=plan.lr, weight_decay=plan.weight_decay)
    if loop.canaries is not None:
        loop.canaries.attach(model.parameters())
    padded, test_contexts, covariates, test_covariates = run_tensors(model, config, plan, split, dev)

    def score() -> float:
        return evaluate(model, test_contexts, plan.targets, n_samples=evaluation.n_samples, generator=generator,
                        device=dev, covariates=test_covariates)

    untrained = score()
    best = (BestCheckpoint(model, split, config, plan.train_data.freq, dev,
                           checkpoints.validate_every or plan.sampler.steps_per_epoch) if split is not None else None)
    trainee = Trainee(model, opt, generator, plan.train_data.lengths, padded, covariates, plan.clip, private,
                      loop.canaries)
    phases = ([(plan.warm, budget.warmup_steps)] if plan.warm is not None else []) + [(config, plan.total_steps)]
    report = run_phases(trainee, phases, resolve_step_path(loop.step_path, dev), accountant=accountant,
                        theorem=budget.theorem, after_step=None if best is None else best.after, progress=progress,
                        desc=f"train {model_name}")
    ran = budget.warmup_steps + plan.total_steps
    check_finite(model, config, plan.lr, ran, plan.train_data)
    crps = score()
    naive = point_crps(plan.targets, seasonal_naive(plan.histories, config.forecast_length, evaluation.season))
    check_scores(crps, untrained, naive, plan.train_data)
    return TrainResult(
        model=model_name, private=private, top=config.top, bottom=config.bottom,
        sigma=config.sigma if private else 0.0,
        warmup_steps=budget.warmup_steps,
        warmup_sigma=budget.warmup_sigma if budget.warmup_steps else None,
        clip=plan.clip if private else None,
        epsilon_budget=budget.epsilon,
        epsilon=accountant.get_epsilon(plan.delta) if private else None,
        delta=plan.delta if private else None,
        theorem=plan.bound_id,
        discretization=budget.discretization if private else None,
        steps=ran,
        compositions=accountant.compositions if private else None,
        epochs=ran / plan.sampler.steps_per_epoch,
        crps=crps, untrained_crps=untrained, seasonal_naive_crps=naive,
        seconds=report.seconds,
        device=str(dev),
        ledger=ledger_summary(accountant.ledger) if private else None,
        selection=(best.summary(model, test_contexts, plan.targets, evaluation.n_samples, generator, test_covariates)
                   if best is not None else None),
        trained_model=model if checkpoints.return_model else None,
        batch_capacity=report.batch_capacity,
        overflow_steps=report.overflow_steps,
    )


__all__ = [
    "Budget", "Checkpoints", "Evaluation", "Loop", "initial_model", "train",
    # the names the runs trained together, the audits and the CLI import from here
    "FLOAT32_MAX", "check_finite", "check_scores", "evaluate", "fit_budget", "plan_training",
    "resolve_device", "run_tensors",
]
