"""`tsdp experiment`: the paper's privacy-utility grid (models × ε × seeds × level × top level) with its baselines.

Each cell trains one forecaster with DP-SGD to its ε budget (the sound accountant), stored as one
file under --out (a killed grid resumes); cells run on the audit engine's executors (this process,
--workers local processes, or Dask with --cluster). The table gives mean ± std of test CRPS over
seeds, the last iterate (covered by ε) and the lowest-validation checkpoint (not covered) beside it,
the statsforecast baselines, and claim C7's verdict. torch is imported inside the handler only.
"""
from __future__ import annotations

import math
import os
import argparse
from typing import TYPE_CHECKING, Callable, Dict, List, Sequence

from tsdp.verify.rounded import rounded_up

from .config_args import add_data_arguments, loader_options_given
from .errors import UsageError
from .output import NO_NOISE, dumps

if TYPE_CHECKING:
    from tsdp.datasets.benchmarks import ForecastSplit
    from tsdp.experiments.table import Best, Row, SameRun

MODEL_LABELS = {"simple-ff": "SimpleFF", "deepar": "DeepAR", "itransformer": "iTransf.", "dlinear": "DLinear",
                "seasonal-naive": "Seasonal", "autoets": "AutoETS"}
QUICK_MODELS = ("simple-ff", "dlinear")
QUICK_SEEDS = 2
V_MAX = 1e30
"""The largest --v: the label noise σ_F·v is drawn in float32 (3.4e38 at most)."""


def _epsilon(text: str) -> float:
    """One ``--epsilons`` budget: a number > 0, or inf (the column trained without DP).

    Args:
        text: The value as typed.

    Returns:
        The budget.

    Raises:
        argparse.ArgumentTypeError: Not a number > 0 (argparse prefixes the flag; a plain ValueError would make it
            name this function instead).
    """
    try:
        value = float(text)  # 'inf' reads as infinity: the non-private column
    except ValueError:
        value = math.nan
    if math.isnan(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"each budget must be a number > 0, or inf to train without DP (got {text!r})")
    return value


def add_parsers(sub: "argparse._SubParsersAction", command: Callable) -> None:
    """Add `tsdp experiment`.

    Args:
        sub: The subparsers to add to.
        command: The command registry's decorator.
    """
    from tsdp.datasets.benchmarks import PAPER, SHIPPED_SPEC, UserData
    from tsdp.experiments.grid import (LEVELS, MODELS, QUICK_EPOCHS, SEEDS, SIGMA_FORECAST_MAX, SIGMA_FORECASTS,
                                              TOPS, W_MAX, W_VALUES)

    p = sub.add_parser(
        "experiment", help="the paper's privacy-utility grid: DP forecasters vs seasonal naive and AutoETS",
        description="Train the paper's four forecasters with DP-SGD at each ε (δ = 1e-7 by default; inf: no DP) "
        "for several seeds, privacy levels and top levels, with the paper's per-dataset defaults (L_F, L_C, Λ, σ, "
        "C = 1e-4, DeepAR lags, Adam 1e-3 with weight decay 1e-8, maximum epochs). Training stops at the budget "
        "(sound accountant); each cell records its steps and the ε they spent. Prints mean ± std of test CRPS "
        "over seeds (last iterate, covered by ε; the lowest-validation checkpoint beside it, not covered), the "
        "seasonal-naive and AutoETS baselines and claim C7's verdict. Without --dataset it runs on the shipped "
        "real dataset (M1 yearly); --data runs it on your own series (settings from the flags below). Each level has the paper's table: 1-event columns ε; w-event and w-user columns "
        "w at ε = 4; label-noise columns σ_F at ε = 0.5 with the dataset's v.")
    p.add_argument("--dataset", default=None, metavar="NAME",
                   help="m1-yearly (shipped, the default), or a GluonTS benchmark: traffic, electricity, "
                        "solar_10_minutes (from --data-dir)")
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help="GluonTS's dataset cache holding <DIR>/<NAME>/{metadata.json,train,test} (default "
                        "$GLUONTS_DATASETS or ~/.gluonts/datasets)")
    p.add_argument("--download", action="store_true",
                   help="download a missing benchmark through GluonTS into --data-dir (needs internet)")
    add_data_arguments(p, synthetic=False, what="your own series to run the grid on, instead of --dataset (the last "
                       "--test-windows·L_F values of every series are its test windows, the --validation-windows·L_F "
                       "before them its validation windows, the rest its training series)")
    g = p.add_argument_group("settings of --data (each dataset of --dataset has the paper's)")
    for flag, default, text in _DATA_SETTINGS:
        g.add_argument(flag, type=float if flag == "--sigma" else int, default=None, help=f"{text} (default {default})")
    p.add_argument("--models", nargs="+", choices=MODELS, default=None, help=f"rows (default all: {' '.join(MODELS)})")
    p.add_argument("--epsilons", nargs="+", type=_epsilon, default=None, metavar="E",
                   help="budgets of every level, each > 0; inf trains without DP (default the paper's per level: "
                        "1-event's columns 0.5 1 2 inf; w-event and w-user 4; label-noise 0.5)")
    p.add_argument("--seeds", type=int, default=None, help=f"seeds per cell (default {SEEDS}; --quick {QUICK_SEEDS})")
    p.add_argument("--levels", nargs="+", choices=LEVELS, default=["1-event"],
                   help="privacy levels: 1-event (the main table), w-event and w-user (columns --w), label-noise "
                        "((1, v)-user-level privacy, columns --sigma-forecast)")
    p.add_argument("--tops", nargs="+", choices=TOPS, default=None, help="top-level schemes (default wor, the paper's Table 1; shuffle has its own table, an epoch "
                        "of floor(N/Λ) steps as the official code)")
    p.add_argument("--w", type=int, nargs="+", default=None, metavar="W",
                   help=f"the columns of the w-event and w-user levels, each in 1..{W_MAX} (default the paper's "
                        f"{' '.join(map(str, W_VALUES))}; needs one of those levels)")
    p.add_argument("--v", type=float, default=None,
                   help="v of the label-noise level: the largest change of one element, in the data's units "
                        "(default the dataset's: " + ", ".join(f"{spec.name} {spec.label_noise_v:g}" for spec in
                                                              (SHIPPED_SPEC, *PAPER.values()))
                        + f"; --data {UserData.label_noise_v:g}, in its units: give yours; needs that level)")
    p.add_argument("--sigma-forecast", type=float, nargs="+", default=None, metavar="S",
                   help=f"the columns of the label-noise level: label noise σ_F in units of v, each in [0, {SIGMA_FORECAST_MAX:g}] "
                        f"(default the paper's {' '.join(f'{x:g}' for x in SIGMA_FORECASTS)}; needs that level)")
    p.add_argument("--delta", type=float, default=1e-7, help="δ of every budget")
    p.add_argument("--epochs", type=int, default=None,
                   help=f"epochs cap of every cell (default the dataset's; --data {DATA_EPOCHS}; --quick {QUICK_EPOCHS})")
    p.add_argument("--samples", type=int, default=100, help="sample paths per forecast (the CRPS's quantiles)")
    p.add_argument("--seed", type=int, default=None,
                   help="root of the SeedSequence every cell's seed is spawned from (default: the root recorded by "
                        "the cell files in --out, so a rerun resumes; else a fresh one from the operating system's "
                        "entropy: a seed others know lets them redraw every cell's batches and noise, which voids "
                        "the ε of the table; give one only to reproduce a grid; one that the cells in --out do not "
                        "record is refused). The output prints the root used: as private as --out")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (1: this process)")
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="run the cells on a Dask scheduler at ADDRESS, or 'auto' for a local Dask cluster "
                        "(needs the tsdp[cluster] extra)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="folder of the cell files (one JSON each; a rerun resumes from them, and recomputes, with a "
                        "note, a file that is damaged or of other settings, data or code) (default "
                        "tsdp-experiment/<dataset>)")
    p.add_argument("--quick", action="store_true",
                   help=f"a small grid that finishes in minutes: {' and '.join(QUICK_MODELS)}, {QUICK_SEEDS} "
                        f"seeds, WOR top level, {QUICK_EPOCHS} epochs (flags given still win)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto picks cuda when available, else cpu")
    p.add_argument("--cell-by-cell", action="store_true",
                   help="train every cell on its own (default: the cells of one model and column that differ only in "
                        "seed and ε are trained together as one stacked program, each cell the same run to float "
                        "rounding, with its own seed, batches, noise, stopping step, checkpoints and file)")
    p.add_argument("--discretization", type=float, default=1e-3,
                   help="the accountant's PLD discretisation (the paper's 1e-3)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")

    @command("experiment")
    def cmd_experiment(args) -> int:
        from tsdp.verify.cpus import check_workers
        from tsdp.verify.json_data import with_note

        _check(args)
        from tsdp.datasets.benchmarks import dataset_names, split_for
        from tsdp.experiments.grid import GridSettings, Level, plan
        from tsdp.experiments.table import (NO_DP, baseline_crps_of, best_cells, claim_c7, rows_of,
                                                   same_runs)
        from tsdp.executor.cluster import check_cluster

        if args.dataset is not None and args.dataset not in dataset_names():
            raise UsageError(f"invalid --dataset: must be one of {', '.join(dataset_names())} (got {args.dataset!r})")
        check_workers("workers", args.workers)
        cells = plan(models=args.models, epsilons=args.epsilons, seeds=args.seeds, levels=tuple(args.levels),
                     tops=args.tops, w=args.w, sigma_forecast=args.sigma_forecast)
        user = _user_data(args)
        check_cluster(args.cluster)
        if args.download:
            _check_baselines()  # before a download of minutes
        if args.out is not None:
            _check_out_can_be_made(args.out)  # before the data (a download of minutes); made once the data are read
        split = split_for(args.dataset, args.data_dir, download=args.download, user=user)
        if "deepar" in args.models:
            from tsdp.datasets.benchmarks import check_time_features

            check_time_features(split)  # before any cell: a budget that buys no step would never read the step
        name = split.spec.name
        from tsdp.attacks.inference.mechanism import check_samples

        check_samples(args.samples, 1, split.spec.context_length, split.spec.forecast_length)  # one window's
        # sample paths: the test windows are drawn in chunks that fit the memory limit (train.evaluate)
        v = (args.v or split.spec.label_noise_v) if Level.LABEL_NOISE in args.levels else None
        out = args.out if args.out is not None else os.path.join("tsdp-experiment", name)
        root = _root_seed(out, args.seed)
        settings = GridSettings(dataset=None if name == "m1-yearly" or user else name, data_dir=args.data_dir,
                                delta=args.delta, v=v, epochs=None if user else args.epochs, n_samples=args.samples,
                                device=args.device, discretization=args.discretization, seed=root.seed, user=user)
        _check_delta_resolved(cells, settings)  # depends on the data's sizes: once they are read and checked
        _check_baselines()  # the flags first (cheap), then the extra, before any cell trains
        _check_out(out)
        import sys

        from tsdp.experiments.cells import epochs_cap, read_stored
        from tsdp.experiments.estimate import estimate

        pending = []
        for c in cells:
            stored = read_stored(out, c, settings)
            if stored.problem is not None:
                print(f"tsdp experiment: note: {stored.path}: {stored.problem}; recomputed", file=sys.stderr)
            if stored.result is None:
                pending.append(c)
        plan_note = estimate(pending, settings, together=not args.cell_by_cell)
        print(f"{len(cells) - len(pending)} of {len(cells)} cells already in {out}; " + plan_note.line(), file=sys.stderr)
        results, info = _run(cells, settings, out, args)
        baselines = baseline_crps_of(settings, out, workers=args.workers, progress=True)
        rows = rows_of(results, epochs_cap(settings))
        c7 = claim_c7(rows, baselines, name)
        best, same = best_cells(rows, baselines), same_runs(rows)
        payload = {"dataset": split.spec.as_dict(), "split": split.as_dict(),
                   "rows": [_noted(r.as_dict(), ("crps_mean", "crps_std"), NO_STEP) for r in rows],
                   "same_runs": [x.as_dict() for x in same],
                   "baselines": baselines, "best": [b.as_dict() for b in best], "claim_c7": c7.as_dict(),
                   "cells": [_noted(with_note(r.as_dict(), "epsilon", NO_DP), ("crps", "selected_crps"), NO_STEP)
                             for r in results],
                   "settings": settings.as_dict(), "root_seed": root.as_dict(), "run": info.as_dict(),
                   "estimate": plan_note.as_dict(), "out": out}
        if args.json:
            print(dumps(payload))
            return 0
        print(render_table(rows, baselines, best, same, split, args))
        print(f"claim C7 ({c7.statement}): {c7.line()}")
        print(f"{info.cells} cells ({info.resumed} resumed from {out}), {info.seconds:.1f} s on "
              f"{info.executor} ({args.workers} worker(s))")
        print(f"root seed {root.seed} ({ROOT_SOURCES[root.source]}): --seed {root.seed} reproduces the grid; keep "
              f"it as private as {out}")
        return 0


ROOT_SOURCES = {"given": "--seed", "stored": "read back from the cell files", "fresh": "fresh, from the operating "
                "system's entropy"}
"""How the printed root seed was chosen (:class:`tsdp.experiments.store.RootSeed` ``source``)."""


def _root_seed(out: str, given):
    """The grid's :class:`~tsdp.experiments.store.RootSeed` under ``out`` (:func:`~tsdp.experiments.store.root_seed`);
    a --seed the folder's cells do not record is one error line (exit 2)."""
    from tsdp.experiments.store import RootSeedError, root_seed

    try:
        return root_seed(out, given)
    except RootSeedError as exc:
        raise UsageError(f"invalid --seed: {exc}") from None


_DATA_SETTINGS = (
    ("--forecast-length", "24", "L_F"),
    ("--context-length", "L_F", "L_C"),
    ("--batch-size", "128, at most a quarter of the series", "Λ, windows per step"),
    ("--sigma", "4", "noise multiplier σ"),
    ("--season", "24", "season length of DeepAR's seasonal lags and of the baselines"),
    ("--test-windows", "1", "test windows of L_F at the end of every series"),
    ("--validation-windows", "1", "validation windows of L_F before the test windows"),
)
"""The flags that set a user file's grid (``--data``), their defaults (L_F 24, L_C = L_F, Λ 128 and season 24 as
electricity; σ 4 as traffic and solar, so that ε = 0.5 buys steps on a few dozen series) and help."""
DATA_EPOCHS = 100
"""The epochs cap of a ``--data`` grid unless --epochs says otherwise (the benchmarks' 4000-16000 are for
thousands of training windows per series)."""


def _user_data(args):
    """The :class:`~tsdp.datasets.benchmarks.UserData` of ``--data`` and its settings flags (None without
    --data); the default Λ is 128 capped at a quarter of the series (so the top level subsamples)."""
    settings = {flag[2:].replace("-", "_"): getattr(args, flag[2:].replace("-", "_")) for flag, _, _ in _DATA_SETTINGS}
    if args.data is None:
        typed = [f"--{k.replace('_', '-')}" for k, v in settings.items() if v is not None]
        if typed:
            raise UsageError(f"invalid {typed[0]}: it sets the grid of a user's file: add --data FILE")
        if args.freq is not None:
            raise UsageError(f"invalid --freq: it is the step of --data's timestamps; {args.dataset or 'm1-yearly'} "
                             "states its own step (drop --freq)")
        table = loader_options_given(args)  # --freq: refused above
        if table:
            raise UsageError(f"invalid {table[0]}: it reads --data's CSV / parquet table; "
                             f"{args.dataset or 'm1-yearly'} is not a table (drop it)")
        return None
    if args.dataset is not None:
        raise UsageError("invalid --data: give --data (your series) or --dataset (a benchmark), not both")
    for key, value in settings.items():
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UsageError(f"invalid --{key.replace('_', '-')}: must be finite and > 0 (got {value:g})")
    from tsdp.datasets.benchmarks import UserData

    from .config_args import data_from_args

    f = settings["forecast_length"] or 24
    batch = settings["batch_size"]
    if batch is None:
        batch = min(128, max(1, len(data_from_args(args).series) // 4))
    return UserData(str(args.data), forecast_length=f, context_length=settings["context_length"] or f,
                    batch_size=batch, sigma=settings["sigma"] or 4.0, season=settings["season"] or 24,
                    epochs=args.epochs or DATA_EPOCHS, test_windows=settings["test_windows"] or 1,
                    validation_windows=settings["validation_windows"] or 1,
                    layout=args.layout, item_id=args.item_id, timestamp=args.timestamp, target=args.target,
                    freq=args.freq)


NO_STEP = "null: the budget buys no training step (nothing trained, no forecast to score)"
"""What the JSON null of a CRPS means: the cell's (or every seed's) budget bought no step (the table's 'no step')."""


def _noted(payload: dict, keys, note: str) -> dict:
    """``payload`` with ``note`` beside each of ``keys`` whose value is non-finite (:func:`with_note`)."""
    from tsdp.verify.json_data import with_note

    for key in keys:
        with_note(payload, key, note)
    return payload


def _check_delta_resolved(cells, settings) -> None:
    """--delta against the accountant's resolution on the grid's private configurations (one step of each; the
    smallest δ it resolves depends on the data's sizes): a δ below it is one line naming --delta (the accountant's
    DeltaTooSmallError) before the baselines' statsforecast import, the time probes and any cell."""
    import math

    from tsdp.experiments.configuration import cell_config
    from tsdp.verify.accountant import max_steps
    from tsdp.verify.pld import PldSettings

    grid = PldSettings(settings.discretization)
    for config, epsilon in dict.fromkeys((cell_config(c, settings), c.epsilon) for c in cells
                                         if not math.isinf(c.epsilon)):
        max_steps(config, epsilon, settings.delta, cap=1, settings=grid)


def _check_baselines() -> None:
    """The baselines come after the grid: a missing statsforecast is refused before any cell trains (MissingExtraError
    naming the experiments extra)."""
    from tsdp.experiments.baselines import statsforecast_version

    statsforecast_version()


def _run(cells, settings, out: str, args):
    """The grid's results and run info; a cell refused as bad input (a ConfigError, e.g. a training that diverges
    under --v) is that one line, not the engine's ShardError after its retries."""
    from tsdp.experiments.table import run_grid
    from tsdp.executor.tracker import ShardError
    from tsdp.theorems.config import ConfigError

    try:
        return run_grid(cells, settings, folder=out, workers=args.workers, cluster=args.cluster, progress=True,
                        together=not args.cell_by_cell)
    except ShardError as exc:
        if isinstance(exc.__cause__, ConfigError):
            raise exc.__cause__ from None
        raise


def _check(args) -> None:
    """Bad values of the grid's flags: one line each (the choices are argparse's)."""
    if args.quick:
        from tsdp.experiments.grid import QUICK_EPOCHS

        args.models = args.models or list(QUICK_MODELS)
        args.seeds = args.seeds if args.seeds is not None else QUICK_SEEDS
        args.epochs = args.epochs if args.epochs is not None else QUICK_EPOCHS
    from tsdp.experiments.grid import DEFAULT_TOPS, MODELS, SEEDS, Level

    args.models = tuple(args.models or MODELS)
    args.seeds = SEEDS if args.seeds is None else args.seeds
    args.tops = tuple(args.tops or DEFAULT_TOPS)
    if not 1 <= args.seeds <= 1000:
        raise UsageError(f"invalid --seeds: must be in 1..1000 (got {args.seeds})")
    if args.epochs is not None and args.epochs < 1:
        raise UsageError(f"invalid --epochs: must be >= 1 (got {args.epochs})")
    if args.samples < 10:
        raise UsageError(f"invalid --samples: must be >= 10 (got {args.samples})")
    if args.seed is not None and args.seed < 0:  # numpy's SeedSequence takes no negative root
        raise UsageError(f"invalid --seed: must be >= 0 (got {args.seed})")
    if args.out is not None and not args.out.strip():
        raise UsageError(f"invalid --out: must name a folder (got {args.out!r})")
    if args.v is not None:
        if Level.LABEL_NOISE not in args.levels:
            raise UsageError("invalid --v: it sets the label-noise level's v: add label-noise to --levels")
        if not (math.isfinite(args.v) and 0 < args.v <= V_MAX):
            raise UsageError(f"invalid --v: must be in (0, {V_MAX:g}] (got {args.v})")
    if not (math.isfinite(args.delta) and 0 < args.delta < 1):
        raise UsageError(f"invalid --delta: must be in (0, 1) (got {args.delta})")
    if not (math.isfinite(args.discretization) and 0 < args.discretization <= 1):
        raise UsageError(f"invalid --discretization: must be in (0, 1] (got {args.discretization})")
    if args.data_dir is not None and not os.path.isdir(args.data_dir):
        raise UsageError(f"invalid --data-dir: {args.data_dir} is not a folder")
    if args.device != "auto":
        from .config_args import check_device

        why = check_device(args.device)
        if why:
            raise UsageError(f"invalid --device: {why}")


def _check_out_can_be_made(out: str) -> None:
    """--out is a writable folder or can be made one (its nearest existing ancestor a writable folder), checked
    without making it: nothing is written before the data are read and checked."""
    import errno

    try:
        os.stat(out)
    except OSError as exc:  # os.path.exists answers False to a name the file system cannot hold (ENAMETOOLONG)
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            raise UsageError(f"invalid --out: cannot be used as a path here ({exc.strerror})") from None
    path = os.path.abspath(out)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    if not os.path.isdir(path):
        raise UsageError(f"invalid --out: cannot make folder {out} ({path} is not a folder)")
    if not os.access(path, os.W_OK):
        raise UsageError(f"invalid --out: folder {path} is not writable")


def _check_out(out: str) -> None:
    """--out must be a folder this process can write (made if absent)."""
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"invalid --out: cannot make folder {out} ({exc.strerror or exc})") from None
    if not os.access(out, os.W_OK):
        raise UsageError(f"invalid --out: folder {out} is not writable")


CAPPED_MARK = "†"
"""After a cell whose run stopped at its epochs cap before its budget (ε spent < ε)."""


def _cell_text(row, mark: str = "") -> str:
    """mean ± std of a table cell; '-' when not run, 'no step' when its budget bought no training step; '†' after
    it when a seed stopped at the epochs cap before its budget, then ``mark`` (the w and label-noise tables' '*' for
    the paper's bold, or ' ')."""
    if row is None:
        return "-" + mark
    if not any(row.steps):
        return "no step" + mark
    return f"{row.crps_mean:.3f} ± {row.crps_std:.3f}" + (CAPPED_MARK if any(row.capped) else "") + mark


def _same_run_notes(level: str, same) -> List[str]:
    """One line per column of the table that repeats another column's runs (:func:`same_runs`)."""
    return [f"{_column_label(level, x.column)} [= {_column_label(level, x.same_as)}]: the same training runs as "
            f"{_column_label(level, x.same_as)} (same seeds, same steps: " + ", ".join(
                f"{MODEL_LABELS[m]} {'/'.join(map(str, steps))}" for m, steps in x.steps) + ")" for x in same]


def _column_label(level: str, value: float) -> str:
    from tsdp.experiments.grid import W_LEVELS, Level

    if level in W_LEVELS:
        return f"w = {value:g}"
    if level == Level.LABEL_NOISE:
        return f"σ_F = {value:g}"
    return "ε = ∞" if math.isinf(value) else f"ε = {value:g}"


def _block_title(level: str, top: str, epsilon: float, rows) -> str:
    """A table's title: the level, top level and (w and label-noise tables) the ε and v, and what the marks mean."""
    from tsdp.experiments.grid import Level

    covered = "last iterate: covered by ε; [sel]: lowest validation, not covered"
    if level == Level.ONE_EVENT:
        return f"{level}, top level {top} ({covered})"
    budget = "ε = ∞ (no DP)" if math.isinf(epsilon) else f"ε = {epsilon:g}"
    if level == Level.LABEL_NOISE:
        return (f"label-noise, (1, v)-user-level privacy with v = {rows[0].v:g}, top level {top}, {budget} ({covered}; "
                "*: the model's best σ_F, the paper's bold)")
    return f"{level}, top level {top}, {budget} ({covered}; *: best per w, baselines included, the paper's bold)"


def render_table(rows: Sequence["Row"], baselines: Dict[str, float], best: Sequence["Best"], same: Sequence["SameRun"],
                 split: "ForecastSplit", args: "argparse.Namespace") -> str:
    """The paper's layout: one table per (level, top level), and per ε for the w and label-noise levels; models ×
    columns (ε for 1-event, w for w-event and w-user, σ_F for label-noise), mean ± std; baselines below; the
    paper's bold cells of the w and label-noise tables marked '*' (``best``, :func:`best_cells`); cells stopped at
    the epochs cap before their budget marked '†'; a column that repeats another's runs (``same``,
    :func:`same_runs`) headed '[= ...]' and said so below.

    Args:
        rows: The grid's rows.
        baselines: The baselines' CRPS.
        best: The bold cells.
        same: The repeating columns.
        split: The split.
        args: The command's arguments.

    Returns:
        The tables' text.
    """
    from tsdp.experiments.grid import Level

    lines: List[str] = [f"dataset {split.spec.name}: {split.train.N} training series, {split.test.count} test windows, "
                        f"L_F = {split.spec.forecast_length}, L_C = {split.spec.context_length}; δ = {args.delta:g}"]
    blocks = {}
    for r in rows:
        blocks.setdefault((r.level, r.top, None if r.level == Level.ONE_EVENT else r.epsilon), []).append(r)
    bold = {(b.level, b.top, b.epsilon, b.model, b.column) for b in best}
    for (level, top, epsilon), rs in blocks.items():
        columns = list(dict.fromkeys(r.column for r in rs))
        marked = level != Level.ONE_EVENT
        repeats = [x for x in same if (x.level, x.top, x.epsilon) == (level, top, epsilon)]
        repeated = {x.column: x.same_as for x in repeats}

        def mark(model, column):
            if not marked:
                return ""
            return "*" if (level, top, epsilon, model, column) in bold else " "

        lines += ["", _block_title(level, top, epsilon, rs),
                  "model".ljust(20) + "".join((_column_label(level, c) + (
                      f" [= {_column_label(level, repeated[c])}]" if c in repeated else "")
                      + (" " if marked else "")).rjust(22) for c in columns)]
        for checkpoint in ("last", "selected"):
            for model in args.models:
                cell = {r.column: r for r in rs if r.model == model and r.checkpoint == checkpoint}
                label = MODEL_LABELS[model] + (" [sel]" if checkpoint == "selected" else "")
                lines.append(label.ljust(20) + "".join(
                    _cell_text(cell.get(c), mark(model, c) if checkpoint == "last" else " " * marked).rjust(22)
                    for c in columns))
        for name, value in baselines.items():
            lines.append(MODEL_LABELS[name].ljust(20) + "".join((f"{value:.3f}" + mark(name, c)).rjust(22)
                                                                for c in columns))
        notes = _same_run_notes(level, repeats)
        if any(any(r.capped) for r in rs):
            notes.insert(0, f"{CAPPED_MARK}: stopped at the epochs cap before its budget (ε spent < ε)")
        lines += [""] + notes if notes else []
    steps = [r for r in rows if r.checkpoint == "last"]
    lines.append("")
    lines.append("steps per seed and sound ε spent: " + "; ".join(
        f"{MODEL_LABELS[r.model]} ε={NO_NOISE if math.isinf(r.epsilon) else format(r.epsilon, 'g')}"
        + ("" if r.level == Level.ONE_EVENT else " " + _column_label(r.level, r.column).replace(" = ", "="))
        + f": {r.steps[0]} steps" + ("" if r.epsilon_spent[0] is None else f", ε {rounded_up(r.epsilon_spent[0], 4, fixed=True)}")
        + (f" < {r.epsilon:g} (epochs cap)" if r.capped[0] else "")
        for r in steps[:8]) + (" ..." if len(steps) > 8 else ""))
    return "\n".join(lines)
