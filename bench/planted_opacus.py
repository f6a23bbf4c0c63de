"""Planted-bug bench on a user-style Opacus loop (the README's loop: tsdp's ``BiLevelBatchSampler`` DataLoader, an MLP
forecaster, SGD, ``PrivacyEngine.make_private(poisson_sampling=False)``), audited with canaries.

Each variant is the same loop with one planted bug; the claim is the ε the *intended* training
would report (tsdp's sound accountant, an **upper** bound, for the claimed configuration and
the steps run):

* ``correct``: no bug (the false-flag rate is measured on it);
* ``noise-off``: ``noise_multiplier = 0``;
* ``noise-10x-small``: σ / 10;
* ``clipping-off``: ``max_grad_norm = 100 C`` with ``noise_multiplier = σ / 100`` (the noise of the
  intended C, an element's gradient up to 100 C). The gradient canaries take their norm from the loop's
  ``max_grad_norm`` (100 C), so each sees a noise 100 times too small for it: the ε bound flags this
  larger declared clip, not a missing one. In a loop whose clip is missing while C is declared
  (:mod:`.handwritten_dpsgd`'s ``clipping-off``) the canaries enter after the clipping, of norm C, and
  the ε bound sees nothing; the clipping test does (`tsdp bench planted`, :mod:`.bug_rates`);
* ``poisson-claim``: the claim accounts a Poisson top level while the loader shuffles;
* ``global-standardisation``: the series are standardised with the mean and standard deviation
  of all series, canaries included, before the private training (a leak outside DP-SGD).

The first five are audited with white-box gradient canaries hooked into the ``DPOptimizer``
(:mod:`tsdp.attacks.integrations.dpoptimizer_canaries`; their participation follows the loader's
configuration, their norm the loop's ``max_grad_norm``); the last one with black-box spike
canaries (:mod:`tsdp.attacks.canary.user_training`: a gradient canary never passes through the data
preprocessing). :func:`bench_planted` runs each variant R times on the engine
(:func:`tsdp.attacks.canary.runs.run_many`), certifies the pooled canaries with a plug-in certifier
(the f-DP test with Steinke et al.'s baseline by default; a **lower** bound on ε) and flags a violation when it exceeds
the claim. The correct loop's flags over ``null_audits`` independent audits estimate the false-flag
rate, which the certifier bounds by 1 - confidence.

`tsdp bench planted-opacus` prints each variant's claim, certified ε, best AUC and flag, and the correct loop's
false flags against the designed 5% (its figures are not on the benchmarks page: the bench needs ``tsdp[opacus]``).
Two variants stay below any one-run audit by construction: ``poisson-claim`` - a shuffled canary takes part once per
epoch, ten times in all, each a shift of 1/σ = 1/8 noise units at an unknown step of its epoch: at most a Gaussian
μ = √10/8 ≈ 0.40 between in and out, whose one-run certificate stays below the Poisson claim unless the canaries
number in the millions (and shuffling's real ε may lie below the claim: the bug is that Poisson accounting is
unproven for a shuffling loader, for which tsdp's sound bound is larger than that claim);
``global-standardisation`` - a canary moves only the two global statistics, by one part in the other canaries' sum:
no per-canary one-run audit separates it, whatever m.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple, Union

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from tsdp.verify.rounded import rounded_down, rounded_up
from tsdp.theorems.config import TrainingConfig
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import training_event
from tsdp.verify.json_data import Record

from tsdp.attacks.canary.evidence import Certifier, Evidence, certify_evidence, fdp
from tsdp.attacks.canary.runs import RunEngine, run_many
from tsdp.executor.local import threads_per_worker
from tsdp.attacks.canary.training_runs import spike_evidence
from tsdp.datasets.series import SeriesData, synthetic
from tsdp.training.batch_sampler import BiLevelBatchSampler, WindowDataset, batches_for_steps, fit_lengths

from tsdp.attacks.integrations.dpoptimizer_canaries import add_canaries

BUGS = ("correct", "noise-off", "noise-10x-small", "clipping-off", "poisson-claim", "global-standardisation")
DATA = synthetic(40, 10, seed=0, noise=2.0)  # 40 noisy series; the last L_F value of each is held out
# L = 9 = L_C + L_F: every window of a series holds each element, r = 1; WOR top level, ρ = 1/4
CONFIG = fit_lengths(TrainingConfig(context_length=8, forecast_length=1, batch_size=10, instances=1, sigma=8.0,
                                    top="wor"), DATA.split(1)[0].series)
CLIP, LR, STEPS, DELTA = 1.0, 0.1, 40, 1e-5
HIDDEN = 256  # d = 2561 parameters: 1000 orthonormal canary directions fit
SPIKES = 40  # spike canaries per run (one per series fits: series of L_C + L_F training values)


def loader_config(bug: str, config: TrainingConfig = CONFIG) -> TrainingConfig:
    """The batching the loop's loader draws: ``config``'s, shuffled for ``poisson-claim``.

    Args:
        bug: One of :data:`BUGS`.
        config: The claimed configuration.

    Returns:
        The loader's configuration.
    """
    return config.with_(top="shuffle") if bug == "poisson-claim" else config


def runtime(bug: str, config: TrainingConfig = CONFIG, clip: float = CLIP) -> tuple:
    """(σ, max_grad_norm) the loop with ``bug`` runs with (module docstring).

    Args:
        bug: One of :data:`BUGS`.
        config: The claimed configuration (the claim's σ is ``config.sigma``).
        clip: The claimed clipping norm C.

    Returns:
        (σ, max_grad_norm) of the run.
    """
    sigma = config.sigma
    return {"noise-off": (0.0, clip), "noise-10x-small": (sigma / 10, clip),
            "clipping-off": (sigma / 100, 100 * clip)}.get(bug, (sigma, clip))


def claimed_epsilon(bug: str, config: TrainingConfig = CONFIG, steps: int = STEPS, delta: float = DELTA) -> float:
    """The ε the intended training reports after ``steps`` steps.

    tsdp's sound accountant for ``config`` (an **upper** bound on the correct loop's ε); for
    ``poisson-claim`` Opacus's RDP accountant at its sample rate 1 / len(loader) of the shuffled
    loader (Poisson subsampling assumed: the planted bug).

    Args:
        bug: One of :data:`BUGS`.
        config: The claimed configuration.
        steps: The training steps run.
        delta: The δ.

    Returns:
        The claimed ε at ``delta``.
    """
    if bug == "poisson-claim":
        from opacus.accountants import RDPAccountant

        accountant = RDPAccountant()
        accountant.history = [(config.sigma, 1 / loader_config(bug, config).steps_per_epoch, steps)]
        return float(accountant.get_epsilon(delta))
    return PldAccountant().compose(training_event(config, steps=steps)).get_epsilon(delta)


class _Standardised(nn.Module):
    """A forecaster on standardised values: (model((x - mean) / std)) · std + mean."""

    def __init__(self, model: nn.Module, mean: float, std: float):
        super().__init__()
        self.model, self.mean, self.std = model, mean, std

    def forward(self, context):
        return self.model((context - self.mean) / self.std) * self.std + self.mean


def opacus_train(series, config: TrainingConfig, *, sigma: float, clip: float, steps: int, lr: float, seed: int,
                 hook=None, standardise: bool = False) -> nn.Module:
    """The README's Opacus loop on ``series`` (loader of ``config``'s batching); ``hook(optimizer)`` after make_private.

    Args:
        series: The training series.
        config: The batching of the loader.
        sigma: Opacus's ``noise_multiplier``.
        clip: Opacus's ``max_grad_norm``.
        steps: The training steps.
        lr: SGD's learning rate.
        seed: Seeds the model's initialisation and the batches.
        hook: Called as ``hook(optimizer)`` on the ``DPOptimizer`` after ``make_private`` (e.g. to add canaries).
        standardise: Standardise every series with the mean and std of all of them first (the planted leak).

    Returns:
        The trained forecaster (on the original scale where ``standardise``).
    """
    from opacus import PrivacyEngine

    series = [np.asarray(s, dtype=np.float64) for s in series]
    mean, std = 0.0, 1.0
    if standardise:
        values = np.concatenate(series)
        mean, std = float(values.mean()), float(values.std())
        series = [(s - mean) / std for s in series]
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(config.context_length, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, config.forecast_length))
    dataset = WindowDataset(series, config)
    loader = DataLoader(dataset, batch_sampler=BiLevelBatchSampler(dataset, generator=torch.Generator().manual_seed(seed)),
                        collate_fn=dataset.collate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus's notices (secure RNG, backward hooks)
        engine = PrivacyEngine(accountant="rdp")
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=lr), data_loader=loader,
            noise_multiplier=sigma, max_grad_norm=clip, poisson_sampling=False)
        if hook is not None:
            hook(optimizer)
        for context, forecast in batches_for_steps(loader, steps):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(context.float()), forecast.float()).backward()
            optimizer.step()
    return _Standardised(model._module, mean, std)


def squared_error(model, context, forecast):
    """The loop's per-window training loss (its batch mean is the loop's ``mse_loss``), for the audits' ``loss=``.

    Args:
        model: The forecaster.
        context: The windows' contexts, (B, L_C).
        forecast: The windows' forecasts, (B, L_F).

    Returns:
        The squared error of each window, summed over the forecast, (B,).
    """
    return ((model(context.float()) - forecast.float()) ** 2).sum(-1)


@dataclass(frozen=True)
class PlantedRun:
    """One audited run of the loop with ``bug`` (module docstring) and m = ``canaries`` fresh canaries.

    Called with a ``numpy.random.SeedSequence``, it trains once and returns the canaries' evidence.

    Attributes:
        bug: One of :data:`BUGS`.
        canaries: m, the gradient canaries (the white-box audits).
        spikes: The spike canaries of ``global-standardisation`` (the black-box audit).
        config: The claimed configuration.
        data: The series (the last L_F value of each held out).
        steps: The training steps.
        clip: The claimed clipping norm C.
        lr: SGD's learning rate.
    """

    bug: str
    canaries: int
    spikes: int = SPIKES
    config: TrainingConfig = CONFIG
    data: SeriesData = DATA
    steps: int = STEPS
    clip: float = CLIP
    lr: float = LR

    def __call__(self, seed: np.random.SeedSequence) -> Evidence:
        canary_seed, train_seed = seed.spawn(2)
        loop_seed = int(train_seed.generate_state(1)[0])
        sigma, clip = runtime(self.bug, self.config, self.clip)
        config = loader_config(self.bug, self.config)
        if self.bug == "global-standardisation":
            def train(series):
                return opacus_train(series, config, sigma=sigma, clip=clip, steps=self.steps, lr=self.lr,
                                    seed=loop_seed, standardise=True)
            return spike_evidence(train, self.data, config, canaries=self.spikes, loss=squared_error,
                                  seed=canary_seed)
        held = {}

        def hook(optimizer):
            held["canaries"] = add_canaries(optimizer, config, self.canaries, seed=canary_seed)

        opacus_train(self.data.split(config.forecast_length)[0].series, config, sigma=sigma, clip=clip,
                     steps=self.steps, lr=self.lr, seed=loop_seed, hook=hook)
        return held["canaries"].evidence()


@dataclass(frozen=True)
class BugAudit(Record):
    """One variant of the loop audited (a row of :func:`bench_planted`).

    Attributes:
        bug: One of :data:`BUGS`.
        canaries: The canaries per run (gradient canaries; spike canaries for ``global-standardisation``).
        runs: The runs R whose canaries were pooled.
        epsilon_claimed: The ε the intended training reports (:func:`claimed_epsilon`, an **upper** bound).
        epsilon_lower: The certified ε (a **lower** bound).
        flagged: Whether the certified ε exceeds the claim.
        auc: Per score, its AUC.
        seconds: The variant's wall seconds.
    """

    bug: str
    canaries: int
    runs: int
    epsilon_claimed: float
    epsilon_lower: float
    flagged: bool
    auc: Dict[str, float]
    seconds: float


@dataclass(frozen=True)
class FalseFlags(Record):
    """The correct loop audited ``audits`` times, each on its own run: how often it was flagged.

    Attributes:
        audits: The independent audits (0: none run).
        flagged: The audits that flagged the correct loop.
        rate: ``flagged / audits`` (NaN, null in JSON, without audits).
        designed: The certifier's error probability, 1 - confidence.
    """

    audits: int
    flagged: int
    rate: float
    designed: float


@dataclass(frozen=True)
class PlantedOpacusBench(Record):
    """What :func:`bench_planted` measured: each variant's audit and the correct loop's false flags.

    Attributes:
        rows: One audit per variant, in :data:`BUGS`' order.
        false_flags: The correct loop's flags over independent audits.
    """

    rows: Tuple[BugAudit, ...]
    false_flags: FalseFlags


def bench_planted(*, canaries: int = 1000, runs: int = 1, null_audits: int = 100, bugs=BUGS, seed: int = 0,
                  delta: float = DELTA, confidence: float = 0.95, certifier: Certifier = fdp,
                  engine: RunEngine = RunEngine(),
                  progress: Optional[Callable[[str], None]] = None) -> PlantedOpacusBench:
    """Audit every variant of :data:`BUGS` with ``canaries`` × ``runs`` canaries; the correct loop ``null_audits`` times.

    A bug is caught when its certified lower bound exceeds its claim (an upper bound).

    Args:
        canaries: Gradient canaries per run.
        runs: Runs R per bug (their canaries pooled).
        null_audits: Independent audits of the correct loop (the false-flag rate; 0: none).
        bugs: The variants audited.
        seed: The seed (bug i uses ``seed + i``).
        delta: The δ of the claims and certificates.
        confidence: The certificates' confidence.
        certifier: The plug-in certifier (default the f-DP test with Steinke et al.'s baseline; a **lower** bound).
        engine: Where the runs run: local worker processes or a Dask cluster (:class:`~tsdp.attacks.canary.runs.RunEngine`;
            the Opacus loop is your training, one call per run).
        progress: Called with one line per bug, if given.

    Returns:
        The :class:`PlantedOpacusBench`: a :class:`BugAudit` per variant and the correct loop's :class:`FalseFlags`.
    """
    workers, cluster = engine.workers, engine.cluster
    rows = []
    for i, bug in enumerate(bugs):
        started = time.perf_counter()
        many = run_many(PlantedRun(bug, canaries), runs, seed=seed + i, workers=workers, cluster=cluster,
                        threads=threads_per_worker(workers, cluster))
        claim = claimed_epsilon(bug)
        cert = certify_evidence(many.evidence, delta, confidence, certifier=certifier, claimed=claim)
        rows.append(BugAudit(bug=bug, canaries=SPIKES if bug == "global-standardisation" else canaries, runs=runs,
                             epsilon_claimed=claim, epsilon_lower=cert.epsilon_lower, flagged=cert.violation,
                             auc={n: s.auc for n, s in cert.scores.items()}, seconds=time.perf_counter() - started))
        if progress:
            progress(f"{bug}: ε ≥ {rounded_down(cert.epsilon_lower, 3, fixed=True)} vs claimed "
                     f"{rounded_up(claim, 3, fixed=True)} -> "
                     f"{'FLAGGED' if cert.violation else 'not flagged'}")
    flagged = 0
    if null_audits:
        claim = claimed_epsilon("correct")
        many = run_many(PlantedRun("correct", canaries), null_audits, seed=seed + len(bugs), workers=workers,
                        cluster=cluster, threads=threads_per_worker(workers, cluster))
        for one in many.runs:
            flagged += certify_evidence(one, delta, confidence, certifier=certifier, claimed=claim).violation
    return PlantedOpacusBench(tuple(rows), FalseFlags(audits=null_audits, flagged=flagged,
                                                      rate=flagged / null_audits if null_audits else math.nan,
                                                      designed=1 - confidence))


def format_bench(result: Union[PlantedOpacusBench, dict]) -> str:
    """The bench as a table: bug, budget (canaries × runs), claimed ε, certified ε lower bound, best AUC, flagged; the
    bugs not caught, named as findings; the false flags of the correct loop.

    Args:
        result: What :func:`bench_planted` returned, or its ``as_dict()`` (``tsdp bench planted-opacus --json``).

    Returns:
        The table, one line per row.
    """
    if isinstance(result, PlantedOpacusBench):
        result = result.as_dict()
    lines = [f"{'bug':<24}{'budget':>12}{'claimed ε':>11}{'ε lower':>9}{'AUC':>7}  flagged"]
    for r in result["rows"]:
        lines.append(f"{r['bug']:<24}{str(r['canaries']) + ' x ' + str(r['runs']):>12}{rounded_up(r['epsilon_claimed'], 3, fixed=True):>11}"
                     f"{rounded_down(r['epsilon_lower'], 3, fixed=True):>9}{max(r['auc'].values()):>7.3f}  {'yes' if r['flagged'] else 'no'}")
    missed = [r["bug"] for r in result["rows"] if r["bug"] != "correct" and not r["flagged"]]
    if missed:
        lines.append(f"not caught within these budgets (findings; the module docstring of "
                     f"tsdp.bench.planted_opacus gives the reasons): {', '.join(missed)}")
    f = result["false_flags"]
    lines.append(f"correct loop flagged in {f['flagged']} of {f['audits']} audits (rate {f['rate']:.3f}; "
                 f"designed at most {f['designed']:.2f})")
    return "\n".join(lines)


__all__ = ["BUGS", "CONFIG", "BugAudit", "FalseFlags", "PlantedOpacusBench", "PlantedRun", "bench_planted", "claimed_epsilon", "format_bench", "loader_config",
           "opacus_train", "runtime", "squared_error"]
