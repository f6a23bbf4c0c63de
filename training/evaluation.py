"""Scoring a model of the loop: the test CRPS of its sample paths, the validation loss of its checkpoints, and the
test windows a run scores."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

import numpy as np
import torch

from tsdp.theorems.config import TrainingConfig

from tsdp.datasets.series import last_values

from .metrics import BYTES_PER_SAMPLE_STEP, crps_from_quantiles, sample_quantiles
from .windows import covariates_of, forecast_covariates, pad_covariates, pad_series, padding_of

if TYPE_CHECKING:
    from tsdp.datasets.benchmarks import ForecastSplit

    from .plan import RunPlan


def evaluate(model: torch.nn.Module, contexts: torch.Tensor, targets: np.ndarray, *, n_samples: int,
             generator: torch.Generator, device: torch.device, covariates: Optional[torch.Tensor] = None) -> float:
    """Test CRPS (mean weighted quantile loss of ``n_samples`` sample paths) of forecasts from ``contexts``.

    The windows are drawn in chunks whose sample paths fit ``TSDP_MEMORY_LIMIT`` (:data:`BYTES_PER_SAMPLE_STEP` per
    path step), in order from one generator: one chunk, the whole set at once, wherever it fits. Each window's
    quantiles come from its own paths, so the chunks give the same CRPS as one draw of the same paths would; memory
    stays bounded for thousands of test windows. A model with a ``path_quantiles`` method (the direct forecasters,
    :meth:`tsdp.training.models.DirectForecaster.path_quantiles`) gives the quantiles of the paths ``sample`` would
    draw, bit for bit, without drawing every path.

    Args:
        model: The forecaster (left in training mode).
        contexts: The test contexts (M, L_C).
        targets: Their targets (M, L_F).
        n_samples: Sample paths per window.
        generator: The generator the paths are drawn from.
        device: The model's device.
        covariates: For a model that reads them, the windows' covariates (M, L_C + L_F, F); else None.

    Returns:
        The CRPS.
    """
    from tsdp.verify.pld import resolve_memory_limit

    per_step = BYTES_PER_SAMPLE_STEP + (0 if covariates is None else 4 * covariates.shape[-1])  # + float32 covariates
    per_window = n_samples * (contexts.shape[1] + targets.shape[1]) * per_step
    chunk = max(1, resolve_memory_limit() // per_window)
    model.eval()
    parts = []
    for i in range(0, contexts.shape[0], chunk):
        extra = () if covariates is None else (covariates[i:i + chunk].to(device),)
        if hasattr(model, "path_quantiles"):  # the same quantiles without every path (a direct forecaster's)
            parts.append(model.path_quantiles(contexts[i:i + chunk].to(device), n_samples, generator, *extra))
        else:
            paths = model.sample(contexts[i:i + chunk].to(device), n_samples, generator, *extra)
            parts.append(sample_quantiles(paths.cpu().numpy()))
    model.train()
    return crps_from_quantiles(targets, np.concatenate(parts, axis=1))


def validation_loss(model: torch.nn.Module, contexts: torch.Tensor, targets: torch.Tensor,
                    covariates: Optional[torch.Tensor] = None) -> float:
    """Mean negative log-likelihood of the validation windows (the paper's checkpoint criterion).

    Args:
        model: The forecaster (left in training mode).
        contexts: The validation contexts (M, L_C).
        targets: Their targets (M, L_F).
        covariates: For a model that reads them, the windows' covariates; else None.

    Returns:
        The mean NLL.
    """
    model.eval()
    with torch.no_grad():
        inputs = (contexts, targets) if covariates is None else (contexts, targets, covariates)
        loss = float(model(*inputs).mean())
    model.train()
    return loss


def run_tensors(model: torch.nn.Module, config: TrainingConfig, plan: "RunPlan", split: Optional["ForecastSplit"],
                device: torch.device) -> Tuple:
    """The tensors a planned run trains and is scored on, laid out for ``model``.

    Args:
        model: The run's model (its padding, :func:`~tsdp.training.windows.padding_of`; whether it reads
            covariates).
        config: The run's configuration.
        plan: The run's :class:`~tsdp.training.plan.RunPlan`.
        split: The benchmark split (None: the series' own test windows).
        device: The device the training tensors go to.

    Returns:
        (padded training series on ``device``, the last L_C values of every test history, the series' padded
        covariates on ``device``, the test windows' covariates); the covariates None for a model that reads none.
    """
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


__all__ = ["evaluate", "run_tensors", "validation_loss"]
