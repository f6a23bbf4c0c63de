"""The paper's bounds as data and math: configuration, exact mixture pairs, H_α engine, registry.

Never imports torch or dp-accounting (DESIGN.md layering). The names below load lazily
(PEP 562), so ``tsdp.theorems.config`` (the configuration, needed by every CLI parser)
imports without sympy.
"""
import importlib

_EXPORTS = {
    "TheoremError": ".errors",
    "DEFAULT_CONFIG": ".config", "ConfigError": ".config", "TrainingConfig": ".config",
    "hockey_stick": ".hockey_stick", "hockey_stick_mp": ".hockey_stick",
    "GaussianMixture": ".mixture", "MixturePair": ".mixture",
    "REGISTRY": ".registry", "get": ".registry", "resolve": ".registry", "select_bound": ".registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value  # after the import, which binds a same-named submodule (hockey_stick) here
    return value
