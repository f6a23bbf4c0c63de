"""Training entry point: Algorithm 1's epoch loop over Algorithm 2 steps, to an ε budget or for a number of epochs.

The loop accounts through the one accountant of :mod:`tsdp.verify.accountant`: before
training it asks for the most steps the budget buys (:func:`tsdp.verify.accountant.max_steps`,
sound ε), and after every step it emits that step's privacy event
(:func:`tsdp.verify.events.step_event`) into a ``PldAccountant``; the ε it reports is that
accountant's sound ε of the ledger, so it is the ε of the steps that actually ran. The loop
counts training steps only; turning steps into per-epoch compositions for deterministic or
shuffled iteration is the events module's job, never the loop's.
"""
from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
from tqdm.auto import tqdm

from tsdp.theorems.config import ConfigError, TrainingConfig, check_delta, check_int, check_real
from tsdp.verify.accountant import PldAccountant, max_steps
from tsdp.verify.events import ledger_summary, step_event, training_event, unit_event
from tsdp.verify.pld import DEFAULT_DISCRETIZATION
from tsdp.verify.resolution import resolve_event

from tsdp.datasets.series import SeriesData, last_values
from tsdp.datasets.time_features import covariate_count

from .captured import CapturedStep, StepPath, resolve_step_path
from .fixed_batch import batch_capacity, fixed_capacity
from .metrics import (BYTES_PER_SAMPLE_STEP, crps_from_quantiles, crps_scale, point_crps, sample_quantiles,
                      seasonal_naive)
from .models import make_model
from .result import CheckpointSelection, TrainResult
from .samplers import make_sampler, n_starts_of
from .step import apply_gradient, check_noise_std, nonprivate_step, private_gradient
from .windows import (augment, covariates_of, forecast_covariates, gather_windows, pad_covariates, pad_series,
                      padding_of, split_window)


def resolve_device(device: str) -> torch.device:
    """``auto`` → cuda when available, else cpu; otherwise the named device (ConfigError naming ``device``)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("device", "cuda requested but torch sees no CUDA device; use cpu or auto", device)
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ConfigError("device", "must be auto, cpu or cuda[:N]", device) from exc


def evaluate(model: torch.nn.Module, contexts: torch.Tensor, targets: np.ndarray, *, n_samples: int,
             generator: torch.Generator, device: torch.device, covariates: Optional[torch.Tensor] = None) -> float:
    """Test CRPS (mean weighted quantile loss of ``n_samples`` sample paths) of forecasts from ``contexts`` (M, L_C)
    (and, for a model that reads them, the windows' ``covariates`` (M, L_C + L_F, F)).

    The windows are drawn in chunks whose sample paths fit ``TSDP_MEMORY_LIMIT`` (:data:`BYTES_PER_SAMPLE_STEP` per
    path step), in order from one generator: one chunk, the whole set at once, wherever it fits. Each window's
    quantiles come from its own paths, so the chunks give the same CRPS as one draw of the same paths would; memory
    stays bounded for thousands of test windows."""
    from tsdp.verify.pld import resolve_memory_limit

    per_step = BYTES_PER_SAMPLE_STEP + (0 if covariates is None else 4 * covariates.shape[-1])  # + float32 covariates
    per_window = n_samples * (contexts.shape[1] + targets.shape[1]) * per_step
    chunk = max(1, resolve_memory_limit() // per_window)
    model.eval()
    parts = []
    for i in range(0, contexts.shape[0], chunk):
        extra = () if covariates is None else (covariates[i:i + chunk].to(device),)
        paths = model.sample(contexts[i:i + chunk].to(device), n_samples, generator, *extra)
        parts.append(sample_quantiles(paths.cpu().numpy()))
    model.train()
    return crps_from_quantiles(targets, np.concatenate(parts, axis=1))


def validation_loss(model: torch.nn.Module, contexts: torch.Tensor, targets: torch.Tensor,
                    covariates: Optional[torch.Tensor] = None) -> float:
    """Mean negative log-likelihood of the validation windows (the paper's checkpoint criterion)."""
    model.eval()
    with torch.no_grad():
        inputs = (contexts, targets) if covariates is None else (contexts, targets, covariates)
        loss = float(model(*inputs).mean())
    model.train()
    return loss


def initial_model(model_name: str, config: TrainingConfig, data: SeriesData, *, seed: int,
                  lags=None) -> torch.nn.Module:
    """The model :func:`train` starts from: ``model_name`` at the configuration's L_C and L_F, initialised under
    ``seed``; DeepAR with ``lags`` (default its own) and the covariates of ``data``'s step
    (:func:`tsdp.datasets.time_features.covariate_count`)."""
    extra = {}
    if model_name == "deepar":
        extra = {"covariates": covariate_count(data.freq), **({"lags": lags} if lags is not None else {})}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make_model(model_name, config.context_length, config.forecast_length, **extra)


@dataclass
class _FixedShape:
    """The fixed-shape step path of a run (:class:`~tsdp.training.captured.StepPath` ``fixed`` or ``captured``):
    every batch in ``capacity`` slots, the compiled step (or None: the factored engine, eagerly), and the steps
    that overflowed the capacity (run as variable-size steps, exact)."""

    capacity: int
    captured: Optional[CapturedStep] = None
    overflow_steps: int = 0


def _step_batches(index, fixed: Optional[_FixedShape]):
    """Per step of ``index``: (seq, start, mask or None) of its batch. Without ``fixed``, the step's sampled
    windows compacted (its own size); with it, the batch of ``fixed.capacity`` slots and its mask, except for a
    step that overflows the capacity, which is compacted and counted. One host read per call (the overflow count),
    none per step."""
    if fixed is None:
        for i in range(index.n_steps):
            one = index.step(i)
            yield one.seq[0], one.start[0], None
        return
    batches = fixed_capacity(index, fixed.capacity)
    over = batches.overflow
    overflowed = set(over.nonzero()[:, 0].tolist()) if bool(over.any()) else set()
    fixed.overflow_steps += len(overflowed)
    for i in range(index.n_steps):
        if i in overflowed:
            one = index.step(i)
            yield one.seq[0], one.start[0], None
        else:
            yield batches.seq[i], batches.start[i], batches.mask[i]


def _run_steps(model, opt, padded, sampler, config: TrainingConfig, n_steps: int, *, clip: float, private: bool,
               generator: torch.Generator, emit, bar, canaries=None, covariates=None,
               fixed: Optional[_FixedShape] = None) -> None:
    """``n_steps`` training steps of ``config``'s scheme (Algorithm 1's inner loop, Algorithm 2 steps).

    Samples one epoch of batches at a time from its start (so deterministic/shuffled iteration
    restarts its epoch with every call, as the events module assumes) and calls ``emit(i)``
    after step i (0-based within this call). ``canaries`` (:class:`attacks.canary.gradient.GradientCanaries`,
    attached to ``model``) add their clipped sum to ĝ before the noise (divided by Λ with it)
    and score every step's parameter delta. ``covariates``: the series' covariates laid out as ``padded``
    (:func:`~tsdp.training.windows.pad_covariates`), cropped with every window for a model that reads them.
    ``fixed``: private steps on batches of one shape (:class:`_FixedShape`), else each step's own size.
    """
    done = 0
    while done < n_steps:
        chunk = min(sampler.steps_per_epoch, n_steps - done)
        index = sampler.sample(chunk, generator)
        for i, (seq, start, mask) in enumerate(_step_batches(index, fixed if private else None)):
            windows = gather_windows(padded, seq, start, config.window_length)
            context, forecast = split_window(windows, config.context_length)
            window_covariates = (None if covariates is None else
                                 gather_windows(covariates, seq, start, config.window_length))
            if config.augmented:
                context, forecast = augment(context, forecast, sigma_context=config.sigma_context,
                                            sigma_forecast=config.sigma_forecast, v=config.v, generator=generator)
            extra = None
            if canaries is not None:
                extra = [g / config.batch_size for g in canaries.gradient()]
                before = canaries.snapshot()
            if private:
                _private_step(model, opt, context, forecast, mask, window_covariates, extra, clip=clip,
                              config=config, generator=generator, fixed=fixed)
            elif context.shape[0] > 0 or extra is not None:
                nonprivate_step(model, opt, context, forecast, extra=extra, covariates=window_covariates)
            if canaries is not None:
                canaries.observe(before)
            emit(done + i)
            bar.update(1)
        done += chunk


def _private_step(model, opt, context, forecast, mask, covariates, extra, *, clip: float, config: TrainingConfig,
                  generator: torch.Generator, fixed: Optional[_FixedShape]) -> None:
    """One DP step (Algorithm 2) on a batch (``mask``: its sampled slots, or None: all): the compiled step where the
    run has one (and the batch its fixed shape), else the factored engine; ``extra`` (canaries) added to g̃."""
    captured = fixed.captured if fixed is not None and mask is not None else None
    if captured is not None and extra is None:
        captured.step(opt, context, forecast, mask, generator=generator, covariates=covariates)
        return
    if captured is not None:
        gradient = captured.gradient(context, forecast, mask, generator=generator, covariates=covariates)
    else:
        gradient = private_gradient(model, context, forecast, clip=clip, sigma=config.sigma,
                                    batch_size=config.batch_size, generator=generator, mask=mask,
                                    covariates=covariates)
    if extra is not None:
        names = [name for name, p in model.named_parameters() if p.requires_grad]
        gradient = {name: gradient[name] + e for name, e in zip(names, extra)}
    apply_gradient(model, opt, gradient)


FLOAT32_MAX = float(np.finfo(np.float32).max)

LR_MAX = 1e30
"""The largest learning rate: torch's optimizers turn it into a float32 step factor (Adam's first step multiplies it
by 1/(1 - β1) = 10), which above 3.4e38 is an overflow error, not a step; any lr near this diverges anyway (the
training then fails naming the learning rate)."""


def _largest(data: SeriesData) -> float:
    return max(float(np.max(np.abs(s))) for s in data.series)


def _check_magnitude(data: SeriesData) -> None:
    """ConfigError naming ``data`` when a value does not fit the float32 models (|x| > 3.4e38 becomes inf)."""
    largest = _largest(data)
    if not largest <= FLOAT32_MAX:
        raise ConfigError("data", f"holds a value of magnitude {largest:.3g}, beyond float32 ({FLOAT32_MAX:.3g}), "
                                  "the models' precision; rescale the data")


@contextmanager
def _warmup_named(warmup: bool, warmup_sigma):
    """In the warm-up phase, a refusal of its σ names ``warmup_sigma`` (the flag the user typed), not ``sigma``."""
    try:
        yield
    except ConfigError as exc:
        if not (warmup and exc.parameter == "sigma"):
            raise
        raise ConfigError("warmup_sigma", exc.constraint, warmup_sigma) from None


def _planned_epsilon(config, warm, warmup_steps: int, steps: int, delta: float, theorem, discretization) -> float:
    """The sound ε(δ) of the planned run (warm-up, then ``steps``), or the accountant's refusal before any training:
    too many compositions (naming ``warmup_steps`` when the warm-up alone is too long; ``warmup_sigma`` when its σ
    has no finite privacy-loss grid) or a δ below its resolution."""
    acc = PldAccountant("sound", discretization=discretization)
    if warm is not None:
        acc.compose(training_event(warm, steps=warmup_steps, theorem=theorem))
        try:
            with _warmup_named(True, warm.sigma):
                acc.get_epsilon(delta)
        except ConfigError as exc:
            if exc.parameter != "steps":
                raise
            raise ConfigError("warmup_steps", exc.constraint, warmup_steps) from None
    if steps:
        acc.compose(training_event(config, steps=steps, theorem=theorem))
    return acc.get_epsilon(delta)



@dataclass(frozen=True)
class RunRequest:
    """What :func:`train` is asked before it trains anything: the configuration, the data (``data`` or ``split``) and
    every option the checks and the accountant's plan read (:func:`train`'s keywords of the same names)."""

    config: TrainingConfig
    data: Optional[SeriesData] = None
    split: object = None
    epsilon: Optional[float] = None
    delta: Optional[float] = None
    epochs: Optional[int] = None
    steps: Optional[int] = None
    theorem: Optional[str] = None
    warmup_steps: int = 0
    warmup_sigma: Optional[float] = None
    discretization: float = DEFAULT_DISCRETIZATION
    clip: float = 1.0
    lr: float = 1e-3
    weight_decay: float = 0.0
    optimizer: str = "adam"
    private: bool = True
    canaries: object = None


@dataclass(frozen=True)
class RunPlan:
    """A checked run (:func:`plan_run`): the training series, the test targets and histories, the warm-up phase's
    configuration (None without), the checked clip norm, learning rate, weight decay and δ, the sound bound's id
    (None without DP), the training steps after the warm-up (the most the budget buys under the sound accountant,
    or the cap) and the configuration's sampler."""

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


def plan_run(request: RunRequest) -> RunPlan:
    """Every check :func:`train` makes before training and the accountant's plan of the run (the sound ε of the next
    step would exceed the budget after ``total_steps``; an **upper** bound on the ε spent), in the order ``train``
    makes them: a bad option, data the models cannot read, a budget that buys no step or a run the accountant cannot
    state raises :class:`ConfigError` naming the parameter. :func:`train` and the runs trained together
    (:mod:`tsdp.training.together`) both start from it."""
    r = request
    config, data, split, canaries = r.config, r.data, r.split, r.canaries
    epsilon, delta, epochs, steps, theorem = r.epsilon, r.delta, r.epochs, r.steps, r.theorem
    warmup_steps, warmup_sigma, discretization = r.warmup_steps, r.warmup_sigma, r.discretization
    clip, lr, weight_decay, optimizer, private = r.clip, r.lr, r.weight_decay, r.optimizer, r.private
    if epsilon is None and epochs is None and steps is None:
        raise ConfigError("epsilon", "give an ε budget (epsilon), a number of epochs or of steps")
    if epochs is not None and steps is not None:
        raise ConfigError("steps", "give epochs or steps, not both", steps)
    if steps is not None:
        steps = check_int("steps", steps, 1)
    if epsilon is not None and not private:
        raise ConfigError("epsilon", "an ε budget needs private training (private=True)")
    if private and delta is None:
        raise ConfigError("delta", "private training reports the ε it spends at a δ: give delta")
    if optimizer not in ("adam", "sgd"):
        raise ConfigError("optimizer", "must be adam or sgd", optimizer)
    warmup_steps = check_int("warmup_steps", warmup_steps, 0)
    if config.context_length < 1:  # the accountant allows L_C = 0; a forecaster reads at least one past value
        raise ConfigError("context_length", "must be >= 1 to train a forecaster (it reads the last L_C values)",
                          config.context_length)
    if private:
        delta = check_delta(delta)
    _check_magnitude(split.train if split is not None else data)
    if warmup_steps and (not private or warmup_sigma is None):
        raise ConfigError("warmup_sigma", "warm-up steps need private training and their noise multiplier",
                          warmup_sigma)
    if canaries is not None and warmup_steps:
        raise ConfigError("warmup_steps", "gradient canaries follow one batching from the first step: no warm-up")
    if split is not None:
        train_data, targets, histories = split.train, split.test.targets, split.test.histories
    else:
        train_data, targets = data.split(config.forecast_length)
        histories = train_data.series
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
    warm = config.with_(sigma=warmup_sigma) if warmup_steps else None
    clip = check_real("clip", clip, low=0.0, low_open=True)
    lr = check_real("lr", lr, low=0.0, high=LR_MAX, low_open=True)
    weight_decay = check_real("weight_decay", weight_decay, low=0.0, high=LR_MAX)  # float32 step factors overflow beyond
    if private:
        for phase in (warm, config):
            if phase is not None:
                with _warmup_named(phase is warm, warmup_sigma):
                    check_noise_std(phase.sigma, clip)
    bound_id = None
    before = None
    if private:  # refusals (a lower-bound theorem, a scheme without a proven bound) come before any training
        for phase in (warm, config):
            if phase is not None:
                PldAccountant("sound", discretization=discretization).compose(step_event(phase, 0, theorem))
        bound_id = resolve_event(unit_event(config, theorem)).bound.id
        if warm is not None:
            before = training_event(warm, steps=warmup_steps, theorem=theorem)
    sampler = make_sampler(config, train_data.lengths)
    cap = steps if steps is not None else None if epochs is None else epochs * sampler.steps_per_epoch
    if epsilon is None:
        total_steps = cap
    else:
        total_steps = max_steps(config, epsilon, delta, theorem=theorem, cap=cap, before=before,
                                discretization=discretization)
        if total_steps == 0 and cap != 0 and warm is not None and max_steps(
                config, epsilon, delta, theorem=theorem, cap=1, discretization=discretization):  # the warm-up took it
            spent = _planned_epsilon(config, warm, warmup_steps, 0, delta, theorem, discretization)
            raise ConfigError("warmup_steps", f"the {warmup_steps} warm-up steps at σ = {warmup_sigma:g} spend ε = "
                              f"{spent:.4g} of the budget ε = {epsilon:g} at δ = {delta:g}, leaving no training step "
                              "(lower --warmup-steps, raise --warmup-sigma, or raise the budget)", warmup_steps)
        if total_steps == 0 and cap != 0:
            raise ConfigError("epsilon", f"the budget ε = {epsilon:g} at δ = {delta:g} is spent before the first "
                              "step (raise --sigma, lower --batch-size, or raise the budget)", epsilon)
    if private:  # the whole run's sound ε, before any training: a run the accountant cannot state is refused
        _planned_epsilon(config, warm, warmup_steps, total_steps, delta, theorem, discretization)
    return RunPlan(train_data, targets, histories, warm, clip, lr, weight_decay, delta, bound_id, total_steps, sampler)


def train(
    config: TrainingConfig,
    model_name: str,
    data: SeriesData,
    *,
    epsilon: Optional[float] = None,
    delta: Optional[float] = None,
    epochs: Optional[int] = None,
    steps: Optional[int] = None,
    theorem: Optional[str] = None,
    warmup_steps: int = 0,
    warmup_sigma: Optional[float] = None,
    discretization: float = DEFAULT_DISCRETIZATION,
    clip: float = 1.0,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    optimizer: str = "adam",
    device: str = "auto",
    seed: int = 0,
    progress: bool = True,
    private: bool = True,
    season: int = 24,
    n_samples: int = 100,
    return_model: bool = False,
    canaries=None,
    split=None,
    lags=None,
    validate_every: Optional[int] = None,
    step_path: str = "auto",
) -> TrainResult:
    """Train ``model_name`` on ``data`` with Algorithm 1 (batching of ``config``) and Algorithm 2 steps.

    Private training needs ``delta``: every step's event goes to a sound ``PldAccountant``
    (bound ``theorem``, default the tightest sound upper bound; a lower-bound theorem is
    refused) and ``epsilon`` in the result is its ε(δ) of the steps that ran (an **upper**
    bound). With a budget ``epsilon`` the run takes the most steps whose sound ε stays within
    it (one more step, or epoch for deterministic/shuffled iteration, would exceed it) and
    refuses a budget that buys no step; ``epochs`` (or ``steps``, training steps) caps the run (or
    fixes it, without budget). To spend a budget in exactly K epochs instead, calibrate σ first
    (:func:`fit_budget`).
    ``warmup_steps`` steps at noise ``warmup_sigma`` come first and are accounted too (a
    heterogeneous run: the ledger composes both phases). ``discretization`` is the accountant's
    PLD grid (coarser is faster and still an upper bound). ``private=False`` trains without
    clipping and noise (no ε). Each series' last L_F steps are the test set. Returns a
    :class:`~tsdp.training.result.TrainResult` (``crps``, ``untrained_crps``, ``seasonal_naive_crps``,
    ``epsilon``, ``steps``, ``compositions``, ``epochs``, ``seconds``, ``ledger``, ...; ``as_dict()`` is its JSON);
    ``return_model=True`` adds the trained model (``trained_model``, not JSON) for audits. ``canaries``: white-box
    gradient canaries (:class:`attacks.canary.gradient.GradientCanaries` of this configuration and ``clip``),
    attached to the model and fed every step (not with warm-up steps, whose epochs restart).
    ``split`` (:class:`tsdp.datasets.benchmarks.ForecastSplit`; ``data`` is then unused): train on its
    training series, report the test CRPS of its test windows, and every ``validate_every`` steps (default
    once per epoch) score its validation windows: the result's ``selection`` holds the checkpoint with
    the lowest validation loss, which the ε does **not** cover (its validation windows are the ends of the
    same private series; THEOREMS.md errata). ``step_path`` (:class:`~tsdp.training.captured.StepPath`): how the
    DP steps run: ``eager`` (each batch its own size), ``fixed`` (batches of one capacity,
    :mod:`tsdp.training.fixed_batch`; the result's ``batch_capacity`` and ``overflow_steps``), ``captured`` (fixed,
    and the step compiled whole, CUDA graphs on CUDA), ``auto`` (captured on CUDA, eager elsewhere). ``lags``:
    DeepAR's lag indices (default its own). DeepAR reads the
    covariates of every window's positions (:mod:`tsdp.datasets.time_features`: the calendar features of the data's
    step from each series' ``starts``, and the age feature), in training, validation and test alike.
    """
    StepPath.of("step_path", step_path)
    plan = plan_run(RunRequest(config, data, split, epsilon=epsilon, delta=delta, epochs=epochs, steps=steps,
                               theorem=theorem, warmup_steps=warmup_steps, warmup_sigma=warmup_sigma,
                               discretization=discretization, clip=clip, lr=lr, weight_decay=weight_decay,
                               optimizer=optimizer, private=private, canaries=canaries))
    train_data, targets, histories, warm = plan.train_data, plan.targets, plan.histories, plan.warm
    clip, lr, weight_decay, delta, bound_id = plan.clip, plan.lr, plan.weight_decay, plan.delta, plan.bound_id
    total_steps, sampler = plan.total_steps, plan.sampler
    warmup_steps = check_int("warmup_steps", warmup_steps, 0)
    accountant = PldAccountant("sound", discretization=discretization) if private else None

    dev = resolve_device(device)
    generator = torch.Generator(device=dev).manual_seed(seed)
    model = initial_model(model_name, config, train_data, seed=seed, lags=lags).to(dev)
    opt = (torch.optim.Adam if optimizer == "adam" else torch.optim.SGD)(model.parameters(), lr=lr, weight_decay=weight_decay)
    if canaries is not None:
        canaries.attach(model.parameters())
    padded, test_contexts, covariates, test_covariates = run_tensors(model, config, plan, split, dev)

    untrained = evaluate(model, test_contexts, targets, n_samples=n_samples, generator=generator, device=dev,
                         covariates=test_covariates)
    checkpoint = _Checkpoints(model, split, config, train_data.freq, dev,
                              validate_every or sampler.steps_per_epoch) if split is not None else None
    path = resolve_step_path(step_path, dev)
    capacity, overflow_steps = None, 0
    started = time.perf_counter()
    bar = tqdm(total=warmup_steps + total_steps, disable=not progress, desc=f"train {model_name}", unit="step")
    for phase, n_steps in ((warm, warmup_steps), (config, total_steps)):
        if phase is None or n_steps == 0:
            continue
        account = (lambda i, c=phase: accountant.compose(step_event(c, i, theorem))) if private else (lambda i: None)
        emit = account
        if checkpoint is not None and phase is config:
            emit = (lambda i: (account(i), checkpoint.after(warmup_steps + i + 1)))
        fixed = _fixed_shape(phase, path, model, train_data.lengths, clip) if private else None
        _run_steps(model, opt, padded, make_sampler(phase, train_data.lengths), phase, n_steps, clip=clip,
                   private=private, generator=generator, emit=emit, bar=bar, canaries=canaries, covariates=covariates,
                   fixed=fixed)
        if fixed is not None:
            capacity, overflow_steps = fixed.capacity, overflow_steps + fixed.overflow_steps
    bar.close()
    seconds = time.perf_counter() - started

    check_finite(model, config, lr, warmup_steps + total_steps, train_data)
    crps = evaluate(model, test_contexts, targets, n_samples=n_samples, generator=generator, device=dev,
                    covariates=test_covariates)
    naive = point_crps(targets, seasonal_naive(histories, config.forecast_length, season))
    check_scores(crps, untrained, naive, train_data)
    ran = warmup_steps + total_steps
    return TrainResult(
        model=model_name,
        private=private,
        top=config.top,
        bottom=config.bottom,
        sigma=config.sigma if private else 0.0,
        warmup_steps=warmup_steps,
        warmup_sigma=warmup_sigma if warmup_steps else None,
        clip=clip if private else None,
        epsilon_budget=epsilon,
        epsilon=accountant.get_epsilon(delta) if private else None,
        delta=delta if private else None,
        theorem=bound_id,
        discretization=discretization if private else None,
        steps=ran,
        compositions=accountant.compositions if private else None,
        epochs=ran / sampler.steps_per_epoch,
        crps=crps,
        untrained_crps=untrained,
        seasonal_naive_crps=naive,
        seconds=seconds,
        device=str(dev),
        ledger=ledger_summary(accountant.ledger) if private else None,
        selection=(checkpoint.summary(model, test_contexts, targets, n_samples, generator, test_covariates)
                   if checkpoint is not None else None),
        trained_model=model if return_model else None,
        batch_capacity=capacity,
        overflow_steps=overflow_steps,
    )


def _fixed_shape(phase: TrainingConfig, path: StepPath, model, lengths, clip: float) -> Optional[_FixedShape]:
    """The fixed-shape step path of a phase for ``path`` (None for ``eager``): the batch capacity of its sampler,
    and for ``captured`` the compiled step of its σ."""
    if path == StepPath.EAGER:
        return None
    capacity = batch_capacity(phase, n_starts_of(phase, lengths).tolist())
    captured = (CapturedStep(model, clip=clip, sigma=phase.sigma, batch_size=phase.batch_size)
                if path == StepPath.CAPTURED else None)
    return _FixedShape(capacity, captured)


def run_tensors(model: torch.nn.Module, config: TrainingConfig, plan: RunPlan, split, device: torch.device) -> tuple:
    """(padded training series, test contexts, padded covariates, test covariates) of a planned run for ``model``:
    the series front-padded with the model's padding (:func:`~tsdp.training.windows.padding_of`) on ``device``, the
    last L_C values of every test history, and for a model that reads covariates (DeepAR) theirs (else None)."""
    fill = padding_of(model)
    train_data, histories = plan.train_data, plan.histories
    padded, _ = pad_series([torch.as_tensor(s) for s in train_data.series], config.context_length, fill)
    padded = padded.to(device)
    test_contexts = torch.as_tensor(last_values(histories, config.context_length, fill), dtype=torch.float32)
    covariates = test_covariates = None
    if covariates_of(model):
        covariates = pad_covariates(train_data.starts, train_data.lengths, config.context_length).to(device)
        test_covariates = forecast_covariates(split.test.starts if split is not None else train_data.starts,
                                              [len(h) for h in histories], config.context_length,
                                              config.forecast_length, train_data.freq)
    return padded, test_contexts, covariates, test_covariates


def check_finite(model: torch.nn.Module, config: TrainingConfig, lr: float, ran: int, train_data: SeriesData) -> None:
    """ConfigError naming ``lr`` when a parameter of the trained ``model`` is not finite after ``ran`` steps (the
    training diverged), with what else to lower (the data's scale, the augmentation)."""
    diverged = [name for name, p in model.named_parameters() if not bool(torch.isfinite(p).all())]
    if diverged:
        noise = max(config.sigma_context, config.sigma_forecast) * config.v  # the augmentation's largest std
        raise ConfigError("lr", f"the training diverged: {len(diverged)} parameter tensor(s) of the model are not "
                                f"finite after {ran} steps at learning rate {lr:g}: lower it, or rescale "
                                f"the data (values up to {_largest(train_data):.3g})"
                                + (f", or lower the augmentation (sigma_context={config.sigma_context:g}, "
                                   f"sigma_forecast={config.sigma_forecast:g}: a noise std up to {noise:.3g})"
                                   if noise > 0 else ""), lr)


def check_scores(crps: float, untrained: float, naive: float, train_data: SeriesData) -> None:
    """ConfigError naming ``data`` when a test CRPS is not finite (values that overflow the float32 model)."""
    if not all(math.isfinite(x) for x in (crps, untrained, naive)):
        raise ConfigError("data", f"the test CRPS is not finite (trained {crps}, untrained {untrained}, seasonal "
                                  f"naive {naive}): values up to {_largest(train_data):.3g} overflow the float32 model; "
                                  "rescale the data")


class _Checkpoints:
    """The lowest-validation-loss checkpoint of a run (the paper's selection; **not** covered by the run's ε)."""

    def __init__(self, model, split, config: TrainingConfig, freq, device, every: int):
        self.model, self.every = model, max(1, int(every))
        self.contexts = torch.as_tensor(split.validation.contexts(config.context_length, padding_of(model)),
                                        dtype=torch.float32).to(device)
        self.targets = torch.as_tensor(split.validation.targets, dtype=torch.float32).to(device)
        self.covariates = (forecast_covariates(split.validation.starts, [len(h) for h in split.validation.histories],
                                               config.context_length, config.forecast_length, freq).to(device)
                           if covariates_of(model) else None)
        self.best, self.best_step, self.state = self._loss(), 0, None
        self.state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.last_step = 0

    def after(self, step: int) -> None:
        self.last_step = step
        if step % self.every:
            return
        loss = self._loss()
        if loss < self.best:
            self.best, self.best_step = loss, step
            self.state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def _loss(self) -> float:
        return validation_loss(self.model, self.contexts, self.targets, self.covariates)

    def summary(self, model, test_contexts, targets, n_samples: int, generator, test_covariates) -> CheckpointSelection:
        last = {k: v.detach().clone() for k, v in model.state_dict().items()}
        last_loss = self._loss()
        if last_loss <= self.best:
            self.best, self.best_step, self.state = last_loss, self.last_step, last
        model.load_state_dict(self.state)
        selected = evaluate(model, test_contexts, targets, n_samples=n_samples, generator=generator,
                            device=self.contexts.device, covariates=test_covariates)
        model.load_state_dict(last)
        return CheckpointSelection(validation_loss=last_loss, selected_validation_loss=self.best,
                                   selected_step=self.best_step, selected_crps=selected)


def fit_budget(config: TrainingConfig, epsilon: float, delta: float, *, epochs: Optional[int] = None,
               steps: Optional[int] = None, theorem: Optional[str] = None,
               discretization: float = DEFAULT_DISCRETIZATION):
    """σ such that ``epochs`` epochs (or ``steps`` training steps) of ``config`` spend the budget ε at δ, as
    Opacus's ``make_private_with_epsilon``: :func:`tsdp.verify.calibration.calibrate_sigma` under the **sound**
    accountant (paper Appendix B.3 accounting of the scheme's tightest upper bound, or ``theorem``), so the run's
    sound ε is ≤ ``epsilon`` (an **upper** bound, within the calibration's relative tolerance of the budget).
    Returns the :class:`~tsdp.verify.calibration.CalibrationResult`; train ``config.with_(sigma=result.sigma)``."""
    from tsdp.verify.calibration import calibrate_sigma

    return calibrate_sigma(config, epsilon, delta, steps=steps, epochs=epochs, theorem=theorem,
                           discretization=discretization)
