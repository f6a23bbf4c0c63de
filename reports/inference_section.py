"""Report section: inference-time privacy (paper Section 4.4 and Appendix H, bound T15).

The shape of the paper's inference tables: test CRPS of private forecasts by ε and keep rate
r, σ calibrated per cell under T15's sound accounting (an upper bound, so every cell is at
least as private as its ε), on seeded synthetic data and on a real public panel shipped with
tsdp (Grunfeld's investment data as statsmodels has it, 11 firms x 20 years,
:func:`tsdp.datasets.formats.grunfeld`; each series scaled to unit standard deviation so
that v = 1 is one standard deviation). The numbers come from
:func:`tsdp.attacks.inference.crps_table.inference_table`; nothing is computed here.
"""
from __future__ import annotations

from typing import Callable, Optional

from tsdp.datasets.formats import grunfeld
from tsdp.datasets.series import SeriesData

QUICK = {"epsilons": (1.0, 4.0), "rates": (1.0, 0.5), "repeats": 2, "n_samples": 50}
FULL = {"repeats": 5, "n_samples": 100}


def _unit_std(data) -> SeriesData:
    """``data`` with each series scaled to unit standard deviation (so that v = 1 is one standard deviation)."""
    return SeriesData(tuple(s / s.std() for s in data.series), data.starts)


def inference_section(*, quick: bool = False, seed: int = 0, tick: Optional[Callable[[str], None]] = None,
                      real_data=None) -> dict:
    """{"synthetic": table, "grunfeld": table, "grunfeld_status": "ran"}; tables as
    :func:`tsdp.attacks.inference.crps_table.inference_table` returns them. ``real_data``: (name, SeriesData)
    of the real panel (`tsdp report --data`), scaled like Grunfeld; None: Grunfeld's panel (``invest``), shipped
    with tsdp."""
    from tsdp.attacks.inference.crps_table import inference_table

    opts = QUICK if quick else FULL
    out = {"synthetic": inference_table(seed=seed, epochs=30, **opts)}
    if tick is not None:
        tick("inference synthetic")
    if real_data is None:
        real, name = _unit_std(grunfeld()[0]), "grunfeld (statsmodels' copy), unit-std scaled"
    else:
        real, name = _unit_std(real_data[1]), f"{real_data[0]}, unit-std scaled"
    out["grunfeld"] = inference_table(data=real, data_name=name, context_length=4, forecast_length=2, epochs=30,
                                      seed=seed, **opts)
    out["grunfeld_status"] = "ran"
    if tick is not None:
        tick("inference grunfeld")
    return out
