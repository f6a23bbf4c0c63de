"""`tsdp bench loop`: the DP step (Algorithm 2) against a non-private step and against Opacus, like with like.

Three candidates per model and batch, each on its own copy of the same model (same
weights), the same batch and the same optimizer (SGD):

- ``nonprivate``: forward, backward of the mean loss, optimizer step (ε = ∞), with torch's
  ``SGD(foreach=True)`` (its update one ``_foreach_add_`` over the parameters, the fastest plain
  SGD torch offers on CPU, where its default is a loop over the parameters);
- ``tsdp``: :func:`training.step.dp_step` with the factored engine (the training loop's);
  for this plain SGD it makes the update θ ← θ - η g̃ itself (:func:`training.step.apply_gradient`),
  the same ``_foreach_add_`` without ``SGD.step``'s bookkeeping, so both sides update alike;
- ``lstm`` (DeepAR's rows only): the floor anchor, a non-private step of the same DeepAR with its recurrence
  on torch's ``nn.LSTM`` (:class:`LSTMDeepAR`: 2 layers, hidden 40, the same inputs and loss; cuDNN on a GPU),
  the fastest recurrence torch has, which per-sample clipping cannot use;
- ``opacus``: Opacus's DP-SGD step in its fastest mode that accepts the model and clips it
  right: ghost clipping (``GradSampleModuleFastGradientClipping``) or hooks
  (``GradSampleModule``). Each mode is first run without noise and its update compared with
  tsdp's (exact per-sample clipping); a mode that fails or disagrees is left out, with the
  reason recorded. Without Opacus installed, the column is empty.

Timing is :mod:`bench.rounds`: the candidates interleaved (A, B, C, A, B, C, ...)
over ≥ 7 rounds, the same number of steps each per round, ratios taken per round and
reported as median and range, with the threads and load average they were taken at. The
issue's targets are in :data:`TARGETS`; the table says which are met.
"""
from __future__ import annotations

import copy
import math
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from tsdp.bench.rounds import (MIN_ROUNDS, Conditions, Spread, format_environment, format_spread, interleave, ratio,
                               spread)
from tsdp.bench.together import TogetherRow, bench_together, format_together
from tsdp.verify.json_data import Record

from tsdp.training.factored import factored_clipped_sum
from tsdp.training.models import MLP, MODELS, DeepAR, make_model
from tsdp.training.step import dp_step, nonprivate_step

BENCH_MODELS = ("mlp", *MODELS)
DEFAULT_MODELS = ("mlp", "simple-ff", "deepar")
DEFAULT_BATCHES = (64, 256)
# targets: tsdp / non-private at most 1.6 at batch 64 and 1.15 at batch 256; tsdp / best Opacus at most 0.6
# (batch sizes as strings: the result is JSON, and reads back the same)
TARGETS = {"tsdp/nonprivate": {"64": 1.6, "256": 1.15}, "tsdp/opacus": 0.6}
DEVICES = ("auto", "cpu", "cuda")
OPACUS_MODES = ("ghost", "hooks")
MISMATCH = 1e-3  # relative L2 error of a noise-free Opacus update against tsdp's, beyond which a mode is refused
SECONDS_PER_ROUND = 0.05  # the non-private step's share of a round; every candidate runs as many steps


@dataclass(frozen=True)
class LoopRow(Record):
    """One model and batch of :func:`bench_loop`: each candidate's ms per step and tsdp's time ratios, over rounds.

    Attributes:
        model: The model (one of :data:`BENCH_MODELS`).
        batch: The batch size.
        steps: The steps each candidate takes per round.
        ms: Per candidate (``nonprivate``, ``tsdp``, DeepAR's ``lstm``, ``opacus`` where it ran), its ms per step.
        ratios: ``tsdp/nonprivate``, ``tsdp/opacus`` (None without an Opacus mode) and DeepAR's ``tsdp/lstm``.
        opacus_mode: The Opacus mode timed (None: none accepted the model).
        opacus_refused: Per Opacus mode left out, why.
        targets_met: Per ratio of :data:`TARGETS`, whether its median meets the target (None: no target or no
            ratio).
        environment: The conditions the row's rounds ran in.
    """

    model: str
    batch: int
    steps: int
    ms: Dict[str, Spread]
    ratios: Dict[str, Optional[Spread]]
    opacus_mode: Optional[str]
    opacus_refused: Dict[str, str]
    targets_met: Dict[str, Optional[bool]]
    environment: Conditions


@dataclass(frozen=True)
class LoopBench(Record):
    """What :func:`bench_loop` measured.

    Attributes:
        device: The torch device.
        torch_threads: torch's intra-op threads.
        context_length: L_C.
        forecast_length: L_F.
        rounds: The interleaved rounds of each row.
        targets: :data:`TARGETS`.
        rows: A row per model and batch, models first.
        together: The row of cells trained together per model (:func:`bench.together.bench_together`).
    """

    device: str
    torch_threads: int
    context_length: int
    forecast_length: int
    rounds: int
    targets: Dict[str, object]
    rows: Tuple[LoopRow, ...]
    together: Tuple[TogetherRow, ...]


def make_bench_model(name: str, context_length: int, forecast_length: int) -> nn.Module:
    """A model of :data:`BENCH_MODELS`: the plain MLP (:class:`training.models.MLP`) or one of the paper's four.

    Args:
        name: one of :data:`BENCH_MODELS`.
        context_length: L_C.
        forecast_length: L_F.

    Returns:
        The model, initialised from torch's global generator.

    Raises:
        ValueError: an unknown name.
    """
    if name not in BENCH_MODELS:
        raise ValueError(f"unknown model {name!r}; choose from {', '.join(BENCH_MODELS)}")
    return MLP(context_length, forecast_length) if name == "mlp" else make_model(name, context_length, forecast_length)


class LSTMDeepAR(DeepAR):
    """:class:`training.models.DeepAR` with its recurrence on torch's ``nn.LSTM`` (same inputs, sizes and loss):
    the bench's floor anchor, trained without privacy. Its own ``_LSTM`` is kept frozen and unused.

    Args:
        context_length: the window's context W.
        forecast_length: L_F.
    """

    def __init__(self, context_length: int, forecast_length: int):
        super().__init__(context_length, forecast_length)
        first = self.rnn.cells[0]["ih"]
        self.lstm = nn.LSTM(first.in_features, self.rnn.hidden, len(self.rnn.cells), batch_first=True)
        self.rnn.requires_grad_(False)

    def _unroll(self, x, state, whole=None):
        outputs, _ = self.lstm(x)
        return outputs, state


def opacus_step(model: nn.Module, mode: str, *, clip: float, sigma: float, batch_size: int, lr: float,
                generator: Optional[torch.Generator]) -> Callable[[torch.Tensor, torch.Tensor], None]:
    """One Opacus DP-SGD step on ``model`` (wrapped in place: give it a copy) in ``mode`` ghost or hooks.

    The same mechanism as Algorithm 2 (clip each window's gradient to C, add N(0, σ² C² I),
    divide by the expected batch size Λ, SGD step), as Opacus 1.6 implements it: ghost
    clipping (Li et al. 2022, two backward passes) or per-sample gradients by module hooks.

    Args:
        model: the model, wrapped in place.
        mode: ``ghost`` or ``hooks``.
        clip: the clip norm C.
        sigma: the noise multiplier σ.
        batch_size: the expected batch size Λ.
        lr: SGD's learning rate.
        generator: the noise's generator.

    Returns:
        ``step(context, forecast)``.

    Raises:
        ValueError: an unknown mode.
    """
    from opacus.grad_sample import GradSampleModule, GradSampleModuleFastGradientClipping
    from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping
    from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping

    kw = dict(noise_multiplier=sigma, max_grad_norm=clip, expected_batch_size=batch_size, generator=generator)
    if mode == "ghost":
        module = GradSampleModuleFastGradientClipping(model, batch_first=True, loss_reduction="mean",
                                                      max_grad_norm=clip, use_ghost_clipping=True)
        optimizer = DPOptimizerFastGradientClipping(torch.optim.SGD(module.parameters(), lr=lr), **kw)

        def step(context: torch.Tensor, forecast: torch.Tensor) -> None:
            optimizer.zero_grad(set_to_none=True)
            DPTensorFastGradientClipping(module, optimizer, module(context, forecast), "mean").backward()
            optimizer.step()
    elif mode == "hooks":
        module = GradSampleModule(model, batch_first=True, loss_reduction="mean")
        optimizer = DPOptimizer(torch.optim.SGD(module.parameters(), lr=lr), **kw)

        def step(context: torch.Tensor, forecast: torch.Tensor) -> None:
            optimizer.zero_grad(set_to_none=True)
            module(context, forecast).mean().backward()
            optimizer.step()
    else:
        raise ValueError(f"Opacus mode must be one of {', '.join(OPACUS_MODES)}, got {mode!r}")
    return step


def opacus_update_error(model: nn.Module, mode: str, context: torch.Tensor, forecast: torch.Tensor,
                        clip: float) -> float:
    """Relative L2 error of Opacus's noise-free update (SGD, lr 1) against tsdp's clipped sum / Λ on the same batch:
    above :data:`MISMATCH`, the bench refuses that Opacus mode (it would time a different computation).

    Args:
        model: The model (copied, not trained).
        mode: Opacus's clipping mode (:data:`OPACUS_MODES`).
        context: The batch's context windows.
        forecast: The batch's forecast windows.
        clip: The clipping norm C.

    Returns:
        ||Opacus's update - tsdp's|| / ||tsdp's||.

    Raises:
        NotImplementedError: Opacus does not take the model in this mode.
    """
    reference, _ = factored_clipped_sum(model, context, forecast, clip)
    copy_ = copy.deepcopy(model)
    before = [p.detach().clone() for p in copy_.parameters()]
    opacus_step(copy_, mode, clip=clip, sigma=0.0, batch_size=context.shape[0], lr=1.0, generator=None)(context, forecast)
    moved = torch.cat([(b - p.detach()).reshape(-1) for b, p in zip(before, copy_.parameters())])
    want = torch.cat([g.reshape(-1) for g in reference.values()]) / context.shape[0]
    return float(torch.linalg.vector_norm(moved - want) / torch.linalg.vector_norm(want))


def opacus_candidate(model: nn.Module, context: torch.Tensor, forecast: torch.Tensor,
                     kw: dict) -> Tuple[Optional[str], Optional[Callable[[], None]], Dict[str, str]]:
    """Opacus's fastest mode that runs the model and agrees with tsdp (:func:`opacus_update_error` within
    :data:`MISMATCH`), the candidate `tsdp bench loop` times against tsdp's step.

    Args:
        model: The model (copied, not trained).
        context: The batch's context windows.
        forecast: The batch's forecast windows.
        kw: :func:`opacus_step`'s clip, sigma, batch_size and generator.

    Returns:
        (mode, one step, {refused mode: reason}); (None, None, reasons) when Opacus takes the model in no mode.
    """
    try:
        import opacus  # noqa: F401
    except ImportError:
        return None, None, {m: "opacus is not installed" for m in OPACUS_MODES}
    accepted, refused = {}, {}
    for mode in OPACUS_MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Opacus warns about its secure RNG and functorch fallbacks
            try:
                error = opacus_update_error(model, mode, context, forecast, kw["clip"])
                if not error <= MISMATCH:
                    refused[mode] = f"its noise-free update is {error:.1e} off tsdp's exact clipping"
                    continue
                step = opacus_step(copy.deepcopy(model), mode, lr=1e-3, **kw)
                step(context, forecast)  # warm
                t0 = time.perf_counter()
                step(context, forecast)
                _sync(context.device)
                accepted[mode] = (time.perf_counter() - t0, step)
            except Exception as exc:  # noqa: BLE001 - any failure means Opacus does not take the model in this mode
                refused[mode] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
    if not accepted:
        return None, None, refused
    mode = min(accepted, key=lambda m: accepted[m][0])
    step = accepted[mode][1]

    def quiet_step() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            step(context, forecast)

    return mode, quiet_step, refused


def _sync(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously), so wall-clock covers it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _repeat(step: Callable[[], object], steps: int, device: torch.device) -> Callable[[], None]:
    """``steps`` calls of ``step``, then a device sync: one candidate's share of a round."""
    def run() -> None:
        for _ in range(steps):
            step()
        _sync(device)
    return run


def bench_loop(
    models: Sequence[str] = DEFAULT_MODELS,
    *,
    batches: Sequence[int] = DEFAULT_BATCHES,
    rounds: int = MIN_ROUNDS,
    threads: Optional[int] = 1,
    context_length: int = 64,
    forecast_length: int = 16,
    device: str = "auto",
    seed: int = 0,
    progress: Optional[Callable[[str], None]] = None,
) -> LoopBench:
    """Per model and batch: ms per step of the non-private step, tsdp's DP step and Opacus's; tsdp's time ratios.

    Benchmark of the training step (paper Algorithm 2), not a test: wall-clock on the
    current machine, as ratios taken per interleaved round (:mod:`bench.rounds`).
    ``threads`` sets torch's intra-op threads (None leaves them); ``device``: auto (cuda when
    available), cpu or cuda (ValueError naming it without CUDA). DeepAR's rows add the ``lstm``
    candidate (:class:`LSTMDeepAR`, the floor anchor) and the ratio ``tsdp/lstm``.

    Args:
        models: names from :data:`BENCH_MODELS`.
        batches: batch sizes.
        rounds: interleaved rounds (at least :data:`bench.rounds.MIN_ROUNDS`).
        threads: torch's intra-op threads (None leaves them).
        context_length: L_C.
        forecast_length: L_F.
        device: ``auto``, ``cpu`` or ``cuda``.
        seed: the models', data's and noise's seed.
        progress: called with a line per round, or None.

    Returns:
        The :class:`LoopBench`: a :class:`LoopRow` per model and batch, and the cells trained together.

    Raises:
        ValueError: an unknown model or device, too few rounds, a batch or thread count below 1.
    """
    unknown = [m for m in models if m not in BENCH_MODELS]
    if unknown:
        raise ValueError(f"unknown model {unknown[0]!r}; choose from {', '.join(BENCH_MODELS)}")
    if rounds < MIN_ROUNDS or any(b < 1 for b in batches) or not batches or (threads is not None and threads < 1):
        raise ValueError(f"rounds must be >= {MIN_ROUNDS}, batches and threads >= 1")
    dev = resolve_bench_device(device)
    if threads is not None:
        torch.set_num_threads(threads)
    torch_threads, rows = torch.get_num_threads(), []
    for name in models:
        for batch in batches:
            data = torch.Generator(device=dev).manual_seed(seed)
            context = 10 + torch.randn(batch, context_length, generator=data, device=dev)
            forecast = 10 + torch.randn(batch, forecast_length, generator=data, device=dev)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                model = make_bench_model(name, context_length, forecast_length).to(dev)
            kw = dict(clip=1.0, sigma=1.0, batch_size=batch, generator=torch.Generator(device=dev).manual_seed(seed))
            plain, private = copy.deepcopy(model), copy.deepcopy(model)
            plain_opt = torch.optim.SGD(plain.parameters(), lr=1e-3, foreach=True)
            private_opt = torch.optim.SGD(private.parameters(), lr=1e-3)
            steps = {"nonprivate": lambda: nonprivate_step(plain, plain_opt, context, forecast),
                     "tsdp": lambda: dp_step(private, private_opt, context, forecast, engine="factored", **kw)}
            if name == "deepar":
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(seed)
                    floor = LSTMDeepAR(context_length, forecast_length).to(dev)
                floor_opt = torch.optim.SGD([p for p in floor.parameters() if p.requires_grad], lr=1e-3, foreach=True)
                steps["lstm"] = lambda: nonprivate_step(floor, floor_opt, context, forecast)
            mode, opacus, refused = opacus_candidate(model, context, forecast, kw)
            if opacus is not None:
                steps["opacus"] = opacus
            _repeat(steps["nonprivate"], 1, dev)()  # warm, then size the rounds on the non-private step
            t0 = time.perf_counter()
            _repeat(steps["nonprivate"], 1, dev)()
            n = max(1, math.ceil(SECONDS_PER_ROUND / (time.perf_counter() - t0)))
            runs = {k: _repeat(step, n, dev) for k, step in steps.items()}
            timed = interleave(runs, rounds, progress=progress, label=f"bench loop: {name}, batch {batch}")
            ratios = {"tsdp/nonprivate": ratio(timed, "tsdp", "nonprivate"),
                      "tsdp/opacus": ratio(timed, "tsdp", "opacus") if "opacus" in runs else None}
            if "lstm" in runs:
                ratios["tsdp/lstm"] = ratio(timed, "tsdp", "lstm")
            target = TARGETS["tsdp/nonprivate"].get(str(batch))
            met = {"tsdp/nonprivate": None if target is None else ratios["tsdp/nonprivate"].median <= target,
                   "tsdp/opacus": (None if ratios["tsdp/opacus"] is None
                                   else ratios["tsdp/opacus"].median <= TARGETS["tsdp/opacus"])}
            rows.append(LoopRow(name, batch, n, {k: spread([1e3 * s / n for s in v]) for k, v in timed.seconds.items()},
                                ratios, mode, refused, met, timed.environment))
    together = bench_together(models, lambda m: make_bench_model(m, context_length, forecast_length),
                              context_length=context_length, forecast_length=forecast_length, rounds=rounds, device=dev)
    return LoopBench(str(dev), torch_threads, context_length, forecast_length, rounds, TARGETS, tuple(rows), together)


def resolve_bench_device(device: str) -> torch.device:
    """``auto`` → cuda when torch sees one, else cpu; ``cpu``; ``cuda`` (ValueError naming ``--device`` without CUDA).

    Args:
        device: ``auto``, ``cpu`` or ``cuda``.

    Returns:
        The torch device.

    Raises:
        ValueError: naming ``--device``: an unknown value, or cuda without CUDA.
    """
    if device not in DEVICES:
        raise ValueError(f"invalid --device: must be one of {', '.join(DEVICES)} (got {device!r})")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("invalid --device: cuda requested but torch sees no CUDA device (use auto or cpu)")
    return torch.device("cuda" if device == "auto" and torch.cuda.is_available() else "cpu" if device == "auto"
                        else device)


def format_bench(result: Union[LoopBench, dict]) -> str:
    """Human-readable table of :func:`bench_loop`'s result: ms per step and tsdp's ratios, median (range).

    Args:
        result: What :func:`bench_loop` returned, or its ``as_dict()`` (``--json``, the benchmark page).

    Returns:
        The table, one string.
    """
    if isinstance(result, LoopBench):
        result = result.as_dict()
    lines = [f"DP step (Algorithm 2) against a non-private step and Opacus: ms per step and tsdp's time ratios, "
             f"median (range) over {result['rounds']} interleaved rounds; L_C = {result['context_length']}, "
             f"L_F = {result['forecast_length']}, {result['device']}, torch threads {result['torch_threads']}"]
    head = (f"{'model':<13} {'batch':>5} {'non-private ms':>20} {'tsdp ms':>20} {'opacus ms (mode)':>28} "
            f"{'tsdp/non-private':>22} {'tsdp/opacus':>22}  load (1 min)")
    lines.append(head)
    mark = lambda ok: "" if ok is None else (" ok" if ok else " !!")  # noqa: E731
    for row in result["rows"]:
        ms, r, met = row["ms"], row["ratios"], row["targets_met"]
        opacus = (f"{format_spread(ms['opacus'], '', 2)} ({row['opacus_mode']})" if "opacus" in ms else "n/a")
        vs_opacus = "n/a" if r["tsdp/opacus"] is None else format_spread(r["tsdp/opacus"], "", 2) + mark(met["tsdp/opacus"])
        load = lambda e: f"{e['load'][0]:.2f}" if e["load"] else "n/a"  # noqa: E731
        env = row["environment"]
        lines.append(f"{row['model']:<13} {row['batch']:>5} {format_spread(ms['nonprivate'], '', 2):>20} "
                     f"{format_spread(ms['tsdp'], '', 2):>20} {opacus:>28} "
                     f"{format_spread(r['tsdp/nonprivate'], '', 2) + mark(met['tsdp/nonprivate']):>22} "
                     f"{vs_opacus:>22}  {load(env['before'])} -> {load(env['after'])}")
    for row in result["rows"]:
        if "lstm" in row["ms"]:
            lines.append(f"{'  nn.LSTM':<13} {row['batch']:>5} {format_spread(row['ms']['lstm'], '', 2):>20} "
                         f"{'(floor: non-private, torch nn.LSTM)':>49} "
                         f"{'tsdp/nn.LSTM ' + format_spread(row['ratios']['tsdp/lstm'], '', 2):>45}")
    for row in result["rows"]:
        for mode, reason in row["opacus_refused"].items():
            lines.append(f"opacus {mode} refused for {row['model']}, batch {row['batch']}: {reason}")
    if result["rows"]:  # the whole run: the first row's start to the last row's end
        lines.append("environment: " + format_environment({"before": result["rows"][0]["environment"]["before"],
                                                           "after": result["rows"][-1]["environment"]["after"]}))
    lines += format_together(result.get("together", []))
    t = result["targets"]
    lines.append(f"targets: tsdp/non-private ≤ {t['tsdp/nonprivate']['64']} at batch 64 and ≤ "
                 f"{t['tsdp/nonprivate']['256']} at 256; tsdp/opacus ≤ {t['tsdp/opacus']} (ok: met, !!: not met)")
    return "\n".join(lines)
