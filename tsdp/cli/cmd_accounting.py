"""`tsdp epsilon` and `tsdp calibrate`: the accountant on the command line.

dp-accounting is imported inside the handlers only, so `tsdp` starts fast.
"""
from __future__ import annotations

import argparse
import math

from tsdp.theorems.config import check_calibration_target
from tsdp.verify.rounded import rounded_down, rounded_up

from .config_args import STEPS_HELP, add_config_arguments, config_from_args
from .errors import UsageError, check_delta
from .output import sigma_text


def _add_accounting_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--delta", type=float, help="target δ in (0, 1)")
    p.add_argument("--steps", type=int, help=STEPS_HELP + " (exclusive with --epochs)")
    p.add_argument("--epochs", type=int, help="training epochs E (exclusive with --steps)")
    p.add_argument("--theorem", help="bound id, e.g. T6 (default: the tightest sound upper bound for the scheme); "
                   "a lower bound (T3, T9, T10, T14) is reported as attained only and refused by calibrate")
    p.add_argument("--discretization", type=float, default=1e-4,
                   help="PLD value discretisation (default 1e-4, dp-accounting's default)")
    p.add_argument("--tail-mass-truncation", type=float, default=None,
                   help="tail mass truncated at each composition (default 1e-15, dp-accounting's default and the one "
                   "`tsdp train` accounts with; calibrate's σ meets the target both at this value and at the default)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_config_arguments(p)


def _schedule(args):
    if (args.steps is None) == (args.epochs is None):
        raise UsageError("give exactly one of --steps S and --epochs E")
    if args.steps is not None and args.steps < 1:
        raise UsageError(f"invalid --steps: must be >= 1 (got {args.steps})")
    if args.epochs is not None and args.epochs < 1:
        raise UsageError(f"invalid --epochs: must be >= 1 (got {args.epochs})")
    if not (math.isfinite(args.discretization) and 0 < args.discretization <= 1):
        raise UsageError(f"invalid --discretization: must be in (0, 1] (got {args.discretization})")
    if args.tail_mass_truncation is None:
        from tsdp.verify.pld import DEFAULT_TAIL_MASS_TRUNCATION  # the accountant's own default, the one home

        args.tail_mass_truncation = DEFAULT_TAIL_MASS_TRUNCATION
    if not (math.isfinite(args.tail_mass_truncation) and 0 <= args.tail_mass_truncation < 1):
        raise UsageError(f"invalid --tail-mass-truncation: must be in [0, 1) (got {args.tail_mass_truncation})")
    return args.steps, args.epochs


def _fmt(x, refused=None, text=rounded_up) -> str:
    """A bound as printed: none with why, else ``text`` (upper bounds rounded up, lower bounds rounded down)."""
    return f"none ({refused})" if x is None else text(x, 6)


def _counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless n is 1 ('1 training step', '10 compositions')."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _grid(r) -> str:
    """The PLD grid of an answer: the one asked for, or the coarser one the memory ceiling forced."""
    used = r.discretization_used
    if used is not None and used > r.discretization:
        return (f"discretisation {used:g} (coarsened from {r.discretization:g} to fit the memory limit "
                "TSDP_MEMORY_LIMIT; directions kept)")
    return f"discretisation {r.discretization:g}"


def _print(args, payload: dict, human: str) -> None:
    from .output import dumps

    print(dumps(payload) if args.json else human)


def add_parsers(sub, command) -> None:
    """Add the `epsilon` and `calibrate` sub-commands and register their handlers.

    Args:
        sub (argparse._SubParsersAction): The sub-command parsers of ``tsdp``.
        command (Callable): :func:`tsdp.cli.main.command`, which registers a handler by name.
    """
    p = sub.add_parser(
        "epsilon", help="composed ε(δ) (or δ(ε)) after S steps or E epochs, sound and attained",
        description="Account a training run with PLDs (paper Appendix B.3): the sound ε composes the theorem's "
        "one-step profile (connect-the-dots, pessimistic: an upper bound, rounded up); the attained ε composes the "
        "worst-case construction's pair in both directions (optimistic: a lower bound a real attack reaches, "
        "rounded down). Step-scoped bounds compose once per step (floor(N λ / Λ) per epoch); epoch-scoped bounds "
        "once per epoch, S steps touching ceil(S / ceil(N / N')) epochs.")
    _add_accounting_options(p)
    p.add_argument("--epsilon", type=float, help="answer δ at this ε instead of ε at --delta")
    p.add_argument("--sound-only", action="store_true",
                   help="compose the sound estimate only (the upper bound a budget uses; skips the attained one)")

    p = sub.add_parser(
        "calibrate", help="smallest σ whose composed sound ε(δ) meets a target",
        description="Search the noise multiplier σ (relative tolerance, default 1e-3) so that the sound composed "
        "ε at δ is at most the target; the printed σ re-accounts to ε ≤ target, and σ (1 - tolerance) does not. "
        "At a δ at or above the bound's total variation (its δ as σ → 0, composed) every σ > 0 meets the target "
        "with ε = 0: calibrate says so and searches nothing.")
    _add_accounting_options(p)
    for action in p._actions:  # noqa: SLF001 - argparse has no public accessor
        if action.dest == "sigma":  # calibrate searches σ: the configuration's σ is only where it starts
            action.help = f"noise multiplier σ where the search starts (default {action.default:g})"
    p.add_argument("--epsilon", type=float, help="target ε > 0")
    p.add_argument("--tolerance", type=float, default=1e-3, help="relative tolerance on σ (default 1e-3)")

    @command("epsilon")
    def cmd_epsilon(args) -> int:
        from tsdp.verify.accounting import delta as account_delta
        from tsdp.verify.accounting import epsilon as account_epsilon

        steps, epochs = _schedule(args)
        config = config_from_args(args)
        common = dict(steps=steps, epochs=epochs, theorem=args.theorem, discretization=args.discretization,
                      tail_mass_truncation=args.tail_mass_truncation,
                      estimates=("sound",) if args.sound_only else ("sound", "attained"))
        if args.epsilon is not None:
            if args.delta is not None:
                raise UsageError("give one of --delta D (answers ε) and --epsilon E (answers δ), not both")
            if not (math.isfinite(args.epsilon) and args.epsilon >= 0):
                raise UsageError(f"invalid --epsilon: must be finite and >= 0 (got {args.epsilon})")
            r = account_delta(config, args.epsilon, **common)
            target, sound, attained = f"δ at ε = {args.epsilon:g}", r.delta, r.delta_attained
        else:
            r = account_epsilon(config, check_delta(args.delta), **common)
            target, sound, attained = f"ε at δ = {args.delta:g}", r.epsilon, r.epsilon_attained
        payload = r.as_dict()
        sched = _counted(steps, "training step") if steps is not None else _counted(epochs, "epoch")
        if sound is None:
            head = f"{target}: lower bound (attained) {_fmt(attained, payload.get('attained_refused'), rounded_down)}; no upper bound: {r.sound_refused}"
        elif args.sound_only:
            head = f"{target}: sound {_fmt(sound)} (upper bound)"
        else:
            head = f"{target}: sound {_fmt(sound)} (upper bound), attained {_fmt(attained, payload.get('attained_refused'), rounded_down)} (lower bound)"
        human = "\n".join([
            head,
            f"theorem {r.theorem} ({r.kind}, per {r.scope}) - {r.reason}",
            f"{sched} -> {_counted(r.compositions, 'composition')} of the per-{r.scope} bound; {_grid(r)}",
            *([] if sound is None else ["sound: connect-the-dots of the theorem's one-step profile, rounded up"]),
            *([] if args.sound_only else [
                "attained: " + (f"{r.attained_law} composed, rounded down"
                                if r.attained_law else f"none ({r.attained_refused})")]),
        ])
        _print(args, payload, human)
        return 0

    @command("calibrate")
    def cmd_calibrate(args) -> int:
        from tsdp.verify.calibration import calibrate_sigma

        steps, epochs = _schedule(args)
        delta = check_delta(args.delta)
        if args.epsilon is None:
            raise UsageError("give the target --epsilon E")
        check_calibration_target(args.epsilon, args.tolerance)  # before the configuration's own checks
        config = config_from_args(args)
        r = calibrate_sigma(config, args.epsilon, delta, steps=steps, epochs=epochs, theorem=args.theorem,
                            tolerance=args.tolerance, discretization=args.discretization,
                            tail_mass_truncation=args.tail_mass_truncation)
        if r.every_sigma:
            head = (f"every σ > 0 meets the target: δ = {r.delta:g} ≥ {rounded_up(r.total_variation, 6)}, the "
                    f"probability that the changed element is used at all (total variation), so ε = 0 at any σ")
        else:
            floor = " (the search's floor; smaller σ not searched)" if r.sigma_rejected is None else ""
            head = (f"σ = {sigma_text(r.sigma)}{floor} gives sound ε = {rounded_up(r.epsilon, 6)} ≤ "
                    f"{r.target_epsilon:g} at δ = {r.delta:g}")
        searched = "" if r.every_sigma else f"; relative tolerance {r.tolerance:g}"  # no search when every σ meets it
        human = "\n".join([
            head,
            f"theorem {r.theorem} - {r.reason}; {_counted(r.compositions, 'composition')}{searched}"
            + ("" if r.sigma_rejected is None else f" (σ = {r.sigma_rejected:.6g} gives ε = {rounded_up(r.epsilon_rejected, 6)})"),
        ])
        _print(args, r.as_dict(), human)
        return 0
