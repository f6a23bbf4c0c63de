"""`tsdp audit` and `tsdp audit-model`: Monte Carlo audits of the proofs' worst cases and canary audits of trained models.

torch and the attacks package are imported inside the handlers only, so `tsdp` starts fast.
Both print lower bounds on ε (with their confidence); a lower bound above the sound ε
would be a privacy bug.
"""
from __future__ import annotations

import json
import math

from .config_args import add_config_arguments, config_from_args


def _usage_error(message: str):
    from .main import UsageError

    return UsageError(message)


def _check_delta(delta: float) -> float:
    if not (math.isfinite(delta) and 0 < delta < 1):
        raise _usage_error(f"invalid --delta: must be in (0, 1) (got {delta})")
    return delta


def _human_audit(d: dict) -> str:
    lines = [
        f"audit of {d['theorem']} (sound bound {d['sound_theorem']}, attained pair {d['attained_pair']}): "
        f"{d['trials']} trials x {d['steps']} step(s) per world on {d['device']}",
        f"  ε lower bound (confidence {d['confidence']:.0%}) at δ = {d['delta']:g}: {d['epsilon_lower']:.4f}",
        f"  ε attained by the construction: {d['epsilon_attained']:.4f}   ratio lower/attained: {d['ratio']:.3f}",
        f"  ε sound ({d['sound_theorem']}): {d['epsilon_sound']:.4f}",
        f"  goodness of fit (KS, both worlds, Bonferroni): p = {d['gof_pvalue']:.3g}",
        "  alpha        H_alpha lower   H_alpha theory",
    ]
    for p in d["profile"]:
        lines.append(f"  {p['alpha']:<12.5g} {p['h_lower']:<15.6g} {p['h_theory']:.6g}")
    if d["epsilon_lower"] > d["epsilon_sound"]:
        lines.append("  WARNING: the empirical lower bound exceeds the sound ε")
    return "\n".join(lines)


def _human_canary(d: dict) -> str:
    lines = [f"canary audit of {d['model']}: {d['canaries']} canaries, {d['included']} included, "
             f"training ε = {d['epsilon_budget']} (spent {d['epsilon_spent']}), δ = {d['delta']:g}"]
    for name, s in d["scores"].items():
        lines.append(f"  {name:<10} ε lower bound ({d['confidence']:.0%}): {s['epsilon_lower']:.4f} "
                     f"({s['correct']} of {s['guesses']} '{s['side']}' guesses correct, AUC {s['auc']:.3f})")
    return "\n".join(lines)


def add_parsers(sub, command) -> None:
    """Add the `audit` and `audit-model` sub-commands and register their handlers."""
    p = sub.add_parser(
        "audit", help="Monte Carlo audit of a proof's worst case through the real DP-SGD loop",
        description="Run the worst-case construction of a theorem's proof (gradient function and neighbouring "
        "datasets) through the real loop in both worlds, and report a lower confidence bound on ε at δ "
        "(Neyman-Pearson statistic, threshold on a selection split, Clopper-Pearson on a held-out split), lower "
        "bounds on H_α, a KS goodness-of-fit p-value, and the sound and attained ε. The theorem fixes the scheme; "
        "T13/T14 audit the pooled-window loop against T13's one-record guarantee (claim C6).")
    p.add_argument("--theorem", default="T6", help="construction: T1 T3 T4 T6 T9 T10 T11 T13 T14 (default T6)")
    p.add_argument("--trials", type=int, required=True, help="trials per world")
    p.add_argument("--steps", type=int, default=1, help="compositions per trial: steps (WOR, pooled) or epochs (deterministic top level: T1, T3, T4) (default 1)")
    p.add_argument("--delta", type=float, required=True, help="δ in (0, 1)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, ...")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bounds (default 0.95)")
    p.add_argument("--select-fraction", type=float, default=0.5,
                   help="share of the trials that choose the test; the rest bound its errors (default 0.5)")
    p.add_argument("--alpha", type=float, nargs="+", default=None, help="α grid (each ≥ 1) for the H_α bounds")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_config_arguments(p)

    p = sub.add_parser(
        "audit-model", help="one-run canary audit of a trained forecaster (Steinke, Nasr, Jagielski 2023)",
        description="Insert m spike canaries, each with probability 1/2, train once with DP-SGD to the ε budget, "
        "score every canary (black-box loss and white-box gradient), and turn the correct guesses on the top "
        "scores into an ε lower bound (one-run audit with abstention).")
    p.add_argument("--model", required=True, help="simple-ff, deepar, dlinear or itransformer")
    p.add_argument("--data", default="synthetic", help="CSV / JSON-lines file, or 'synthetic' (default)")
    p.add_argument("--canaries", type=int, required=True, help="number of canaries m")
    p.add_argument("--epsilon", type=float, required=True, help="training ε budget (inf: no noise)")
    p.add_argument("--delta", type=float, required=True, help="δ in (0, 1)")
    p.add_argument("--epochs", type=int, default=None,
                   help="train exactly this many epochs (σ calibrated to spend ε); without: train at --sigma to the budget")
    p.add_argument("--spike", type=float, default=10.0, help="canary size in standard deviations of its series (default 10)")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, ...")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_config_arguments(p)

    @command("audit")
    def cmd_audit(args) -> int:
        _check_delta(args.delta)
        if args.trials < 20:
            raise _usage_error(f"invalid --trials: must be >= 20 (got {args.trials})")
        if args.steps < 1:
            raise _usage_error(f"invalid --steps: must be >= 1 (got {args.steps})")
        if not (0 < args.confidence < 1):
            raise _usage_error(f"invalid --confidence: must be in (0, 1) (got {args.confidence})")
        if not (0 < args.select_fraction < 1):
            raise _usage_error(f"invalid --select-fraction: must be in (0, 1) (got {args.select_fraction})")
        config = config_from_args(args)
        from tsdp.attacks.auditor import audit

        result = audit(args.theorem, config, trials=args.trials, steps=args.steps, delta=args.delta, seed=args.seed,
                       device=args.device, alphas=args.alpha, progress=True, confidence=args.confidence,
                       select_fraction=args.select_fraction)
        d = result.to_dict()
        print(json.dumps(d, indent=2) if args.json else _human_audit(d))
        return 0

    @command("audit-model")
    def cmd_audit_model(args) -> int:
        _check_delta(args.delta)
        if args.canaries < 2:
            raise _usage_error(f"invalid --canaries: must be >= 2 (got {args.canaries})")
        if not (args.epsilon > 0):
            raise _usage_error(f"invalid --epsilon: must be > 0 or inf (got {args.epsilon})")
        if args.epochs is not None and args.epochs < 1:
            raise _usage_error(f"invalid --epochs: must be >= 1 (got {args.epochs})")
        config = config_from_args(args)
        from tsdp.attacks.canary import audit_model

        try:
            result = audit_model(args.model, config, data=args.data, canaries=args.canaries, epsilon=args.epsilon,
                                 delta=args.delta, epochs=args.epochs, seed=args.seed, device=args.device,
                                 progress=True, spike=args.spike, lr=args.lr)
        except (FileNotFoundError, ValueError) as exc:
            if exc.__class__.__name__ in ("ConfigError", "TheoremError"):
                raise
            raise _usage_error(str(exc)) from None
        print(json.dumps(result, indent=2) if args.json else _human_canary(result))
        return 0
