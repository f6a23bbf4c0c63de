"""`tsdp train`: DP-SGD training of a forecaster with the paper's batching, to an ε budget.

Algorithm 1 of the paper (``attacks.loop.train``) with the configuration flags of
:mod:`verify.config_args`; the sound accountant (:func:`verify.accounting.epsilon_of_steps`,
an upper bound on ε) decides when the budget is spent. torch is imported inside the
handler only, so `tsdp` starts fast.
"""
from __future__ import annotations

import argparse
import json
import math

from .config_args import add_config_arguments, config_from_args

MODEL_NAMES = ("simple-ff", "deepar", "dlinear", "itransformer")
"""The CLI names of ``attacks.loop.models.MODELS`` (listed here so the parser needs no torch)."""


def add_parsers(sub, command) -> None:
    """Add `tsdp train`."""
    p = sub.add_parser(
        "train", help="train a forecaster with DP-SGD until the accountant's ε reaches a budget",
        description="Train one of four Student-t forecasters with DP-SGD and the paper's batching (top level "
        "--top, bottom level --bottom, λ windows per sequence, context/forecast split, clipping, noise σC, "
        "optional augmentation). Stops when the sound ε(δ) of the next step would exceed --epsilon, or after "
        "--epochs. Prints test CRPS, the seasonal-naive and untrained CRPS, ε spent and the number of steps. "
        "With --data FILE the configuration must match the file: --N its number of series and --L the "
        "shortest training length (series length minus L_F); the error message says which.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", choices=MODEL_NAMES, default="simple-ff", help="forecasting model")
    p.add_argument("--data", default="synthetic",
                   help="a .csv (one column per series) or .json/.jsonl (GluonTS) file, or 'synthetic' "
                   "(seasonal + trend + noise, N series of the configured length)")
    p.add_argument("--epsilon", type=float, default=None, help="train until the sound ε(δ) reaches this budget")
    p.add_argument("--delta", type=float, default=None, help="δ of the budget (needed with --epsilon)")
    p.add_argument("--epochs", type=int, default=None, help="train this many epochs (an upper limit with --epsilon)")
    p.add_argument("--theorem", help="bound used by the accountant (default: the tightest sound upper bound)")
    p.add_argument("--clip", type=float, default=1.0, help="clipping norm C")
    p.add_argument("--lr", type=float, default=1e-3, help="learning rate")
    p.add_argument("--optimizer", choices=("adam", "sgd"), default="adam")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto picks cuda when available, else cpu")
    p.add_argument("--seed", type=int, default=0, help="seed of data, initialisation, sampling and noise")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of human output")
    add_config_arguments(p)

    @command("train")
    def cmd_train(args) -> int:
        from .main import UsageError

        config = config_from_args(args)
        if args.epsilon is None and args.epochs is None:
            raise UsageError("give an ε budget (--epsilon E --delta D) or --epochs E")
        accountant = None
        if args.epsilon is not None:
            if not (math.isfinite(args.epsilon) and args.epsilon > 0):
                raise UsageError(f"invalid --epsilon: must be > 0 (got {args.epsilon})")
            if args.delta is None or not (math.isfinite(args.delta) and 0 < args.delta < 1):
                raise UsageError(f"invalid --delta: an ε budget needs δ in (0, 1) (got {args.delta})")
            from tsdp.verify.accounting import epsilon_of_steps

            accountant = epsilon_of_steps(config, args.delta, args.theorem)
            first = accountant(1)
            if first > args.epsilon:
                raise UsageError(f"the ε budget {args.epsilon:g} is spent before the first step: one step costs "
                                 f"ε = {first:.4g} at δ = {args.delta:g} (raise --sigma or lower --batch-size)")
        if args.epochs is not None and args.epochs < 1:
            raise UsageError(f"invalid --epochs: must be >= 1 (got {args.epochs})")
        for flag, value in (("--clip", args.clip), ("--lr", args.lr)):
            if not (math.isfinite(value) and value > 0):
                raise UsageError(f"invalid {flag}: must be > 0 (got {value})")

        from tsdp.attacks.loop.data import load, synthetic_for
        from tsdp.attacks.loop.train import train

        try:
            data = synthetic_for(config, seed=args.seed) if args.data == "synthetic" else load(args.data)
            result = train(config, args.model, data, epsilon=args.epsilon, delta=args.delta, epochs=args.epochs,
                           epsilon_of_steps=accountant, clip=args.clip, lr=args.lr, optimizer=args.optimizer,
                           device=args.device, seed=args.seed, progress=not args.json)
        except (ValueError, OSError) as err:
            raise UsageError(str(err)) from err
        if args.json:
            print(json.dumps(result))
            return 0
        eps = "n/a (no budget)" if result["epsilon"] is None else f"{result['epsilon']:.4g}"
        print(f"model {result['model']} on {result['device']}: {result['steps']} steps "
              f"({result['epochs']:.3g} epochs, {result['compositions']} compositions), "
              f"sound ε spent {eps} (δ = {result['delta']})")
        print(f"test CRPS {result['crps']:.4f} (untrained {result['untrained_crps']:.4f}, "
              f"seasonal naive {result['seasonal_naive_crps']:.4f})")
        return 0
