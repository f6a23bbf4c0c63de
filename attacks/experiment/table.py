"""The grid's table: mean ± std of test CRPS over seeds per (level, top level, model, ε, w or σ_F), the baselines, the
paper's bold cells of the w and label-noise tables, and the evidence for claim C7 ("DP-trained forecasters at ε ≤ 1
beat seasonal naive and AutoETS", 1-event, δ = 1e-7)."""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from tsdp.verify.json_data import with_note

from .cells import CellResult, CellTask, load_done, run_cell
from .grid import W_LEVELS, Cell, GridSettings


NO_DP = "null: ε = ∞, trained without DP (no noise)"
"""What the JSON null of an ε of inf (the non-private column) means, in ``epsilon_note`` beside it."""


@dataclass(frozen=True)
class Row:
    """One table cell over seeds: mean ± std (ddof 1; 0 for one seed) of the last iterate's CRPS (``checkpoint``
    'last', covered by ε) or of the lowest-validation checkpoint ('selected', not covered), with the steps and ε
    spent of every seed; ``w`` (w-event, w-user), ``sigma_forecast`` and ``v`` (label-noise) where the level has
    them, else None (and absent from :meth:`as_dict`)."""

    model: str
    epsilon: float
    level: str
    top: str
    checkpoint: str
    crps_mean: float
    crps_std: float
    seeds: int
    steps: Tuple[int, ...]
    epsilon_spent: Tuple[Optional[float], ...]
    covered: bool
    w: Optional[int] = None
    sigma_forecast: Optional[float] = None
    v: Optional[float] = None

    @property
    def column(self) -> float:
        """The row's column in its level's table: w, σ_F or ε (:attr:`Cell.column`)."""
        return self.w if self.w is not None else self.sigma_forecast if self.sigma_forecast is not None \
            else self.epsilon

    def as_dict(self) -> dict:
        d = with_note(asdict(self), "epsilon", NO_DP)
        d["epsilon"] = None if math.isinf(self.epsilon) else self.epsilon
        return {k: v for k, v in d.items() if v is not None or k not in ("w", "sigma_forecast", "v")}


def _level_values(r: CellResult) -> dict:
    """The row fields of ``r``'s level: w for w-event and w-user, σ_F and v for label noise."""
    if r.level in W_LEVELS:
        return {"w": r.w}
    if r.level == "label-noise":
        return {"sigma_forecast": r.sigma_forecast, "v": r.v}
    return {}


def rows_of(results: Sequence[CellResult]) -> List[Row]:
    """Two rows per (level, top, model, ε, w or σ_F): the last iterate and the selected checkpoint, in the results'
    order."""
    groups: Dict[tuple, List[CellResult]] = {}
    for r in results:
        groups.setdefault((r.level, r.top, r.model, r.epsilon, r.w, r.sigma_forecast), []).append(r)
    rows = []
    for (level, top, model, eps, _, _), rs in groups.items():
        rs = sorted(rs, key=lambda r: r.seed_index)
        for checkpoint, values in (("last", [r.crps for r in rs]), ("selected", [r.selected_crps for r in rs])):
            v = np.asarray(values, dtype=float)
            rows.append(Row(model, eps, level, top, checkpoint, float(v.mean()),
                            float(v.std(ddof=1)) if len(v) > 1 else 0.0, len(v), tuple(r.steps for r in rs),
                            tuple(r.epsilon_spent for r in rs), checkpoint == "last", **_level_values(rs[0])))
    return rows


@dataclass(frozen=True)
class Best:
    """One bold cell of the paper's appendix tables: in a w table (w-event, w-user) the lowest mean CRPS of its
    column (w), the baselines included (``model`` may be one); in a label-noise table the lowest of its row (the
    model's best σ_F). Last-iterate rows only (the ones the ε covers); ties are all marked."""

    level: str
    top: str
    epsilon: float
    model: str
    column: float
    crps_mean: float
    rule: str

    def as_dict(self) -> dict:
        d = with_note(asdict(self), "epsilon", NO_DP)
        d["epsilon"] = None if math.isinf(self.epsilon) else self.epsilon
        return d


def best_cells(rows: Sequence[Row], baselines: Dict[str, float]) -> Tuple[Best, ...]:
    """The bold cells (:class:`Best`) of every w and label-noise table in ``rows``; none for 1-event tables."""
    marks: List[Best] = []
    last = [r for r in rows if r.checkpoint == "last" and math.isfinite(r.crps_mean) and r.level != "1-event"]
    groups: Dict[tuple, List[tuple]] = {}
    for r in last:
        if r.level in W_LEVELS:
            groups.setdefault((r.level, r.top, r.epsilon, "column", r.column), []).append((r.model, r.column,
                                                                                           r.crps_mean))
        else:
            groups.setdefault((r.level, r.top, r.epsilon, "row", r.model), []).append((r.model, r.column,
                                                                                       r.crps_mean))
    for (level, top, eps, rule, key), entries in groups.items():
        if rule == "column":
            entries = entries + [(name, key, value) for name, value in baselines.items() if math.isfinite(value)]
        low = min(value for _, _, value in entries)
        marks += [Best(level, top, eps, model, column, value,
                       "best per w (column)" if rule == "column" else "best σ_F per model (row)")
                  for model, column, value in entries if value == low]
    return tuple(marks)


@dataclass(frozen=True)
class C7Evidence:
    """Claim C7 on the cells it ran: per top level, each DP model's last-iterate CRPS at every ε ≤ 1 (1-event)
    against the better of the two baselines; ``verdict`` 'confirmed' when some DP model beats both baselines at
    every ε ≤ 1 the grid ran, 'refuted' when at some ε ≤ 1 none does, 'not evaluated' without such cells (the
    report's words). ``margin``: over ε ≤ 1, the smallest (better baseline - best DP model's mean CRPS)."""

    verdict: str
    cells: Tuple[dict, ...]
    best_baseline: Optional[float]
    margin: Optional[float]
    statement: str = "DP-trained forecasters at ε ≤ 1 beat seasonal naive and AutoETS (1-event, δ = 1e-7)"

    def as_dict(self) -> dict:
        return asdict(self)


def claim_c7(rows: Sequence[Row], baselines: Dict[str, float]) -> C7Evidence:
    """The verdict of claim C7 (see :class:`C7Evidence`) from the last-iterate rows (the ones the ε covers)."""
    finite = [r for r in rows if r.checkpoint == "last" and r.level == "1-event" and r.epsilon <= 1
              and math.isfinite(r.crps_mean)]
    if not finite or not baselines:
        return C7Evidence("not evaluated", (), None, None)
    best = min(baselines.values())
    cells = tuple({"model": r.model, "epsilon": r.epsilon, "top": r.top, "crps_mean": r.crps_mean,
                   "crps_std": r.crps_std, "seeds": r.seeds, "beats_baselines": r.crps_mean < best,
                   "margin": best - r.crps_mean} for r in finite)
    epsilons = sorted({r.epsilon for r in finite})
    per_eps = {e: max(c["margin"] for c in cells if c["epsilon"] == e) for e in epsilons}
    worst = min(per_eps.values())
    verdict = "confirmed" if worst > 0 else "refuted"
    return C7Evidence(verdict, cells, best, worst)


def run_grid(cells: Sequence[Cell], settings: GridSettings, *, folder=None, workers: int = 1,
             cluster: Optional[str] = None, progress: bool = False) -> Tuple[List[CellResult], dict]:
    """Run every cell not already stored in ``folder`` on the sharded engine (this process, ``workers`` local
    processes, or Dask with ``cluster``); returns the results in ``cells``' order and the engine's info (plus the
    cells resumed from disk)."""
    from tsdp.attacks.montecarlo.shards import run_shards

    done = {}
    if folder is not None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        for c in cells:
            r = load_done(folder, c, settings)
            if r is not None:
                done[c.key] = r
    tasks = [CellTask(c, settings, None if folder is None else str(folder)) for c in cells if c.key not in done]
    started = time.perf_counter()
    results, info = run_shards(tasks, workers=workers, cluster=cluster, progress=progress, shard_fn=run_cell,
                               desc="experiment cells") if tasks else ({}, {"executor": "none", "workers": workers})
    info = {**info, "cells": len(cells), "resumed": len(done), "run": len(tasks),
            "seconds": time.perf_counter() - started}
    merged = {**done, **results}
    return [merged[c.key] for c in cells], info


def baseline_crps_of(settings: GridSettings, folder=None, *, workers: int = 1,
                     progress: bool = False) -> Dict[str, float]:
    """Test CRPS of seasonal naive and AutoETS on the grid's dataset (statsforecast, the dataset's season), computed
    once per split: kept in ``folder`` (the grid's) and read back while the data and settings are the same
    (:func:`tsdp.attacks.experiment.baseline_cache.cached_baselines`, ``workers`` processes, a tqdm bar when
    ``progress``)."""
    from .baseline_cache import cached_baselines
    from .cells import _split

    split = _split(settings.dataset, settings.data_dir)
    return cached_baselines(split, folder, n_jobs=workers, progress=progress).crps
