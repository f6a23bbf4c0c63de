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
from typing import List

from .errors import UsageError
from .output import NO_NOISE, dumps

MODEL_LABELS = {"simple-ff": "SimpleFF", "deepar": "DeepAR", "itransformer": "iTransf.", "dlinear": "DLinear",
                "seasonal-naive": "Seasonal", "autoets": "AutoETS"}
QUICK_MODELS = ("simple-ff", "dlinear")
QUICK_SEEDS = 2


def _epsilon(text: str) -> float:
    value = float(text)  # 'inf' reads as infinity: the non-private column
    if math.isnan(value) or value <= 0:
        raise ValueError(text)
    return value


def add_parsers(sub, command) -> None:
    """Add `tsdp experiment`."""
    from tsdp.attacks.experiment.grid import EPSILONS, LEVELS, MODELS, QUICK_EPOCHS, SEEDS, TOPS

    p = sub.add_parser(
        "experiment", help="the paper's privacy-utility grid: DP forecasters vs seasonal naive and AutoETS",
        description="Train the paper's four forecasters with DP-SGD at each ε (δ = 1e-7 by default; inf: no DP) "
        "for several seeds, privacy levels and top levels, with the paper's per-dataset defaults (L_F, L_C, Λ, σ, "
        "C = 1e-4, DeepAR lags, Adam 1e-3 with weight decay 1e-8, maximum epochs). Training stops at the budget "
        "(sound accountant); each cell records its steps and the ε they spent. Prints mean ± std of test CRPS "
        "over seeds (last iterate, covered by ε; the lowest-validation checkpoint beside it, not covered), the "
        "seasonal-naive and AutoETS baselines and claim C7's verdict. Without --dataset it runs on the shipped "
        "real dataset (M1 yearly).")
    p.add_argument("--dataset", default=None, metavar="NAME",
                   help="m1-yearly (shipped, the default), or a GluonTS benchmark: traffic, electricity, "
                        "solar_10_minutes (from --data-dir)")
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help="GluonTS's dataset cache holding <DIR>/<NAME>/{metadata.json,train,test} (default "
                        "$GLUONTS_DATASETS or ~/.gluonts/datasets)")
    p.add_argument("--download", action="store_true",
                   help="download a missing benchmark through GluonTS into --data-dir (needs internet)")
    p.add_argument("--models", nargs="+", choices=MODELS, default=None, help=f"rows (default all: {' '.join(MODELS)})")
    p.add_argument("--epsilons", nargs="+", type=_epsilon, default=None, metavar="E",
                   help="columns, each > 0; inf trains without DP (default 0.5 1 2 inf)")
    p.add_argument("--seeds", type=int, default=None, help=f"seeds per cell (default {SEEDS}; --quick {QUICK_SEEDS})")
    p.add_argument("--levels", nargs="+", choices=LEVELS, default=["1-event"],
                   help="privacy levels: 1-event (the main table), w-event, w-user (with --w), label-noise "
                        "((1, v)-user with --v and --sigma-forecast)")
    p.add_argument("--tops", nargs="+", choices=TOPS, default=None, help="top-level schemes (default shuffle wor)")
    p.add_argument("--w", type=int, default=1, help="w of the w-event and w-user levels")
    p.add_argument("--v", type=float, default=1.0, help="v of the label-noise level (largest change of one element)")
    p.add_argument("--sigma-forecast", type=float, default=0.0, help="σ_F of the label-noise level, in units of v")
    p.add_argument("--delta", type=float, default=1e-7, help="δ of every budget")
    p.add_argument("--epochs", type=int, default=None,
                   help=f"epochs cap of every cell (default the dataset's; --quick {QUICK_EPOCHS})")
    p.add_argument("--samples", type=int, default=100, help="sample paths per forecast (the CRPS's quantiles)")
    p.add_argument("--seed", type=int, default=0, help="root of the SeedSequence every cell's seed is spawned from")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (1: this process)")
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="run the cells on a Dask scheduler at ADDRESS, or 'auto' for a local Dask cluster "
                        "(needs the tsdp[cluster] extra)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="folder of the cell files (one JSON each; a rerun resumes from them) (default "
                        "tsdp-experiment/<dataset>)")
    p.add_argument("--quick", action="store_true",
                   help=f"a small grid that finishes in minutes: {' and '.join(QUICK_MODELS)}, {QUICK_SEEDS} "
                        f"seeds, WOR top level, {QUICK_EPOCHS} epochs (flags given still win)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto picks cuda when available, else cpu")
    p.add_argument("--discretization", type=float, default=1e-3,
                   help="the accountant's PLD discretisation (the paper's 1e-3)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")

    @command("experiment")
    def cmd_experiment(args) -> int:
        from tsdp.verify.cpus import check_workers
        from tsdp.verify.json_data import with_note

        _check(args)
        from tsdp.attacks.data.benchmarks import dataset_names, split_for
        from tsdp.attacks.experiment.grid import GridSettings, plan
        from tsdp.attacks.experiment.table import baseline_crps_of, claim_c7, rows_of, run_grid
        from tsdp.attacks.montecarlo.shards import check_cluster

        if args.dataset is not None and args.dataset not in dataset_names():
            raise UsageError(f"invalid --dataset: must be one of {', '.join(dataset_names())} (got {args.dataset!r})")
        check_workers("workers", args.workers)
        check_cluster(args.cluster)
        split = split_for(args.dataset, args.data_dir, download=args.download)
        name = split.spec.name
        out = args.out or os.path.join("tsdp-experiment", name)
        _check_out(out)
        settings = GridSettings(dataset=None if name == "m1-yearly" else name, data_dir=args.data_dir,
                                delta=args.delta, w=args.w, v=args.v, sigma_forecast=args.sigma_forecast,
                                epochs=args.epochs, n_samples=args.samples, device=args.device,
                                discretization=args.discretization, seed=args.seed)
        cells = plan(models=args.models, epsilons=args.epsilons, seeds=args.seeds, levels=tuple(args.levels),
                     tops=args.tops)
        import sys

        from tsdp.attacks.experiment.cells import load_done
        from tsdp.attacks.experiment.estimate import estimate

        pending = [c for c in cells if load_done(out, c) is None]
        plan_note = estimate(pending, settings)
        print(f"{len(cells) - len(pending)} of {len(cells)} cells already in {out}; " + plan_note.line(), file=sys.stderr)
        results, info = run_grid(cells, settings, folder=out, workers=args.workers, cluster=args.cluster,
                                 progress=True)
        baselines = baseline_crps_of(settings)
        rows = rows_of(results)
        c7 = claim_c7(rows, baselines)
        payload = {"dataset": split.spec.as_dict(), "split": split.as_dict(),
                   "rows": [with_note(dict(r.as_dict(), epsilon=r.epsilon), "epsilon", NO_DP) for r in rows],
                   "baselines": baselines, "claim_c7": c7.as_dict(),
                   "cells": [with_note(r.as_dict(), "epsilon", NO_DP) for r in results],
                   "settings": with_note(settings.as_dict(), "epsilons", NO_DP), "run": info,
                   "estimate": plan_note.as_dict(), "out": out}
        if args.json:
            print(dumps(payload))
            return 0
        print(render_table(rows, baselines, split, args))
        print(f"claim C7 ({c7.statement}): {c7.verdict}" + (
            "" if c7.margin is None else f"; best DP model vs best baseline {c7.best_baseline:.4f}, worst margin "
            f"over ε ≤ 1 {c7.margin:+.4f}"))
        print(f"{info['cells']} cells ({info['resumed']} resumed from {out}), {info.get('seconds', 0):.1f} s on "
              f"{info.get('executor')} ({args.workers} worker(s))")
        return 0


def _check(args) -> None:
    """Bad values of the grid's flags: one line each (the choices are argparse's)."""
    if args.quick:
        from tsdp.attacks.experiment.grid import QUICK_EPOCHS

        args.models = args.models or list(QUICK_MODELS)
        args.seeds = args.seeds if args.seeds is not None else QUICK_SEEDS
        args.tops = args.tops or ["wor"]
        args.epochs = args.epochs if args.epochs is not None else QUICK_EPOCHS
    from tsdp.attacks.experiment.grid import EPSILONS, MODELS, SEEDS, TOPS

    args.models = tuple(args.models or MODELS)
    args.epsilons = tuple(args.epsilons or EPSILONS)
    args.seeds = SEEDS if args.seeds is None else args.seeds
    args.tops = tuple(args.tops or TOPS)
    if not 1 <= args.seeds <= 1000:
        raise UsageError(f"invalid --seeds: must be in 1..1000 (got {args.seeds})")
    if args.epochs is not None and args.epochs < 1:
        raise UsageError(f"invalid --epochs: must be >= 1 (got {args.epochs})")
    if args.samples < 10:
        raise UsageError(f"invalid --samples: must be >= 10 (got {args.samples})")
    if not 1 <= args.w <= 10_000:
        raise UsageError(f"invalid --w: must be in 1..10000 (got {args.w})")
    for flag, value in (("--v", args.v),):
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"invalid {flag}: must be > 0 (got {value})")
    if not (math.isfinite(args.sigma_forecast) and args.sigma_forecast >= 0):
        raise UsageError(f"invalid --sigma-forecast: must be >= 0 (got {args.sigma_forecast})")
    if "label-noise" in args.levels and args.sigma_forecast == 0:
        raise UsageError("invalid --sigma-forecast: the label-noise level needs σ_F > 0")
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


def _check_out(out: str) -> None:
    """--out must be a folder this process can write (made if absent)."""
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"invalid --out: cannot make folder {out} ({exc.strerror or exc})") from None
    if not os.access(out, os.W_OK):
        raise UsageError(f"invalid --out: folder {out} is not writable")


def _cell_text(row) -> str:
    """mean ± std of a table cell; '-' when not run, 'no step' when its budget bought no training step."""
    if row is None:
        return "-"
    if not any(row.steps):
        return "no step"
    return f"{row.crps_mean:.3f} ± {row.crps_std:.3f}"


NO_DP = "null: ε = ∞, trained without DP (no noise)"
"""What an ε of inf (the non-private column) means beside its JSON null."""


def render_table(rows, baselines, split, args) -> str:
    """The paper's layout: one block per (level, top level), models × ε, mean ± std; baselines below."""
    lines: List[str] = [f"dataset {split.spec.name}: {split.train.N} training series, {split.test.count} test windows, "
                        f"L_F = {split.spec.forecast_length}, L_C = {split.spec.context_length}; δ = {args.delta:g}"]
    blocks = {}
    for r in rows:
        blocks.setdefault((r.level, r.top), []).append(r)
    eps = list(args.epsilons)
    head = "model".ljust(20) + "".join(("ε = ∞" if math.isinf(e) else f"ε = {e:g}").rjust(22) for e in eps)
    for (level, top), rs in blocks.items():
        lines += ["", f"{level}, top level {top} (last iterate: covered by ε; [sel]: lowest validation, not covered)",
                  head]
        for checkpoint in ("last", "selected"):
            for model in args.models:
                cell = {r.epsilon: r for r in rs if r.model == model and r.checkpoint == checkpoint}
                label = MODEL_LABELS[model] + (" [sel]" if checkpoint == "selected" else "")
                lines.append(label.ljust(20) + "".join(_cell_text(cell.get(e)).rjust(22) for e in eps))
        for name, value in baselines.items():
            lines.append(MODEL_LABELS[name].ljust(20) + "".join(f"{value:.3f}".rjust(22) for _ in eps))
    steps = [(r.model, r.epsilon, r.steps, r.epsilon_spent) for r in rows if r.checkpoint == "last"]
    lines.append("")
    lines.append("steps per seed and sound ε spent: " + "; ".join(
        f"{MODEL_LABELS[m]} ε={NO_NOISE if math.isinf(e) else format(e, 'g')}: {s[0]} steps" + ("" if sp[0] is None else f", ε {sp[0]:.4f}")
        for m, e, s, sp in steps[:8]) + (" ..." if len(steps) > 8 else ""))
    return "\n".join(lines)
