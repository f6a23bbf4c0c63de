"""`tsdp bench {accounting,loop,audit,canary,planted,planted-opacus,blackbox,baselines,estimate,grid,startup,plan}`:
benchmarks (not tests).

Every benchmark is a module of :mod:`tsdp.bench`, imported lazily by the one that runs (``BENCHES``):
``accounting`` times the one-step PLD construction against dp-accounting's, interleaved
over rounds on equal work (:mod:`tsdp.bench.accounting`, :mod:`tsdp.bench.rounds`);
``loop``, ``audit``, ``canary``, ``planted`` (white-box audits of a hand-written DP-SGD loop
with planted bugs, over many seeds), ``planted-opacus`` (the same for an Opacus loop, one seed;
needs ``tsdp[opacus]``) and ``blackbox`` (spike-canary audits of a memoriser and of tsdp's
models trained without and with DP), ``baselines`` (the experiment's seasonal naive and
AutoETS on a set of electricity's shape), ``estimate`` (the experiment's pre-run estimate
against its run) and ``grid`` (the default 1-event grid trained together and cell by cell) import torch (or statsforecast) only when they run. ``startup`` times the `tsdp`
command's own start against a bare interpreter (:mod:`tsdp.bench.startup`), ``plan`` how long
`tsdp audit-fn --plan` answers over claims, audit sizes and batchings (:mod:`tsdp.bench.plan`).
"""
from __future__ import annotations

import importlib
import math
import shlex
import sys

from tsdp.bench.rounds import MAX_ROUNDS, MIN_ROUNDS
from .output import dumps

BENCHES = {
    # what -> (module, function, formatter of the human output)
    "accounting": ("tsdp.bench.accounting", "bench_accounting", "format_bench"),
    "loop": ("tsdp.bench.loop", "bench_loop", "format_bench"),
    "audit": ("tsdp.bench.audit", "bench_audit", "format_bench"),
    "canary": ("tsdp.bench.canary", "bench_canary", "format_bench"),
    "planted": ("tsdp.bench.bug_rates", "bench_planted", "format_bench"),
    "planted-opacus": ("tsdp.bench.planted_opacus", "bench_planted", "format_bench"),
    "blackbox": ("tsdp.bench.blackbox", "bench_blackbox", "format_bench"),
    "baselines": ("tsdp.bench.experiment", "bench_baselines", "format_baselines"),
    "estimate": ("tsdp.bench.experiment", "bench_estimate", "format_estimate"),
    "grid": ("tsdp.bench.experiment", "bench_grid", "format_grid"),
    "startup": ("tsdp.bench.startup", "bench_startup", "format_bench"),
    "plan": ("tsdp.bench.plan", "bench_plan", "format_bench"),
}
CANARY_FLAGS = {"--mu", "--canaries", "--seeds", "--delta", "--confidence", "--seed"}
BASELINES_FLAGS = {"--full", "--workers"}
BLACKBOX_FLAGS = {"--canaries", "--epochs", "--epsilon", "--delta", "--confidence", "--seed"}
PLANTED_FLAGS = {"--seeds", "--canaries", "--seed", "--workers"}


def add_parsers(sub, command) -> None:
    """Add `tsdp bench WHAT`; a new benchmark is one entry of ``BENCHES``.

    Args:
        sub (argparse._SubParsersAction): The sub-command parsers of ``tsdp``.
        command (Callable): :func:`tsdp.cli.main.command`, which registers a handler by name.
    """
    p = sub.add_parser("bench", help="benchmarks: accounting (PLD construction), loop, audit, canary (one-run "
                       "analyses), planted (bugs in a hand-written DP-SGD loop, over seeds), planted-opacus (bugs in an Opacus loop), blackbox (spike canaries on returned models), "
                       "baselines (the experiment's baselines at scale), estimate (the experiment's pre-run estimate), "
                       "grid (the default 1-event grid trained together against cell by cell), startup (`tsdp` against `python -c pass`), plan (how long `tsdp audit-fn --plan` answers)",
                       description="Run a benchmark and print its figures (--json for machines).")
    p.add_argument("what", choices=sorted(BENCHES), help="which benchmark")
    p.add_argument("--discretization", type=float, default=None,
                   help="PLD discretisation for `accounting` (default 1e-3: one library run at 1e-4 takes minutes)")
    p.add_argument("--models", nargs="+", default=None, metavar="MODEL",
                   help="models for `loop`: mlp and the paper's four (simple-ff, deepar, dlinear, itransformer); "
                        "default mlp simple-ff deepar")
    p.add_argument("--batches", nargs="+", type=int, default=None, metavar="B",
                   help="batch sizes for `loop` (default 64 256)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads for `loop` (default 1: on a shared machine, 2 threads can time the scheduler)")
    p.add_argument("--device", default="auto",
                   help="`loop`: auto (cuda when torch sees one, else cpu), cpu or cuda (default auto)")
    p.add_argument("--rounds", type=int, default=MIN_ROUNDS,
                   help="interleaved rounds for `loop`, `accounting`, `startup` and `audit` (1 vs 2 workers): each times every side once; the median "
                        f"ratio and its range are reported (default and minimum {MIN_ROUNDS})")
    p.add_argument("--mu", type=float, nargs="+", default=None, metavar="MU",
                   help="`canary`: GDP parameters of the idealised canary scores (default 0.5 1 2)")
    p.add_argument("--canaries", type=int, nargs="+", default=None, metavar="M",
                   help="`canary`: numbers of canaries (default 1000 10000); `blackbox`: one number (default 400); "
                        "`planted`: one number per audit (default 1000)")
    p.add_argument("--epochs", type=int, default=None,
                   help="`blackbox`: epochs of tsdp's models, without noise and with DP (default 100); `grid`: the epochs "
                        "cap of its cells (default the dataset's)")
    p.add_argument("--epsilon", type=float, default=None,
                   help="`blackbox`: the claimed ε at --delta; the DP runs use the σ that spends it (default 1)")
    p.add_argument("--seeds", type=int, default=20,
                   help="`canary`: audits per cell; `planted`: seeds per bug, five times as many for the correct "
                        "loop (default 20)")
    p.add_argument("--delta", type=float, default=1e-5, help="`canary`, `blackbox`: δ of the reported ε (default 1e-5)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="`canary`: confidence per analysis; `blackbox`: of each lower bound (default 0.95)")
    p.add_argument("--seed", type=int, default=0,
                   help="`canary`, `planted`: seed of the first audit; `blackbox`: of the data and canaries (default 0)")
    p.add_argument("--full", action="store_true",
                   help="`baselines`: electricity's shape (321 series x 26,304 values, 7 test windows; ~10 min) "
                        "instead of a scaled-down set (a minute)")
    p.add_argument("--workers", type=int, default=2, help="`baselines`: statsforecast's processes; `grid`: processes of each side; "
                        "`planted`: processes over the seeds, "
                        "one torch thread each (default 2)")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    @command("bench")
    def cmd_bench(args) -> int:
        from .main import UsageError

        module_name, fn_name, fmt_name = BENCHES[args.what]
        loop_flags = {"--models", "--batches", "--threads", "--rounds", "--device"}
        used = {"accounting": {"--discretization", "--rounds"}, "loop": loop_flags, "audit": {"--rounds"},
                "canary": CANARY_FLAGS, "planted": PLANTED_FLAGS, "planted-opacus": set(), "blackbox": BLACKBOX_FLAGS,
                "baselines": BASELINES_FLAGS, "estimate": set(), "grid": {"--workers", "--epochs"}, "startup": {"--rounds"}, "plan": set()}[args.what]
        unused = sorted((set(getattr(args, "typed_flags", ()))
                         & ({"--discretization"} | loop_flags | CANARY_FLAGS | BLACKBOX_FLAGS | BASELINES_FLAGS
                          | PLANTED_FLAGS))
                        - used)
        if unused:
            raise UsageError(f"invalid {unused[0]}: `tsdp bench {args.what}` does not take it")
        if not MIN_ROUNDS <= args.rounds <= MAX_ROUNDS:
            raise UsageError(f"invalid --rounds: must be in [{MIN_ROUNDS}, {MAX_ROUNDS}] (got {args.rounds})")
        try:
            module = importlib.import_module(module_name)
            fn = getattr(module, fn_name)
        except (ImportError, AttributeError) as exc:
            print(f"tsdp bench: error: benchmark {args.what!r} is not available "
                  f"({module_name}.{fn_name} cannot be imported: {exc})", file=sys.stderr)
            return 2
        progress = None if args.json else (lambda m: print(m, file=sys.stderr))
        if args.what == "accounting":
            discretization = module.BENCH_DISCRETIZATION if args.discretization is None else args.discretization
            if not (0 < discretization <= 1):
                raise UsageError(f"invalid --discretization: must be in (0, 1] (got {discretization})")
            from .output import Heartbeat

            with Heartbeat("tsdp bench accounting") as beat:  # the library's construction runs a minute, silent
                result = fn(discretization=discretization, rounds=args.rounds, progress=beat.phase)
        elif args.what == "loop":
            for flag, values in (("--batches", args.batches or ()), ("--threads", (args.threads,))):
                if any(v < 1 for v in values):
                    raise UsageError(f"invalid {flag}: must be >= 1 (got {' '.join(map(str, values))})")
            unknown = [m for m in args.models or () if m not in module.BENCH_MODELS]
            if unknown:
                raise UsageError(f"invalid --models: {unknown[0]!r} is not one of {', '.join(module.BENCH_MODELS)}")
            try:
                module.resolve_bench_device(args.device)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            result = fn(models=tuple(args.models or module.DEFAULT_MODELS),
                        batches=tuple(args.batches or module.DEFAULT_BATCHES), threads=args.threads,
                        rounds=args.rounds, device=args.device, progress=progress)
        elif args.what == "canary":
            result = fn(**_canary_options(args), progress=progress)
        elif args.what == "blackbox":
            result = fn(**_blackbox_options(args), progress=progress)
        elif args.what == "planted":
            result = fn(**_planted_options(args), progress=progress)
        elif args.what == "baselines":
            from tsdp.verify.cpus import check_workers

            check_workers("workers", args.workers)
            result = fn(full=args.full, workers=args.workers, progress=progress)
        elif args.what == "grid":
            from tsdp.verify.cpus import check_workers

            check_workers("workers", args.workers)
            if args.epochs is not None and args.epochs < 1:
                raise UsageError(f"invalid --epochs: must be >= 1 (got {args.epochs})")
            result = fn(workers=args.workers, epochs=args.epochs, progress=progress)
        elif args.what in ("audit", "startup"):
            result = fn(rounds=args.rounds, progress=progress)
        else:
            result = fn(progress=progress)
        from tsdp.verify.json_data import Record

        if isinstance(result, Record):  # a typed bench result: its JSON form, what the docs' page renders too
            result = result.as_dict()
        if args.json:  # the bench and the command that ran it go with the figures (the docs' benchmark page)
            print(dumps({"bench": args.what, "command": "tsdp " + shlex.join(args.argv), **result}))
        else:
            print(getattr(module, fmt_name)(result))
        return 0


def _canary_options(args) -> dict:
    """`tsdp bench canary`'s flags, checked (:class:`UsageError` naming the flag)."""
    from .errors import UsageError, check_delta

    mus = args.mu or [0.5, 1.0, 2.0]
    if not all(math.isfinite(x) and 0 < x <= 20 for x in mus):
        raise UsageError(f"invalid --mu: each must be in (0, 20] (got {' '.join(map(str, mus))})")
    canaries = args.canaries or [1000, 10000]
    if not all(2 <= x <= 10 ** 6 for x in canaries):
        raise UsageError(f"invalid --canaries: each must be in [2, 10^6] (got {' '.join(map(str, canaries))})")
    if args.seeds < 1:
        raise UsageError(f"invalid --seeds: must be >= 1 (got {args.seeds})")
    if not (math.isfinite(args.confidence) and 0 < args.confidence < 1):
        raise UsageError(f"invalid --confidence: must be in (0, 1) (got {args.confidence})")
    return {"mus": tuple(mus), "canaries": tuple(canaries), "seeds": args.seeds, "delta": check_delta(args.delta),
            "confidence": args.confidence, "seed": args.seed}


def _blackbox_options(args) -> dict:
    """`tsdp bench blackbox`'s flags, checked (:class:`UsageError` naming the flag)."""
    from .errors import UsageError, check_delta

    canaries = args.canaries or [400]
    if len(canaries) != 1 or not 2 <= canaries[0] <= 4000:
        raise UsageError(f"invalid --canaries: one number in [2, 4000] (got {' '.join(map(str, canaries))})")
    epochs = 100 if args.epochs is None else args.epochs
    if not 1 <= epochs <= 10 ** 4:
        raise UsageError(f"invalid --epochs: must be in [1, 10000] (got {epochs})")
    epsilon = 1.0 if args.epsilon is None else args.epsilon
    if not (math.isfinite(epsilon) and 0.01 <= epsilon <= 50):
        raise UsageError(f"invalid --epsilon: must be in [0.01, 50] (got {epsilon})")
    if not (math.isfinite(args.confidence) and 0 < args.confidence < 1):
        raise UsageError(f"invalid --confidence: must be in (0, 1) (got {args.confidence})")
    if not 0 <= args.seed < 2 ** 32:
        raise UsageError(f"invalid --seed: must be in [0, 2^32) (got {args.seed})")
    return {"canaries": canaries[0], "epochs": epochs, "epsilon": epsilon, "delta": check_delta(args.delta),
            "confidence": args.confidence, "seed": args.seed}


def _planted_options(args) -> dict:
    """`tsdp bench planted`'s flags, checked (:class:`UsageError` naming the flag)."""
    from tsdp.verify.cpus import check_workers

    from .errors import UsageError

    canaries = args.canaries or [1000]
    if len(canaries) != 1 or not 2 <= canaries[0] <= 10 ** 4:
        raise UsageError(f"invalid --canaries: one number in [2, 10000] (got {' '.join(map(str, canaries))})")
    if not 1 <= args.seeds <= 10 ** 4:
        raise UsageError(f"invalid --seeds: must be in [1, 10000] (got {args.seeds})")
    if not 0 <= args.seed < 2 ** 31:
        raise UsageError(f"invalid --seed: must be in [0, 2^31) (got {args.seed})")
    check_workers("workers", args.workers)
    return {"seeds": args.seeds, "canaries": canaries[0], "seed": args.seed, "workers": args.workers}
