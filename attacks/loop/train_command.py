"""`tsdp train` glue: the training options (the CLI owner adds the configuration flags) and the runner."""
from __future__ import annotations

import argparse
import json
from typing import Callable, Optional

from theorems.config import TrainingConfig

from .data import load, synthetic_for
from .models import MODELS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --model --data --epsilon --delta --epochs --clip --lr --optimizer --device --seed --json."""
    parser.add_argument("--model", choices=sorted(MODELS), default="simple-ff", help="forecasting model")
    parser.add_argument("--data", default="synthetic",
                        help="a .csv (one column per series) or .json/.jsonl (GluonTS) file, or 'synthetic'")
    parser.add_argument("--epsilon", type=float, default=None, help="train until the accountant's ε reaches this")
    parser.add_argument("--delta", type=float, default=None, help="δ of the ε budget")
    parser.add_argument("--epochs", type=int, default=None, help="train this many epochs (an upper limit with --epsilon)")
    parser.add_argument("--clip", type=float, default=1.0, help="clipping norm C")
    parser.add_argument("--lr", type=float, default=1e-3, help="learning rate")
    parser.add_argument("--optimizer", choices=("adam", "sgd"), default="adam")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of human output")


def run(args: argparse.Namespace, config: TrainingConfig,
        epsilon_of_steps: Optional[Callable[[int], float]]) -> int:
    """Train as Algorithm 1 with the parsed options; print the result (human or JSON); return the exit code.

    Exit 0 on success, 2 on invalid input (missing budget, unreadable data, data that does
    not match the configuration; ``data.fit_config`` gives the configuration a file needs).
    """
    from .train import train

    try:
        data = synthetic_for(config, seed=args.seed) if args.data == "synthetic" else load(args.data)
        result = train(config, args.model, data, epsilon=args.epsilon, delta=args.delta, epochs=args.epochs,
                       epsilon_of_steps=epsilon_of_steps, clip=args.clip, lr=args.lr, optimizer=args.optimizer,
                       device=args.device, seed=args.seed, progress=not args.json)
    except (ValueError, OSError) as err:
        print(json.dumps({"error": str(err)}) if args.json else f"error: {err}")
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        eps = "n/a" if result["epsilon"] is None else f"{result['epsilon']:.4g}"
        print(f"model {result['model']} on {result['device']}: {result['steps']} steps "
              f"({result['epochs']:.3g} epochs, {result['compositions']} compositions), ε spent {eps} (δ = {result['delta']})")
        print(f"test CRPS {result['crps']:.4f} (untrained {result['untrained_crps']:.4f}, "
              f"seasonal naive {result['seasonal_naive_crps']:.4f})")
    return 0
