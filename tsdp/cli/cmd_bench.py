"""`tsdp bench {accounting,loop,audit}`: benchmarks (not tests).

``accounting`` times the one-step PLD construction (:mod:`verify.bench_accounting`);
``loop`` and ``audit`` belong to the attacks package and are imported lazily (torch is
never imported by verify/ at module import time).
"""
from __future__ import annotations

import importlib
import sys

from tsdp.verify.bench_rounds import MIN_ROUNDS
from .output import dumps

BENCHES = {
    # what -> (module, function, formatter of the human output)
    "accounting": ("tsdp.verify.bench_accounting", "bench_accounting", "format_bench"),
    "loop": ("tsdp.attacks.loop.bench", "bench_loop", "format_bench"),
    "audit": ("tsdp.attacks.bench_audit", "bench_audit", "format_bench"),
}


def add_parsers(sub, command) -> None:
    """Add `tsdp bench WHAT`; a new benchmark is one entry of ``BENCHES``."""
    p = sub.add_parser("bench", help="benchmarks: accounting (PLD construction), loop, audit",
                       description="Run a benchmark and print its figures (--json for machines).")
    p.add_argument("what", choices=sorted(BENCHES), help="which benchmark")
    p.add_argument("--discretization", type=float, default=1e-4,
                   help="PLD discretisation for `accounting` (default 1e-4)")
    p.add_argument("--models", nargs="+", default=None, metavar="MODEL",
                   help="models for `loop`: mlp and the paper's four (simple-ff, deepar, dlinear, itransformer); "
                        "default mlp simple-ff deepar")
    p.add_argument("--batches", nargs="+", type=int, default=None, metavar="B",
                   help="batch sizes for `loop` (default 64 256)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads for `loop` (default 1, the issue's setting)")
    p.add_argument("--rounds", type=int, default=MIN_ROUNDS,
                   help="interleaved rounds for `loop`: each times the non-private step, tsdp and Opacus; the median "
                        f"ratio and its range are reported (default and minimum {MIN_ROUNDS})")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    @command("bench")
    def cmd_bench(args) -> int:
        from .main import UsageError

        module_name, fn_name, fmt_name = BENCHES[args.what]
        loop_flags = {"--models", "--batches", "--threads", "--rounds"}
        used = {"accounting": {"--discretization"}, "loop": loop_flags, "audit": set()}[args.what]
        unused = sorted((set(getattr(args, "typed_flags", ())) & ({"--discretization"} | loop_flags)) - used)
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
            if args.rounds < MIN_ROUNDS:
                raise UsageError(f"invalid --rounds: must be >= {MIN_ROUNDS} (got {args.rounds})")
            for flag, values in (("--batches", args.batches or ()), ("--threads", (args.threads,))):
                if any(v < 1 for v in values):
                    raise UsageError(f"invalid {flag}: must be >= 1 (got {' '.join(map(str, values))})")
            unknown = [m for m in args.models or () if m not in module.BENCH_MODELS]
            if unknown:
                raise UsageError(f"invalid --models: {unknown[0]!r} is not one of {', '.join(module.BENCH_MODELS)}")
            result = fn(models=tuple(args.models or module.DEFAULT_MODELS),
                        batches=tuple(args.batches or module.DEFAULT_BATCHES), threads=args.threads,
                        rounds=args.rounds, progress=progress)
        else:
            result = fn(progress=progress)
        if args.json:
            print(dumps(result))
        else:
            print(getattr(module, fmt_name)(result))
        return 0
