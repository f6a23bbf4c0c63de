"""Runs trained together: K runs of one model and scheme that differ only in seed, ε budget or σ, as one program.

:func:`train_together` gives, for every run, the :class:`~tsdp.training.result.TrainResult` that
:func:`tsdp.training.train.train` gives it alone (to float rounding), from one stacked model
(:class:`tsdp.training.stacked.StackedModel`): one batched forward and backward per step for all runs. What each
run keeps of its own:

- its checks and plan (:func:`tsdp.training.plan.plan_training`: the steps its budget buys under the sound
  accountant, its σ), its accountant (the steps it ran) and its result; the runs of one σ and budget have the
  same plan and ledger, computed once for them;
- its generator, seeded with its seed, drawing what it draws alone and in the same order: the untrained test
  forecasts (the same draws for the runs of one seed: drawn once, each generator then set to the state they leave), each epoch's batches (its own sampler stream), each step's augmentation and noise (its own noise
  stream, :func:`tsdp.training.stacked.stacked_noise`), the trained and the selected checkpoint's forecasts;
- its initial model (:func:`tsdp.training.train.initial_model` at its seed) and its checkpoints (the lowest
  validation loss, :class:`tsdp.training.train._Checkpoints`; a validation step scores every run in one stacked
  forward of the validation windows repeated per block, each block's mean NLL its run's);
- its stopping step: a run whose budget is spent takes no further step; the stacked model keeps the runs still
  training only (:meth:`~tsdp.training.stacked.StackedModel.keep`), so the spent runs cost nothing after it.

Nothing a run computes depends on the other runs: each block of the batched products (``baddbmm``) is its run's
own product, every other operation acts per row, and the optimizer's ``foreach`` step per element, so a run's numbers
in a group are those of its run trained as a group of one, bit for bit (measured on the CPU at one torch thread, as
the grid's cells run, and asserted for every model by tests/training/test_together.py: the parameters, losses,
validation losses, checkpoint and CRPS; not checked on CUDA, whose batched products may choose their kernels by
batch count). Runs without DP train this way too; without noise, over many Adam steps, rounding differences grow
(to per-cent CRPS differences over a thousand steps), so a cell without DP is trained alone as a group of one
(:func:`tsdp.experiments.cells.train_cell`), never through :func:`tsdp.training.train.train`'s model, whose
``F.linear`` products round differently: the two agree to float rounding over the first steps, which the tests
check as an independent implementation. The private runs' noise keeps their results within float rounding of
:func:`tsdp.training.train.train` over a whole run, and a private run's checkpoint choice (its validation loss
through the stack) can differ from its run alone only at a tie within rounding.

The runs' steps are batched as cell-major rows (run k's windows in block k, padded to the step's largest batch and
masked). ``seconds`` of a run is its share of the loop's time: each step's time split evenly among the runs that
took it. :func:`loop_seconds` times that loop alone (no forecasts) for a number of runs: the pre-run estimate's probe.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import List, Optional, Sequence, Union

import torch

from tsdp.theorems.config import Bottom, ConfigError, Top, TrainingConfig
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import ledger_summary, training_event
from tsdp.verify.pld import DEFAULT_DISCRETIZATION

from .generators import seeded_generator
from .metrics import point_crps, seasonal_naive
from .options import Budget, Checkpoints, Evaluation, Loop
from .result import TrainResult
from .stacked import StackedModel, stacked_noisy_gradient
from .train import (_Checkpoints, check_finite, check_scores, evaluate, initial_model, plan_training,
                    resolve_device, run_tensors)
from .windows import augment, gather_windows, split_window


@dataclass(frozen=True)
class Run:
    """One run of a group: its seed, its ε budget (None: trained for the cap) and its noise multiplier σ (None: the
    group's configuration's).

    Attributes:
        seed: The run's seed (its initial model, batches and noise).
        epsilon: Its ε budget (None: trained for the cap).
        sigma: Its noise multiplier (None: the configuration's).
    """

    seed: int
    epsilon: Optional[float] = None
    sigma: Optional[float] = None


@dataclass(frozen=True)
class GroupSettings:
    """What every run of a group shares: :func:`tsdp.training.train.train`'s keywords of the same names.

    Attributes:
        model_name: The model every run trains.
        data: The training series (or ``split``).
        split: The forecasting split (training, validation and test windows).
        delta: δ of the budgets.
        epochs: The epochs cap.
        steps: The steps cap (instead of epochs).
        theorem: The bound to account (None: the tightest sound one).
        discretization: The accountant's PLD discretisation.
        clip: The clip norm C.
        lr: The learning rate.
        weight_decay: The weight decay.
        optimizer: ``adam`` or ``sgd``.
        device: ``auto``, ``cpu`` or ``cuda``.
        private: Whether the runs train with DP.
        season: The seasonal naive's season.
        n_samples: Sample paths per forecast.
        lags: DeepAR's lags (None: its own).
        validate_every: Steps between checkpoint validations (None: an epoch).
        return_model: Whether each result holds its trained model.
    """

    model_name: str
    data: object = None
    split: object = None
    delta: Optional[float] = None
    epochs: Optional[int] = None
    steps: Optional[int] = None
    theorem: Optional[str] = None
    discretization: float = DEFAULT_DISCRETIZATION
    clip: float = 1.0
    lr: float = 1e-3
    weight_decay: float = 0.0
    optimizer: str = "adam"
    device: str = "auto"
    private: bool = True
    season: int = 24
    n_samples: int = 100
    lags: Optional[tuple] = None
    validate_every: Optional[int] = None
    return_model: bool = False

    def keywords(self, epsilon: Optional[float] = None) -> dict:
        """``train``'s data, options and keywords for a run of budget ``epsilon`` (with ``progress=False``):
        ``train(config, model_name, seed=..., **keywords(epsilon))`` trains one run alone.

        Args:
            epsilon: The run's ε budget (None: trained for the settings' epochs or steps).

        Returns:
            ``train``'s keywords: data, budget, loop, evaluation, checkpoints, device and progress.
        """
        return {"data": self.split if self.split is not None else self.data,
                "budget": Budget(epsilon=epsilon, delta=self.delta, epochs=self.epochs, steps=self.steps,
                                 theorem=self.theorem, discretization=self.discretization, private=self.private),
                "loop": Loop(clip=self.clip, lr=self.lr, weight_decay=self.weight_decay, optimizer=self.optimizer,
                             lags=self.lags),
                "evaluation": Evaluation(season=self.season, n_samples=self.n_samples),
                "checkpoints": Checkpoints(validate_every=self.validate_every, return_model=self.return_model),
                "device": self.device, "progress": False}


class _Budget:
    """What the runs of one σ and budget share exactly: their plan (:func:`tsdp.training.plan.plan_training`) and their
    accountant (the same steps: one ledger, composed once when they stop)."""

    def __init__(self, config: TrainingConfig, epsilon: Optional[float], settings: GroupSettings):
        self.config = config
        keywords = settings.keywords(epsilon)  # the budget and loop `train` alone gets: one home for their fields
        self.plan = plan_training(config, keywords["data"], keywords["budget"], keywords["loop"])
        self.accountant = (PldAccountant("sound", discretization=settings.discretization) if settings.private
                           else None)
        self._epsilon = None

    def epsilon(self, delta: float) -> float:
        """The accountant's sound ε at δ of the steps composed (read once: the runs of this budget share it)."""
        if self._epsilon is None:
            self._epsilon = self.accountant.get_epsilon(delta)
        return self._epsilon


class _Cell:
    """One run's own state in the group: its budget, generator, model and clock, and its epoch's batches."""

    def __init__(self, run: Run, budget: _Budget, settings: GroupSettings, device: torch.device):
        self.run, self.budget, self.config, self.plan = run, budget, budget.config, budget.plan
        self.generator = seeded_generator(run.seed, device)  # as train's: every bit of the seed, not θ0's stream
        self.model = initial_model(settings.model_name, self.config, self.plan.train_data, seed=run.seed,
                                   lags=settings.lags).to(device)
        self.seconds = 0.0
        self.index = None


def _cells(config: TrainingConfig, runs: Sequence[Run], settings: GroupSettings, device: torch.device) -> List[_Cell]:
    """The runs' cells, one :class:`_Budget` per distinct (σ, ε)."""
    budgets, cells = {}, []
    for r in runs:
        sigma = config.sigma if r.sigma is None else r.sigma
        key = (sigma, r.epsilon)
        if key not in budgets:
            budgets[key] = _Budget(config.with_(sigma=sigma), r.epsilon, settings)
        cells.append(_Cell(r, budgets[key], settings, device))
    return cells


def _untrained(cells: Sequence[_Cell], tensors, settings: GroupSettings, device: torch.device) -> List[float]:
    """Each cell's untrained test CRPS, drawn from its generator; the cells of one seed start from the same model
    and generator state, so one evaluation serves them all (each generator then set to the state it leaves)."""
    _, test_contexts, _, test_covariates = tensors
    done, out = {}, []
    for c in cells:
        if c.run.seed in done:
            value, state = done[c.run.seed]
            c.generator.set_state(state)
        else:
            value = evaluate(c.model, test_contexts, c.plan.targets, n_samples=settings.n_samples,
                             generator=c.generator, device=device, covariates=test_covariates)
            done[c.run.seed] = value, c.generator.get_state()
        out.append(value)
    return out


def train_together(config: TrainingConfig, runs: Sequence[Run], settings: GroupSettings) -> List[TrainResult]:
    """Train every run of ``runs`` (``config`` at the run's σ, its seed and budget) together (module docstring);
    returns their results in order, each what :func:`tsdp.training.train.train` returns for the run alone (the same
    checks, the same sound ε of the same steps, an **upper** bound; the same losses, updates and CRPS to float
    rounding, for runs without DP over their first steps only) and, bit for bit, what it returns for the run alone
    in ``runs`` (module docstring). Raises :class:`ConfigError` as ``train`` does for a run (the first run's that raises,
    :func:`train_each_together`), and naming ``runs`` for no run or for runs without DP whose batches can be empty
    (Poisson sampling; they train alone).

    Args:
        config: The configuration of every run (at its σ).
        runs: The runs.
        settings: What they share.

    Returns:
        Each run's :class:`~tsdp.training.result.TrainResult`, in order.

    Raises:
        ConfigError: As :func:`~tsdp.training.train.train`, or naming ``runs``.
    """
    outcomes = train_each_together(config, runs, settings)
    for outcome in outcomes:
        if isinstance(outcome, ConfigError):
            raise outcome
    return outcomes


def train_each_together(config: TrainingConfig, runs: Sequence[Run],
                        settings: GroupSettings) -> List[Union[TrainResult, ConfigError]]:
    """:func:`train_together`, run by run: each run's result, or the :class:`ConfigError` that
    :func:`tsdp.training.train.train` raises for the run alone after its training (a run that diverged: a parameter
    not finite, or a test CRPS not finite). The runs never mix (every stacked product, clip factor, noise draw and
    optimizer element is a run's own), so a run that diverges leaves every other run its result alone; it takes no
    test forecast, as alone, and draws nothing more from its generator. Errors that concern every run (the
    checks before training) are raised.

    Args:
        config: The configuration of every run (at its σ).
        runs: The runs.
        settings: What they share.

    Returns:
        Each run's :class:`~tsdp.training.result.TrainResult` or :class:`ConfigError`, in order.

    Raises:
        ConfigError: As :func:`~tsdp.training.train.train` before training, or naming ``runs``.
    """
    if not runs:
        raise ConfigError("runs", "give at least one run")
    if not settings.private and (config.top == Top.POISSON or config.bottom == Bottom.POISSON):
        raise ConfigError("runs", "runs without DP under Poisson sampling skip their empty steps: train them alone")
    dev = resolve_device(settings.device)
    cells = _cells(config, runs, settings, dev)
    first = cells[0]
    tensors = run_tensors(first.model, config, first.plan, settings.split, dev)
    padded, test_contexts, covariates, test_covariates = tensors
    targets = first.plan.targets
    untrained = _untrained(cells, tensors, settings, dev)
    every = settings.validate_every or first.plan.sampler.steps_per_epoch
    checkpoints = ([_Checkpoints(c.model, settings.split, config, first.plan.train_data.freq, dev, every)
                    for c in cells] if settings.split is not None else None)
    _train(cells, settings, padded, covariates, checkpoints)
    results: List[Union[TrainResult, ConfigError]] = []
    for k, c in enumerate(cells):
        try:  # train's checks after training, in its order: this run's alone
            check_finite(c.model, c.config, c.plan.lr, c.plan.total_steps, c.plan.train_data)
            crps = evaluate(c.model, test_contexts, targets, n_samples=settings.n_samples, generator=c.generator,
                            device=dev, covariates=test_covariates)
            naive = point_crps(targets, seasonal_naive(c.plan.histories, config.forecast_length, settings.season))
            check_scores(crps, untrained[k], naive, c.plan.train_data)
        except ConfigError as exc:
            results.append(exc)
            continue
        selection = (checkpoints[k].summary(c.model, test_contexts, targets, settings.n_samples, c.generator,
                                            test_covariates) if checkpoints is not None else None)
        results.append(_result(c, settings, crps, untrained[k], naive, selection, str(dev)))
    return results


def loop_seconds(config: TrainingConfig, runs: Sequence[Run], settings: GroupSettings) -> float:
    """Seconds of the training loop alone (no forecasts, no results) of ``runs`` trained together for
    ``settings.steps`` steps each, with their checkpoints' validations when ``settings.split`` is given: what a
    group's stacked steps cost at this many runs (the pre-run estimate's probe,
    :func:`tsdp.experiments.estimate.estimate`).

    Args:
        config: The configuration of the runs.
        runs: The runs (their seeds; their budgets are not used: every run takes ``settings.steps`` steps).
        settings: What the runs share, with ``steps`` set.

    Returns:
        The loop's wall seconds.

    Raises:
        ConfigError: As :func:`train_together`, and naming ``steps`` when ``settings.steps`` is not set.
    """
    if not settings.steps:
        raise ConfigError("steps", "the loop is timed over a given number of steps", settings.steps)
    dev = resolve_device(settings.device)
    cells = _cells(config, [replace(r, epsilon=None) for r in runs], settings, dev)
    first = cells[0]
    padded, _, covariates, _ = run_tensors(first.model, config, first.plan, settings.split, dev)
    every = settings.validate_every or first.plan.sampler.steps_per_epoch
    checkpoints = ([_Checkpoints(c.model, settings.split, config, first.plan.train_data.freq, dev, every)
                    for c in cells] if settings.split is not None else None)
    started = time.perf_counter()
    _train(cells, settings, padded, covariates, checkpoints)
    return time.perf_counter() - started


def _result(c: _Cell, settings: GroupSettings, crps: float, untrained: float, naive: float, selection,
            device: str) -> TrainResult:
    private, ran = settings.private, c.plan.total_steps
    epsilon = c.budget.epsilon(c.plan.delta) if private else None
    return TrainResult(
        model=settings.model_name, private=private, top=c.config.top, bottom=c.config.bottom,
        sigma=c.config.sigma if private else 0.0, warmup_steps=0, warmup_sigma=None,
        clip=c.plan.clip if private else None, epsilon_budget=c.run.epsilon,
        epsilon=epsilon, delta=c.plan.delta if private else None,
        theorem=c.plan.bound_id, discretization=settings.discretization if private else None, steps=ran,
        compositions=c.budget.accountant.compositions if private else None,
        epochs=ran / c.plan.sampler.steps_per_epoch, crps=crps, untrained_crps=untrained, seasonal_naive_crps=naive,
        seconds=c.seconds, device=device, ledger=ledger_summary(c.budget.accountant.ledger) if private else None,
        selection=selection, trained_model=c.model if settings.return_model else None)


def _optimizer(settings: GroupSettings, params) -> torch.optim.Optimizer:
    """The stacked parameters' optimizer: every tensor in one ``foreach`` step (the per-tensor step's arithmetic, op
    for op, as a run alone steps its own; one Python pass per step instead of one per parameter)."""
    kind = torch.optim.Adam if settings.optimizer == "adam" else torch.optim.SGD
    return kind(params, lr=settings.lr, weight_decay=settings.weight_decay, foreach=True)


def _keep(stack: StackedModel, opt: torch.optim.Optimizer, rows: List[int], settings: GroupSettings):
    """The stack and a new optimizer for the models at ``rows`` only, each one's optimizer state carried over."""
    moved = stack.keep(rows)
    new = _optimizer(settings, list(stack.parameters.values()))
    index = torch.as_tensor(rows, dtype=torch.long)
    for old, param in moved.values():
        state = opt.state.get(old)
        if state:
            new.state[param] = {k: (v[index.to(v.device)].clone() if torch.is_tensor(v) and v.shape == old.shape
                                    else v.clone() if torch.is_tensor(v) else v) for k, v in state.items()}
    return new


def _sync(stack: StackedModel, cells: Sequence[_Cell], rows: Sequence[int]) -> None:
    """Copy the stacked parameters of ``rows`` into the cells' own models (for their checkpoints and forecasts)."""
    stacked = stack.parameters
    with torch.no_grad():
        for row, c in zip(rows, cells):
            for name, p in c.model.named_parameters():
                p.copy_(stacked[name][row])


def _train(cells: List[_Cell], settings: GroupSettings, padded: torch.Tensor, covariates, checkpoints) -> None:
    """Algorithm 1's loop for every cell at once (module docstring): each cell to its own planned steps."""
    config = cells[0].config
    sampler = cells[0].plan.sampler
    per_epoch = sampler.steps_per_epoch
    active = [k for k, c in enumerate(cells) if c.plan.total_steps > 0]
    stack = StackedModel([cells[k].model for k in active]) if active else None
    opt = _optimizer(settings, list(stack.parameters.values())) if active else None
    step = 0
    while active:
        started = time.perf_counter()
        if step % per_epoch == 0:  # each cell samples its epoch (or its last, shorter part) from its own generator
            for k in active:
                c = cells[k]
                c.index = sampler.sample(min(per_epoch, c.plan.total_steps - step), c.generator)
        _step(stack, opt, [cells[k] for k in active], step % per_epoch, settings, padded, covariates, config)
        step += 1
        if checkpoints is not None:
            _checkpoint(stack, [cells[k] for k in active], [checkpoints[k] for k in active], step)
        share = (time.perf_counter() - started) / len(active)
        for k in active:
            cells[k].seconds += share
        done = [k for k in active if cells[k].plan.total_steps == step]
        if settings.private:  # a budget's runs stop together: its ledger is the steps they ran
            for budget in {id(cells[k].budget): cells[k].budget for k in done}.values():
                budget.accountant.compose(training_event(budget.config, steps=step, theorem=settings.theorem))
        if done:
            _sync(stack, [cells[k] for k in done], [active.index(k) for k in done])
            rows = [i for i, k in enumerate(active) if k not in done]
            active = [k for k in active if k not in done]
            if active:
                opt = _keep(stack, opt, rows, settings)


VALIDATION_ROWS = 8192
"""The most stacked rows (windows × runs) of one validation forward: the validation windows are taken in chunks of
``VALIDATION_ROWS // K`` (each window's loss is its row's alone, so the chunks change no number, only the memory)."""


def _validation_losses(stack: StackedModel, best: _Checkpoints) -> List[float]:
    """Each stacked model's mean NLL of the validation windows of ``best`` (those of every run: one split and
    configuration): the windows repeated once per block, one forward of the stacked model (in chunks of
    :data:`VALIDATION_ROWS` rows), each block's mean its model's :func:`tsdp.training.evaluation.validation_loss`:
    bit for bit its value in a stack of one, and to float rounding that of the model itself (a private run alone,
    :func:`tsdp.training.train.train`, validates its own model)."""
    k, count = stack.size, best.contexts.shape[0]
    per = max(1, VALIDATION_ROWS // k)
    tensors = [t for t in (best.contexts, best.targets, best.covariates) if t is not None]
    parts = []
    stack.module.eval()
    with torch.no_grad():
        for i in range(0, count, per):
            rows = [t[i:i + per].repeat(k, *([1] * (t.dim() - 1))) for t in tensors]
            parts.append(stack.losses(rows).reshape(k, -1))
    stack.module.train()
    return torch.cat(parts, dim=1).mean(dim=1).tolist()


def _checkpoint(stack: StackedModel, cells: Sequence[_Cell], checkpoints: Sequence[_Checkpoints], step: int) -> None:
    """Each cell's checkpoint after ``step`` (``cells``: the stack's rows, in order, all validated every ``every``
    steps): on a validation step every cell's validation loss from one stacked forward (:func:`_validation_losses`),
    the cells whose loss is their lowest yet copied into their own models first (the state their checkpoint keeps)."""
    if not checkpoints[0].due(step):
        for best in checkpoints:
            best.after(step)
        return
    losses = _validation_losses(stack, checkpoints[0])
    better = [row for row, (best, loss) in enumerate(zip(checkpoints, losses)) if loss < best.best]
    _sync(stack, [cells[row] for row in better], better)
    for best, loss in zip(checkpoints, losses):
        best.after(step, loss)


def _step(stack: StackedModel, opt, cells: Sequence[_Cell], i: int, settings: GroupSettings, padded, covariates,
          config: TrainingConfig) -> None:
    """Step ``i`` of this epoch for ``cells`` (the stack's rows, in order): Algorithm 2 per cell, batched."""
    seq = torch.stack([c.index.seq[i] for c in cells])
    start = torch.stack([c.index.start[i] for c in cells])
    mask = torch.stack([c.index.mask[i] for c in cells])
    k, m = seq.shape
    windows = gather_windows(padded, seq, start, config.window_length)
    context, forecast = split_window(windows, config.context_length)
    if config.augmented:  # each cell's augmentation of its own batch, from its own generator, as it draws alone
        context, forecast = context.clone(), forecast.clone()
        for row, c in enumerate(cells):
            keep = mask[row]
            context[row, keep], forecast[row, keep] = augment(
                context[row, keep], forecast[row, keep], sigma_context=c.config.sigma_context,
                sigma_forecast=c.config.sigma_forecast, v=c.config.v, generator=c.generator)
    inputs = [context.reshape(k * m, -1), forecast.reshape(k * m, -1)]
    if covariates is not None:
        inputs.append(gather_windows(covariates, seq, start, config.window_length).reshape(k * m, -1,
                                                                                          covariates.shape[-1]))
    if settings.private:
        gradient = stacked_noisy_gradient(stack, inputs, mask, clip=cells[0].plan.clip,
                                          sigmas=[c.config.sigma for c in cells], batch_size=config.batch_size,
                                          generators=[c.generator for c in cells])
        for name, p in stack.parameters.items():
            p.grad = gradient[name]
    else:  # the mean loss of each cell's batch
        counts = mask.sum(1, keepdim=True).to(context.dtype)
        loss = (stack.losses(inputs) * (mask.to(context.dtype) / counts).reshape(-1)).sum()
        loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
