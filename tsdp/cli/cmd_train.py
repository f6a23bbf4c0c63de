"""`tsdp train`: DP-SGD training of a forecaster with the paper's batching, to an ε budget.

Algorithm 1 of the paper (:mod:`tsdp.training.train`) with the configuration flags of
:mod:`tsdp.cli.config_args`; the loop emits one privacy event per step into the sound
accountant (:mod:`tsdp.verify.accountant`, an upper bound on ε), which decides when the
budget is spent and reports the ε of the steps that ran. torch is imported inside the
handler only, so `tsdp` starts fast.
"""
from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Callable, Optional

from tsdp.theorems.config import check_output_path

from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.verify.rounded import rounded_up

from .config_args import (MODEL_NAMES, STEPS_HELP, add_config_arguments, add_data_arguments, config_from_args,
                          data_from_args, data_sizing_the_config)
from .output import dumps, sigma_text

if TYPE_CHECKING:
    from tsdp.training.result import TrainResult


FIT_EPOCHS = 10
"""Epochs that a budget without --sigma, --epochs or --steps is spread over (σ calibrated to spend it in them)."""


def quality_note(result: "TrainResult", epochs: Optional[int]) -> Optional[str]:
    """None when the trained model's test CRPS beats seasonal naive; else the plain statement that it does not,
    with what limited the training (the ε budget or ``epochs``) and the flags that buy more steps.

    Args:
        result: The run (:class:`tsdp.training.result.TrainResult`).
        epochs: The epochs asked for (--epochs; None: trained to the budget).

    Returns:
        The note, or None when the model beats seasonal naive.
    """
    crps, naive, steps = result.crps, result.seasonal_naive_crps, result.steps
    if crps < naive:
        return None
    if result.epsilon_budget is not None and (epochs is None or result.epochs < epochs):
        why = (f"the budget ε = {result.epsilon_budget:g} bought only {steps} steps; raise --epsilon, or "
               "--sigma (more, noisier steps)")
    else:
        why = f"{steps} steps in {result.epochs:.3g} epoch(s) are too few; raise --epochs or --lr"
    return f"CRPS {crps:.4f} is not better than seasonal naive {naive:.4f}: {why}"


def add_parsers(sub: argparse._SubParsersAction, command: Callable) -> None:
    """Add `tsdp train`.

    Args:
        sub: The ``tsdp`` parser's sub-parsers.
        command: The registrar of handlers (:func:`tsdp.cli.main.command`).
    """
    p = sub.add_parser(
        "train", help="train a forecaster with DP-SGD until the accountant's ε reaches a budget",
        description="Train one of four Student-t forecasters with DP-SGD and the paper's batching (top level "
        "--top, bottom level --bottom, λ windows per sequence, context/forecast split, clipping, noise σC, "
        "optional augmentation). With --epsilon and no --sigma, σ is calibrated (sound accountant, as Opacus's "
        f"make_private_with_epsilon) so that --epochs K (default {FIT_EPOCHS}) or --steps S (after the warm-up, "
        "accounted too) spend the budget; with an "
        "explicit --sigma the run stops when the sound ε(δ) of the next step would exceed --epsilon, or after "
        "--epochs / --steps. Prints test CRPS, the seasonal-naive and untrained CRPS, ε spent and the number of steps. "
        "With --data FILE, N and L are taken from the file (its number of series and its shortest training length: "
        "series length minus L_F) and said in one line; a typed --N must match it, a typed --L must not exceed it.")
    p.add_argument("--model", choices=MODEL_NAMES, default="simple-ff", help="forecasting model")
    p.add_argument("--epsilon", type=float, default=None, help="train until the sound ε(δ) reaches this budget "
                   "(a small budget buys few steps: the output says when the model does not beat seasonal naive)")
    p.add_argument("--delta", type=float, default=None,
                   help="δ at which the ε spent is reported (needed for private training)")
    p.add_argument("--epochs", type=int, default=None, help="train this many epochs (with --epsilon and no --sigma: "
                   "σ is calibrated so they spend the budget; with --sigma: an upper limit)")
    p.add_argument("--steps", type=int, default=None, help=STEPS_HELP + "; instead of --epochs")
    p.add_argument("--weight-decay", type=float, default=0.0, help="the optimizer's weight decay")
    p.add_argument("--theorem", help="sound upper bound used by the accountant (default: the tightest for the "
                   "scheme; lower bounds such as T3, T9, T10, T14 are refused)")
    p.add_argument("--warmup-steps", type=int, default=0,
                   help="training steps run first at --warmup-sigma (accounted too: a heterogeneous run)")
    p.add_argument("--warmup-sigma", type=float, default=None, help="noise multiplier of the warm-up steps")
    p.add_argument("--discretization", type=float, default=1e-4,
                   help="the accountant's PLD discretisation (as `tsdp epsilon --discretization`)")
    p.add_argument("--clip", type=float, default=1.0, help="clipping norm C")
    p.add_argument("--lr", type=float, default=1e-3, help="learning rate")
    p.add_argument("--optimizer", choices=("adam", "sgd"), default="adam", help="optimizer of the noisy gradients")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto picks cuda when available, else cpu")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the initialisation, batches and noise (default: a fresh one from the operating "
                        "system's entropy; a seed others know lets them redraw the batches and noise, which voids the "
                        "trained model's ε: give one only to reproduce a run, not for a model you release); the "
                        "synthetic data are drawn from it too (from 0 without it)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of human output")
    p.add_argument("--save", default=None, metavar="FILE",
                   help="write the trained model to FILE (for `tsdp forecast predict/tradeoff`)")
    add_data_arguments(p, default="synthetic", what="the training series (the last L_F steps of each: the test set)")
    add_config_arguments(p)
    p.set_defaults(sigma=None)  # absent: calibrated to the budget, or the paper's default without one
    for action in p._actions:  # noqa: SLF001 - argparse has no public accessor
        if action.dest == "sigma":
            action.help = (f"noise multiplier σ; with it, --epsilon is a budget the run stops at (default: calibrated "
                           f"so the schedule spends --epsilon, or {DEFAULT_CONFIG.sigma:g} without a budget)")

    def budget_from_args(args):
        """The run's :class:`~tsdp.training.options.Budget` from the flags (its schedule as ``args`` holds it)."""
        from tsdp.training.options import Budget

        return Budget(epsilon=args.epsilon, delta=args.delta, epochs=args.epochs, steps=args.steps,
                      theorem=args.theorem, warmup_steps=args.warmup_steps, warmup_sigma=args.warmup_sigma,
                      discretization=args.discretization)

    def fit_sigma(args):
        """Set ``args.sigma``: calibrated to spend --epsilon in the schedule, or the default; the calibration or None."""
        if args.sigma is not None:
            return None
        if args.epsilon is None:
            args.sigma = DEFAULT_CONFIG.sigma
            return None
        if args.epochs is None and args.steps is None:
            args.epochs = FIT_EPOCHS
        args.sigma = DEFAULT_CONFIG.sigma
        from tsdp.training.train import fit_budget

        fit = fit_budget(config_from_args(args), budget_from_args(args))
        args.sigma = fit.sigma
        return fit

    @command("train")
    def cmd_train(args) -> int:
        from .main import UsageError

        if args.epsilon is None and args.epochs is None and args.steps is None:
            raise UsageError("give an ε budget (--epsilon E --delta D), --epochs E or --steps S")
        if args.epochs is not None and args.steps is not None:
            raise UsageError("give --epochs E or --steps S, not both")
        if args.steps is not None and args.steps < 1:
            raise UsageError(f"invalid --steps: must be >= 1 (got {args.steps})")
        if args.sigma is not None and not (math.isfinite(args.sigma) and args.sigma > 0):
            raise UsageError(f"invalid --sigma: must be finite and > 0 (got {args.sigma})")
        if not (math.isfinite(args.weight_decay) and args.weight_decay >= 0):
            raise UsageError(f"invalid --weight-decay: must be >= 0 (got {args.weight_decay})")
        if not (math.isfinite(args.discretization) and 0 < args.discretization <= 1):
            raise UsageError(f"invalid --discretization: must be in (0, 1] (got {args.discretization})")
        if args.epsilon is not None and not (math.isfinite(args.epsilon) and args.epsilon > 0):
            raise UsageError(f"invalid --epsilon: must be finite and > 0 (got {args.epsilon})")
        if args.delta is None or not (math.isfinite(args.delta) and 0 < args.delta < 1):
            raise UsageError(f"invalid --delta: private training reports its ε at a δ in (0, 1) (got {args.delta})")
        if args.warmup_steps < 0:
            raise UsageError(f"invalid --warmup-steps: must be >= 0 (got {args.warmup_steps})")
        if args.warmup_steps and not (args.warmup_sigma is not None and math.isfinite(args.warmup_sigma)
                                      and args.warmup_sigma > 0):
            raise UsageError(f"invalid --warmup-sigma: warm-up steps need a noise multiplier > 0 "
                             f"(got {args.warmup_sigma})")
        if args.warmup_sigma is not None and not args.warmup_steps:
            raise UsageError("invalid --warmup-sigma: it needs --warmup-steps S > 0")
        if args.epochs is not None and args.epochs < 1:
            raise UsageError(f"invalid --epochs: must be >= 1 (got {args.epochs})")
        for flag, value in (("--clip", args.clip), ("--lr", args.lr)):
            if not (math.isfinite(value) and value > 0):
                raise UsageError(f"invalid {flag}: must be finite and > 0 (got {value})")
        if args.context_length < 1:  # before σ's calibration, which the accountant allows at L_C = 0
            raise UsageError(f"invalid --context-length: must be >= 1 to train a forecaster (it reads the last L_C "
                             f"values) (got {args.context_length})")
        if args.save is not None:
            check_output_path("save", args.save)  # before the run, not after it
        data = data_sizing_the_config(args, "train")  # a file's N and L, before any calibration; None: synthetic
        fit = fit_sigma(args)
        config = config_from_args(args)
        from tsdp.training.options import Checkpoints, Loop
        from tsdp.training.train import train
        from tsdp.theorems.config import ConfigError
        from tsdp.theorems.errors import TheoremError

        if data is None:
            data = data_from_args(args, config, seed=0 if args.seed is None else args.seed)  # public data
        try:
            budget = budget_from_args(args)
            loop = Loop(clip=args.clip, lr=args.lr, weight_decay=args.weight_decay, optimizer=args.optimizer)
            result = train(config, args.model, data, budget=budget, loop=loop,
                           checkpoints=Checkpoints(return_model=args.save is not None), device=args.device,
                           seed=args.seed,  # None: train draws a fresh, secret one
                           progress=not args.json)
            if args.save is not None:
                from tsdp.attacks.inference.mechanism import TrainingScores, save_model

                save_model(args.save, result.trained_model, args.model, config.context_length,
                           config.forecast_length, data.freq,
                           TrainingScores(result.crps, result.seasonal_naive_crps, result.untrained_crps))
        except ConfigError as err:
            if err.parameter == "steps" and args.epochs is None and args.steps is None:
                raise UsageError(f"invalid --sigma: at σ = {args.sigma:g} the budget ε = {args.epsilon:g} lasts beyond "
                                 f"what the accountant resolves ({err.constraint}); give a smaller --sigma, or "
                                 "--epochs / --steps to stop earlier") from None
            raise
        except TheoremError:
            raise  # main names --theorem
        except (ValueError, OSError) as err:
            raise UsageError(str(err)) from err
        note = quality_note(result, args.epochs)
        if args.json:
            print(dumps({**result.as_dict(), "sigma_calibrated": fit is not None, "note": note}))
            return 0
        warm = (f" (the first {result.warmup_steps} at σ = {result.warmup_sigma:g})" if result.warmup_steps else "")
        print(f"model {result.model} on {result.device}: {result.steps} training steps{warm}, "
              f"{result.epochs:.3g} epochs; accounted as {result.compositions} compositions of {result.theorem}")
        if fit is not None:
            schedule = (f"the {result.warmup_steps} warm-up steps and then {result.steps - result.warmup_steps}"
                        if result.warmup_steps else f"{result.steps}")
            print(f"σ = {sigma_text(fit.sigma)} calibrated so that {schedule} steps spend ε ≤ {args.epsilon:g} "
                  f"(sound accountant, {fit.theorem})")
        print(f"sound ε spent {rounded_up(result.epsilon, 6)} at δ = {result.delta:g} (an upper bound)")
        print(f"test CRPS {result.crps:.4f} (untrained {result.untrained_crps:.4f}, "
              f"seasonal naive {result.seasonal_naive_crps:.4f})")
        if note:
            print(f"note: {note}")
        return 0
