"""`tsdp audit-fn`: one-run canary audit of your own training function, given as a Python entry point.

``--train module:function`` names ``train(series) -> model`` (series: a list of 1-D float
arrays; model: anything whose call ``model(context, forecast)`` gives per-window losses, or
pair it with ``--loss module:function`` taking ``(model, context, forecast)``). The current
directory is importable, as with ``python -m``. torch and the attacks package load inside
the handler only.
"""
from __future__ import annotations

import importlib
import os
import sys

from .config_args import add_config_arguments, add_data_arguments, config_from_args, data_from_args
from .errors import UsageError, check_delta
from .output import dumps


def load_entry_point(spec: str, flag: str):
    """The callable ``module:function`` names (UsageError naming ``flag`` when it cannot be loaded)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"invalid {flag}: must be module:function (got {spec!r})")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"invalid {flag}: cannot load {spec!r} ({exc})") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's module failed while importing (SystemExit too)
        raise UsageError(f"invalid {flag}: importing {module_name!r} raised {type(exc).__name__}: {exc}") from exc
    if not callable(target):
        raise UsageError(f"invalid {flag}: {spec!r} is not callable")
    return target


def _human(d: dict) -> str:
    s = d["scores"]["memorisation"]
    runs = f" over {d['runs']} runs" if d.get("runs", 1) > 1 else ""
    line = (f"canary audit of {d['train']}: {d['canaries']} canaries{runs}, {d['included']} included, "
            f"δ = {d['delta']:g}\n"
            f"  ε lower bound ({d['confidence']:.0%}): {d['epsilon_lower']:.4f} "
            f"({s['correct']} of {s['guesses']} '{s['side']}' guesses correct, AUC {s['auc']:.3f})")
    if d["epsilon_claimed"] is not None:
        verdict = "VIOLATION: the lower bound exceeds" if d["violation"] else "consistent with"
        line += f"\n  {verdict} the claimed ε = {d['epsilon_claimed']:g}"
    return line


def _many_runs(args, task) -> dict:
    """``--runs R``: R runs of ``task`` on the sharded engine, the pooled m·R canaries certified at once."""
    from tsdp.attacks.canary.evidence import certify_evidence
    from tsdp.attacks.canary.runs import run_many
    from tsdp.attacks.canary.user_training import check_audit_inputs

    check_audit_inputs(task.train, task.loss, canaries=args.canaries, delta=args.delta, epsilon=args.epsilon,
                       seed=args.seed, confidence=args.confidence, spike=args.spike)
    task.check()
    many = run_many(task, args.runs, seed=args.seed, workers=args.workers, cluster=args.cluster,
                    threads=1 if args.workers > 1 or args.cluster else None, progress=not args.json)
    result = certify_evidence(many["evidence"], args.delta, args.confidence, claimed=args.epsilon)
    result.update(runs=args.runs, spike=args.spike, engine=many["info"])
    return result


def add_parsers(sub, command) -> None:
    """Add the `audit-fn` sub-command and register its handler."""
    p = sub.add_parser(
        "audit-fn", help="one-run canary audit of your own training function (module:function)",
        description="Insert m spike canaries into your data (each with probability 1/2), call your train(series) "
        "once, score every canary by how much better the trained model fits its windows with the spike than "
        "without, and turn the correct guesses into an ε lower bound (Steinke, Nasr, Jagielski 2023). Of the "
        "configuration flags only --context-length and --forecast-length (the window geometry) are used.")
    p.add_argument("--train", required=True, help="module:function of train(series) -> model")
    p.add_argument("--loss", default=None,
                   help="module:function of loss(model, context, forecast) -> per-window losses "
                        "(default: model(context, forecast))")
    p.add_argument("--canaries", type=int, required=True, help="number of canaries m")
    p.add_argument("--delta", type=float, required=True, help="δ in (0, 1)")
    p.add_argument("--epsilon", type=float, default=None, help="the ε your training claims at δ (to compare)")
    p.add_argument("--spike", type=float, default=10.0, help="canary size in standard deviations (default 10)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bound (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--runs", type=int, default=1,
                   help="train R times, fresh canaries each run (seeds from one SeedSequence), and certify the pooled "
                        "m·R canaries (default 1: one run)")
    p.add_argument("--workers", type=int, default=1, help="with --runs: local worker processes (default 1)")
    p.add_argument("--cluster", default=None,
                   help="with --runs: Dask scheduler address, or 'auto' for a local cluster of --workers processes")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_data_arguments(p, default="synthetic", what="the series the canaries go into")
    add_config_arguments(p)

    @command("audit-fn")
    def cmd_audit_fn(args) -> int:
        check_delta(args.delta)  # the other values are checked by audit_training, before any training
        if args.runs < 1 or args.workers < 1:
            raise UsageError(f"invalid --runs/--workers: must be >= 1 (got {args.runs}, {args.workers})")
        config = config_from_args(args)
        train = load_entry_point(args.train, "--train")
        loss = None if args.loss is None else load_entry_point(args.loss, "--loss")
        from tsdp.attacks.canary.user_training import SpikeTask, audit_training

        data = data_from_args(args, config, seed=args.seed)
        if args.runs == 1 and args.cluster is None:
            result = audit_training(train, data, config, canaries=args.canaries, delta=args.delta,
                                    epsilon=args.epsilon, loss=loss, seed=args.seed, confidence=args.confidence,
                                    spike=args.spike)
        else:
            result = _many_runs(args, SpikeTask(train, data, config, args.canaries, loss, args.spike))
        result["train"] = args.train
        print(dumps(result) if args.json else _human(result))
        return 1 if result["violation"] else 0
