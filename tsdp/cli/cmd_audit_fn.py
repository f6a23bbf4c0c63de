"""`tsdp audit-fn`: one-run canary audit of your own training function, given as a Python entry point.

``--train module:function`` names ``train(series) -> model`` (series: a list of 1-D float
arrays). ``--canary gradient`` (the default) hooks white-box gradient canaries into the
torch optimizer it steps; ``--canary spike`` scores the returned model (anything whose call
``model(context, forecast)`` gives per-window losses, or pair it with ``--loss
module:function`` taking ``(model, context, forecast)``). The current
directory is importable, as with ``python -m``. torch and the attacks package load inside
the handler only.
"""
from __future__ import annotations

import argparse
from typing import Callable, Optional

from tsdp.attacks.montecarlo.verdict import percent_text
from tsdp.verify.rounded import rounded_down, rounded_up

from .config_args import (CONFIG_FLAGS, add_config_arguments, add_data_arguments, check_synthetic_lengths,
                          config_from_args, data_from_args, data_sizing_the_config, loader_options_given)
from .errors import UsageError, check_confidence, check_delta, load_entry_point
from .output import auc_text, dumps, user_output_to_stderr


CHECKS = ("check the noise at every step (std σ · C before the division by the batch), the clipping norm (every "
          "window's gradient clipped to C before the sum) and the batch sampler (the scheme the claim accounts)")
"""What to check after a violation: the mechanisms a DP-SGD claim rests on."""


def _human(r, train: str, sigma: float, device: Optional[str] = None) -> str:
    """The text of ``r``, a :class:`tsdp.attacks.canary.audit_result.TrainingAudit` of ``train`` (the claimed σ; the
    audit's tensors on ``device``, gradient canaries)."""
    from tsdp.attacks.canary.certified import FdpScoreBound

    name, s = max(r.scores.items(), key=lambda kv: kv[1].epsilon_lower)  # the score whose bound is reported
    g = r.gradient
    runs = f" over {r.runs} runs" if r.runs > 1 else ""
    where = f"; the audit's tensors on {device}" if device else ""
    seen = f", {g.steps} steps of {g.optimizer} (C = {g.clip:g}, gradient scale {g.scale:.4g}{where})" if g else ""
    extra = f", {r.data_canaries} data canaries (series × 1000)" if r.data_canaries else ""
    lines = [f"{r.canary} canary audit of {train}: {r.canaries} canaries{runs}, {r.included} included"
             f"{seen}{extra}, δ = {r.delta:g}"]
    if g is not None:
        lines.append(f"  scored on the {'gradient it stepped on' if g.observed == 'gradient' else 'parameter updates'}"
                     + (", the data's part taken off: " + g.data_part.summary if g.data_part is not None
                        else ", the data's per-window gradients taken off" if g.data_span is None
                        else f", the data's gradients kept ({g.data_span})"))
    lines.append(f"  ε lower bound ({percent_text(r.confidence)}): {rounded_down(r.epsilon_lower, 4, fixed=True)} from the "
                 f"{name!r} score "
                 f"(AUC {auc_text(s.auc)}; {len(r.scores)} score(s), Bonferroni)")
    if isinstance(s, FdpScoreBound):  # the f-DP test, Steinke's bound as its baseline on the same guess sets
        lines[-1] += (f" (f-DP one-run test {rounded_down(s.analyses.dp.epsilon_lower, 4, fixed=True)}, Steinke et al. "
                      f"{rounded_down(s.analyses.steinke.epsilon_lower, 4, fixed=True)}; confidence split between them "
                      "before the scores)")
        lines.append(f"  only if the training's trade-off curve is Gaussian (not part of the verdict): "
                     f"ε ≥ {rounded_down(s.epsilon_if_gaussian, 4, fixed=True)}")
        top = max(v for k, v in s.ceiling.items() if k in ("dp", "steinke"))
    else:
        lines[-1] += f" (Steinke et al.: {s.correct} of {s.guesses} '{s.side}' guesses correct)"
        top = s.ceiling
    lines.append(f"  this audit could certify at most {rounded_up(top, 4, fixed=True)} (every guess right)")
    if g is not None:
        lines.append(f"  the same audit on the claimed mechanism itself (σ = {sigma:g}, these canaries and steps, no "
                     f"data) certifies {rounded_down(g.epsilon_ideal, 4, fixed=True)}: its power at the claim")
    lines.append("  limited by " + _limited_by(r, s))
    if r.curve_rejected is not None:
        over = f"the {g.steps} steps" if r.runs == 1 else "the most steps a run took"  # claimed_profile's
        lines.append(f"  the claimed trade-off curve (tsdp's sound accountant of the configuration over {over}) is "
                     f"{'REJECTED' if r.curve_rejected else 'not rejected'} by the guesses")
    tests = g.mechanism.tests if g is not None else ()
    if tests:
        lines.append(f"  mechanism tests (each a one-sided test of the claimed DP-SGD step; false-alarm rate "
                     f"{g.mechanism.alpha:g} in all):")
        lines.extend(f"    {'FAILED' if t.failed else 'passed' if t.tested else 'n/a'}: {t.finding}" for t in tests)
    if r.violation:
        why = [t.finding for t in tests if t.failed]
        if r.above_claim:
            why.append(f"the lower bound exceeds the claimed ε = {r.epsilon_claimed:g}")
        elif r.curve_rejected:
            why.append("the guesses reject the claimed curve")
        lines.append("  VIOLATION: " + "; ".join(why))
        lines.append("  " + CHECKS)
    elif r.epsilon_claimed is not None:
        lines.append("  " + _no_violation(r, top))
    return "\n".join(lines)


def _limited_by(r, s) -> str:
    """One "limited by" statement that agrees with the advice beside it: the audit's size (the bound reached its
    ceiling), the audit's power at the claim (the same audit on the claimed mechanism certifies less than the claim),
    or the training."""
    if s.limited_by == "audit size":
        return "the audit size: the bound reached what every guess right certifies; more canaries or runs certify more"
    claim, ideal = r.epsilon_claimed, None if r.gradient is None else r.gradient.epsilon_ideal
    if ideal is not None and (ideal < claim if claim is not None else max(ideal, r.epsilon_lower) < 0.1):
        below = f", below the claimed ε = {claim:g}" if claim is not None else ", so a bound near 0 says little"
        return (f"the audit's power: on the claimed mechanism itself it certifies {rounded_down(ideal, 4, fixed=True)}"
                f"{below}; more canaries or runs (--runs) raise it")
    return "the training: its canaries' guesses, not the audit size, stop the bound here"


def _no_violation(r, top) -> str:
    """The verdict without a violation: "consistent with the claimed ε" only where the audit could have seen a
    training above the claim (its ceiling above it), else that it cannot see the claim and what would."""
    claim = r.epsilon_claimed
    tested = [t.name for t in (r.gradient.mechanism.tests if r.gradient is not None else ()) if t.tested]
    passed = f"; the {' and '.join(tested)} test(s) passed" if tested else ""
    if top <= claim:
        return (f"the ε test cannot see the claimed ε = {claim:g}: these canaries certify at most "
                f"{rounded_up(top, 4, fixed=True)} even with "
                f"every guess right; more canaries or runs would (tsdp audit-fn --plan --epsilon {claim:g} says how "
                f"many){passed}")
    return f"consistent with the claimed ε = {claim:g}{passed}"


PLAN_MAX = 10 ** 7
"""The most canaries (m · R) a plan covers, and the most ``canaries_needed`` it searches."""


def _plan(args) -> dict:
    """``--plan``: before any training, what m·R canaries can certify (:func:`attacks.canary.planning.plan`); with
    ``--steps`` the canaries needed count those that take part in no step (:func:`_participation`) of the batching
    of the configuration, sized by a file ``--data`` (:func:`_sized_data`; the data flags are checked with --plan
    too)."""
    from tsdp.attacks.canary.planning import PlanSearch, plan
    from tsdp.attacks.canary.user_training import CANARIES, analyses_of, check_audit_inputs, guess_sets_of

    checked = check_audit_inputs(None, None, canaries=args.canaries, delta=args.delta, epsilon=args.epsilon,
                                 seed=args.seed, canary=_canary_options(args), options=_audit_options(args))
    canaries, delta, epsilon, confidence = (checked.canaries, checked.delta, checked.epsilon,
                                            checked.options.confidence)
    if canaries * args.runs > PLAN_MAX:
        raise UsageError(f"invalid --canaries/--runs: the plan covers at most {PLAN_MAX:.0e} canaries in all "
                         f"(got {canaries} × {args.runs})")
    for flag, value, top in (("--steps", args.steps, 10 ** 5), ("--parameters", args.parameters, 10 ** 8)):
        if value is not None and not 1 <= value <= top:
            raise UsageError(f"invalid {flag}: must be in [1, {top:.0e}] (got {value})")
    if args.parameters is not None and args.steps is None:
        raise UsageError("invalid --parameters: needs --steps (the plan simulates the audit over your steps)")
    if args.steps is not None and args.canary != "gradient":
        raise UsageError("invalid --steps: only for --canary gradient (spike canaries are in every run's data)")
    sized = _sized_data(args)  # a file's N and L size --steps' batching
    config = config_from_args(args)  # the configuration flags are checked with --plan too (--drop-last, ...)
    if sized is None and loader_options_given(args):
        data_from_args(args, config, seed=args.seed)  # refused: 'synthetic' has no timestamps, columns or layout
    participation = _participation(args)
    out = plan(canaries * args.runs, delta, confidence, claimed_epsilon=epsilon, scores=len(CANARIES[args.canary]),
               analyses=analyses_of(args.canary, args.analysis), grid=guess_sets_of(args.analysis),
               search=PlanSearch(m_max=PLAN_MAX, participation=1.0 if participation is None else participation)
               ).as_dict()  # the plan's JSON, which the flags' facts extend
    out.update(runs=args.runs, canaries_per_run=canaries, canary=args.canary, steps=args.steps)
    if args.parameters is not None and out.get("canaries_needed") is not None:
        out["runs_needed"] = -(-out["canaries_needed"] // args.parameters)
    if args.parameters is not None:
        out["best_canaries"] = _best_canaries(args, delta, confidence)
    return out


def _participation(args):
    """With ``--steps`` (gradient canaries): a lower bound on the probability that a canary takes part in a step of
    the configured batching over the steps (:func:`attacks.canary.gradient.participation_probability`); None
    without (every canary assumed to take part)."""
    if args.steps is None:
        return None
    from tsdp.attacks.canary.gradient import participation_probability

    return participation_probability(config_from_args(args), args.steps, seed=args.seed)


def _best_canaries(args, delta: float, confidence: float) -> dict:
    """``--plan --steps T --parameters d`` (gradient canaries): the canaries per run that certify most on the claimed
    mechanism, their cross-talk included (:func:`attacks.canary.ideal.best_canaries`)."""
    from tsdp.attacks.canary.evidence import CERTIFIERS
    from tsdp.attacks.canary.ideal import best_canaries

    return best_canaries(config_from_args(args), args.steps, args.parameters, delta, confidence, runs=args.runs,
                         certifier=CERTIFIERS[args.analysis], seed=args.seed)


def _plan_human(d: dict) -> str:
    lines = [f"audit plan: {d['canaries_per_run']} {d['canary']} canaries × {d['runs']} run(s) = {d['canaries']} "
             f"canaries, δ = {d['delta']:g}, confidence {percent_text(d['confidence'])} ({d['scores']} score(s), Bonferroni)",
             "  the most ε it can certify (every guess right): " + ", ".join(
                 f"{NAMES[k]} {rounded_up(v, 4, fixed=True)}" for k, v in d["ceiling"].items()),
             f"  {'a perfect memoriser' if d['canary'] == 'spike' else 'a training without noise'} that ranks "
             f"every canary right certifies ≥ {rounded_down(d['perfect_ranking'], 4, fixed=True)} "
             f"in {1 - d['quantile']:.0%} of audits (the number included is random)"]
    if "canaries_needed" in d:
        n, q = d["canaries_needed"], d["participation"]
        who = ("every canary leaving its mark" + ("; give --steps with your batching for those that take part in "
                                                  "no step" if d["canary"] == "gradient" else "")
               if d["steps"] is None else
               f"each canary taking part in one of the {d['steps']} steps with probability ≥ {q:.3f}")
        lines.append(f"  canaries needed to flag a training without noise against the claimed ε = "
                     f"{d['claimed_epsilon']:g} (≥ {1 - d['quantile']:.0%} of audits, {who}): "
                     f"{f'more than {PLAN_MAX:.0e}' if n is None else n} (in all, over the runs"
                     + (f"; {d['runs_needed']} run(s) of at most --parameters canaries each, no cross-talk)"
                        if "runs_needed" in d else ")"))
    if "best_canaries" in d:
        b = d["best_canaries"]
        lines.append("  the same audit on the claimed mechanism (cross-talk of canaries sharing the parameters "
                     "included), ε by canaries per run: " + ", ".join(f"{m}: {rounded_down(e, 3, fixed=True)}" for m, e in b["table"].items()))
        lines.append(f"  the most: {b['canaries']} canaries per run (ε ≈ {b['epsilon_ideal']:.3f}); beyond the number "
                     "of parameters each canary's score carries the others' projections")
    return "\n".join(lines)


NAMES = {"dp": "f-DP test", "gdp": "f-DP test, Gaussian curves", "steinke": "Steinke et al."}


def _many_runs(args, task, loss):
    """``--runs R``: R runs of ``task`` on the sharded engine, the pooled m·R canaries certified at once (a
    :class:`tsdp.attacks.canary.audit_result.TrainingAudit`)."""
    from tsdp.attacks.canary.runs import run_many
    from tsdp.executor.local import threads_per_worker
    from tsdp.attacks.canary.user_training import check_audit_inputs, training_audit

    check_audit_inputs(task.train, loss, canaries=args.canaries, delta=args.delta, epsilon=args.epsilon,
                       seed=args.seed, canary=_canary_options(args), options=_audit_options(args))
    if args.timeout is not None and args.cluster is not None:
        raise UsageError("invalid --timeout: not with --cluster (Dask runs your train in worker threads, which a "
                         "time limit cannot stop): use --workers")
    task.check()
    from concurrent.futures.process import BrokenProcessPool

    from tsdp.executor.tracker import ShardError

    try:
        many = run_many(task, args.runs, seed=args.seed, workers=args.workers, cluster=args.cluster,
                        threads=threads_per_worker(args.workers, args.cluster), progress=not args.json)
    except ShardError as exc:  # the CLI's workers import no script of yours: your code ended their processes
        if not isinstance(exc.__cause__, BrokenProcessPool):
            raise
        raise UsageError(f"invalid --train: the worker processes running your code ({args.train}) kept dying (it "
                         "ends its process: os._exit, a signal, or the memory it takes); nothing was certified") from exc
    return training_audit(many.runs, task.config, canary=_canary_options(args), delta=args.delta,
                          epsilon=args.epsilon, options=_audit_options(args), seed=args.seed, engine=many.engine)


def _canary_options(args, span_entries: Optional[int] = None):
    """The canaries' options of the flags (--canary, --spike, --clip, --gradient-scale, --data-canaries, --device;
    ``span_entries``: --span-entries resolved, None: the default)."""
    from tsdp.attacks.canary.options import CanaryOptions
    from tsdp.attacks.canary.data_span import MAX_ENTRIES

    return CanaryOptions(args.canary, spike=args.spike, clip=args.clip, gradient_scale=args.gradient_scale,
                         span_entries=MAX_ENTRIES if span_entries is None else span_entries,
                         data_canaries=args.data_canaries, device=args.device)


def _audit_options(args):
    """The audit's options of the flags (--confidence, --analysis, --timeout; progress unless --json)."""
    from tsdp.attacks.canary.options import AuditOptions

    return AuditOptions(confidence=args.confidence, analysis=args.analysis, timeout=args.timeout,
                        progress=not args.json)


KIND_FLAGS = {"gradient": ("--clip", "--gradient-scale", "--span-entries"), "spike": ("--spike",)}
"""The flags that set one canary kind's options (:class:`attacks.canary.options.CanaryOptions`): the other kind
has no use for them."""


def _refuse_flags_of_the_other_kind(args) -> None:
    """UsageError naming a typed flag that the run would not use: one of the other canary kind's (:data:`KIND_FLAGS`),
    or --span-entries without --loss (no data part is taken off without it)."""
    for kind, flags in KIND_FLAGS.items():
        for flag in flags:
            if kind != args.canary and flag in args.typed_flags:
                raise UsageError(f"invalid {flag}: only for --canary {kind} (this audit's canaries are "
                                 f"{args.canary} canaries)")
    if args.canary == "gradient" and args.loss is None and "--span-entries" in args.typed_flags:
        raise UsageError("invalid --span-entries: only with --loss (it bounds the per-window gradients held to take "
                         "the data's part off, which needs your loss)")


SPIKE_FIELDS = ("N", "L", "lengths", "context_length", "forecast_length", "batch_size")
"""The configuration fields spike canaries take: the window geometry the spikes and their scores use, the size of
'synthetic', and Λ, read by nothing but taken so that a small --N can keep the configuration valid (Λ ≤ N λ).
Augmentation (σ_C, σ_F) must be off (:func:`_refuse_configuration_spikes_ignore`); the other fields describe a
DP-SGD claim that only gradient canaries test."""


SYNTHETIC_SIZE_FIELDS = ("N", "L", "lengths", "batch_size")
"""The :data:`SPIKE_FIELDS` that size 'synthetic' only: with a file, spike canaries read its series as they are."""


def _refuse_configuration_spikes_ignore(args) -> None:
    """With spike canaries: UsageError naming a typed configuration flag that the audit would ignore (outside
    :data:`SPIKE_FIELDS` and augmentation's, or one of :data:`SYNTHETIC_SIZE_FIELDS` with a file), then ConfigError for an augmented configuration (its claim, T11, covers
    no spike canary: :func:`attacks.canary.gradient.check_canaries_covered`; σ_C = σ_F = 0 typed is honoured)."""
    if args.canary != "spike":
        return
    for flag in CONFIG_FLAGS:
        if flag.field not in (*SPIKE_FIELDS, "sigma_context", "sigma_forecast") and flag.flag in args.typed_flags:
            raise UsageError(f"invalid {flag.flag}: --canary spike does not use it (spikes go into your data and are "
                             "scored on the returned model: only --context-length and --forecast-length, and --N, --L "
                             "or --lengths for 'synthetic', are read; --batch-size is taken to keep a small --N valid)")
    if args.data != "synthetic":
        for flag in CONFIG_FLAGS:
            if flag.field in SYNTHETIC_SIZE_FIELDS and flag.flag in args.typed_flags:
                raise UsageError(f"invalid {flag.flag}: --canary spike reads your file as it is (--N, --L, --lengths "
                                 "and --batch-size size 'synthetic' only)")
    from tsdp.attacks.canary.gradient import check_canaries_covered

    check_canaries_covered(config_from_args(args))


def _sized_data(args):
    """The series of a file ``--data``, read first. Gradient canaries take part in the batching of the configuration,
    so N and L are the file's where --N and --L were not typed (one note line; a typed value the file contradicts is
    refused naming its flag): your ``train`` gets every series whole, so L is the shortest series' full length (nothing
    held out). Spike canaries use only L_C and L_F: the file is read as it is. None for 'synthetic', which the
    configuration sizes.

    Args:
        args: The parsed flags of audit-fn (``args.N`` and ``args.L`` are set from the file for gradient canaries).

    Returns:
        The :class:`~tsdp.datasets.series.SeriesData` of the file, or None for 'synthetic'.

    Raises:
        UsageError: A typed --N, --L or --lengths that the file contradicts (gradient canaries).
        DataError: A source that cannot be read (naming --data or the loader option at fault).
    """
    if args.canary != "gradient":
        if args.data == "synthetic":
            check_synthetic_lengths(args)
            return None
        return data_from_args(args)
    return data_sizing_the_config(args, "audit-fn", held_out=0)


def add_parsers(sub: argparse._SubParsersAction, command: Callable) -> None:
    """Add the `audit-fn` sub-command and register its handler.

    Args:
        sub: The ``tsdp`` parser's sub-parsers.
        command: The registrar of handlers (:func:`tsdp.cli.main.command`).
    """
    p = sub.add_parser(
        "audit-fn", help="one-run canary audit of your own training function (module:function)",
        description="Call your train(series) once with m canaries, each included with probability 1/2, and turn "
        "the guesses of which were included into an ε lower bound (the f-DP one-run test of Mahloujifar, Melis & "
        "Chaudhuri 2025 with Steinke, Nasr & Jagielski 2023 as its baseline). --canary gradient (default): "
        "white-box gradient canaries hooked into the torch optimizer your code steps, taking part in steps as "
        "one element of the configured batching (--N, --L, --batch-size, ... must be your loader's, --sigma the "
        "σ you claim), scored on the gradient your optimizer steps on, less the data's per-window gradients "
        "(with --loss), and the step itself is tested: the noise it stepped on against σ·C, what the data moved "
        "against the batch's clipped norm plus the noise and, with --loss, along the data's mean clipped gradient "
        "against the declared batch (one-sided tests, false-alarm rate 0.001 each; a failure is "
        "a violation naming the mechanism). --canary spike: spikes inserted into your data, scored "
        "on how much better the returned model fits them (only --context-length and --forecast-length, and --N, --L "
        "or --lengths sizing 'synthetic', are read; --batch-size is taken to keep a small --N valid; another "
        "configuration flag is refused).")
    p.add_argument("--train", default=None, help="module:function of train(series) -> model (required unless --plan)")
    p.add_argument("--loss", default=None,
                   help="module:function of loss(model, context, forecast) -> per-window losses, your training's "
                        "loss (default: model(context, forecast)); spike canaries are scored with it, gradient "
                        "canaries take the data's per-window gradients off the observed gradient with it (more "
                        "of the canaries' signal kept)")
    p.add_argument("--canaries", type=int, required=True, help="number of canaries m")
    p.add_argument("--delta", type=float, required=True, help="δ in (0, 1)")
    p.add_argument("--epsilon", type=float, default=None, help="the ε your training claims at δ (to compare)")
    p.add_argument("--canary", choices=("gradient", "spike"), default="gradient",
                   help="gradient: white-box canaries in your torch optimizer's updates; spike: spikes in your data, "
                        "scored on the returned model (default gradient)")
    p.add_argument("--clip", type=float, default=1.0,
                   help="gradient canaries: the clipping norm C of a plain torch optimizer (an Opacus DP optimizer's "
                        "max_grad_norm is read from it; default 1)")
    p.add_argument("--gradient-scale", type=float, default=None,
                   help="gradient canaries: what your loop multiplies the noisy clipped sum by before the step "
                        "(default: read from an Opacus DP optimizer, else 1/--batch-size, a mean over the batch); "
                        "give it when your loop divides by more than the batch size")
    p.add_argument("--spike", type=float, default=10.0,
                   help="spike canaries: size in standard deviations (default 10)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence of the lower bound, in (0.5, 1) (default 0.95)")
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
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="the most seconds one run (your train, and your loss on the returned model) may take: a run "
                        "still going then is stopped, with the processes it started, and the audit ends with one line "
                        "naming the function (and with --runs how many runs had finished); not with --cluster "
                        "(default: no limit)")
    p.add_argument("--plan", action="store_true",
                   help="train nothing: print the most ε the audit's canaries × runs can certify, what a training "
                        "without noise (every canary ranked right) certifies, and with --epsilon how many canaries "
                        "it takes to flag such a training against that claim")
    p.add_argument("--span-entries", type=int, default=None,
                   help="gradient canaries with --loss: the most per-window gradient entries (windows × parameters) "
                        "held per step to take the data's part off (default 2^24; with more, the windows most aligned "
                        "with the step's gradient are kept: raise it to keep all, at its memory cost)")
    p.add_argument("--data-canaries", type=int, default=0, metavar="K",
                   help="gradient canaries: scale K of your series by 1000 (data canaries) so that their windows' "
                        "raw gradients are far above C: the clipping test then sees a missing clip, which the "
                        "gradient canaries (entering after your clipping) cannot (default 0)")
    p.add_argument("--steps", type=int, default=None,
                   help="with --plan and gradient canaries: the optimizer steps of your training: the canaries needed "
                        "then count those that take part in no step of the configured batching (without it, every "
                        "canary is assumed to take part); with --parameters the plan also picks the canaries per run "
                        "that certify most on the claimed mechanism")
    p.add_argument("--parameters", type=int, default=None,
                   help="with --plan and --steps: the trainable parameters d of your model (canaries beyond d per run "
                        "interfere)")
    p.add_argument("--device", default="auto",
                   help="gradient canaries: where the audit's own torch work runs (the canaries' directions, sums and "
                        "projections, the data's per-window gradients on a copy of your model): auto (cuda when torch "
                        "sees one, else cpu), cpu, cuda or cuda:N (default auto). Your train places its own model "
                        "(what the canaries add to its gradients is moved to its parameters' device); spike canaries "
                        "score the returned model on its own device")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_data_arguments(p, default="synthetic", what="the series the canaries go into (for gradient canaries a file "
                       "sets N and L, said in one line)")
    add_config_arguments(p)

    @command("audit-fn", runs_user_code=lambda args: not args.plan)
    def cmd_audit_fn(args) -> int:
        check_delta(args.delta)  # the other values are checked by audit_training, before any training
        check_confidence(args.confidence)
        from tsdp.attacks.canary.time_limit import check_timeout
        from tsdp.verify.cpus import check_workers

        if args.runs < 1:
            raise UsageError(f"invalid --runs: must be >= 1 (got {args.runs})")
        if not args.plan and args.runs > 1:
            from tsdp.attacks.canary.gradient import MAX_DIRECTION_ENTRIES

            if args.canaries * args.runs > MAX_DIRECTION_ENTRIES:  # before R seeds are spawned and R runs start
                raise UsageError(f"invalid --runs: the canaries of all runs are certified together, at most "
                                 f"{MAX_DIRECTION_ENTRIES} in all, as --canaries of one run (got {args.canaries} × "
                                 f"{args.runs})")
        check_workers("workers", args.workers)  # with --plan too: a flag is checked whether or not it is used
        check_timeout(args.timeout)
        _refuse_configuration_spikes_ignore(args)
        if args.plan:
            planned = _plan(args)
            print(dumps(planned) if args.json else _plan_human(planned))
            return 0
        if args.train is None:
            raise UsageError("invalid --train: required (module:function of your training), unless --plan")
        if args.steps is not None or args.parameters is not None:
            raise UsageError("invalid --steps/--parameters: they go with --plan")
        from tsdp.attacks.canary.data_span import MAX_ENTRIES

        span_entries = MAX_ENTRIES if args.span_entries is None else args.span_entries
        if not 1 <= span_entries <= 2 ** 40:
            raise UsageError(f"invalid --span-entries: must be in [1, 2^40] (got {span_entries})")
        if args.data_canaries and args.canary != "gradient":
            raise UsageError("invalid --data-canaries: only for --canary gradient (the clipping test)")
        _refuse_flags_of_the_other_kind(args)
        from tsdp.executor.cluster import check_cluster

        check_cluster(args.cluster)  # Dask installed, the scheduler answering: before your module and any run
        data = _sized_data(args)  # a file's N and L (said), before the configuration is checked and your code runs
        config = config_from_args(args)
        from tsdp.attacks.canary.user_training import (audit_training, check_claimed_curve, make_task,
                                                       with_data_canaries)

        check_claimed_curve(args.canary, args.analysis, config)  # before the train is loaded and run
        if args.canary == "gradient":
            from tsdp.attacks.canary.gradient import check_canaries_covered

            check_canaries_covered(config)  # an augmented claim (T11) covers no gradient canary
        with user_output_to_stderr():  # what your module prints (at import too) must not mix with --json
            train = load_entry_point(args.train, "--train")
            loss = None if args.loss is None else load_entry_point(args.loss, "--loss")
            if data is None:
                data = data_from_args(args, config, seed=args.seed)
            if args.runs == 1 and args.cluster is None:
                result = audit_training(train, data, config, canaries=args.canaries, delta=args.delta,
                                        epsilon=args.epsilon, canary=_canary_options(args, span_entries), loss=loss,
                                        seed=args.seed, options=_audit_options(args))
            else:
                result = _many_runs(args, make_task(_canary_options(args, span_entries), train,
                                                    with_data_canaries(data, args.data_canaries), config,
                                                    args.canaries, loss=loss, timeout=args.timeout),
                                    loss)
        device = None
        if args.canary == "gradient":
            from tsdp.training.train import resolve_device

            device = str(resolve_device(args.device))
        print(dumps(dict(result.as_dict(), train=args.train, sigma=config.sigma,
                         **({"device": device} if device else {}))) if args.json
              else _human(result, args.train, config.sigma, device))
        return 1 if result.violation else 0
