"""`tsdp audit` and `tsdp audit-model`: Monte Carlo audits of the proofs' worst cases and canary audits of trained models.

torch and the attacks package are imported inside the handlers only, so `tsdp` starts fast.
Both print lower bounds on ε (with their confidence); a certified lower bound above the
sound ε is a privacy violation (a bug in the theory or the loop): the command then exits 1
and its JSON carries ``"violation": true`` next to both numbers and the confidence. Where the
sound bound answers for another neighbouring relation than the attack (the pooled loop,
T13/T14, against T13's one-window guarantee: claim C6) an audit above it is a relation
mismatch, not a violation: the output says so (``"sound_exceeded": true`` and
``"relation_note"`` in the JSON) and the command exits 0.
"""
from __future__ import annotations

import argparse
import math
from typing import Callable

from tsdp.attacks.montecarlo.verdict import percent_text, verdict_confidence, verdict_confidence_text
from tsdp.theorems.config import TrainingConfig, check_int
from tsdp.verify.rounded import rounded_down, rounded_nearest, rounded_up

from .config_args import (MODEL_NAMES, STEPS_HELP, add_config_arguments, add_data_arguments, config_from_args,
                          data_from_args, data_sizing_the_config)
from .errors import UsageError, check_confidence, check_delta
from .output import NO_NOISE, auc_text, dumps


def _trials_text(d: dict) -> str:
    """The trials per world of an audit: the plan's, or, when the violation test stopped the run, those its bounds
    used and the plan."""
    run = d.get("run") or {}
    if run.get("stopped_early"):
        return f"{run['trials_run']} of {d['trials']} planned trials (the violation test stopped the run)"
    return f"{d['trials']} trials"


def _human_audit(d: dict) -> str:
    lines = [
        f"audit of {d['theorem']} (sound bound {d['sound_theorem']}, attained pair {d['attained_pair']}): "
        f"{_trials_text(d)} x {d['steps']} training step(s) ({d['compositions']} composition(s)) per world "
        f"on {d['device']}",
        f"  estimate: certified ε lower bound (confidence {percent_text(_estimate_confidence(d))}) at δ = {d['delta']:g}: "
        f"{_low(d['epsilon_lower'])}" + _union_note(d.get("test") or {}),
        f"  ε attained by the construction: {_low(d['epsilon_attained'])}   ratio lower/attained: "
        + (f"{d['ratio']:.3f}" if d["ratio"] is not None and math.isfinite(d["ratio"]) else "n/a (attained ε is 0)"),
        f"  ε sound ({d['sound_theorem']}): {_up(d['epsilon_sound'])}",
        f"  goodness of fit (KS, both worlds, Bonferroni): p = {d['gof_pvalue']:.3g}",
        "  alpha        H_alpha lower   H_alpha theory",
    ]
    for p in d["profile"]:
        lines.append(f"  {p['alpha']:<12.5g} {rounded_down(p['h_lower'], 6):<15} {rounded_up(p['h_theory'], 6)}")
    lines += _human_engine(d)
    if d.get("relation_note") and d.get("sound_exceeded"):
        lines.insert(0, f"RELATION MISMATCH (claim C6), not a privacy violation: certified ε ≥ "
                        f"{_low(_certified(d))} at δ = {d['delta']:g} exceeds "
                        f"{d['sound_theorem']}'s ε = {_up(d['epsilon_sound'])}; {d['relation_note']}")
    elif d.get("relation_note"):
        lines.insert(0, f"note: {d['sound_theorem']} answers for another relation than this attack; {d['relation_note']}")
    if d["violation"]:
        excess = d["violation_test"]["profile_excess"]
        lines.insert(0, f"PRIVACY VIOLATION ({verdict_confidence_text(d['confidence'])}): certified ε ≥ "
                        f"{_low(_certified(d))} "
                        f"at δ = {d['delta']:g} against the sound ε = {_up(d['epsilon_sound'])}"
                        + (f", certified H_α above the sound profile by up to {excess:.4g}"
                           if excess is not None and excess > 0 else " (the estimate's; the violation test's H_α "
                           "stay within the sound profile)"))
    return "\n".join(lines)


def _low(x: float) -> str:
    """A lower bound on ε to 4 decimals, rounded down (it never claims more than was certified)."""
    return rounded_down(x, fixed=True)


def _up(x: float) -> str:
    """A sound ε to 4 decimals, rounded up (it never understates the privacy cost)."""
    return rounded_up(x, fixed=True)


def _certified(d: dict) -> float:
    """The larger of the audit's two certified ε lower bounds (its estimate and its violation test's; each holds at
    the audit's confidence, the larger at :func:`~tsdp.attacks.montecarlo.verdict.verdict_confidence`): what a verdict
    against the sound ε cites."""
    return max(d["epsilon_lower"], d["violation_test"]["epsilon_lower"])


def _estimate_confidence(d: dict) -> float:
    """The confidence of an audit's ``epsilon_lower``: the audit's, or with a sequential violation test, which puts its
    own value there when it stops and the estimate's otherwise, :func:`~tsdp.attacks.montecarlo.verdict.verdict_confidence`
    (audit()'s docstring)."""
    sequential = (d.get("violation_test") or {}).get("sequential", False)
    return verdict_confidence(d["confidence"]) if sequential else d["confidence"]


def _audit_options(args) -> dict:
    """`tsdp audit`'s options of :func:`tsdp.attacks.montecarlo.audit.audit`, one object per concern
    (:mod:`tsdp.attacks.montecarlo.options`), each checked as it is made, before any work: a bad value is a
    ConfigError naming its keyword, which main reports as the flag."""
    from tsdp.attacks.montecarlo.options import Confidence, Statistic, TrialPlan

    sharding = {} if args.shard_size is None else {"shard_size": args.shard_size}
    grid = {} if args.alpha is None else {"alphas": args.alpha}
    return {"trials": TrialPlan(args.trials, seed=args.seed, workers=args.workers, cluster=args.cluster,
                                device=args.device, **sharding),
            "statistic": Statistic(args.threshold, args.select_fraction, **grid),
            "confidence": Confidence(args.confidence, sequential=args.sequential)}


def _union_note(test: dict) -> str:
    """How the ε bound was certified: the exact level of the union test, with the union bound it improves on."""
    if test.get("union_value") is None:
        return ""
    return f" (exact level of the union test; the union bound alone: {_low(test['union_value'])})"


def _human_engine(d: dict) -> list:
    """Lines on the test design, the run, the sequential test and the attained bracket."""
    run, lines = d.get("run") or {}, []
    if d.get("design"):
        design, miss = d["design"], 1 - d["confidence"]
        lines.append(f"  test fixed before sampling (theory): {design['side']} side, threshold "
                     f"{design['threshold']:.4g}, union statistic's error {miss:.2g} split {miss * (1 - design['fp_share']):.2g} "
                     f"(true positives) + {miss * design['fp_share']:.2g} (false positives), "
                     f"expected union bound {design['expected_union']:.4f}")
    if run:
        lines.append(f"  run: {run['shards_run']}/{run['shards_planned']} shards of {run['shard_size']} on "
                     f"{run['executor']} ({run['workers']} worker(s)), {run['retries']} re-run(s)")
    seq = d.get("violation_test")
    if seq:
        verdict = "VIOLATION" if seq["violation"] else "no violation"
        kind = "sequential violation test" if seq["sequential"] else "violation test"
        level = seq["checkpoints"][-1]["level"] if seq.get("checkpoints") else 1 - d["confidence"]
        lines.append(f"  {kind} (sound profile at {len(seq['profile'])} points): {verdict} after {seq['trials']} "
                     f"trials per world; the violation test's own certified ε ≥ {_low(seq['epsilon_lower'])} at its level "
                     f"{level:.3g} (error split over {seq['tests']} tests; the estimate above is the audit's result), "
                     "largest "
                     f"certified H_α minus the sound profile {seq['profile_excess']:.3g} (> 0: a violation)")
    b = d.get("attained_bracket")
    if b:
        lines.append(f"  attained ε bracket [{_low(b['lower'])}, {_up(b['upper'])}] (discretisation {b['discretization']:g}),"
                     f" composition gap sound - upper = {rounded_nearest(b['composition_gap'], fixed=True)}")
    return lines


def _human_canary(r) -> str:
    """`tsdp audit-model`'s text: ``r`` a :class:`tsdp.attacks.canary.trained_model.ModelAuditResult`."""
    budget = (NO_NOISE if math.isinf(r.epsilon_budget)
              else f"{r.epsilon_budget:g} (" + ("no noise" if r.epsilon_spent is None
                                                else f"spent {rounded_up(r.epsilon_spent)}") + ")")
    lines = [f"canary audit of {r.model}: {r.canaries} canaries, {r.included} included, "
             f"training ε budget {budget}, δ = {r.delta:g}, {r.steps} training steps"]
    if r.violation:
        lines.insert(0, f"PRIVACY VIOLATION: the certified lower bound ε ≥ {_low(r.epsilon_lower)} "
                        f"(confidence {percent_text(r.confidence)}) exceeds the sound ε spent = {_up(r.epsilon_spent)}")
    for name, s in r.scores.items():
        lines.append(f"  {name:<10} ε lower bound ({percent_text(r.confidence)}): {_low(s.epsilon_lower)} "
                     f"({s.correct} of {s.guesses} '{s.side}' guesses correct, AUC {auc_text(s.auc)}); at most "
                     f"{_up(s.ceiling)} with every guess right: limited by the {s.limited_by}")
    return "\n".join(lines)


def default_construction(config: TrainingConfig, fallback: str) -> str:
    """The construction `tsdp audit --top TOP` runs without --theorem: the one the scheme's sound bound names
    (T1/T3/T4 for deterministic and shuffled iteration, T6/T9/T10 for WOR, ...), else ``fallback``.

    Args:
        config: The audited configuration (its scheme picks the sound bound).
        fallback: The construction's name when the bound names none that the audit can run.

    Returns:
        The construction's name.
    """
    from tsdp.theorems.bounds.base import TheoremError
    from tsdp.theorems.constructions import CONSTRUCTIONS
    from tsdp.theorems.registry import select_bound

    try:
        construction = select_bound(config)[0].construction
    except TheoremError:
        return fallback
    return construction if construction in CONSTRUCTIONS else fallback


def add_parsers(sub: argparse._SubParsersAction, command: Callable) -> None:
    """Add the `audit` and `audit-model` sub-commands and register their handlers.

    Args:
        sub: The ``tsdp`` parser's sub-parsers.
        command: The registrar of handlers (:func:`tsdp.cli.main.command`).
    """
    p = sub.add_parser(
        "audit", help="Monte Carlo audit of a proof's worst case through the real DP-SGD loop",
        description="Run the worst-case construction of a theorem's proof (gradient function and neighbouring "
        "datasets) through the real loop in both worlds, and report a lower confidence bound on ε at δ "
        "(Neyman-Pearson statistic; threshold, side and error split fixed from the construction's pair before "
        "sampling, or chosen on a selection split with --threshold split; Clopper-Pearson on the trials that "
        "did not choose), lower "
        "bounds on H_α, a KS goodness-of-fit p-value, and the sound and attained ε. The theorem fixes the scheme; "
        "T13/T14 audit the pooled-window loop against T13's one-record guarantee (claim C6): an audit above it is "
        "a relation mismatch (one element lies in k windows), reported as such with exit 0. Exit 1: a certified "
        "violation of a sound bound that covers the attack's relation; 2: bad input.")
    p.add_argument("--theorem", default="T6",
                   help="construction: T1 T3 T4 T6 T9 T10 T11 T13 T14 (default: the one of --top's scheme when --top "
                        "is given, else T6); T1/T3/T4 with --top shuffle run shuffled iteration and read each epoch's "
                        "maximum (the hidden-position attained ε)")
    p.add_argument("--trials", type=int, required=True, help="trials per world")
    schedule = p.add_mutually_exclusive_group()
    schedule.add_argument("--steps", type=int, default=None,
                          help=STEPS_HELP + " (per trial; default 1)")
    schedule.add_argument("--epochs", type=int, default=None, help="epochs per trial instead of --steps")
    p.add_argument("--delta", type=float, required=True, help="δ in (0, 1)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, ...")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bounds, in (0.5, 1) (the verdict "
                        "holds at 1 - 2 (1 - confidence); default 0.95)")
    p.add_argument("--select-fraction", type=float, default=0.5,
                   help="share of the trials that choose the test; the rest bound its errors (default 0.5)")
    p.add_argument("--alpha", type=float, nargs="+", default=None, help="α grid (each ≥ 1) for the H_α bounds")
    p.add_argument("--threshold", choices=("theory", "split"), default="theory",
                   help="theory: the test is fixed before sampling from the construction's pair, every trial certifies "
                        "(default); split: chosen on --select-fraction of the trials")
    p.add_argument("--workers", type=int, default=1,
                   help="local worker processes (default 1: this process); with --cluster auto: Dask workers")
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="run the shards on a Dask scheduler at ADDRESS, or 'auto' for a local Dask cluster "
                        "(needs the tsdp[cluster] extra)")
    p.add_argument("--shard-size", type=int, default=None,
                   help="trials of one world per shard (default 65536; with --threshold split at most "
                        "ceil(trials / 20), the default lowered to it); part of the sample's definition with --seed")
    p.add_argument("--sequential", action="store_true",
                   help="anytime-valid violation test: stop as soon as the sound profile is certainly exceeded")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_config_arguments(p)

    p = sub.add_parser(
        "audit-model", help="one-run canary audit of a trained forecaster (Steinke, Nasr, Jagielski 2023)",
        description="Insert m spike canaries, each with probability 1/2, train once with DP-SGD to the ε budget, "
        "score every canary (black-box loss and white-box gradient), and turn the correct guesses on the top "
        "scores into an ε lower bound (one-run audit with abstention).")
    p.add_argument("--model", required=True, choices=MODEL_NAMES, help="the forecaster trained with the canaries")
    p.add_argument("--canaries", type=int, required=True, help="number of canaries m")
    p.add_argument("--epsilon", type=float, required=True, help="training ε budget (inf: no noise)")
    p.add_argument("--delta", type=float, required=True, help="δ in (0, 1)")
    p.add_argument("--epochs", type=int, default=None,
                   help="train exactly this many epochs (σ calibrated to spend ε); without: train at --sigma to the budget")
    p.add_argument("--spike", type=float, default=10.0, help="canary size in standard deviations of its series (default 10)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence of the lower bounds, in (0.5, 1) (default 0.95)")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, ...")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_data_arguments(p, default="synthetic", what="the training series the canaries go into")
    add_config_arguments(p)

    @command("audit")
    def cmd_audit(args) -> int:
        check_delta(args.delta)  # steps: checked by audit(); trials and the engine's: by their options
        check_confidence(args.confidence)
        if args.epochs is not None:
            check_int("epochs", args.epochs, 1)
        if args.threshold != "split" and "--select-fraction" in getattr(args, "typed_flags", ()):
            raise UsageError(f"invalid --select-fraction: only with --threshold split (the {args.threshold} "
                             "threshold is fixed before sampling and every trial certifies)")
        options = _audit_options(args)
        if args.threshold == "split" and args.shard_size is not None:
            from tsdp.attacks.montecarlo.options import SPLIT_STEPS, split_shard_size

            most = split_shard_size(args.trials, args.shard_size)
            if most != args.shard_size:
                raise UsageError(f"invalid --shard-size: with --threshold split at most {most} for --trials "
                                 f"{args.trials} (shards of at most 1/{SPLIT_STEPS} of the trials, so that the "
                                 f"selection share moves in steps of {100 // SPLIT_STEPS}%) (got {args.shard_size})")
        config = config_from_args(args)
        from tsdp.attacks.montecarlo.audit import audit
        from tsdp.attacks.montecarlo.constructions import scheme_config

        if "--theorem" not in getattr(args, "typed_flags", ()) and "--top" in getattr(args, "typed_flags", ()):
            args.theorem = default_construction(config, args.theorem)
        fixed = scheme_config(args.theorem, config)
        for field in ("top", "bottom", "sigma_context", "sigma_forecast"):
            flag = "--" + field.replace("_", "-")
            if flag in getattr(args, "typed_flags", ()) and getattr(fixed, field) != getattr(config, field):
                raise UsageError(f"invalid {flag}: {getattr(config, field)} conflicts with --theorem {args.theorem}, "
                                 f"whose construction runs {field} = {getattr(fixed, field)} (drop {flag})")
        steps = args.steps if args.epochs is None else args.epochs * scheme_config(args.theorem, config).steps_per_epoch
        result = audit(args.theorem, config, delta=args.delta, steps=1 if steps is None else steps, progress=True,
                       **options)
        d = result.to_dict()
        print(dumps(d) if args.json else _human_audit(d))
        return 1 if d["violation"] else 0

    @command("audit-model")
    def cmd_audit_model(args) -> int:
        check_delta(args.delta)
        check_confidence(args.confidence)
        if args.canaries < 2:
            raise UsageError(f"invalid --canaries: must be >= 2 (got {args.canaries})")
        if not (args.epsilon > 0):
            raise UsageError(f"invalid --epsilon: must be > 0 or inf (got {args.epsilon})")
        if args.epochs is not None and args.epochs < 1:
            raise UsageError(f"invalid --epochs: must be >= 1 (got {args.epochs})")
        for flag, value in (("--lr", args.lr), ("--spike", args.spike)):
            if not (math.isfinite(value) and value > 0):
                raise UsageError(f"invalid {flag}: must be finite and > 0 (got {value})")
        data = data_sizing_the_config(args, "audit-model")  # a file's N and L, before any calibration; None: synthetic
        config = config_from_args(args)
        from tsdp.attacks.canary.gradient import check_canaries_covered

        check_canaries_covered(config)  # before the data is made: an augmented claim (T11) covers no spike canary
        from tsdp.attacks.canary.trained_model import ModelTraining, audit_model
        from tsdp.theorems.config import ConfigError
        from tsdp.theorems.errors import TheoremError

        if data is None:
            data = data_from_args(args, config, seed=args.seed)
        try:
            result = audit_model(args.model, config, data=data, canaries=args.canaries, epsilon=args.epsilon,
                                 delta=args.delta, seed=args.seed, spike=args.spike, confidence=args.confidence,
                                 training=ModelTraining(epochs=args.epochs, lr=args.lr, device=args.device,
                                                        progress=True))
        except (ConfigError, TheoremError):  # name their parameter: main maps it to the flag
            raise
        except (FileNotFoundError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        print(dumps(result.as_dict()) if args.json else _human_canary(result))
        return 1 if result.violation else 0
