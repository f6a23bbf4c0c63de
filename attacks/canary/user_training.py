"""One-run canary audit of *your* training function (f-DP one-run test with Steinke et al.'s baseline,
:mod:`attacks.canary.evidence`): :func:`audit_training`.

You give ``train(series) -> model``: any code (your model, optimizer, data pipeline, Opacus or not) that trains on a
list of 1-D float arrays. Two kinds of canaries (``canary=``):

* ``"gradient"`` (the default; white-box): m gradient canaries hooked into the first torch optimizer your code steps
  (:mod:`attacks.canary.optimizer_canaries`), scored on the gradient the optimizer stepped on less the data's
  per-window gradients under ``loss`` (:mod:`attacks.canary.data_span`) by the scores of
  :mod:`attacks.canary.gradient`, with the mechanism tests of :mod:`attacks.canary.mechanism` beside the bound
  (:func:`gradient_evidence`). ``config`` must be the batching your loader draws and the σ your accounting claims.
* ``"spike"`` (black-box): m spike canaries placed in your data as :func:`attacks.canary.trained_model.audit_model`
  places them, scored on the returned model's per-window losses with and without each, bounded per window
  (:func:`spike_evidence`, :func:`window_evidence`).

The reported ``epsilon_lower`` is a **lower** bound, with probability ≥ ``confidence``, on the ε of the training at
event level (one-run theorems: Mahloujifar, Melis & Chaudhuri 2025, :mod:`attacks.canary.fdp_bound`; Steinke, Nasr &
Jagielski 2023, :mod:`attacks.canary.steinke_bound`); ``violation`` says whether it exceeds the ε you claim. The
manual's "Audit your own training" tutorial explains the scores and what each test can see.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

import numpy as np

from tsdp.theorems.config import (SEED_MAX, ConfigError, TrainingConfig, check_confidence, check_delta, check_epsilon,
                                  check_int, check_real)

from tsdp.datasets.series import SeriesData
from tsdp.training.train import FLOAT32_MAX

from .options import AuditOptions, CanaryOptions
from .audit_result import EngineRun, GradientRun, TrainingAudit
from .evidence import CERTIFIERS, Evidence, certify_evidence, pool
from .mechanism import pooled
from .one_run import guess_grid
from .steinke_bound import guess_sets
from .gradient import MAX_DIRECTION_ENTRIES, sound_profile
from .ideal import ideal_epsilon
from .time_limit import check_can_limit, check_timeout
from .guarded_calls import TimeLimitError, UserFunctionError, _check_arity
from .training_runs import CANARIES, SPIKE_SCORES, GradientRunEvidence, make_task, spike_evidence, window_evidence


CLIP_MAX = math.sqrt(FLOAT32_MAX)
"""The largest clipping norm C (and gradient scale) of gradient canaries: a canary's contribution C · u is summed and
squared in the float32 model's arithmetic, so C² must stay finite there (1.8e19)."""

SPIKE_MAX = float(2 ** 24)
"""The largest spike (in standard deviations of its series): beyond 2^24, float32 (the models' precision) rounds the
series' own values away next to the spike."""


@dataclass(frozen=True)
class AuditInputs:
    """An audit's values checked before any training (:func:`check_audit_inputs`).

    Attributes:
        canaries: m.
        delta: δ.
        epsilon: The claimed ε (None: none).
        seed: The seed.
        canary: The canaries' options, C checked.
        options: The audit's options, the confidence checked.
    """

    canaries: int
    delta: float
    epsilon: Optional[float]
    seed: int
    canary: CanaryOptions
    options: AuditOptions


def check_audit_inputs(train: Optional[Callable], loss: Optional[Callable], *, canaries: int, delta: float,
                       epsilon: Optional[float], seed: int, canary: CanaryOptions,
                       options: AuditOptions = AuditOptions()) -> AuditInputs:
    """The audit's values validated before any training, every value whatever the kind of canary uses it (ConfigError
    naming the value; :class:`UserFunctionError` for a ``train`` / ``loss`` that cannot take its arguments; ``train``
    None: the values only, as for a plan): m at most the direction entries of gradient canaries (m · d with d ≥ 1),
    C and the gradient scale at most :data:`CLIP_MAX`, the spike at most :data:`SPIKE_MAX`, the time limit.

    Args:
        train: Your training function (None: none).
        loss: Your per-window loss (None: none).
        canaries: m.
        delta: δ.
        epsilon: The claimed ε (None: none).
        seed: The seed.
        canary: The canaries' options (kind, spike, C, gradient scale).
        options: The audit's options (confidence, time limit).

    Returns:
        The :class:`AuditInputs` checked.

    Raises:
        ConfigError: A bad value, naming it.
        UserFunctionError: ``train`` or ``loss`` cannot take its arguments.
    """
    check_timeout(options.timeout)
    if canary.kind not in CANARIES:
        raise ConfigError("canary", f"must be one of {', '.join(CANARIES)}", canary.kind)
    clip = check_real("clip", canary.clip, low=0.0, high=CLIP_MAX, low_open=True)
    scale = canary.gradient_scale
    if scale is not None:
        check_real("gradient_scale", scale, low=0.0, high=CLIP_MAX, low_open=True)
        if clip * scale > CLIP_MAX:
            raise ConfigError("gradient_scale", f"times the clipping norm {clip:g} must be <= {CLIP_MAX:.3g}: the "
                                                "canaries' step would overflow float32", scale)
    canaries = check_int("canaries", canaries, 2, MAX_DIRECTION_ENTRIES)
    confidence = check_confidence(options.confidence)
    delta = check_delta(delta)
    spike = check_real("spike", canary.spike, low=0.0, high=SPIKE_MAX, low_open=True)
    if epsilon is not None:
        epsilon = check_epsilon(epsilon)
    seed = check_int("seed", seed, 0, SEED_MAX)
    if train is not None:
        _check_arity("train", train, [])
    if loss is not None:
        _check_arity("loss", loss, None, None, None)
    return AuditInputs(canaries, delta, epsilon, seed, canary.with_(clip=clip, spike=spike),
                       options.with_(confidence=confidence))


DATA_CANARY_SCALE = 1e3
"""How much :func:`with_data_canaries` scales a series: its windows' raw gradients grow with it (a squared error's
by up to its square), far above any C a claim uses, unless the training clips them."""


def with_data_canaries(data: Union[SeriesData, Sequence], count: int, scale: float = DATA_CANARY_SCALE) -> SeriesData:
    """``data`` with its first ``count`` series multiplied by ``scale``: *data canaries* for the clipping test of
    :mod:`attacks.canary.mechanism`, passed through the user's own per-window path (gradient canaries enter after the
    user's clipping and cannot show a missing clip). Under the claim each of their windows still contributes at most C
    to a step; unclipped, a step that draws one moves far more than Λ · C plus the noise. They change the data, not
    the canaries' law: the ε bound stays a **lower** bound (the one-run game holds for any non-canary data).

    Args:
        data: The series.
        count: The data canaries (0 to N).
        scale: Their factor.

    Returns:
        The series with the data canaries.

    Raises:
        ConfigError: ``count`` out of range.
    """
    data = as_series(data)
    count = check_int("data_canaries", count, 0, len(data.series))
    return SeriesData(tuple(s * scale if i < count else s for i, s in enumerate(data.series)), data.starts)


def audit_training(train: Callable[[list], object], data: Union[SeriesData, Sequence], config: TrainingConfig, *,
                   canaries: int, delta: float, epsilon: Optional[float] = None,
                   canary: Union[str, CanaryOptions] = "gradient", loss: Optional[Callable] = None, seed: int = 0,
                   options: AuditOptions = AuditOptions()) -> TrainingAudit:
    """One-run canary audit of ``train`` on ``data`` (module docstring); a **lower** bound on the training's ε.

    Args:
        train: Your training: ``train(series) -> model`` on a list of 1-D float arrays.
        data: The series (a :class:`SeriesData` or a sequence of 1-D arrays).
        config: For gradient canaries the batching your loader draws and the σ you claim; for spike canaries the
            window geometry.
        canaries: m, the canaries of the run.
        delta: The δ of the bound.
        epsilon: The ε your training claims at ``delta`` (None: no claim; ``violation`` then only from a failed
            mechanism test).
        canary: "gradient" (white-box, hooked into your optimizer) or "spike" (black-box, scored on the returned
            model), or a :class:`~attacks.canary.options.CanaryOptions` of that kind with its knobs (the
            spikes' size; C, the gradient's scale, the entries held per step, the data canaries and the device of
            gradient canaries).
        loss: Your per-window training loss ``loss(model, context, forecast) -> (B,)``: gradient canaries take the
            data's gradients off with it, spike canaries score with it (default ``model(context, forecast)``).
        seed: The seed of the canaries, their inclusion bits and participations.
        options: The confidence, the analysis ("fdp": the f-DP test with Steinke et al.'s bound as its baseline;
            "steinke" alone), the time limit and the progress bar
            (:class:`~attacks.canary.options.AuditOptions`).

    Returns:
        A :class:`attacks.canary.audit_result.TrainingAudit` (``as_dict()``: its JSON): ``epsilon_lower``,
        ``violation`` against ``epsilon``, each score's certified bound in ``scores`` (guesses, AUC, the
        perfect-guess ``ceiling`` and ``limited_by``); gradient canaries add ``gradient``
        (:class:`attacks.canary.audit_result.GradientRun`: the optimizer's facts and the noise, clipping and sampling
        tests of :class:`attacks.canary.mechanism.MechanismTests`), a failed test being a violation too.

    Raises:
        ConfigError: A bad argument, naming it (checked before any training).
        UserFunctionError: ``train`` or ``loss`` failed, returned None or gave non-finite losses.
        TimeLimitError: The run exceeded the time limit.
    """
    checked = check_audit_inputs(train, loss, canaries=canaries, delta=delta, epsilon=epsilon, seed=seed,
                                 canary=CanaryOptions.of(canary), options=options)
    canary, options = checked.canary, checked.options
    check_can_limit(options.timeout)
    _certifier(options.analysis)  # an unknown analysis is refused before any training
    canary = canary.with_(span_entries=check_int("span_entries", canary.span_entries, 1))
    check_claimed_curve(canary.kind, options.analysis, config)
    data = with_data_canaries(data, canary.data_canaries)
    task = make_task(canary, train, data, config, checked.canaries, loss=loss, timeout=options.timeout,
                     progress=options.progress)
    task.check()
    return training_audit([task(np.random.SeedSequence(checked.seed))], config, canary=canary, delta=checked.delta,
                          epsilon=checked.epsilon, options=options, seed=checked.seed)


def tests_claimed_curve(canary: str, analysis: str) -> bool:
    """Whether the audit tests the run's claimed trade-off curve: gradient canaries (the optimizer's steps are
    seen) under the f-DP certifier (the only one that takes a curve).

    Args:
        canary: "gradient" or "spike".
        analysis: "fdp" or "steinke".

    Returns:
        Whether the claimed curve is tested.
    """
    return canary == "gradient" and analysis == "fdp"


def check_claimed_curve(canary: str, analysis: str, config: TrainingConfig) -> None:
    """Before any training: ConfigError naming ``top`` when the analysis tests the claimed curve
    (:func:`tests_claimed_curve`) and tsdp has no sound **upper** bound for ``config``'s scheme to draw it from
    (:func:`tsdp.theorems.registry.select_bound` refuses: a Poisson top level, pooled windows with k > 1), naming
    the analysis that needs none (Steinke et al.'s bound, ``analysis="steinke"``).

    Args:
        canary: "gradient" or "spike".
        analysis: "fdp" or "steinke".
        config: The claimed configuration.

    Raises:
        ConfigError: Naming ``top`` when no sound bound gives the curve.
    """
    from tsdp.theorems.errors import TheoremError
    from tsdp.theorems.registry import select_bound

    if not tests_claimed_curve(canary, analysis):
        return
    try:
        select_bound(config)
    except TheoremError as exc:
        reason = str(exc).split(";")[0].split(": ")[0]  # the scheme's reason, not the advice of another command
        raise ConfigError("top", f"the f-DP test checks the claimed trade-off curve, tsdp's sound ε of the "
                                 f"configuration, which it cannot draw: {reason}; audit this scheme with "
                                 f"analysis='steinke' (Steinke et al.'s bound needs no claimed curve)",
                          config.top) from None


def claimed_profile(canary: str, analysis: str, config: TrainingConfig, runs: Sequence[Evidence]):
    """The runs' claimed profile for the f-DP test's curve check (:func:`tests_claimed_curve`, else None): tsdp's
    sound accountant (an **upper** bound on the correct loop's δ(ε)) of ``config`` over the most steps an optimizer
    of the runs took. The pooled canaries are tested against one curve, which must hold for each run's canaries: a
    run's sound profile grows with its steps, so the run with the most steps gives it (a run with fewer steps, the
    first one's, would claim too little for the others: a correct training flagged).

    Args:
        canary: "gradient" or "spike".
        analysis: "fdp" or "steinke".
        config: The claimed configuration.
        runs: The runs' evidence (their steps).

    Returns:
        The claimed profile (:func:`attacks.canary.gradient.sound_profile`), or None when the curve is not tested.
    """
    return sound_profile(config, max(r.steps for r in runs)) if tests_claimed_curve(canary, analysis) else None


def analyses_of(canary: str, analysis: str) -> tuple:
    """The analyses the certifier of ``analysis`` runs for ``canary`` canaries (their shares of the level are fixed by
    these names): what a plan assumes. "fdp": the f-DP test's analyses, gradient canaries adding the claimed curve
    (:func:`claimed_profile`); "steinke": Steinke et al.'s bound alone.

    Args:
        canary: "gradient" or "spike".
        analysis: "fdp" or "steinke".

    Returns:
        The analyses' names.
    """
    if analysis == "steinke":
        return ("steinke",)
    return ("dp", "gdp", "steinke") + (("claimed",) if tests_claimed_curve(canary, analysis) else ())


def guess_sets_of(analysis: str) -> Callable[[int], np.ndarray]:
    """The guess sets of m canaries that the certifier of ``analysis`` tests (what its plan counts): the f-DP test's
    :func:`attacks.canary.one_run.guess_grid`, or Steinke et al.'s :func:`attacks.canary.steinke_bound.guess_sets`.

    Args:
        analysis: "fdp" or "steinke".

    Returns:
        The function of m giving the guess sets.

    Raises:
        ConfigError: An unknown analysis.
    """
    return guess_sets if _certifier(analysis) is CERTIFIERS["steinke"] else guess_grid


def training_audit(runs: Sequence[Evidence], config: TrainingConfig, *, canary: CanaryOptions, delta: float,
                   epsilon: Optional[float], options: AuditOptions, seed: int,
                   engine: Optional[EngineRun] = None) -> TrainingAudit:
    """The runs' evidence (in run order) certified (:func:`certify_evidence`, the canaries pooled,
    :func:`attacks.canary.evidence.pool`) by the certifier of ``options.analysis``, a **lower** bound on ε at
    ``delta``, with what the audit saw: for gradient canaries a :class:`GradientRun` (the first run's optimizer, steps,
    C and gradient scale, the parameters d, ``epsilon_ideal``, the same audit's certified ε on the claimed mechanism
    itself (:func:`attacks.canary.ideal.ideal_epsilon` with all the runs' canaries, their cross-talk when a run has
    more canaries than parameters: its power at the claim), and the noise, clipping and sampling tests of every run
    (:mod:`attacks.canary.mechanism`, pooled over the runs), whose failure is a violation too. ``engine``: how the
    multi-run engine ran them (:func:`attacks.canary.runs.run_many`; None: one run here).

    Args:
        runs: The runs' evidence, in run order.
        config: The claimed configuration.
        canary: The canaries' options (the kind; the spikes' size and the data canaries, reported).
        delta: δ.
        epsilon: The claimed ε (None: none).
        options: The confidence and the analysis ("fdp" or "steinke").
        seed: The seed of the ideal audit.
        engine: How the multi-run engine ran the runs (None: one run here).

    Returns:
        The :class:`~attacks.canary.audit_result.TrainingAudit`.

    Raises:
        ConfigError: An unknown analysis.
    """
    kind, analysis, confidence = canary.kind, options.analysis, options.confidence
    certifier = _certifier(analysis)
    first = runs[0]
    bound = certify_evidence(first if len(runs) == 1 else pool(runs), delta, confidence, certifier=certifier,
                             claimed=epsilon, profile=claimed_profile(kind, analysis, config, runs))
    gradient = None
    if kind == "gradient":
        removed = 0.0 if first.data_part is None else first.data_part.windows_per_step
        ideal = ideal_epsilon(config, sum(len(r.included) for r in runs), first.steps, delta, confidence,
                              certifier=certifier, seed=seed, parameters=first.parameters,
                              per_run=len(first.included), removed=removed)
        gradient = first.extended(GradientRun, parameters=first.parameters, epsilon_ideal=ideal,
                                  mechanism=pooled([r.mechanism for r in runs]))
    return bound.extended(TrainingAudit,
                          violation=bool(bound.violation or (gradient is not None and gradient.mechanism.failed)),
                          canary=kind, analysis=analysis, data_canaries=canary.data_canaries, runs=len(runs),
                          spike=canary.spike if kind == "spike" else None, gradient=gradient, engine=engine)


def _certifier(analysis: str):
    if analysis not in CERTIFIERS:
        raise ConfigError("analysis", f"must be one of {', '.join(CERTIFIERS)}", analysis)
    return CERTIFIERS[analysis]


def as_series(data: Union[SeriesData, Sequence]) -> SeriesData:
    """``data`` as :class:`SeriesData` (a sequence of 1-D arrays is copied as float64).

    Args:
        data: A :class:`SeriesData` or a sequence of 1-D arrays.

    Returns:
        The :class:`SeriesData`.
    """
    return data if isinstance(data, SeriesData) else SeriesData(tuple(np.asarray(s, dtype=np.float64) for s in data))


__all__ = ["CANARIES", "CLIP_MAX", "AuditInputs", "AuditOptions", "CanaryOptions", "DATA_CANARY_SCALE", "SPIKE_MAX", "SPIKE_SCORES", "GradientRunEvidence",
           "TimeLimitError", "UserFunctionError", "analyses_of", "as_series", "audit_training", "check_audit_inputs",
           "check_claimed_curve", "claimed_profile", "guess_sets_of", "make_task", "spike_evidence",
           "tests_claimed_curve", "training_audit", "window_evidence", "with_data_canaries"]
