"""The grid's table: mean ± std of test CRPS over seeds per (level, top level, model, ε, w or σ_F), the baselines, the
paper's bold cells of the w and label-noise tables, the cells that stopped at their epochs cap before their budget
and the columns that are the same runs as another, and the evidence for claim C7 ("DP-trained forecasters at ε ≤ 1
beat seasonal naive and AutoETS", 1-event, δ = 1e-7), worded on the data it was measured on."""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from tsdp.datasets.benchmarks import PAPER, SHIPPED_SPEC
from tsdp.verify.json_data import with_note

from .cells import CellResult, CellTask, load_done, run_cell
from .grid import W_LEVELS, Cell, GridSettings, Level
from .run_info import GridRun


NO_DP = "null: ε = ∞, trained without DP (no noise)"
"""What the JSON null of an ε of inf (the non-private column) means, in ``epsilon_note`` beside it."""
CAPPED = "true: the run stopped at its epochs cap before its budget, so its ε spent is below the ε of its column"
"""What a row's ``capped`` (per seed) means, in ``capped_note`` beside it when a seed is capped."""
NO_STEP = "null: the budget bought no training step, so no forecast (no CRPS) and no win (its margin counts as -inf)"
"""What the JSON null of a C7 cell's CRPS and margin means when its budget bought no step, in ``<key>_note``."""


@dataclass(frozen=True)
class Row:
    """One table cell over seeds: mean ± std (ddof 1; 0 for one seed) of the last iterate's CRPS (``checkpoint``
    'last', covered by ε) or of the lowest-validation checkpoint ('selected', not covered), with the steps and ε
    spent of every seed and whether each seed's run stopped at the epochs cap before its budget (``capped``: ε
    spent < ε, the budget not reached; never for ε = ∞, which has no budget); ``w`` (w-event, w-user),
    ``sigma_forecast`` and ``v`` (label-noise) where the level has them, else None (and absent from
    :meth:`as_dict`).

    Attributes:
        model: The model.
        epsilon: The column's ε (inf: no DP).
        level: The privacy level.
        top: The top level.
        checkpoint: ``last`` or ``selected``.
        crps_mean: Mean test CRPS over the seeds.
        crps_std: Its standard deviation (ddof 1).
        seeds: The seeds.
        steps: Each seed's steps.
        epsilon_spent: Each seed's sound ε spent.
        covered: Whether the ε covers the row (the last iterate).
        capped: Whether each seed stopped at the epochs cap before its budget.
        w: The level's w (w-event, w-user).
        sigma_forecast: The level's σ_F (label noise).
        v: The level's v (label noise).
    """

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
    capped: Tuple[bool, ...]
    w: Optional[int] = None
    sigma_forecast: Optional[float] = None
    v: Optional[float] = None

    @property
    def column(self) -> float:
        """The row's column in its level's table: w, σ_F or ε (:attr:`Cell.column`)."""
        return self.w if self.w is not None else self.sigma_forecast if self.sigma_forecast is not None \
            else self.epsilon

    def as_dict(self) -> dict:
        """The JSON form: ε = ∞ (no DP) written as null with an ``epsilon_note``, a ``capped_note`` where a run stopped at
        its epochs cap, and ``w``, ``sigma_forecast``, ``v`` left out where they do not apply (None)."""
        d = with_note(asdict(self), "epsilon", NO_DP)
        d["epsilon"] = None if math.isinf(self.epsilon) else self.epsilon
        if any(self.capped):
            d["capped_note"] = CAPPED
        return {k: v for k, v in d.items() if v is not None or k not in ("w", "sigma_forecast", "v")}


def _level_values(r: CellResult) -> dict:
    """The row fields of ``r``'s level: w for w-event and w-user, σ_F and v for label noise."""
    if r.level in W_LEVELS:
        return {"w": r.w}
    if r.level == Level.LABEL_NOISE:
        return {"sigma_forecast": r.sigma_forecast, "v": r.v}
    return {}


def rows_of(results: Sequence[CellResult], cap_epochs: float) -> List[Row]:
    """Two rows per (level, top, model, ε, w or σ_F): the last iterate and the selected checkpoint, in the results'
    order; a private seed that ran ``cap_epochs`` epochs (the grid's cap, :func:`cells.epochs_cap`) is capped.

    Args:
        results: The cells' results.
        cap_epochs: The grid's epochs cap.

    Returns:
        The rows.
    """
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
                            tuple(r.epsilon_spent for r in rs), checkpoint == "last",
                            tuple(math.isfinite(r.epsilon) and r.steps > 0 and r.epochs >= cap_epochs for r in rs),
                            **_level_values(rs[0])))
    return rows


@dataclass(frozen=True)
class Best:
    """One bold cell of the paper's appendix tables: in a w table (w-event, w-user) the lowest mean CRPS of its
    column (w), the baselines included (``model`` may be one); in a label-noise table the lowest of its row (the
    model's best σ_F). Last-iterate rows only (the ones the ε covers); ties are all marked.

    Attributes:
        level: The table's level.
        top: Its top level.
        epsilon: Its ε.
        model: The model or baseline marked.
        column: The column (w or σ_F).
        crps_mean: The marked mean CRPS.
        rule: Which rule marked it.
    """

    level: str
    top: str
    epsilon: float
    model: str
    column: float
    crps_mean: float
    rule: str

    def as_dict(self) -> dict:
        """The JSON form: ε = ∞ (no DP) written as null with an ``epsilon_note``."""
        d = with_note(asdict(self), "epsilon", NO_DP)
        d["epsilon"] = None if math.isinf(self.epsilon) else self.epsilon
        return d


def best_cells(rows: Sequence[Row], baselines: Dict[str, float]) -> Tuple[Best, ...]:
    """The bold cells (:class:`Best`) of every w and label-noise table in ``rows``; none for 1-event tables.

    Args:
        rows: The grid's rows.
        baselines: The baselines' CRPS.

    Returns:
        The bold cells.
    """
    marks: List[Best] = []
    last = [r for r in rows if r.checkpoint == "last" and math.isfinite(r.crps_mean) and r.level != Level.ONE_EVENT]
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
class SameRun:
    """A column of one table (``level``, ``top``; ``epsilon`` the table's ε for the w levels, None for 1-event, whose
    columns are ε) whose every cell is the same training run as the cell of column ``same_as``: the same model,
    seeds and steps, and nothing else that changes the training differs (ε and w only set when a run stops and what
    it is accounted as; σ_F changes the training, so label-noise columns never are). ``steps``: per model, the steps
    of every seed.

    Attributes:
        level: The table's level.
        top: Its top level.
        epsilon: Its ε (None: 1-event).
        column: The repeating column.
        same_as: The column it repeats.
        steps: Per model, every seed's steps.
    """

    level: str
    top: str
    epsilon: Optional[float]
    column: float
    same_as: float
    steps: Tuple[Tuple[str, Tuple[int, ...]], ...]

    def as_dict(self) -> dict:
        """The JSON form: an infinite ``column`` or ``same_as`` (the non-private ε column) written as null."""
        d = asdict(self)
        for k in ("column", "same_as"):  # ε columns of the 1-event table: inf is the non-private one
            d[k] = None if math.isinf(d[k]) else d[k]
        return d


def same_runs(rows: Sequence[Row]) -> Tuple[SameRun, ...]:
    """The columns of every 1-event and w table of ``rows`` that repeat an earlier column's runs (:class:`SameRun`):
    private cells of every model with the same steps per seed (every seed ran a step). Each is matched to the first
    such column.

    Args:
        rows: The grid's rows.

    Returns:
        The repeating columns.
    """
    blocks: Dict[tuple, Dict[float, Dict[str, Row]]] = {}
    for r in rows:
        if r.checkpoint == "last" and r.level != Level.LABEL_NOISE and math.isfinite(r.epsilon):
            key = (r.level, r.top, None if r.level == Level.ONE_EVENT else r.epsilon)
            blocks.setdefault(key, {}).setdefault(r.column, {})[r.model] = r
    out = []
    for (level, top, eps), columns in blocks.items():
        order = list(columns)
        for i, column in enumerate(order):
            cells = columns[column]
            for earlier in order[:i]:
                other = columns[earlier]
                if set(other) == set(cells) and all(other[m].steps == c.steps and all(c.steps)
                                                    for m, c in cells.items()):
                    out.append(SameRun(level, top, eps, column, earlier,
                                       tuple((m, c.steps) for m, c in sorted(cells.items()))))
                    break
    return tuple(out)


DATA_LABELS = {SHIPPED_SPEC.name: "M1 yearly"}
"""How a verdict names its data (the dataset's name where absent)."""


def c7_words(dataset: str) -> Tuple[str, str]:
    """(the word when the rule holds, the word when it does not). The paper's claim is about its datasets: on them
    (traffic, electricity, solar_10_minutes, measured or as the paper reports them) it is ``confirmed`` or
    ``refuted``; on other data (the shipped M1 yearly series) the finding is only ``reproduced`` or ``not
    reproduced`` there, never a verdict on the paper's claim.

    Args:
        dataset: The dataset's name.

    Returns:
        The two words.
    """
    return ("confirmed", "refuted") if dataset in PAPER else ("reproduced", "not reproduced")


@dataclass(frozen=True)
class Score:
    """One DP model's mean test CRPS over its seeds at one ε (1-event), the input of the C7 rule: a last-iterate
    :class:`Row` of a grid, or a cell of the paper's tables (``top`` None: the paper does not say).

    Attributes:
        model: The DP model.
        epsilon: Its ε.
        top: Its top level (None: not stated).
        crps_mean: Mean test CRPS over its seeds.
        crps_std: Its standard deviation (None: not printed).
        seeds: The seeds.
    """

    model: str
    epsilon: float
    top: Optional[str]
    crps_mean: float
    crps_std: Optional[float]
    seeds: int


@dataclass(frozen=True)
class C7Evidence:
    """Claim C7 on one dataset: every DP model's mean CRPS at every ε ≤ 1 (1-event; ``cells``) against the better of
    the two baselines (``baseline`` and its CRPS ``best_baseline``); ``per_epsilon``: for each such ε the best DP
    cell and its ``margin`` (better baseline - its CRPS; a win only when > 0, a tie is none; -inf for a model whose
    budget bought no step, NaN CRPS: no forecast, no win). ``verdict``: the rule holds when at every ε ≤ 1 some DP
    model beats both baselines (an ε where none took a step fails it), worded by :func:`c7_words` on ``dataset``; 'not
    evaluated' without such cells that trained or without baselines. ``margin``: the smallest per-ε margin. ``source``: 'measured' (a grid
    tsdp ran) or the paper's table label; ``decimals``: the numbers' printed precision.

    Attributes:
        verdict: The verdict's word.
        dataset: The dataset.
        source: ``measured`` or the paper's table label.
        cells: Every DP model's score at ε ≤ 1.
        per_epsilon: The best DP cell per ε.
        baseline: The better baseline.
        best_baseline: Its CRPS.
        margin: The smallest per-ε margin.
        decimals: The printed precision.
        statement: The claim's words.
    """

    verdict: str
    dataset: str
    source: str
    cells: Tuple[dict, ...]
    per_epsilon: Tuple[dict, ...]
    baseline: Optional[str]
    best_baseline: Optional[float]
    margin: Optional[float]
    decimals: int = 4
    statement: str = "DP-trained forecasters at ε ≤ 1 beat seasonal naive and AutoETS (1-event, δ = 1e-7)"

    @property
    def data(self) -> str:
        """The data the verdict rests on, in words: the dataset, and the paper's table where it was not measured."""
        name = DATA_LABELS.get(self.dataset, self.dataset)
        return name if self.source == "measured" else f"{name} (the paper's {self.source})"

    @property
    def deciding(self) -> Tuple[dict, ...]:
        """The per-ε best cells the verdict rests on: every one when the rule holds, else those with no win."""
        lost = tuple(c for c in self.per_epsilon if c["margin"] <= 0)
        return lost or self.per_epsilon

    def because(self) -> str:
        """Why, in numbers: the better baseline and the deciding cells (:attr:`deciding`)."""
        if self.margin is None:
            return "no DP cell at ε ≤ 1 or no baseline"
        f = f".{self.decimals}f"
        base = f"{self.baseline} {self.best_baseline:{f}}"

        def cell(c):
            top = "" if c["top"] is None else f" ({c['top']})"
            value = format(c["crps_mean"], f) if math.isfinite(c["crps_mean"]) else "no step"
            return f"ε = {c['epsilon']:g}: {c['model']}{top} {value}"

        if self.margin > 0:
            return (f"at every ε ≤ 1 a DP model beats the better baseline, {base} "
                    f"({'; '.join(cell(c) for c in self.deciding)})")
        return (f"the best DP model is not below the better baseline, {base}, at "
                + "; ".join(cell(c) for c in self.deciding) + f" (of {len(self.per_epsilon)} ε ≤ 1)")

    def line(self) -> str:
        """The verdict with its data and the cells it rests on, in one line."""
        if self.margin is None:
            return f"not evaluated on {self.data} ({self.because()})"
        return f"{self.verdict} on {self.data}: {self.because()}"

    def as_dict(self) -> dict:
        """The JSON form: the fields, the deciding cells, :meth:`because` and :meth:`line`; a margin with no step written as
        null with a ``margin_note``."""
        return with_note({**asdict(self), "data": self.data, "deciding": list(self.deciding),
                          "because": self.because(), "line": self.line()}, "margin", NO_STEP)


def _noted(cell: dict) -> dict:
    """A C7 cell with :data:`NO_STEP` beside each of its non-finite numbers (a budget that bought no step)."""
    for key in ("crps_mean", "crps_std", "margin"):
        with_note(cell, key, NO_STEP)
    return cell


def c7_verdict(scores: Sequence[Score], baselines: Dict[str, float], dataset: str, source: str = "measured",
               decimals: int = 4) -> C7Evidence:
    """The rule of claim C7 (:class:`C7Evidence`) on the DP scores at ε ≤ 1 of one dataset: the one rule for a grid
    tsdp measured (:func:`claim_c7`) and for the paper's own reported tables (:mod:`.paper_tables`).

    Args:
        scores: The DP scores.
        baselines: The baselines' CRPS.
        dataset: The dataset.
        source: ``measured`` or the paper's table label.
        decimals: The printed precision.

    Returns:
        The evidence and its verdict.
    """
    private = [s for s in scores if s.epsilon <= 1]
    if not any(math.isfinite(s.crps_mean) for s in private) or not baselines:
        return C7Evidence("not evaluated", dataset, source, (), (), None, None, None, decimals)
    name = min(baselines, key=baselines.get)
    best = baselines[name]
    cells = tuple(_noted({"model": s.model, "epsilon": s.epsilon, "top": s.top, "crps_mean": s.crps_mean,
                          "crps_std": s.crps_std, "seeds": s.seeds, "beats_baselines": s.crps_mean < best,
                          "margin": best - s.crps_mean if math.isfinite(s.crps_mean) else -math.inf})
                  for s in private)
    per_eps = tuple(max((c for c in cells if c["epsilon"] == e), key=lambda c: c["margin"])
                    for e in sorted({c["epsilon"] for c in cells}))
    worst = min(c["margin"] for c in per_eps)
    holds, fails = c7_words(dataset)
    return C7Evidence(holds if worst > 0 else fails, dataset, source, cells, per_eps, name, best, worst, decimals)


def claim_c7(rows: Sequence[Row], baselines: Dict[str, float], dataset: str) -> C7Evidence:
    """Claim C7 (:func:`c7_verdict`) on a grid's last-iterate 1-event rows (the ones the ε covers) of ``dataset``.

    Args:
        rows: The grid's rows.
        baselines: The baselines' CRPS.
        dataset: The dataset.

    Returns:
        The evidence and its verdict.
    """
    return c7_verdict([Score(r.model, r.epsilon, r.top, r.crps_mean, r.crps_std, r.seeds) for r in rows
                       if r.checkpoint == "last" and r.level == Level.ONE_EVENT], baselines, dataset)


def run_grid(cells: Sequence[Cell], settings: GridSettings, *, folder: Optional[str | Path] = None, workers: int = 1,
             cluster: Optional[str] = None, progress: bool = False,
             together: bool = True) -> Tuple[List[CellResult], GridRun]:
    """Run every cell not already stored in ``folder`` on the sharded engine (this process, ``workers`` local
    processes, or Dask with ``cluster``): the cells of one model and column set trained together, one unit each
    (:mod:`tsdp.experiments.groups`), or with ``together=False`` every cell alone; returns the results in ``cells``'
    order and how the grid ran (:class:`~tsdp.experiments.run_info.GridRun`: the engine's record, the cells resumed
    from disk). Each block of cells trained together is one group, cut only when there are more ``workers`` than
    blocks, so that every worker has one (:func:`tsdp.experiments.groups.groups_of`).

    Args:
        cells: The grid's cells.
        settings: The grid's settings.
        folder: Where the cell files go (None: not stored).
        workers: Local worker processes.
        cluster: A Dask scheduler's address (or ``auto``).
        progress: Whether to show a progress bar.
        together: Whether the cells of a group train together.

    Returns:
        (results in ``cells``' order, the :class:`~tsdp.experiments.run_info.GridRun`).

    Raises:
        DataError: DeepAR is in the grid and the split's step has no GluonTS time features (a millisecond step),
            before any cell or file (:func:`tsdp.datasets.benchmarks.check_time_features`, as ``tsdp experiment``).
    """
    from tsdp.executor.run import run_shards

    from .groups import groups_of, run_group

    if any(c.model == "deepar" for c in cells):  # before any cell: a budget that buys no step never reads the step
        from tsdp.datasets.benchmarks import check_time_features

        from .cells import split_of

        check_time_features(split_of(settings))
    done = {}
    if folder is not None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        for c in cells:
            r = load_done(folder, c, settings)
            if r is not None:
                done[c.key] = r
    pending = [c for c in cells if c.key not in done]
    where = None if folder is None else str(folder)
    tasks = (groups_of(pending, settings, where, workers=workers) if together else
             [CellTask(c, settings, where) for c in pending])
    started = time.perf_counter()
    results, engine = run_shards(tasks, workers=workers, cluster=cluster, progress=progress,
                                 shard_fn=run_group if together else run_cell,
                                 desc="experiment cells") if tasks else ({}, None)
    if together:
        results = {r.key: r for g in results.values() for r in g.results}
    info = GridRun(engine, workers, cells=len(cells), resumed=len(done), run=len(pending), together=together,
                   seconds=time.perf_counter() - started)
    merged = {**done, **results}
    return [merged[c.key] for c in cells], info


def baseline_crps_of(settings: GridSettings, folder: Optional[str | Path] = None, *, workers: int = 1,
                     progress: bool = False) -> Dict[str, float]:
    """Test CRPS of seasonal naive and AutoETS on the grid's dataset (statsforecast, the dataset's season), computed
    once per split: kept in ``folder`` (the grid's) and read back while the data and settings are the same
    (:func:`tsdp.experiments.stored_baselines.cached_baselines`, ``workers`` processes, a tqdm bar when
    ``progress``).

    Args:
        settings: The grid's settings.
        folder: The grid's folder (None: not stored).
        workers: statsforecast's processes.
        progress: Whether to show a tqdm bar.

    Returns:
        Test CRPS per baseline.
    """
    from tsdp.experiments.stored_baselines import cached_baselines
    from .cells import split_of

    return cached_baselines(split_of(settings), folder, n_jobs=workers, progress=progress).crps
