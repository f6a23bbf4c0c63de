"""The layers of tsdp, bottom to top: each imports only those below it (docs/DESIGN.md, "Layering").

The one home of the list. tests/test_layout.py (the import rule and the wheel's packages),
docs/hooks/docstring_roles.py (repository paths in docstrings) and the docstring of :mod:`tsdp` are derived
from it; pyproject.toml's ``package-dir``, which setuptools reads without importing tsdp, is checked against it
(tests/test_layout.py).
"""
from __future__ import annotations

from typing import Dict, NamedTuple, Tuple


class Layer(NamedTuple):
    """One layer: its installed package, the repository folder it lives in, and what it holds."""

    package: str
    folder: str
    summary: str


LAYERS: Tuple[Layer, ...] = (
    Layer("tsdp.theorems", "theorems",
          "the catalogue T1-T15: configurations, mixture pairs, privacy profiles, constructions"),
    Layer("tsdp.verify", "verify", "privacy events, the accountant (dp-accounting PLDs), calibration, checks"),
    Layer("tsdp.executor", "executor",
          "independent units of work in this process, local processes or on Dask, re-run on failure"),
    Layer("tsdp.datasets", "datasets",
          "every series tsdp reads (synthetic, CSV, pandas, parquet, GluonTS, the paper's datasets)"),
    Layer("tsdp.training", "training", "the DP-SGD forecasting loop (torch): samplers, the noisy step, models, metrics"),
    Layer("tsdp.attacks", "attacks",
          "the auditors: Monte Carlo audits, canary audits; the inference-time mechanism and its CRPS table"),
    Layer("tsdp.experiments", "experiments", "the paper's privacy-utility grid (`tsdp experiment`)"),
    Layer("tsdp.testing", "testing", "soundness checks for anyone's accountant, hypothesis strategies, the pytest plugin"),
    Layer("tsdp.reports", "reports", "the tightness report"),
    Layer("tsdp.bench", "bench", "the benchmarks of `tsdp bench`"),
    Layer("tsdp.cli", "tsdp/cli", "the `tsdp` command"),
)
"""Every layer, bottom to top."""

FACADE = "tsdp"
"""The package of tsdp/: the public API (lazily re-exported from every layer) and the CLI."""

FOLDERS: Dict[str, str] = {**{layer.folder: layer.package for layer in LAYERS if "/" not in layer.folder},
                           FACADE: FACADE}
"""Repository folder -> installed package, for every top-level package folder (pyproject.toml's ``package-dir``)."""


def table() -> str:
    """The layers as the indented two-column list of :mod:`tsdp`'s docstring.

    Returns:
        One line per layer, bottom to top: its package and what it holds.
    """
    width = max(len(layer.package) for layer in LAYERS) + 2
    return "\n".join(f"    {layer.package:<{width}}{layer.summary}" for layer in LAYERS)
