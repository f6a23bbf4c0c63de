"""One cell's result, as measured and as its file stores it (:class:`CellResult`, its JSON form and its read-back)."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Optional

from tsdp.verify.json_data import Record


@dataclass(frozen=True)
class CellResult(Record):
    """What one cell measured: test CRPS of the last iterate (``crps``, covered by ``epsilon_spent``) and of the
    lowest-validation checkpoint (``selected_crps``, not covered), the steps that ran and the sound ε they spent;
    the level's ``w`` and ``sigma_forecast`` (1 and 0 where the level has none) and ``v`` (label noise only).

    Attributes:
        key: The cell's name.
        model: Its model.
        epsilon: Its budget (∞: no DP).
        seed_index: Its seed index.
        level: Its privacy level.
        top: Its top level.
        seed: Its seed (spawned from the grid's root).
        sigma: The noise multiplier σ (None without DP).
        steps: The training steps that ran.
        epochs: Those steps in epochs.
        epsilon_spent: The sound ε of those steps (None without DP; an **upper** bound).
        theorem: The bound accounted (None without DP or steps).
        crps: Test CRPS of the last iterate (NaN: no step).
        selected_crps: Test CRPS of the lowest-validation checkpoint (not covered by ε).
        selected_step: That checkpoint's step.
        seconds: Its training's seconds.
        device: The device it trained on.
        trials: 1 (the sharded engine's count).
        w: The level's w.
        sigma_forecast: The level's σ_F.
        v: The level's v (label noise only).
    """

    key: str
    model: str
    epsilon: float
    seed_index: int
    level: str
    top: str
    seed: int
    sigma: Optional[float]
    steps: int
    epochs: float
    epsilon_spent: Optional[float]
    theorem: Optional[str]
    crps: float
    selected_crps: float
    selected_step: int
    seconds: float
    device: str
    trials: int = 1
    w: int = 1
    sigma_forecast: float = 0.0
    v: Optional[float] = None

    def stored(self) -> dict:
        """The JSON form of a cell file: ε = ∞ and a NaN CRPS (no step) as null.

        Returns:
            The fields (:meth:`as_dict`) with ε = ∞ and every NaN as None.
        """
        d = self.as_dict()
        d["epsilon"] = None if math.isinf(self.epsilon) else self.epsilon
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "CellResult":
        """The result a cell file's ``result`` holds (its JSON form, :meth:`stored`).

        Args:
            d: The file's ``result`` object.

        Returns:
            The result (null ε as ∞, null CRPS as NaN).

        Raises:
            ValueError: Naming the field, for a missing, unknown or mistyped field (ranges:
                :func:`tsdp.experiments.store.check_result`).
        """
        if not isinstance(d, dict):
            raise ValueError("the result is not a JSON object")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}")
        d = {**d}
        for f in fields(cls):
            if f.name not in d:
                raise ValueError(f"no field {f.name!r}")
            d[f.name] = _typed(f.name, d[f.name])
        d["epsilon"] = math.inf if d["epsilon"] is None else d["epsilon"]
        for k in ("crps", "selected_crps"):
            d[k] = math.nan if d[k] is None else d[k]
        return cls(**d)


_TYPES = {"key": (str,), "model": (str,), "level": (str,), "top": (str,), "device": (str,), "theorem": (str, None),
          "seed_index": (int,), "seed": (int,), "steps": (int,), "selected_step": (int,), "trials": (int,),
          "w": (int,), "epsilon": (float, None), "sigma": (float, None), "epsilon_spent": (float, None),
          "crps": (float, None), "selected_crps": (float, None), "v": (float, None), "epochs": (float,),
          "seconds": (float,), "sigma_forecast": (float,)}
"""Each stored field's JSON types (None: null; an int is a float's value too, a bool is neither)."""


def _typed(name: str, value):
    """``value`` of field ``name`` as its type (int to float), or ValueError naming the field."""
    allowed = _TYPES[name]
    if value is None and None in allowed:
        return None
    if not isinstance(value, bool):  # a JSON true/false is never a number here
        if isinstance(value, str) and str in allowed:
            return value
        if isinstance(value, int) and int in allowed:
            return value
        if isinstance(value, (int, float)) and float in allowed:
            return float(value)
    raise ValueError(f"field {name!r} is {value!r}, not " + " or ".join("null" if t is None else t.__name__
                                                                      for t in allowed))

