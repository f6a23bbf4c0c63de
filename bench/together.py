"""`tsdp bench loop`'s row for cells trained together: K runs' DP steps as one stacked step against one at a time.

Per model: K models of the architecture (seeds 0..K-1), each with its own batch of ``batch`` windows, its own
generator and its own SGD; ``alone`` runs the K DP steps one after the other (the factored engine,
:func:`tsdp.training.step.dp_step`, as a grid run cell by cell takes them), ``together`` takes them as one step
of the stacked model (:func:`tsdp.training.stacked.stacked_noisy_gradient` and one SGD step on the stacked
parameters, as :func:`tsdp.training.together.train_together` does). Timed in interleaved rounds
(:mod:`bench.rounds`); the figure is the cells per second of ``together`` over ``alone``, per round.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from tsdp.bench.rounds import MIN_ROUNDS, Conditions, Spread, format_spread, interleave, ratio, spread
from tsdp.verify.json_data import Record

from tsdp.training.stacked import StackedModel, stacked_noisy_gradient
from tsdp.training.step import dp_step

CELLS = 16
"""Runs trained together in the row: a grid's cells of one model and column set (5 seeds × 3 budgets, about)."""
SECONDS_PER_ROUND = 0.2  # ``together``'s share of a round


@dataclass(frozen=True)
class TogetherRow(Record):
    """One model of :func:`bench_together`: ``cells`` DP steps one at a time against one stacked step, over rounds.

    Attributes:
        model: The model name.
        cells: The runs trained together.
        batch: Windows per run and step.
        steps: The steps each side takes per round.
        ms: Per side (``alone``, ``together``), its ms per step of all ``cells`` runs.
        cells_per_second: Per side, the cells' steps per second (``cells`` × steps / seconds).
        speedup: The per-round ratios of ``together``'s cells per second over ``alone``'s.
        environment: The conditions the rounds ran in.
    """

    model: str
    cells: int
    batch: int
    steps: int
    ms: Dict[str, Spread]
    cells_per_second: Dict[str, Spread]
    speedup: Spread
    environment: Conditions


def bench_together(models: Sequence[str], make_model: Callable[[str], torch.nn.Module], *, cells: int = CELLS,
                   batch: int = 8, context_length: int = 64, forecast_length: int = 16, rounds: int = MIN_ROUNDS,
                   device: Optional[torch.device] = None) -> Tuple[TogetherRow, ...]:
    """Per model: ms per step of ``cells`` DP steps one at a time and as one stacked step, and the speed-up in cells
    per second (together over alone), median (range) over interleaved rounds.

    Args:
        models: The model names.
        make_model: Builds a model by name.
        cells: The runs trained together.
        batch: Windows per run and step.
        context_length: L_C of the synthetic batches.
        forecast_length: L_F of the synthetic batches.
        rounds: Interleaved rounds.
        device: The device (default CPU).

    Returns:
        A :class:`TogetherRow` per model, in ``models``' order.
    """
    dev = device or torch.device("cpu")
    rows: List[TogetherRow] = []
    for name in models:
        nets = []
        for k in range(cells):
            torch.manual_seed(k)
            nets.append(make_model(name).to(dev))
        data = torch.Generator(device=dev).manual_seed(0)
        context = 10 + torch.randn(cells, batch, context_length, generator=data, device=dev)
        forecast = 10 + torch.randn(cells, batch, forecast_length, generator=data, device=dev)
        gens = [torch.Generator(device=dev).manual_seed(k) for k in range(cells)]
        opts = [torch.optim.SGD(n.parameters(), lr=1e-3) for n in nets]
        stack = StackedModel(nets)
        stack_opt = torch.optim.SGD(list(stack.parameters.values()), lr=1e-3)
        inputs = [context.reshape(cells * batch, -1), forecast.reshape(cells * batch, -1)]
        mask = torch.ones(cells, batch, dtype=torch.bool, device=dev)

        def alone() -> None:
            for k in range(cells):
                dp_step(nets[k], opts[k], context[k], forecast[k], clip=1.0, sigma=1.0, batch_size=batch,
                        generator=gens[k], engine="factored")

        def together() -> None:
            gradient = stacked_noisy_gradient(stack, inputs, mask, clip=1.0, sigmas=[1.0] * cells, batch_size=batch,
                                              generators=gens)
            for key, p in stack.parameters.items():
                p.grad = gradient[key]
            stack_opt.step()
            stack_opt.zero_grad(set_to_none=True)

        together()
        t0 = time.perf_counter()
        together()
        n = max(1, math.ceil(SECONDS_PER_ROUND / (time.perf_counter() - t0)))

        def repeat(step):
            def run():
                for _ in range(n):
                    step()
                if dev.type == "cuda":
                    torch.cuda.synchronize(dev)
            return run

        timed = interleave({"alone": repeat(alone), "together": repeat(together)}, rounds)
        seconds = timed.seconds.items()
        rows.append(TogetherRow(name, cells, batch, n, {k: spread([1e3 * s / n for s in v]) for k, v in seconds},
                                {k: spread([cells * n / s for s in v]) for k, v in seconds},
                                ratio(timed, "alone", "together"), timed.environment))
    return tuple(rows)


def format_together(rows: Sequence[Union[TogetherRow, dict]]) -> List[str]:
    """Lines of the table of :func:`bench_together`'s rows.

    Args:
        rows: :func:`bench_together`'s rows, or their ``as_dict()`` (``--json``, the benchmark page).

    Returns:
        The lines (none without rows).
    """
    rows = [r.as_dict() if isinstance(r, TogetherRow) else r for r in rows]
    if not rows:
        return []
    lines = [f"cells trained together ({rows[0]['cells']} runs of batch {rows[0]['batch']} each, one stacked DP step "
             "against their steps one at a time): cells per second, median (range)",
             f"{'model':<13} {'alone ms':>20} {'together ms':>20} {'cells/s alone':>20} {'cells/s together':>20} "
             f"{'speed-up':>16}"]
    for r in rows:
        cps = r["cells_per_second"]
        lines.append(f"{r['model']:<13} {format_spread(r['ms']['alone'], '', 2):>20} "
                     f"{format_spread(r['ms']['together'], '', 2):>20} {format_spread(cps['alone'], '', 0):>20} "
                     f"{format_spread(cps['together'], '', 0):>20} {format_spread(r['speedup'], 'x', 2):>16}")
    return lines
