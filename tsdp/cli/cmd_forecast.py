"""`tsdp forecast ...`: inference-time privacy (paper Appendix H, bound T15, an upper bound).

* ``tsdp forecast epsilon``: sound ε at δ (or δ at ε) of k releases, and the attained value of
  T15's construction with the drop pattern observed (a lower bound).
* ``tsdp forecast calibrate``: the smallest σ whose sound ε meets a target (ε, δ) for r, w, v, L_C, k.
* ``tsdp forecast predict``: private forecasts of a user's series from a model saved by
  ``tsdp train --save`` (which fixes L_C and L_F) at (ε, δ, r): σ calibrated, the series' last L_C values subsampled,
  noised and mean-imputed, the model's forecast quantiles printed.
* ``tsdp forecast tradeoff``: CRPS of private forecasts over ε and r on a dataset (the shape of
  the paper's inference tables).
torch is imported inside the handlers only.
"""
from __future__ import annotations

import argparse
import math
import secrets
from typing import Callable

from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.verify.rounded import rounded_down, rounded_up

from .config_args import add_data_arguments
from .output import NO_NOISE, dumps, sigma_text

QUANTILES = (0.1, 0.5, 0.9)


def _mechanism_flags(p: argparse.ArgumentParser, *, sigma: bool, model_file: bool) -> None:
    """The flags of the mechanism's parameters (r, σ, w, v, L_C, k). With ``model_file`` L_C defaults to the
    model file's (``tsdp train --save``), else to the training default (DESIGN.md, paper Section 5)."""
    g = p.add_argument_group("inference mechanism (Appendix H)")
    g.add_argument("--r", type=float, default=1.0, help="Poisson keep rate per context step, in (0, 1]")
    if sigma:
        g.add_argument("--sigma", type=float, default=1.0,
                       help="std of the Gaussian noise on kept values (units of the data)")
    g.add_argument("--w", type=int, default=1, help="(w, v)-event neighbours: w consecutive steps change")
    g.add_argument("--v", type=float, default=1.0, help="(w, v)-event neighbours: each by at most v (> 0)")
    if model_file:
        g.add_argument("--context-length", type=int, default=None,
                       help="L_C, context steps the model reads (default: the model file's; another value is refused)")
    else:
        g.add_argument("--context-length", type=int, default=DEFAULT_CONFIG.context_length,
                       help="L_C, context steps the model reads (default: `tsdp train`'s, "
                       f"{DEFAULT_CONFIG.context_length})")
    g.add_argument("--releases", type=int, default=1, help="k releases of overlapping contexts, composed")


def _release_flags(p: argparse.ArgumentParser, seed_help: str) -> None:
    """The flags of a command that draws private releases from a model file: ``--seed`` (``seed_help``: what a
    known seed voids), ``--device`` and ``--json``."""
    p.add_argument("--seed", type=int, default=None, help=seed_help)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto picks cuda when available, else cpu")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _config(args, sigma: float):
    from tsdp.theorems.bounds.inference import InferenceConfig

    return InferenceConfig(r=args.r, sigma=sigma, w=args.w, v=args.v, context_length=args.context_length,
                           releases=args.releases)


def _positive(flag: str, value, upper=None) -> float:
    from .main import UsageError

    if value is not None and not math.isfinite(value):
        raise UsageError(f"invalid {flag}: must be finite (not NaN or inf) (got {value})")
    if value is None or value <= 0 or (upper is not None and value >= upper):
        bound = f"in (0, {upper})" if upper is not None else "> 0"
        raise UsageError(f"invalid {flag}: must be {bound} (got {value})")
    return value


def _calibrated(args):
    from tsdp.verify.inference_accounting import calibrate_sigma

    _positive("--epsilon", args.epsilon)
    _positive("--delta", args.delta, 1)
    return calibrate_sigma(_config(args, 1.0), args.epsilon, args.delta)


def _model(args, device):
    """(model, header) of --model-file; --context-length takes the file's L_C, and a conflicting value is refused."""
    from .main import UsageError

    from tsdp.attacks.inference.mechanism import load_model

    try:
        model, header = load_model(args.model_file, device)
    except ValueError as err:
        raise UsageError(f"invalid --model-file: {err}") from err
    if args.context_length is None:
        args.context_length = header.context_length
    elif header.context_length != args.context_length:
        raise UsageError(f"invalid --context-length: the model in {args.model_file} was trained with L_C = "
                         f"{header.context_length} (got {args.context_length}; drop --context-length to use it)")
    return model, header


def undertrained_note(header):
    """The note of forecasts from a model that did not beat seasonal naive when `tsdp train` saved it (its file's
    scores, :class:`tsdp.attacks.inference.mechanism.TrainingScores`): its quantiles are its own Student-t law's, and an
    undertrained model's law is wide (a 0.1-quantile far below a positive series is that, not a bug). None when it beat
    seasonal naive, or its file does not say.

    Args:
        header (ModelHeader): The model file's header.

    Returns:
        The note, or None.
    """
    scores = header.trained
    if scores is None or scores.beats_seasonal_naive:
        return None
    return (f"this model's test CRPS when trained, {scores.crps:.4f}, was not better than seasonal naive's "
            f"{scores.seasonal_naive_crps:.4f} (untrained {scores.untrained_crps:.4f}): an undertrained model, whose "
            "forecast quantiles (its own Student-t law's) are wide, possibly far outside the series' range; train it "
            "longer (tsdp train --epochs, --lr)")


def _series(args):
    """(the user's series, its calendar or None): --values (no calendar), or the first series of --data (the one
    loader's flags)."""
    import numpy as np

    from .config_args import data_from_args
    from .main import UsageError

    if (args.values is None) == (args.data is None):
        raise UsageError("give the series as --values X1 X2 ... or --data FILE")
    start = None
    if args.values is not None:
        if args.freq is not None:
            raise UsageError("invalid --freq: it is the step of --data's timestamps, and --values has none (give the "
                             "series as --data FILE with its timestamps)")
        x = np.asarray(args.values, dtype=float)
    else:
        data = data_from_args(args)
        x, start = data.series[0], None if data.starts is None else data.starts[0]
    if not np.all(np.isfinite(x)):
        raise UsageError("invalid --values: the series holds NaN or inf")
    if len(x) < args.context_length:
        flag = "--values" if args.values is not None else "--data"
        raise UsageError(f"invalid {flag}: the series has {len(x)} values, fewer than the context length "
                         f"L_C = {args.context_length}")
    return x, start


def add_parsers(sub: argparse._SubParsersAction, command: Callable) -> None:
    """Add `tsdp forecast {epsilon,calibrate,predict,tradeoff}`.

    Args:
        sub: The ``tsdp`` parser's sub-parsers.
        command: The registrar of handlers (:func:`tsdp.cli.main.command`).
    """
    p = sub.add_parser("forecast", help="inference-time privacy of forecasts (Appendix H, T15): accounting, "
                       "calibration, private forecasts",
                       description="Private forecasts of a sensitive series (paper Appendix H): each context step "
                       "is kept with probability r, kept values get N(0, σ²) noise, dropped ones the mean of the "
                       "kept ones; (w, v)-event privacy under the bound T15 (an upper bound).")
    fsub = p.add_subparsers(dest="forecast_command", metavar="ACTION")
    fsub.required = True

    e = fsub.add_parser("epsilon", help="sound ε at δ (or δ at ε) of k releases, and the attained value",
                        description="The sound ε at δ (or δ at ε) of k private releases under T15 (an upper "
                        "bound), and the ε attained by T15's construction with the drop pattern observed (a lower "
                        "bound). Give exactly one of --delta and --epsilon.")
    _mechanism_flags(e, sigma=True, model_file=False)
    e.add_argument("--delta", type=float, default=None, help="δ (answer ε)")
    e.add_argument("--epsilon", type=float, default=None, help="ε (answer δ)")
    e.add_argument("--json", action="store_true", help="print one JSON object")

    c = fsub.add_parser("calibrate", help="smallest σ whose sound ε(δ) meets a target",
                        description="The smallest noise std σ whose sound ε at δ (T15, k releases) is at most "
                        "--epsilon, with the σ just below it that misses the target. At δ ≥ 1 - (1 - r)^(m k) "
                        "(T15's δ as σ → 0, m = min(w, L_C) the changed steps a context can hold, k the releases) "
                        "every σ > 0 meets the target: it says so.")
    _mechanism_flags(c, sigma=False, model_file=False)
    c.add_argument("--epsilon", type=float, required=True, help="target ε")
    c.add_argument("--delta", type=float, required=True, help="δ")
    c.add_argument("--json", action="store_true", help="print one JSON object")

    f = fsub.add_parser("predict", help="private forecasts of one series from a saved model at (ε, δ, r)",
                        description="Forecast quantiles of one sensitive series from a model saved by `tsdp train "
                        "--save`: σ calibrated for (ε, δ) under T15, the series' last L_C values (L_C and L_F from "
                        "the model file) subsampled at rate r, noised and mean-imputed, then fed to the model.")
    _mechanism_flags(f, sigma=False, model_file=True)
    f.add_argument("--model-file", required=True, help="a model written by `tsdp train --save FILE`")
    f.add_argument("--values", type=float, nargs="+", default=None, help="the series, oldest first (or --data)")
    f.add_argument("--epsilon", type=float, required=True, help="ε of the release")
    f.add_argument("--delta", type=float, required=True, help="δ of the release")
    f.add_argument("--samples", type=int, default=200, help="forecast sample paths")
    _release_flags(f, "seed of the subsampling, noise and forecast samples (default: a fresh one from the operating "
                      "system's entropy; a seed others know lets them redraw the pattern and noise, which voids the "
                      "release's ε: give one only to reproduce a release)")
    add_data_arguments(f, synthetic=False, what="a file or 'grunfeld' whose first series is forecast (or --values)")

    t = fsub.add_parser("tradeoff", help="CRPS of private forecasts over ε and r on a dataset",
                        description="Test CRPS of private forecasts of every series of --data (the last L_F steps "
                        "its targets, the L_C before them its context; both from the model file) for each ε of "
                        "--epsilons and keep rate of --rates, σ calibrated per cell under T15; the first row is "
                        "the non-private reference (ε = inf).")
    _mechanism_flags(t, sigma=False, model_file=True)
    t.add_argument("--model-file", required=True, help="a model written by `tsdp train --save FILE`")
    t.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0, 8.0],
                   help="ε of each table row, each > 0")
    t.add_argument("--rates", type=float, nargs="+", default=[1.0, 0.75, 0.5],
                   help="keep rates r of each table row, each in (0, 1]")
    t.add_argument("--delta", type=float, default=1e-4, help="δ of every release, in (0, 1)")
    t.add_argument("--samples", type=int, default=100, help="forecast sample paths per series and cell")
    _release_flags(t, "seed of the subsampling, noise and forecast samples (default: a fresh one from the operating "
                      "system's entropy; a seed others know lets them redraw the patterns and noise, which voids "
                      "the table's ε: give one only to reproduce a table). The output prints the seed used")
    add_data_arguments(t, required=True, synthetic=False, what="the series to forecast")

    actions = {"epsilon": (_epsilon, e), "calibrate": (_calibrate, c), "predict": (_predict, f),
               "tradeoff": (_tradeoff, t)}

    @command("forecast")
    def cmd_forecast(args) -> int:
        from tsdp.theorems.config import ConfigError

        from .main import UsageError, _message

        handler, parser = actions[args.forecast_command]
        try:
            return handler(args)
        except ConfigError as exc:  # name the flag of the action's own parser (--r, --v, ...)
            raise UsageError(_message(exc, parser, args.typed_flags)) from exc


def _emit(args, payload: dict, lines) -> int:
    print(dumps(payload) if args.json else "\n".join(lines))
    return 0


def _epsilon(args) -> int:
    from .main import UsageError

    from tsdp.verify.inference_accounting import account

    if (args.delta is None) == (args.epsilon is None):
        raise UsageError("give exactly one of --delta D (answer ε) and --epsilon E (answer δ)")
    res = account(_config(args, args.sigma), delta=args.delta, epsilon=args.epsilon)
    d = res.as_dict()
    def shown(x):
        return "none (L_C > 1: a lone kept step hides its position)" if x is None else rounded_down(x, 6)

    head = (f"ε at δ = {res.delta:g}: sound {rounded_up(res.epsilon, 6)} (upper bound), attained {shown(res.epsilon_attained)}"
            if args.delta is not None else
            f"δ at ε = {res.epsilon:g}: sound {rounded_up(res.delta, 6)} (upper bound), attained {shown(res.delta_attained)}")
    return _emit(args, d, [head, f"theorem T15 ({res.kind}, per release), {res.releases} release(s); attained = "
                                 "construction with the drop pattern observed (a lower bound)"])


def _calibrate(args) -> int:
    res = _calibrated(args)
    if res.every_sigma:
        head = (f"every σ > 0 meets the target: δ = {res.delta:g} ≥ {rounded_up(res.total_variation, 6)}, the "
                f"probability that a release keeps a changed step at all (total variation), so ε = 0 at any σ")
    else:
        head = (f"σ = {sigma_text(res.sigma)} (sound ε = {rounded_up(res.epsilon, 6)} ≤ {res.target_epsilon:g} "
                f"at δ = {res.delta:g}; σ = {res.sigma_rejected:.6g} gives {rounded_up(res.epsilon_rejected, 6)})")
    return _emit(args, res.as_dict(), [head, f"theorem T15 (upper), r = {args.r:g}, w = {args.w}, v = {args.v:g}, "
                                             f"L_C = {args.context_length}, {args.releases} release(s)"])


def _predict(args) -> int:
    import numpy as np
    import torch

    from tsdp.attacks.inference.mechanism import check_samples, forecast_covariates, private_forecast
    from tsdp.training.generators import seeded_generator
    from tsdp.training.train import resolve_device

    from .main import UsageError

    device = resolve_device(args.device)
    model, header = _model(args, device)  # L_C from the model file
    _config(args, 1.0)  # validates r, w, v, L_C, k before the data
    x, start = _series(args)
    try:
        covariates = forecast_covariates(model, header.freq, None if start is None else [start], [len(x)],
                                         args.context_length, header.forecast_length)
    except ValueError as err:
        raise UsageError(f"invalid {'--values' if args.values is not None else '--data'}: {err}") from err
    check_samples(args.samples, 1, args.context_length, header.forecast_length)
    cal = _calibrated(args)
    context = torch.as_tensor(x[-args.context_length:], dtype=torch.float32, device=device)[None]
    seed = secrets.randbits(63) if args.seed is None else args.seed  # the release's draws must be secret
    gen = seeded_generator(seed)  # every bit of the seed; drawn on the CPU: a seed gives the same draws on every device
    paths = private_forecast(model, context, args.r, cal.sigma, args.samples, gen, covariates)[0].cpu().numpy()
    qs = np.quantile(paths, QUANTILES, axis=0)
    if not np.all(np.isfinite(qs)):  # the float32 model overflowed: no number to give
        flag = "--values" if args.values is not None else "--data"
        raise UsageError(f"invalid {flag}: the forecast of this series is not finite (values up to "
                         f"{float(np.max(np.abs(x))):.3g} overflow the float32 model); rescale the series")
    note = undertrained_note(header)
    payload = {"sigma": cal.sigma, "epsilon": cal.epsilon, "delta": cal.delta, "r": args.r, "model": header.as_dict(),
               "quantiles": {str(q): qs[i].tolist() for i, q in enumerate(QUANTILES)}, "samples": args.samples,
               "note": note}
    lines = [f"private forecast ({header.model}, L_F = {header.forecast_length}) at sound "
             f"ε = {rounded_up(cal.epsilon)}, "
             f"δ = {cal.delta:g}, r = {args.r:g}, σ = {sigma_text(cal.sigma, 4)}"]
    lines += [f"q{q:g}: " + " ".join(f"{v:.4g}" for v in qs[i]) for i, q in enumerate(QUANTILES)]
    return _emit(args, payload, lines + ([f"note: {note}"] if note else []))


def _tradeoff(args) -> int:
    from tsdp.attacks.inference.crps_table import InferenceGrid, Releases, crps_tradeoff
    from tsdp.attacks.inference.mechanism import check_samples
    from tsdp.training.train import resolve_device
    from tsdp.theorems.config import ConfigError

    from .config_args import data_from_args
    from .main import UsageError

    device = resolve_device(args.device)
    model, header = _model(args, device)  # L_C from the model file
    _config(args, 1.0)
    _positive("--delta", args.delta, 1)
    for e in args.epsilons:
        _positive("--epsilons", e)
    for r in args.rates:
        if not (math.isfinite(r) and 0 < r <= 1):
            raise UsageError(f"invalid --rates: every rate must be in (0, 1] (got {r})")
    data = data_from_args(args)
    check_samples(args.samples, data.N, args.context_length, header.forecast_length)
    seed = secrets.randbits(63) if args.seed is None else args.seed  # the releases' draws must be secret
    try:
        rows = crps_tradeoff(model, data, context_length=args.context_length, freq=header.freq,
                             forecast_length=header.forecast_length,
                             grid=InferenceGrid(args.epsilons, args.rates, delta=args.delta, v=args.v, w=args.w),
                             releases=Releases(n_samples=args.samples, seed=seed, device=str(device)))
    except ConfigError:
        raise
    except (ValueError, OSError) as err:
        raise UsageError(f"invalid --data: {err}") from err
    if not all(math.isfinite(row.crps) for row in rows):  # the float32 model overflowed: no number to give
        from tsdp.training.run_checks import largest_value

        raise UsageError(f"invalid --data: the CRPS of its forecasts is not finite (values up to "
                         f"{largest_value(data):.3g} overflow the float32 model); rescale the series")
    lines = [f"CRPS of private forecasts ({header.model}), δ = {args.delta:g}, v = {args.v:g}, w = {args.w} (T15)",
             f"{'epsilon':>12} {'r':>5} {'sigma':>9} {'CRPS':>8}"]
    lines += [f"{NO_NOISE if math.isinf(row.epsilon) else format(row.epsilon, 'g'):>12} {row.r:>5g} "
              f"{row.sigma:>9.4g} {row.crps:>8.4f}" for row in rows]
    source = "--seed" if args.seed is not None else "fresh, from the operating system's entropy"
    lines.append(f"seed {seed} ({source}): --seed {seed} reproduces the table; keep it as private as the data")
    note = undertrained_note(header)
    return _emit(args, {"rows": [row.as_dict() for row in rows], "model": header.as_dict(), "seed": seed, "note": note},
                 lines + ([f"note: {note}"] if note else []))
