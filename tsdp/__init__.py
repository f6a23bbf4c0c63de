"""tsdp: verify the privacy guarantees of DP-SGD for time-series forecasting.

The bounds of Schuchardt et al. (ICML 2025), "Privacy Amplification by Structured
Subsampling for Deep Differentially Private Time Series Forecasting", as code you can run.
Layers, each importing only those below it (:mod:`tsdp.layers`)::

{layers}

The names below are the public API. They load on first use, so ``import tsdp`` pulls in
neither sympy nor torch. The options objects of the functions exported here come with them (``tsdp.Budget``,
``tsdp.TrialPlan``, ``tsdp.AuditOptions``, ...), so that ``tsdp.train(config, "dlinear", data,
budget=tsdp.Budget(epochs=2))`` needs no other import, and so do the result classes they return
(``tsdp.TrainResult``, ``tsdp.AuditResult``, ``tsdp.TrainingAudit``, ...), for type hints and ``isinstance``.
"""
from __future__ import annotations

import importlib

from .layers import table as _layer_table

__doc__ = __doc__.format(layers=_layer_table())
__version__ = "0.1.0"

_EXPORTS = {
    # configuration and catalogue (tsdp.theorems)
    "TrainingConfig": "tsdp.theorems.config",
    "DEFAULT_CONFIG": "tsdp.theorems.config",
    "ConfigError": "tsdp.theorems.errors",
    "TheoremError": "tsdp.theorems.errors",
    "REGISTRY": "tsdp.theorems.registry",
    "get_bound": ("tsdp.theorems.registry", "get"),
    "select_bound": "tsdp.theorems.registry",
    "Bound": "tsdp.theorems.bounds.base",
    "CONSTRUCTIONS": "tsdp.theorems.constructions",
    "InferenceConfig": "tsdp.theorems.bounds.inference",
    # privacy events and the accountant (tsdp.verify)
    "TrainingStepDpEvent": "tsdp.verify.events",
    "TrainingEpochDpEvent": "tsdp.verify.events",
    "InferenceReleaseDpEvent": "tsdp.verify.events",
    "training_event": "tsdp.verify.events",
    "PldAccountant": "tsdp.verify.accountant",
    "account": "tsdp.verify.accountant",
    "EventAccounting": "tsdp.verify.event_accounting",
    "epsilon": "tsdp.verify.accounting",
    "delta": "tsdp.verify.accounting",
    "AccountingResult": "tsdp.verify.accounting",
    "calibrate_sigma": "tsdp.verify.calibration",
    "CalibrationResult": "tsdp.verify.calibration",
    # the loop and your own pipelines (tsdp.training)
    "make_sampler": "tsdp.training.samplers",
    "train": "tsdp.training.train",
    "TrainResult": "tsdp.training.result",
    "Budget": "tsdp.training.options",
    "Loop": "tsdp.training.options",
    "Evaluation": "tsdp.training.options",
    "Checkpoints": "tsdp.training.options",
    "WindowDataset": "tsdp.training.batch_sampler",
    "BiLevelBatchSampler": "tsdp.training.batch_sampler",
    # the auditors (tsdp.attacks)
    "audit": "tsdp.attacks.montecarlo.audit",
    "AuditResult": "tsdp.attacks.montecarlo.audit",
    "TrialPlan": "tsdp.attacks.montecarlo.options",
    "Statistic": "tsdp.attacks.montecarlo.options",
    "Confidence": "tsdp.attacks.montecarlo.options",
    "audit_model": "tsdp.attacks.canary.trained_model",
    "ModelAuditResult": "tsdp.attacks.canary.trained_model",
    "ModelTraining": "tsdp.attacks.canary.trained_model",
    "audit_training": "tsdp.attacks.canary.user_training",
    "TrainingAudit": "tsdp.attacks.canary.audit_result",
    "CanaryOptions": "tsdp.attacks.canary.options",
    "AuditOptions": "tsdp.attacks.canary.options",
    "PlanSearch": "tsdp.attacks.canary.planning",
    "InferenceGrid": "tsdp.attacks.inference.crps_table",
    "Releases": "tsdp.attacks.inference.crps_table",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    """Load a public name from its layer on first use (PEP 562)."""
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'tsdp' has no attribute {name!r}")
    module, attr = target if isinstance(target, tuple) else (target, name)
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__():
    return __all__
