"""The inference-time privacy mechanism of paper Appendix H, in torch (its bound: T15, an upper bound).

Each context step is kept independently with probability r (Poisson, data-independent),
kept values get N(0, σ²) noise, dropped values are imputed with the mean of the kept noisy
values (0 when none is kept), and a trained forecaster samples forecasts from the result.
Everything is batched over leading dimensions (series, trials) and runs on the tensors'
device (cuda when given cuda tensors, else cpu); randomness comes from a ``torch.Generator``,
drawn on its own device and moved to the tensors' (``tsdp forecast predict`` draws on a CPU generator, so a seed
gives the same draws on every device), so runs are reproducible. A release is private only while its generator's
seed is secret (whoever knows it redraws the pattern and noise): ``tsdp forecast predict`` seeds from the operating
system's entropy unless given ``--seed``.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Optional, Sequence, Tuple

import torch

from tsdp.theorems.config import ConfigError, check_int
from tsdp.training import windows
from tsdp.training.metrics import BYTES_PER_SAMPLE_STEP
from tsdp.training.samplers import drawable_rate
from tsdp.verify.json_data import Record, omitted_when_none

Imputation = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

# The keep mask is a float64 uniform (53 random bits) below r, whatever the contexts' dtype: float32 uniforms would
# keep with probability r rounded up to a multiple of 2^-24 (a rate below 2^-24 kept as 2^-24), more than T15 charges.
_KEEP_DTYPE = torch.float64


def mean_impute(noisy: torch.Tensor, kept: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The paper's imputation: every dropped step gets the mean of the kept noisy values of its
    series (last axis); 0 where nothing is kept. Uses only released values (``x`` is unused),
    so the output is a post-processing of (pattern, kept noisy values) as T15's proof needs.

    Args:
        noisy: The noisy contexts.
        kept: The kept mask.
        x: The original contexts (unused).

    Returns:
        The imputed contexts.
    """
    count = kept.sum(-1, keepdim=True)
    total = torch.where(kept, noisy, torch.zeros_like(noisy)).sum(-1, keepdim=True)
    mean = torch.where(count > 0, total / count.clamp(min=1), torch.zeros_like(total))
    return mean.expand_as(noisy)


def private_context(x: torch.Tensor, r: float, sigma: float, generator: torch.Generator,
                    impute: Imputation = mean_impute) -> Tuple[torch.Tensor, torch.Tensor]:
    """(released context, kept mask) for contexts ``x`` (..., L_C): Poisson keep rate r, N(0, σ²) on kept
    values, ``impute`` (default :func:`mean_impute`) on dropped ones (T15's mechanism). Vectorised over leading axes.
    Each step is kept when a float64 uniform falls below r rounded down to the uniform's 2^-53 grid
    (:func:`tsdp.training.samplers.drawable_rate`): a rate at most r, less by under 2^-53, for any dtype of ``x``
    (float64(r) itself would keep the grid point just below it too, a rate above r).
    The draws are made on ``generator``'s device and moved to ``x``'s: a CPU generator gives the same release on
    every device.

    Args:
        x: The contexts (..., L_C).
        r: The keep rate.
        sigma: The noise's std.
        generator: The draws' random stream.
        impute: The imputation of dropped values.

    Returns:
        (released context, kept mask).
    """
    if not 0 < r <= 1:
        raise ValueError(f"keep rate r must be in (0, 1], got {r}")
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    keep_below = drawable_rate(Fraction(r))  # never above r: T15 charges r
    kept = torch.rand(x.shape, generator=generator, device=generator.device, dtype=_KEEP_DTYPE).to(x.device) < keep_below
    noisy = x + sigma * torch.randn(x.shape, generator=generator, device=generator.device, dtype=x.dtype).to(x.device)
    return torch.where(kept, noisy, impute(noisy, kept, x)), kept




def check_samples(n_samples, n_series: int, context_length: int, forecast_length: int) -> int:
    """``n_samples`` (>= 1) when the sample paths of ``n_series`` series fit the memory limit
    (``TSDP_MEMORY_LIMIT``, :func:`tsdp.verify.pld.resolve_memory_limit`); ConfigError naming
    ``samples`` with the estimated size otherwise, before anything is allocated.

    Args:
        n_samples: The sample paths per series.
        n_series: The series.
        context_length: L_C.
        forecast_length: L_F.

    Returns:
        ``n_samples``.

    Raises:
        ConfigError: Naming ``samples``.
    """
    from tsdp.verify.pld import resolve_memory_limit

    n_samples = check_int("samples", n_samples, 1)
    need = n_samples * n_series * (context_length + forecast_length) * BYTES_PER_SAMPLE_STEP
    limit = resolve_memory_limit()
    if need > limit:
        raise ConfigError("samples", f"{n_samples} sample paths of {n_series} series need about {need / 2**30:.3g} "
                                     f"GiB, more than the memory limit of {limit / 2**30:.3g} GiB (TSDP_MEMORY_LIMIT)",
                          n_samples)
    return n_samples


def private_forecast(model: torch.nn.Module, x: torch.Tensor, r: float, sigma: float, n_samples: int,
                     generator: torch.Generator, covariates: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Forecast sample paths (B, n_samples, L_F) of ``model`` from privatised contexts ``x`` (B, L_C).

    One release per series (T15 per release; the forecast is post-processing of the context), private while
    ``generator``'s seed is secret (seed it from fresh entropy, e.g. ``secrets.randbits(63)``, to release). The
    memory check counts the model's ``forecast_length`` (tsdp's models), at least one step. ``covariates``:
    the windows' covariates for a model that reads them (:func:`forecast_covariates`; public, not privatised).

    Args:
        model: The forecaster (with ``sample``).
        x: The contexts (B, L_C).
        r: The keep rate.
        sigma: The noise's std.
        n_samples: Sample paths per series.
        generator: The draws' random stream.
        covariates: The windows' covariates (None: none).

    Returns:
        The (B, n_samples, L_F) sample paths.
    """
    check_samples(n_samples, x.shape[0], x.shape[1], getattr(model, "forecast_length", 1))
    released, _ = private_context(x, r, sigma, generator)
    with torch.no_grad():
        extra = () if covariates is None else (covariates.to(x.device),)
        return model.sample(released.to(torch.float32), n_samples, generator, *extra)


def forecast_covariates(model: torch.nn.Module, freq: Optional[str], starts, lengths: Sequence[int],
                        context_length: int, forecast_length: int) -> Optional[torch.Tensor]:
    """The covariates of the windows that forecast the L_F values after series of ``lengths`` values (calendars
    ``starts``, or None) for ``model`` trained on data of step ``freq`` (:func:`load_model`'s header): None for a
    model that reads none. ValueError when the model reads calendar features the series cannot give (no calendar,
    or another step).

    Args:
        model: The forecaster.
        freq: The step of its training data (None: none).
        starts: The series' calendars (or None).
        lengths: The series' lengths.
        context_length: L_C.
        forecast_length: L_F.

    Returns:
        The covariates, or None.

    Raises:
        ValueError: Calendar features the series cannot give.
    """
    from tsdp.datasets.time_features import calendar_features, same_step

    if not windows.covariates_of(model):
        return None
    if freq is not None and not calendar_features(freq):
        freq = None  # a step without calendar features (yearly): the age feature only
    given = None if starts is None else starts[0].freq
    if freq is not None and not (given is not None and same_step(given, freq)):
        raise ValueError(f"the model reads the calendar features of data at the step {freq!r}, and the series "
                         + (f"has no calendar (give --data with timestamps at that step: a table's timestamps, or GluonTS "
                            f"JSON lines with --freq {freq})" if given is None else
                            f"is at the step {given!r}"))
    if freq is None:
        starts = None  # trained without a calendar: the age feature only
    return windows.forecast_covariates(starts, lengths, context_length, forecast_length, freq)


@dataclass(frozen=True)
class TrainingScores(Record):
    """How a forecaster scored when `tsdp train` saved it: the scaled test CRPS of its data's held-out windows
    (:class:`tsdp.training.result.TrainResult`), with seasonal naive's and its untrained initialisation's there.
    A model that does not beat seasonal naive is undertrained, and its forecasts' quantiles (of its own Student-t law)
    are as wide as such a model's are.

    Attributes:
        crps: The trained model's test CRPS.
        seasonal_naive_crps: Seasonal naive's on the same windows.
        untrained_crps: The model's at its initialisation.
    """

    crps: float
    seasonal_naive_crps: float
    untrained_crps: float

    @property
    def beats_seasonal_naive(self) -> bool:
        """Whether the trained model's test CRPS is below seasonal naive's (`tsdp train`'s note says when not)."""
        return self.crps < self.seasonal_naive_crps


def save_model(path, model: torch.nn.Module, name: str, context_length: int, forecast_length: int,
               freq: Optional[str] = None, trained: Optional[TrainingScores] = None) -> None:
    """Write a trained forecaster for `tsdp forecast`: CLI name, L_C, L_F, DeepAR's lags and covariates per
    position, the step ``freq`` of the data it was trained on (its calendar features), how it scored, the weights.
    The file appears whole or not at all (:func:`tsdp.verify.file_cache.write_atomic`: a run stopped while saving
    leaves no half-written model).

    Args:
        path: The file.
        model: The trained forecaster.
        name: Its CLI name.
        context_length: L_C.
        forecast_length: L_F.
        freq: The step of its training data (None: none).
        trained: Its test scores at training (None: not known).
    """
    import io

    from tsdp.verify.file_cache import write_atomic

    blob = io.BytesIO()
    torch.save({"model": name, "context_length": context_length, "forecast_length": forecast_length,
                "lags": list(getattr(model, "lags", ())), "covariates": windows.covariates_of(model), "freq": freq,
                "trained": None if trained is None else trained.as_dict(), "state_dict": model.state_dict()}, blob)
    write_atomic(path, blob.getvalue())


@dataclass(frozen=True)
class ModelHeader(Record):
    """What a model file of :func:`save_model` says of its forecaster (the ``model`` of `tsdp forecast --json`).

    Attributes:
        model: The forecaster's CLI name.
        context_length: L_C.
        forecast_length: L_F.
        freq: The step of the data it was trained on (None: none; its calendar features).
        trained: Its test scores when it was saved (None, and left out of the JSON, for a file that has none).
    """

    model: str
    context_length: int
    forecast_length: int
    freq: Optional[str]
    trained: Optional[TrainingScores] = omitted_when_none()


def load_model(path, device: torch.device) -> Tuple[torch.nn.Module, ModelHeader]:
    """(model in eval mode on ``device``, its header) from :func:`save_model`'s file; ValueError if not one.

    Args:
        path: The file.
        device: The torch device.

    Returns:
        (model, header).

    Raises:
        ValueError: Not a file of :func:`save_model`, or its weights are not finite.
    """
    from pathlib import Path

    from tsdp.training.models import make_model

    if not Path(path).is_file():  # nothing to read: say so, not that it is some other file
        raise ValueError(f"{path}: {'is a folder, not a file' if Path(path).is_dir() else 'no such file'}")
    try:
        blob = torch.load(path, map_location=device, weights_only=True)
        extra = {"lags": blob["lags"], "covariates": blob["covariates"]} if blob["model"] == "deepar" else {}
        model = make_model(blob["model"], blob["context_length"], blob["forecast_length"], **extra).to(device)
        model.load_state_dict(blob["state_dict"])
        trained = None if blob.get("trained") is None else TrainingScores(
            **{k: float(v) for k, v in blob["trained"].items()})
    except Exception as err:  # noqa: BLE001 - whatever the file holds, it is not a model tsdp wrote
        why = str(err).strip().splitlines()[0][:120] if str(err).strip() else ""
        raise ValueError(f"{path} is not a model file written by this version's `tsdp train --save` (a model saved "
                         f"by another version may have other layers; {type(err).__name__}"
                         f"{': ' + why if why else ''})") from err
    if not all(bool(torch.isfinite(t).all()) for t in model.state_dict().values() if t.is_floating_point()):
        raise ValueError(f"{path} holds a model whose weights are not finite (NaN or inf: a training that diverged); "
                         "it forecasts nothing")
    model.eval()
    return model, ModelHeader(blob["model"], blob["context_length"], blob["forecast_length"], blob["freq"], trained)
