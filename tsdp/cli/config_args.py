"""The one vocabulary of training-configuration flags (DESIGN.md) and of data flags, shared by every sub-command."""
from __future__ import annotations

import argparse
from typing import Optional

from tsdp.theorems.config import BOTTOM_LEVEL, DEFAULT_CONFIG, RELATIONS, TOP_LEVEL, TrainingConfig


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --N --L ... --sigma-forecast; defaults are the paper's Section 5 configuration."""
    d = DEFAULT_CONFIG
    g = parser.add_argument_group("training configuration (defaults: paper Section 5)")
    g.add_argument("--N", type=int, default=d.N, help=f"number of sequences (default {d.N})")
    g.add_argument("--L", type=int, default=None, help=f"sequence length (default {d.L}; with --lengths, the shortest "
                   "of them)")
    g.add_argument("--lengths", type=int, nargs="+", default=None, metavar="L_i",
                   help="variable sequence lengths; the shortest is used (--L, if given, must equal it)")
    g.add_argument("--context-length", type=int, default=d.context_length, help=f"L_C (default {d.context_length})")
    g.add_argument("--forecast-length", type=int, default=d.forecast_length, help=f"L_F (default {d.forecast_length})")
    g.add_argument("--batch-size", type=int, default=d.batch_size, help=f"Λ, subsequences per step (default {d.batch_size})")
    g.add_argument("--instances", type=int, default=d.instances, help=f"λ, subsequences per sequence (default {d.instances})")
    g.add_argument("--sigma", type=float, default=d.sigma, help=f"noise multiplier σ (default {d.sigma})")
    g.add_argument("--top", choices=TOP_LEVEL, default=d.top, help=f"top-level scheme (default {d.top})")
    g.add_argument("--bottom", choices=BOTTOM_LEVEL, default=d.bottom, help=f"bottom-level scheme (default {d.bottom})")
    g.add_argument("--relation", choices=RELATIONS, default=d.relation, help="neighbouring relation (default event)")
    g.add_argument("--w", type=int, default=d.w, help="elements (event) or windows' worth (user) that change (default 1)")
    g.add_argument("--v", type=float, default=d.v, help="largest change of one element (default 1)")
    g.add_argument("--sigma-context", type=float, default=d.sigma_context, help="context augmentation std σ_C in units of v (default 0)")
    g.add_argument("--sigma-forecast", type=float, default=d.sigma_forecast, help="forecast augmentation std σ_F in units of v (default 0)")


def config_from_args(args: argparse.Namespace) -> TrainingConfig:
    """A validated :class:`TrainingConfig` from parsed flags (raises ConfigError)."""
    return TrainingConfig(
        N=args.N, L=args.L, context_length=args.context_length, forecast_length=args.forecast_length,
        batch_size=args.batch_size, instances=args.instances, sigma=args.sigma, top=args.top,
        bottom=args.bottom, relation=args.relation, w=args.w, v=args.v,
        sigma_context=args.sigma_context, sigma_forecast=args.sigma_forecast,
        lengths=tuple(args.lengths) if args.lengths else None,
    )


STEPS_HELP = ("training steps S: optimizer updates, the same count in every command. The accountant composes "
              "one event per step for step-scoped schemes (WOR, Poisson, pooled top level) and one per epoch "
              "touched for deterministic/shuffled iteration (ceil(S / ceil(N/N')) epochs); outputs label that "
              "number 'compositions'")
"""The one definition of ``--steps`` for every sub-command's help (README: "The commands")."""


def check_device(value: str) -> str:
    """Why ``--device value`` cannot be used here ('' when it can): auto and cpu always can;
    anything else is checked against what torch sees (torch is imported only then)."""
    v = value.strip().lower()
    if v in ("auto", "cpu"):
        return ""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return f"{value!r} needs torch, which is not installed (use cpu)"
    try:
        dev = torch.device(v)
    except (RuntimeError, ValueError):
        return f"unknown device {value!r} (use auto, cpu, cuda, cuda:N or mps)"
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            return f"{value!r}: torch sees no CUDA device on this machine (use auto or cpu)"
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            return f"{value!r}: torch sees {torch.cuda.device_count()} CUDA device(s)"
        return ""
    if dev.type == "mps":
        return "" if torch.backends.mps.is_available() else f"{value!r}: torch sees no MPS device (use auto or cpu)"
    if dev.type == "cpu":
        return ""
    return f"{value!r}: device type {dev.type!r} is not supported (use auto, cpu, cuda or mps)"


CATALOGUE = "T1-T15"
"""The ids of the catalogue, as help texts name them (tests/cli/test_help.py checks it against the registry,
which the parser cannot import: it loads sympy)."""

DATA_OPTIONS = ("layout", "item_id", "timestamp", "target")
"""The loader options of :func:`tsdp.datasets.formats.load_series` that have a flag of their own."""


def add_data_arguments(parser: argparse.ArgumentParser, *, default=None, required: bool = False,
                       synthetic: bool = True, what: str = "the series") -> None:
    """Add --data --layout --item-id --timestamp --target, the one set of data flags of every command that reads
    series (read by :func:`data_from_args`). ``synthetic``: whether 'synthetic' is offered (it needs the
    training-configuration flags); ``what``: what the command does with the data, for the help."""
    g = parser.add_argument_group("data (read by one loader in every command)")
    sources = "'synthetic' (seeded: N series of length L + L_F), " if synthetic else ""
    shown = f" (default {default})" if default is not None else ""
    g.add_argument("--data", default=default, required=required, metavar="SOURCE",
                   help=f"{what}: {sources}'grunfeld' (11 firms x 20 years, statsmodels), 'm1-yearly' (the M1 "
                   f"competition's 181 yearly series, Monash repository), or a file: CSV (.csv, .csv.gz), parquet (.parquet, "
                   f".pq), GluonTS JSON lines (.json, .jsonl, also .gz) or Monash .tsf{shown}")
    g.add_argument("--layout", choices=("auto", "long", "wide"), default="auto",
                   help="table layout of a CSV / parquet file: long (one row per item, timestamp, value), wide (one "
                   "column per series) or auto: long when an item id column is present or named, wide when every "
                   "column is numeric; otherwise the error says which flag to add (default auto)")
    g.add_argument("--item-id", default=None, metavar="COLUMN",
                   help="long layout: the column naming each series (default item_id)")
    g.add_argument("--timestamp", default=None, metavar="COLUMN",
                   help="the time column (default timestamp); in a wide table it is optional, the row index")
    g.add_argument("--target", default=None, metavar="COLUMN",
                   help="long layout: the value column (default target); for 'grunfeld' invest, value or capital "
                   "(default invest)")


def data_from_args(args: argparse.Namespace, config: Optional[TrainingConfig] = None, *, seed: int = 0):
    """The :class:`~tsdp.datasets.series.SeriesData` that ``--data`` names, read by
    :func:`tsdp.datasets.formats.load_series` with the layout flags. A problem with the source is a
    UsageError naming --data and the file (and line); one with a loader option names its flag."""
    from tsdp.datasets.formats import DataError, load_series

    from .errors import UsageError

    try:
        return load_series(args.data, config=config, seed=seed,
                           **{option: getattr(args, option) for option in DATA_OPTIONS})
    except DataError as exc:
        if exc.parameter in ("data", *DATA_OPTIONS):
            raise  # main names its flag (--data, --layout, --item-id, ...)
        raise UsageError(f"invalid --data: {exc.parameter}: {exc.constraint}") from None
    except ImportError as exc:  # an optional extra (pandas, pyarrow, statsmodels) that this format needs
        raise UsageError(f"invalid --data: {exc}") from None


class HelpFormatter(argparse.HelpFormatter):
    """Every command's help format: a flag's default is shown as "(default X)" unless its help already names
    it or there is none to show (None, False); never "(default: None)"."""

    def _get_help_string(self, action):
        text = action.help or ""
        nothing = action.default is None or action.default is False or action.default == argparse.SUPPRESS
        if "default" in text or nothing or not action.option_strings:
            return text
        shown = " ".join(map(str, action.default)) if isinstance(action.default, (list, tuple)) else action.default
        return f"{text} (default {shown})"
