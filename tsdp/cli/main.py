"""`tsdp`: the command line. Human output by default, --json for machines.

Exit codes: 0 success, 1 a check failed, 2 bad input (the message names the parameter).
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from typing import Callable, Dict, List, Optional

from tsdp.theorems.bounds.base import TheoremError
from tsdp.theorems.config import ConfigError

from .config_args import add_config_arguments, config_from_args

COMMANDS: Dict[str, Callable[[argparse.Namespace], int]] = {}


class UsageError(ValueError):
    """Bad command-line input that argparse cannot catch (exit code 2)."""


def command(name: str):
    def register(fn):
        COMMANDS[name] = fn
        return fn

    return register


def _emit(args, payload: dict, human: Callable[[dict], str]) -> None:
    print(json.dumps(payload, indent=2, default=_json_default) if args.json else human(payload))


def _json_default(x):
    if hasattr(x, "item"):
        return x.item()
    return str(x)


# ----------------------------------------------------------------------------- theorems


@command("theorems")
def cmd_theorems(args) -> int:
    from tsdp.theorems.registry import REGISTRY

    rows = [b.describe() for b in REGISTRY.values()]

    def human(_):
        lines = []
        for r in rows:
            lines.append(f"{r['id']:<12} {r['reference']:<10} {r['kind']:<6} {r['scope']:<6} {r['label']}")
            lines.append(f"{'':<12} scheme: {r['scheme']}")
            lines.append(f"{'':<12} {r['statement']}")
        return "\n".join(lines)

    _emit(args, {"theorems": rows}, human)
    return 0


# ----------------------------------------------------------------------------- profile


def _alphas(args) -> List[float]:
    alphas = list(args.alpha or [])
    for e in args.epsilon or []:
        if not math.isfinite(e):
            raise UsageError(f"invalid --epsilon: must be finite (got {e})")
        alphas.append(math.exp(e))
    if not alphas:
        raise UsageError("give at least one --alpha A or --epsilon E")
    for a in alphas:
        if not (math.isfinite(a) and a >= 0):
            raise UsageError(f"invalid --alpha: must be finite and >= 0 (got {a})")
    return alphas


@command("profile")
def cmd_profile(args) -> int:
    import numpy as np

    from tsdp.theorems.registry import resolve

    config = config_from_args(args)
    alphas = _alphas(args)
    if args.dps is not None and args.dps < 15:
        raise UsageError(f"invalid --dps: must be >= 15 (got {args.dps})")
    bound, reason = resolve(config, args.theorem)
    if args.dps is None:
        delta = [float(x) for x in bound.profile(config, np.array(alphas))]
        values: list = delta
    else:
        values = [bound.profile_mp(config, a, args.dps) for a in alphas]
        delta = [float(v) for v in values]
    payload = {
        "theorem": bound.id,
        "label": bound.label,
        "kind": bound.kind,
        "scope": bound.scope,
        "reason": reason,
        "config": config.as_dict(),
        "alpha": alphas,
        "delta": delta,
    }
    if args.dps is not None:
        payload["dps"] = args.dps
        payload["delta_exact"] = [str(v) for v in values]

    def human(p):
        shown = payload.get("delta_exact", [f"{d:.10g}" for d in delta])
        lines = [f"{bound.id} ({bound.reference}, {bound.label}): {bound.kind}, per {bound.scope} - {reason}"]
        lines.append(f"{'alpha':>14}  {'epsilon':>10}  H_alpha")
        for a, d in zip(alphas, shown):
            eps = f"{math.log(a):.6g}" if a > 0 else "-inf"
            lines.append(f"{a:>14.6g}  {eps:>10}  {d}")
        return "\n".join(lines)

    _emit(args, payload, human)
    return 0


# ----------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tsdp",
        description="Verify the privacy guarantees of DP-SGD for time-series forecasting "
        "(Schuchardt et al., ICML 2025: privacy amplification by structured subsampling).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("theorems", help="list every bound of the catalogue (T1-T14)",
                       description="List every bound: id, paper label, kind (tight/upper/lower), scope, scheme, statement.")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("profile", help="privacy profile H_alpha (delta at e^epsilon) of one bound",
                       description="Evaluate H_α = δ(ε = log α) of a bound for the configuration. Without --theorem "
                       "the tightest sound upper bound for the configured scheme is used.")
    p.add_argument("--theorem", help="bound id, e.g. T6 (see `tsdp theorems`)")
    p.add_argument("--alpha", type=float, nargs="+", metavar="A", help="values of α ≥ 0")
    p.add_argument("--epsilon", type=float, nargs="+", metavar="E", help="values of ε (α = e^ε)")
    p.add_argument("--dps", type=int, default=None, help="evaluate in mpmath at this many digits (default: numpy float64)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_config_arguments(p)

    for name in subcommand_modules():
        importlib.import_module(name).add_parsers(sub, command)
    return parser


def subcommand_modules() -> List[str]:
    """The modules that add sub-commands: every ``tsdp/cli/cmd_<name>.py``, in name order.

    Each defines ``add_parsers(subparsers, command)``, where ``command(name)`` registers the
    handler; a new sub-command is a new module, with no edit here. They must import heavy
    libraries (torch, matplotlib, dp-accounting) lazily, inside the handler.
    """
    import pkgutil
    from pathlib import Path

    return sorted(f"{__package__}.{m.name}" for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                  if m.name.startswith("cmd_"))


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ConfigError as exc:
        flag = "--" + exc.parameter.replace("_", "-")
        print(f"tsdp {args.command}: error: {exc} [flag {flag}]", file=sys.stderr)
        return 2
    except (TheoremError, UsageError) as exc:
        print(f"tsdp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"tsdp {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
