"""The paper's bounds as data and math: configuration, exact mixture pairs, H_α engine, registry.

Never imports torch or dp-accounting (DESIGN.md layering).
"""
from .bounds.base import TheoremError
from .config import DEFAULT_CONFIG, ConfigError, TrainingConfig
from .hockey_stick import hockey_stick, hockey_stick_mp
from .mixture import GaussianMixture, MixturePair
from .registry import REGISTRY, get, resolve, select_bound

__all__ = [
    "DEFAULT_CONFIG", "ConfigError", "TrainingConfig", "TheoremError",
    "GaussianMixture", "MixturePair", "hockey_stick", "hockey_stick_mp",
    "REGISTRY", "get", "resolve", "select_bound",
]
