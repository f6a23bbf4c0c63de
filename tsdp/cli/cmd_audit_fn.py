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
    lines = [f"canary audit of {d['train']}: {d['canaries']} canaries{runs}, {d['included']} included, "
             f"δ = {d['delta']:g}, AUC {s['auc']:.3f}",
             f"  ε lower bound ({d['confidence']:.0%}): {d['epsilon_lower']:.4f}"]
    if "analyses" in s:  # the f-DP test, Steinke's bound as its baseline on the same guess sets
        a = s["analyses"]
        lines[-1] += (f" (f-DP one-run test {a['dp']['epsilon_lower']:.4f}, Steinke et al. "
                      f"{a['steinke']['epsilon_lower']:.4f}; confidence split between them before the scores)")
        lines.append(f"  if the training's trade-off curve is Gaussian: ε ≥ {s['epsilon_gdp']:.4f}")
        top = max(v for k, v in s["ceiling"].items() if k in ("dp", "steinke"))
        lines.append(f"  this audit could certify at most {top:.4f} (every guess right); the answer is limited by "
                     f"{'the audit size: more canaries or runs could certify more' if s['limited_by'] == 'audit size' else 'the training, not the audit size'}")
    else:
        lines[-1] += f" (Steinke et al.: {s['correct']} of {s['guesses']} '{s['side']}' guesses correct)"
    if d["epsilon_claimed"] is not None:
        verdict = "VIOLATION: the lower bound exceeds" if d["violation"] else "consistent with"
        lines.append(f"  {verdict} the claimed ε = {d['epsilon_claimed']:g}")
    return "\n".join(lines)


def _plan(args) -> dict:
    """``--plan``: before any training, what m·R canaries can certify (:func:`attacks.canary.fdp_bound.plan`)."""
    from tsdp.attacks.canary.fdp_bound import plan
    from tsdp.attacks.canary.user_training import check_audit_inputs

    canaries, delta, epsilon, _, confidence, _ = check_audit_inputs(
        None, None, canaries=args.canaries, delta=args.delta, epsilon=args.epsilon, seed=args.seed,
        confidence=args.confidence, spike=args.spike)
    out = plan(canaries * args.runs, delta, confidence, claimed_epsilon=epsilon)
    out.update(runs=args.runs, canaries_per_run=canaries)
    return out


def _plan_human(d: dict) -> str:
    lines = [f"audit plan: {d['canaries_per_run']} canaries × {d['runs']} run(s) = {d['canaries']} canaries, "
             f"δ = {d['delta']:g}, confidence {d['confidence']:.0%}",
             "  the most ε it can certify (every guess right): " + ", ".join(
                 f"{NAMES[k]} {v:.4f}" for k, v in d["ceiling"].items())]
    if "canaries_needed" in d:
        lines.append(f"  canaries needed to be able to certify the claimed ε = {d['claimed_epsilon']:g}: " + ", ".join(
            f"{NAMES[k]} {'more than 1e6' if v is None else v}" for k, v in d["canaries_needed"].items()))
    return "\n".join(lines)


NAMES = {"dp": "f-DP test", "gdp": "f-DP test, Gaussian curves", "steinke": "Steinke et al."}


def _many_runs(args, task) -> dict:
    """``--runs R``: R runs of ``task`` on the sharded engine, the pooled m·R canaries certified at once."""
    from tsdp.attacks.canary.evidence import CERTIFIERS, certify_evidence
    from tsdp.attacks.canary.runs import run_many
    from tsdp.attacks.montecarlo.shards import threads_per_worker
    from tsdp.attacks.canary.user_training import check_audit_inputs

    check_audit_inputs(task.train, task.loss, canaries=args.canaries, delta=args.delta, epsilon=args.epsilon,
                       seed=args.seed, confidence=args.confidence, spike=args.spike)
    task.check()
    many = run_many(task, args.runs, seed=args.seed, workers=args.workers, cluster=args.cluster,
                    threads=threads_per_worker(args.workers, args.cluster), progress=not args.json)
    result = certify_evidence(many["evidence"], args.delta, args.confidence, claimed=args.epsilon,
                              certifier=CERTIFIERS[args.analysis])
    result.update(runs=args.runs, spike=args.spike, analysis=args.analysis, engine=many["info"])
    return result


def add_parsers(sub, command) -> None:
    """Add the `audit-fn` sub-command and register its handler."""
    p = sub.add_parser(
        "audit-fn", help="one-run canary audit of your own training function (module:function)",
        description="Insert m spike canaries into your data (each with probability 1/2), call your train(series) "
        "once, score every canary by how much better the trained model fits its windows with the spike than "
        "without, and turn the correct guesses into an ε lower bound (Steinke, Nasr, Jagielski 2023). Of the "
        "configuration flags only --context-length and --forecast-length (the window geometry) are used.")
    p.add_argument("--train", default=None, help="module:function of train(series) -> model (required unless --plan)")
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
    p.add_argument("--analysis", choices=("fdp", "steinke"), default="fdp",
                   help="fdp: the f-DP one-run test (Mahloujifar, Melis & Chaudhuri 2025) on every guess set, with "
                        "Steinke et al.'s bound as its baseline (confidence split before the scores); steinke: that "
                        "bound alone (default fdp)")
    p.add_argument("--plan", action="store_true",
                   help="train nothing: print the most ε the audit's canaries × runs can certify, and with "
                        "--epsilon how many canaries it takes to test that claim")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_data_arguments(p, default="synthetic", what="the series the canaries go into")
    add_config_arguments(p)

    @command("audit-fn")
    def cmd_audit_fn(args) -> int:
        check_delta(args.delta)  # the other values are checked by audit_training, before any training
        if args.runs < 1 or args.workers < 1:
            raise UsageError(f"invalid --runs/--workers: must be >= 1 (got {args.runs}, {args.workers})")
        if args.plan:
            planned = _plan(args)
            print(dumps(planned) if args.json else _plan_human(planned))
            return 0
        if args.train is None:
            raise UsageError("invalid --train: required (module:function of your training), unless --plan")
        config = config_from_args(args)
        train = load_entry_point(args.train, "--train")
        loss = None if args.loss is None else load_entry_point(args.loss, "--loss")
        from tsdp.attacks.canary.user_training import SpikeTask, audit_training

        data = data_from_args(args, config, seed=args.seed)
        if args.runs == 1 and args.cluster is None:
            result = audit_training(train, data, config, canaries=args.canaries, delta=args.delta,
                                    epsilon=args.epsilon, loss=loss, seed=args.seed, confidence=args.confidence,
                                    spike=args.spike, analysis=args.analysis)
        else:
            result = _many_runs(args, SpikeTask(train, data, config, args.canaries, loss, args.spike))
        result["train"] = args.train
        print(dumps(result) if args.json else _human(result))
        return 1 if result["violation"] else 0
