"""The one vocabulary of training-configuration flags (DESIGN.md), shared by every sub-command."""
from __future__ import annotations

import argparse

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
