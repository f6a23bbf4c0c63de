"""`tsdp bench {accounting,loop,audit,planted}`: benchmarks (not tests).

``accounting`` times the one-step PLD construction (:mod:`verify.bench_accounting`);
``loop``, ``audit`` and ``planted`` (canary audits of an Opacus loop with planted bugs; needs
``tsdp[opacus]``) belong to the attacks package and are imported lazily (torch is
never imported by verify/ at module import time).
"""
from __future__ import annotations

import importlib
import sys

from .cmd_train import MODEL_NAMES
from .output import dumps

BENCHES = {
    # what -> (module, function, formatter of the human output)
    "accounting": ("tsdp.verify.bench_accounting", "bench_accounting", "format_bench"),
    "loop": ("tsdp.attacks.loop.bench", "bench_loop", "format_bench"),
    "audit": ("tsdp.attacks.montecarlo.bench", "bench_audit", "format_bench"),
    "planted": ("tsdp.attacks.integrations.planted_opacus", "bench_planted", "format_bench"),
}


def add_parsers(sub, command) -> None:
    """Add `tsdp bench WHAT`; a new benchmark is one entry of ``BENCHES``."""
    p = sub.add_parser("bench",
                       help="benchmarks: accounting (PLD construction), loop, audit, planted (bugs in an Opacus loop)",
                       description="Run a benchmark and print its figures (--json for machines).")
    p.add_argument("what", choices=sorted(BENCHES), help="which benchmark")
    p.add_argument("--discretization", type=float, default=1e-4,
                   help="PLD discretisation for `accounting` (default 1e-4)")
    p.add_argument("--models", nargs="+", choices=MODEL_NAMES, default=None, metavar="MODEL",
                   help=f"models for `loop` ({', '.join(MODEL_NAMES)}; default all)")
    p.add_argument("--rounds", type=int, default=5,
                   help="rounds for `loop`: each times both engines and the naive loop; the median ratio is reported "
                        "(default 5)")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    @command("bench")
    def cmd_bench(args) -> int:
        from .main import UsageError

        module_name, fn_name, fmt_name = BENCHES[args.what]
        used = {"accounting": {"--discretization"}, "loop": {"--models", "--rounds"}, "audit": set(), "planted": set()}[args.what]
        unused = sorted((set(getattr(args, "typed_flags", ())) & {"--discretization", "--models", "--rounds"}) - used)
        if unused:
            raise UsageError(f"invalid {unused[0]}: `tsdp bench {args.what}` does not take it")
        try:
            module = importlib.import_module(module_name)
            fn = getattr(module, fn_name)
        except (ImportError, AttributeError) as exc:
            print(f"tsdp bench: error: benchmark {args.what!r} is not available "
                  f"({module_name}.{fn_name} cannot be imported: {exc})", file=sys.stderr)
            return 2
        progress = None if args.json else (lambda m: print(m, file=sys.stderr))
        if args.what == "accounting":
            if not (0 < args.discretization <= 1):
                raise UsageError(f"invalid --discretization: must be in (0, 1] (got {args.discretization})")
            from .output import Heartbeat

            with Heartbeat("tsdp bench accounting") as beat:  # the library's construction runs a minute, silent
                result = fn(discretization=args.discretization, progress=beat.phase)
        elif args.what == "loop":
            if args.rounds < 1:
                raise UsageError(f"invalid --rounds: must be >= 1 (got {args.rounds})")
            result = fn(models=tuple(args.models or MODEL_NAMES), rounds=args.rounds, progress=progress)
        else:
            result = fn(progress=progress)
        if args.json:
            print(dumps(result))
        else:
            print(getattr(module, fmt_name)(result))
        return 0
