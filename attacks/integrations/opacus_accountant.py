"""Structured-subsampling accounting inside Opacus (optional extra ``tsdp[opacus]``; this module imports opacus).

:class:`StructuredSubsamplingAccountant` is an Opacus ``IAccountant`` whose ``get_epsilon(δ)``
is tsdp's event accountant (:class:`tsdp.verify.accountant.PldAccountant`, "sound" by
default: an **upper** bound, the paper's Appendix B.3 accounting with the tightest sound
bound of the catalogue for the scheme, e.g. T6 for WOR top / WR bottom level) over
:func:`tsdp.verify.events.training_event` of the steps Opacus recorded. Opacus tells an
accountant only σ and a sample rate per step, so the batching (N, lengths, L_C, L_F, Λ, λ,
top / bottom level, relation) comes from the :class:`TrainingConfig` you give it; σ comes
from Opacus's history (a run whose σ changes is a ``ComposedDpEvent``).

What Opacus's ``sample_rate`` means here. ``PrivacyEngine.make_private`` passes
``1 / len(data_loader)`` (times gradient-accumulation steps). With tsdp's
:class:`~tsdp.training.batch_sampler.BiLevelBatchSampler` that is 1 / (steps per epoch of the
configuration): it is *not* a Poisson rate and is not used as one, only checked. A sample
rate other than ``1 / config.steps_per_epoch`` means the data loader is not the configured
batching (another sampler, another configuration, gradient accumulation) and is refused.
Use ``poisson_sampling=False`` in ``make_private``: Opacus's Poisson loader would replace
the structured batching (:class:`~tsdp.training.batch_sampler.WindowDataset` refuses its indices).
Opacus's DP optimizer is Algorithm 2 (per-window clipping to C, N(0, σ²C²) on the sum); it
divides by ``int(len(dataset) / len(loader))`` where Algorithm 2 divides by Λ, a rescaling
of the learning rate that does not change the privacy accounted here.

Batches handed out, not only steps trained. Opacus reports the steps it trained; the sampler hands out batches
ahead of them (a ``DataLoader`` with ``num_workers > 0`` prefetches; a loop may fetch a batch and ``break`` before
``optimizer.step()``) and a later pass resumes after the last batch it handed out, so trained steps can spread over
more of the scheme's epochs than their number says. Give the accountant the sampler
(``register(config, sampler=loader.batch_sampler)``): it then charges max(steps trained, batches handed out) steps,
the sampler's own epochs (:attr:`~tsdp.training.batch_sampler.BiLevelBatchSampler.batches_handed_out` are its first
steps, consecutive, so :func:`~tsdp.verify.events.training_event` of them is the epoch structure it followed,
a shuffled run's partial last epoch included). Sound: the steps trained are a subset of the batches handed out, and
running a step whose release is then ignored is a post-processing of the run that trains it; where the two counts
differ and σ changed during the run, every step is charged at the smallest σ recorded (a step at a larger σ is the
step at the smaller one with more noise added). Without a sampler the accountant counts trained steps only, sound only
when every batch handed out is trained. A checkpoint keeps each run (its σ runs and batches handed out); the
training after ``load_state_dict`` is a new run, whose sampler starts its epochs afresh, composed after the restored
ones (counting it as the continuation of a restored run's unfinished epoch would under-charge: a fresh
deterministic or shuffled epoch reaches the series that run already trained on).

Use::

    accountant = register(config, sampler=loader.batch_sampler)  # registers mechanism "tsdp" for this configuration
    engine = PrivacyEngine(accountant=MECHANISM)       # or: engine.accountant = accountant
    model, optimizer, loader = engine.make_private(..., data_loader=loader, poisson_sampling=False)
    engine.get_epsilon(1e-5)                           # == `tsdp epsilon --delta 1e-5 --steps S <config flags>`

``make_private_with_epsilon`` works the same way (its σ search creates accountants through
the registry, hence :func:`register`). The search sets each accountant's history to int(E / sample_rate) steps,
which float rounding makes one step fewer than the E epochs the loader then runs for some epoch lengths (93 steps
an epoch, E = 1: 92; 75 steps, E = 3: 224). A history set from outside :meth:`~StructuredSubsamplingAccountant.step`
(as the search sets it) is therefore read as the search's: a count that is int(E / sample_rate) for E whole epochs
is charged those E epochs (:func:`searched_steps`), so the σ it returns spends at most the target over the epochs
the loader runs (to the search's own tolerance). :func:`tsdp.calibrate_sigma` (``tsdp calibrate --epochs E``) is the
alternative with tsdp's tolerance on σ; the accountant's ε of the steps trained is right either way.
"""
from __future__ import annotations

import math
from typing import List, Optional, Tuple

try:
    from opacus.accountants import IAccountant, register_accountant
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from tsdp.theorems.errors import MissingExtraError

    raise MissingExtraError("the Opacus accountant needs opacus", "opacus") from exc

from dp_accounting import dp_event

from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import EPOCH_SCOPED_TOP, training_event
from tsdp.verify.pld import DEFAULT_DISCRETIZATION

MECHANISM = "tsdp"


def _config_state(config: TrainingConfig) -> dict:
    state = config.as_dict()
    state.pop("derived")
    return state


def _checked_sampler(sampler: object, config: TrainingConfig) -> object:
    """``sampler`` if it is a batch sampler of ``config``'s batching (σ aside: Opacus sets it), else ConfigError."""
    if sampler is None:
        return None
    if not isinstance(getattr(sampler, "batches_handed_out", None), int) or \
            not isinstance(getattr(sampler, "config", None), TrainingConfig):
        raise ConfigError("sampler", "must be the tsdp.training.batch_sampler.BiLevelBatchSampler the data loader "
                                     "draws its batches with (loader.batch_sampler)", type(sampler).__name__)
    if _config_state(sampler.config.with_(sigma=config.sigma)) != _config_state(config):
        raise ConfigError("sampler", "draws the batches of another configuration than the accountant's")
    return sampler


class StructuredSubsamplingAccountant(IAccountant):
    """Opacus accountant for bi-level structured subsampling (paper Algorithms 1, 3-6; bounds T1-T14).

    Args:
        config: The batching of the training (σ is taken from Opacus per step); None: the configuration
            :func:`register` set (registry-created instances).
        theorem: A catalogue id, None for the tightest sound bound.
        estimate: "sound" (upper bound, default) or "attained" (lower bound of the construction, not a budget).
        discretization: The PLD grid (default 1e-4).
        sampler: The :class:`~tsdp.training.batch_sampler.BiLevelBatchSampler` of the data loader (None: the one
            :func:`register` set, or none). With it the sound ε covers the batches it handed out (module docstring);
            without it only the steps trained, sound only when every batch handed out is trained.

    Raises:
        ConfigError: No configuration, a bad option, a sampler of another configuration, or a scheme without a bound
            to account it (refused on construction rather than at ``get_epsilon``).

    Attributes:
        history: Opacus's (σ, sample_rate, steps) runs, merged like Opacus's RDP accountant.
        config: The configuration accounted.
        theorem: The theorem asked for (None: the tightest sound bound).
        estimate: "sound" or "attained".
        discretization: The PLD grid.
        sampler: The batch sampler whose handed-out batches are charged (None: trained steps only).
    """

    default_config: Optional[TrainingConfig] = None  # set by :func:`register` for registry-created instances
    default_options: dict = {}

    def __init__(self, config: Optional[TrainingConfig] = None, *, theorem: Optional[str] = None,
                 estimate: Optional[str] = None, discretization: Optional[float] = None,
                 sampler: Optional[object] = None):
        super().__init__()
        config = config if config is not None else type(self).default_config
        if not isinstance(config, TrainingConfig):
            raise ConfigError("config", "the structured-subsampling accountant needs a TrainingConfig "
                                        "(construct it with one, or call tsdp.attacks.integrations.opacus_accountant.register)")
        options = dict(type(self).default_options)
        options.update({k: v for k, v in (("theorem", theorem), ("estimate", estimate),
                                          ("discretization", discretization), ("sampler", sampler)) if v is not None})
        self.config = config
        self.sampler = _checked_sampler(options.get("sampler"), config)
        self.theorem = options.get("theorem")
        self.estimate = options.get("estimate", "sound")
        self.discretization = options.get("discretization", DEFAULT_DISCRETIZATION)
        # runs restored from checkpoints, each (σ runs, batches handed out), and the current run's first trained step
        self._restored: List[Tuple[list, int]] = []
        self._split = 0
        self._recorded = 0  # steps recorded by step() or restored: fewer than the history's means it was set outside
        # validates the options and refuses, now rather than at get_epsilon, a scheme without a bound to account it
        PldAccountant(self.estimate, discretization=self.discretization).compose(
            training_event(config, steps=1, theorem=self.theorem))

    @classmethod
    def mechanism(cls) -> str:
        """The accountant's name in Opacus's registry of mechanisms (Opacus's ``IAccountant.mechanism``): ``"tsdp"``."""
        return MECHANISM

    def __len__(self) -> int:
        return sum(n for _, _, n in self.history)

    def _check_rate(self, sample_rate: float) -> None:
        """Opacus's sample rate must be 1 / steps per epoch of the configuration (module docstring)."""
        expected = 1.0 / self.config.steps_per_epoch
        if not math.isclose(float(sample_rate), expected, rel_tol=1e-9):
            raise ConfigError(
                "sample_rate",
                f"Opacus reports 1/len(data_loader) = {sample_rate:.6g}, but the configuration's epoch has "
                f"{self.config.steps_per_epoch} steps (rate {expected:.6g}): the data loader is not "
                "BiLevelBatchSampler over this configuration (or uses gradient accumulation)", sample_rate)

    def step(self, *, noise_multiplier: float, sample_rate: float):
        """Record one Opacus step at σ = ``noise_multiplier``; the sample rate is checked, not used.

        Args:
            noise_multiplier: σ of the step.
            sample_rate: Opacus's sample rate (checked, not used).
        """
        self._check_rate(sample_rate)
        self._recorded += 1
        if self.history and self.history[-1][0] == noise_multiplier and self.history[-1][1] == sample_rate:
            sigma, rate, n = self.history[-1]
            self.history[-1] = (sigma, rate, n + 1)
            return
        if self.config.top in EPOCH_SCOPED_TOP and (len(self) - self._split) % self.config.steps_per_epoch:
            raise ConfigError("noise_multiplier", f"changes inside an epoch of {self.config.top!r} iteration, "
                                                  "whose bounds are per epoch; change σ at epoch boundaries",
                              noise_multiplier)
        self.history.append((noise_multiplier, sample_rate, 1))

    def _handed_out(self) -> int:
        """Batches the sampler handed out since it was made, linked before or after (0 without a sampler): its epochs
        start at its first batch, so a batch drawn before the link still places the run's steps in them."""
        return 0 if self.sampler is None else self.sampler.batches_handed_out

    def _runs_after(self, skip: int) -> List[tuple]:
        """The σ runs of the history after its first ``skip`` steps."""
        runs = []
        for sigma, rate, n in self.history:
            if skip < n:
                runs.append((sigma, rate, n - skip))
            skip = max(0, skip - n)
        return runs

    def _run_event(self, runs: List[tuple], handed_out: int) -> dp_event.DpEvent:
        """One run's event: ``training_event`` per σ run, composed in order; where its sampler handed out more
        batches than were trained (sound estimate), ``training_event`` of the batches at the smallest σ recorded."""
        for _, rate, _ in runs:
            self._check_rate(rate)
        if handed_out > sum(n for _, _, n in runs) and self.estimate == "sound":
            sigma = min(float(s) for s, _, _ in runs)
            return training_event(self.config.with_(sigma=sigma), steps=handed_out, theorem=self.theorem)
        parts = [training_event(self.config.with_(sigma=float(sigma)), steps=int(steps), theorem=self.theorem)
                 for sigma, _, steps in runs]
        return parts[0] if len(parts) == 1 else dp_event.ComposedDpEvent(parts)

    def _runs(self) -> List[Tuple[list, int]]:
        """Every run, the restored ones then the current: (σ runs, batches handed out); a history set from outside
        :meth:`step` (Opacus's σ search) is one run."""
        if self._searched():
            return [(list(self.history), self._handed_out())]
        return self._restored + [(self._runs_after(self._split), self._handed_out())]

    def _searched(self) -> bool:
        """Whether the history was set from outside :meth:`step` and :meth:`load_state_dict` (Opacus's σ search)."""
        return len(self) != self._recorded

    def event(self) -> dp_event.DpEvent:
        """The recorded training as one privacy event (module docstring): per run (the current one, and each restored
        from a checkpoint, whose sampler started its epochs afresh), ``training_event`` per σ run composed in order,
        or, where the run's sampler handed out more batches than were trained (sound estimate), ``training_event`` of
        the batches handed out at the smallest σ of the run; the runs composed in order. A history set from outside
        :meth:`step` (Opacus's σ search) is one run whose counts are the steps the search means
        (:func:`searched_steps`: E whole epochs where rounding left int(E / sample_rate) one short).

        Returns:
            The event (sound direction: it covers every batch a linked sampler handed out).

        Raises:
            ConfigError: No step was trained.
        """
        runs = self._runs()
        if self._searched():  # the search's counts read as the epochs it means
            runs = [([(sigma, rate, searched_steps(int(n), float(rate))) for sigma, rate, n in runs[0][0]], runs[0][1])]
        parts = [self._run_event(segment, handed_out) for segment, handed_out in runs if segment]
        if not parts:
            raise ConfigError("history", "no step was trained")
        return parts[0] if len(parts) == 1 else dp_event.ComposedDpEvent(parts)

    def get_epsilon(self, delta: float, *args: object, **kwargs: object) -> float:
        """ε at ``delta`` of the recorded steps (sound: an upper bound; with a sampler, of at least the batches it
        handed out) from :class:`PldAccountant`; 0 before any step was trained.

        Args:
            delta: The δ.
            *args: Opacus's other arguments (unused).
            **kwargs: Opacus's other keywords (unused).

        Returns:
            The sound ε (an **upper** bound).
        """
        if not self.history:
            return 0.0
        accountant = PldAccountant(self.estimate, discretization=self.discretization)
        return float(accountant.compose(self.event()).get_epsilon(delta))

    def state_dict(self, destination: Optional[dict] = None) -> dict:
        """Opacus's state (history, mechanism) plus the configuration and options it was accounted with, and the runs
        (restored and current: σ runs, batches handed out) that :meth:`event` composes.

        Args:
            destination: A dict to fill (None: a new one).

        Returns:
            The state.
        """
        destination = super().state_dict(destination)
        destination["config"] = _config_state(self.config)
        destination["theorem"] = self.theorem
        destination["estimate"] = self.estimate
        destination["discretization"] = self.discretization
        destination["runs"] = [(list(runs), handed_out) for runs, handed_out in self._runs()]
        return destination

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a checkpoint; a checkpoint of another configuration or estimate is refused. The steps trained after
        it are a new run (its sampler's epochs start afresh), composed after the restored runs (module docstring); a
        checkpoint without runs is one run of its trained steps.

        Args:
            state_dict: What :meth:`state_dict` saved.

        Raises:
            ConfigError: A checkpoint of another configuration or estimate, naming what differs, or runs that do not add
                up to its history.
        """
        theirs = state_dict.get("config") if state_dict else None
        if theirs is not None and theirs != _config_state(self.config):
            raise ConfigError("config", "the checkpoint was accounted with another configuration", theirs)
        for key in ("theorem", "estimate", "discretization"):
            if state_dict and key in state_dict and state_dict[key] != getattr(self, key):
                raise ConfigError(key, f"the checkpoint was accounted with {key} {state_dict[key]!r}",
                                  getattr(self, key))
        super().load_state_dict(state_dict)
        self.history = [tuple(h) for h in self.history]
        runs = state_dict.get("runs", [(self.history, 0)])  # a checkpoint without runs: trained steps only
        self._restored = [([tuple(r) for r in segment], int(handed_out)) for segment, handed_out in runs]
        if sum(n for segment, _ in self._restored for _, _, n in segment) != len(self):
            raise ConfigError("runs", "the checkpoint's runs do not add up to its history")
        self._split = self._recorded = len(self)


def searched_steps(steps: int, sample_rate: float) -> int:
    """The steps Opacus's σ search means by a history count: E whole epochs where ``steps`` is int(E / sample_rate)
    for the E epochs that hold ``steps`` + 1 steps (float rounding made it one short of them, module docstring),
    else ``steps``. Sound: it never charges fewer steps than the count.

    Args:
        steps: The count the search set (``get_noise_multiplier``: int(epochs / sample_rate)).
        sample_rate: Its sample rate, 1 / (steps per epoch) (checked by the accountant).

    Returns:
        The steps charged.
    """
    per_epoch = round(1 / sample_rate)
    epochs, rest = divmod(steps + 1, per_epoch)
    return steps + 1 if per_epoch > 1 and rest == 0 and int(epochs / sample_rate) == steps else steps


def register(config: TrainingConfig, *, theorem: Optional[str] = None, estimate: str = "sound",
             discretization: float = DEFAULT_DISCRETIZATION,
             sampler: Optional[object] = None) -> StructuredSubsamplingAccountant:
    """Register mechanism ``"tsdp"`` in Opacus's accountant registry for ``config`` and return a fresh accountant.

    Registry-created accountants (``PrivacyEngine(accountant="tsdp")``, the σ search of
    ``make_private_with_epsilon``) then account this configuration. Registering again
    replaces the previous configuration.

    Args:
        config: The batching of the training.
        theorem: A catalogue id, None for the tightest sound bound.
        estimate: "sound" (upper bound, default) or "attained" (lower bound, not a budget).
        discretization: The PLD grid.
        sampler: The data loader's :class:`~tsdp.training.batch_sampler.BiLevelBatchSampler`
            (``loader.batch_sampler``): the sound ε then covers every batch it handed out, trained or not (module
            docstring). None: trained steps only.

    Returns:
        A fresh accountant for ``config``.

    Raises:
        ConfigError: A bad option, a sampler of another configuration, or a scheme without a bound to account it.

    Example:
        Account an Opacus training with tsdp::

            from opacus import PrivacyEngine
            from tsdp.attacks.integrations.opacus_accountant import MECHANISM, register

            register(config, sampler=loader.batch_sampler)
            engine = PrivacyEngine(accountant=MECHANISM)
    """
    bound = type("StructuredSubsamplingAccountantFor", (StructuredSubsamplingAccountant,), {
        "default_config": config,
        "default_options": {"theorem": theorem, "estimate": estimate, "discretization": discretization,
                            "sampler": sampler},
    })
    accountant = bound()
    register_accountant(MECHANISM, bound, force=True)
    return accountant
