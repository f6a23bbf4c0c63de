"""Hypothesis strategies of valid training configurations, and the soundness property over them.

:func:`configs` draws :class:`~tsdp.theorems.config.TrainingConfig`\\ s of the schemes tsdp bounds
(every top / bottom level pair except Poisson top level), relations (w-event, w-user) and
augmentation, with sizes you can bound (N, L, window length, λ, w, σ). :func:`cells` pairs each with a
number of training steps. :func:`assert_sound_for_all` runs the check of
:func:`tsdp.testing.check.assert_not_unsound` as a hypothesis property: on failure hypothesis shrinks
the configuration and the error names it, the attack and its `tsdp audit` command.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

from hypothesis import given, seed as hypothesis_seed, settings, strategies as st

from tsdp.theorems.config import Bottom, Top, TrainingConfig

from .grid import Cell
from .worker import DEFAULT_TIMEOUT

SCHEMES: Tuple[Tuple[str, str], ...] = (
    ("deterministic", "wr"), ("deterministic", "poisson"), ("shuffle", "wr"), ("shuffle", "poisson"),
    ("wor", "wr"), ("wor", "poisson"), ("pooled", "wr"),
)
"""(top, bottom) schemes with an attained ε in the catalogue (pooled windows: T14's, no sound bound for k > 1)."""


@st.composite
def configs(draw, *, schemes: Sequence[Tuple[str, str]] = SCHEMES, relations: Sequence[str] = ("event",),
            augmentation: Optional[bool] = False, max_N: int = 500, max_L: int = 60, max_window: int = 8,
            max_instances: int = 1, max_w: int = 1, sigma: Tuple[float, float] = (0.5, 4.0)) -> TrainingConfig:
    """A hypothesis strategy of valid configurations.

    Args:
        schemes: The (top, bottom) schemes drawn from (default :data:`SCHEMES`).
        relations: The relations drawn from ("event", "user").
        augmentation: False none, True always (σ_C = σ_F > 0; WOR top / WR bottom, λ = 1: T11's scheme),
            None either.
        max_N: N ≤ ``max_N``.
        max_L: L ≤ ``max_L``.
        max_window: L_C + L_F ≤ ``max_window``.
        max_instances: λ ≤ ``max_instances``.
        max_w: w ≤ ``max_w``.
        sigma: The range σ is drawn from.

    Returns:
        A strategy of :class:`~tsdp.theorems.config.TrainingConfig`\\ s.
    """
    top, bottom = draw(st.sampled_from(list(schemes)))
    forecast = draw(st.integers(1, max(1, min(max_window, max_L))))
    context = draw(st.integers(0, max(0, max_window - forecast)))
    L = draw(st.integers(forecast, max(forecast, max_L)))
    lam = 1 if top == Top.POOLED else draw(st.integers(1, max_instances))
    N = draw(st.integers(1, max_N))
    per_step = draw(st.integers(1, N))
    batch = per_step * lam + draw(st.integers(0, lam - 1))
    s = draw(st.floats(*sigma, allow_nan=False, allow_infinity=False))
    relation = draw(st.sampled_from(list(relations)))
    w = draw(st.integers(1, max_w))
    aug = 0.0
    can_augment = top == Top.WOR and bottom == Bottom.WR and lam == 1
    if can_augment and (augmentation or (augmentation is None and draw(st.booleans()))):
        aug = draw(st.sampled_from([0.25, 0.5, 1.0, 2.0]))
    return TrainingConfig(N=N, L=L, context_length=context, forecast_length=forecast, batch_size=batch,
                          instances=lam, sigma=s, top=top, bottom=bottom, relation=relation, w=w,
                          sigma_context=aug, sigma_forecast=aug)


def cells(config_strategy=None, steps: Sequence[int] = (1, 10, 100)) -> st.SearchStrategy:
    """A hypothesis strategy of grid cells: a configuration and a number of training steps.

    Args:
        config_strategy (SearchStrategy[TrainingConfig] | None): The configurations' strategy (default :func:`configs`).
        steps: The numbers of training steps drawn from.

    Returns:
        A strategy of :class:`~tsdp.testing.grid.Cell`\\ s.
    """
    return st.builds(Cell, config_strategy if config_strategy is not None else configs(), st.sampled_from(list(steps)))


class _Stop(BaseException):
    """Ends a hypothesis run at once (hypothesis shrinks on an ``Exception``, and re-running a hung accountant while
    shrinking would cost the time limit each time)."""


def assert_sound_for_all(fn, strategy=None, *, delta: float = 1e-5, relation=None, max_examples: int = 50,
                         seed: int = 0, timeout: Optional[float] = DEFAULT_TIMEOUT) -> None:
    """Hypothesis property: ``fn`` is never below tsdp's attained ε (a lower bound) on a cell of ``strategy``.

    ``fn`` runs in one worker process for the whole run. A cell that is not judged (``fn`` declines it, or tsdp has
    no number for its scheme: unchecked) is rejected (hypothesis draws another; a run that judges no cell fails as
    unsatisfiable, never passes). No example database is written.

    Args:
        fn (Callable[[TrainingConfig, int, float], float]): The accountant, ``fn(config, steps, delta) -> ε``.
        strategy (SearchStrategy[Cell] | None): A strategy of cells (default :func:`cells`).
        delta: The δ of every cell.
        relation (str | Relation | None): What the accountant claims to answer for, as in
            :func:`tsdp.testing.check.check_accountant`.
        max_examples: Hypothesis's number of examples.
        seed: Fixes hypothesis's draws.
        timeout: Seconds per call (default 60, as the CLI's; None: no limit).

    Raises:
        UnsoundAccountantError: On a counterexample, after hypothesis shrinks it: the attack (its note names the
            shrunk cell).
        AccountantError: ``fn`` hangs, exits or fails otherwise: the run stops at once (one line, no shrinking).

    Example:
        Check your accountant on small configurations::

            from tsdp.testing import assert_sound_for_all, configs, cells

            assert_sound_for_all(my_epsilon, cells(configs(max_N=200)), max_examples=20)
    """
    from hypothesis import reject

    from .check import AccountantError, assert_not_unsound
    from .verdicts import JUDGED
    from .worker import AccountantWorker

    failed = []

    @hypothesis_seed(seed)
    @settings(max_examples=max_examples, deadline=None, database=None, print_blob=False)
    @given(cell=strategy if strategy is not None else cells())
    def accountant_is_not_below_the_attained_epsilon(cell):
        try:
            verdict = assert_not_unsound(fn, cell.config, cell.steps, delta, relation=relation, worker=worker)
        except AccountantError as exc:
            failed.append(exc)
            raise _Stop from None
        if verdict.verdict not in JUDGED:  # declined or unchecked: nothing was judged here
            reject()

    with AccountantWorker(fn, timeout) as worker:
        try:
            accountant_is_not_below_the_attained_epsilon()
        except _Stop:
            raise failed[0] from None
