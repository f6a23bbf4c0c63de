"""Check anyone's accountant against tsdp's bracket: ``check_accountant`` and the assertion helpers.

An accountant is any ``fn(config, steps, delta) -> ε``: a :class:`~tsdp.theorems.config.TrainingConfig`,
the number of training steps S and δ in, the ε it claims out (:mod:`tsdp.testing.adapters` wraps
Opacus accountants, dp-accounting events and guessed sampling rates). Each cell is compared with
tsdp's attained ε (a **lower** bound reached by the proofs' constructions) and sound ε (an
**upper** bound) for the neighbouring relation the accountant is claimed to answer for
(:mod:`tsdp.testing.relations`; default: the configuration's own, event level w = 1 as in tsdp).
An accountant below the attained ε is provably wrong for that relation, and the verdict says
which attack shows it (:mod:`tsdp.testing.verdicts`).

The accountant runs in a forked worker process (:mod:`tsdp.testing.worker`) under a time limit per
call (default :data:`DEFAULT_TIMEOUT` s, the CLI's too): a hang, even in one long C call, a
``sys.exit``, an ``os._exit`` or a ``KeyboardInterrupt`` of the accountant is one line
(:class:`AccountantError`), and what it prints is kept with the cell's verdict.
"""
from __future__ import annotations

import math
import numbers
import time
from dataclasses import replace
from typing import Callable, Iterable, Optional, Sequence, Union

from tsdp.theorems.config import ConfigError, TrainingConfig, check_delta, check_int

from .attack import audit_command, describe_pair
from .grid import Cell, default_grid
from tsdp.verify.pld import PldSettings

from .brackets import DISCRETIZATION, Reference, reference
from .relations import Substitution, other_relations
from .verdicts import (BETWEEN, DECLINED, SOUND, UNCHECKED, UNSOUND, CheckReport, RelationBound, Verdict,
                       scheme_line)
from .worker import DECLINED as REPLY_DECLINED
from .worker import (CORRUPT, DEFAULT_TIMEOUT, DIED, EXITED, HUNG, NOT_REAL, RAISED, TOO_LARGE, AccountantWorker,
                     Reply)

Accountant = Callable[[TrainingConfig, int, float], float]


class AccountantError(ValueError):
    """The accountant under check did not give a usable ε (it raised, hung, returned NaN, a negative number or a
    non-number, or its worker's reply was not the answer to the cell asked); the message is one line naming the
    cell."""


class UnsoundAccountantError(AssertionError):
    """An accountant reported less than tsdp's attained ε for the claimed relation (raised by the assertions).

    The message is the verdicts' messages, one per line (each names the attack and its `tsdp audit` command).

    Args:
        verdicts: The unsound verdicts.

    Attributes:
        verdicts: The unsound verdicts, as a tuple.
    """

    def __init__(self, verdicts: Sequence[Verdict]):
        self.verdicts = tuple(verdicts)
        super().__init__("\n".join(v.message() for v in self.verdicts))


def accountant_name(fn: Callable) -> str:
    """``fn.name`` where the adapter set one, else its qualified name.

    Args:
        fn: The accountant.

    Returns:
        Its name.
    """
    return str(getattr(fn, "name", None) or getattr(fn, "__qualname__", None) or repr(fn))


def _epsilon(reply: Reply, name: str, where: str, timeout: Optional[float]) -> float:
    """The ε of a reply that is not a decline, as a float ≥ 0 (inf allowed), or :class:`AccountantError`, one line."""
    kind = reply.kind
    if kind == HUNG:
        raise AccountantError(f"accountant {name} hung {where}: no answer within {timeout:g} s (its worker process "
                              "was ended)")
    if kind == EXITED:
        raise AccountantError(f"accountant {name} called sys.exit({reply.shown}) (raised SystemExit) {where}: an "
                              "accountant must return ε, not end its process")
    if kind == DIED:
        raise AccountantError(f"accountant {name} ended its process (exit status {reply.exit_status}: os._exit, a "
                              f"signal or a crash) {where}: an accountant must return ε")
    if kind == CORRUPT:
        raise AccountantError(f"accountant {name}'s worker process sent back {reply.message} {where}: no ε was read "
                              "(its worker process was ended)")
    if kind == RAISED:
        said = f": {reply.message}" if reply.message else " (no message)"
        raise AccountantError(f"accountant {name} raised {reply.type_name} {where}{said}")
    if kind == NOT_REAL:
        raise AccountantError(f"accountant {name} returned {reply.shown} ({reply.type_name}) {where}, not a real ε")
    if kind == TOO_LARGE:
        raise AccountantError(f"accountant {name} returned a number too large for a float ({reply.type_name}, "
                              f"{reply.shown}) {where}: return inf for no guarantee")
    value = reply.value
    if math.isnan(value):
        raise AccountantError(f"accountant {name} returned NaN {where}")
    if value < 0:
        raise AccountantError(f"accountant {name} returned a negative ε = {value:g} {where}")
    return value


def _where(config: TrainingConfig, steps: int, delta: float) -> str:
    return f"at {scheme_line(config.as_dict())}, {steps} step(s), δ = {delta:g}"


def reported_epsilon(fn: Accountant, config: TrainingConfig, steps: int, delta: float,
                     timeout: Optional[float] = DEFAULT_TIMEOUT) -> Optional[float]:
    """The accountant's ε for one cell. Runs ``fn`` in a worker process.

    Args:
        fn: The accountant, ``fn(config, steps, delta) -> ε``.
        config: The cell's configuration.
        steps: The cell's number of training steps.
        delta: The cell's δ.
        timeout: Seconds ``fn`` may take (None: no limit).

    Returns:
        ε as a float ≥ 0 (inf allowed: a vacuous guarantee), or None where ``fn`` declines the cell (returns
            None, raises NotImplementedError or tsdp's TheoremError).

    Raises:
        AccountantError: One line: ``fn`` raised, hung past ``timeout`` s, exited, or returned NaN, a negative
            number, an integer beyond the float range or something that is not a real number.
    """
    with AccountantWorker(fn, timeout) as worker:
        reply = worker.ask(config, steps, delta)
    if reply.kind == REPLY_DECLINED:
        return None
    return _epsilon(reply, accountant_name(fn), _where(config, steps, delta), timeout)


def _bracket_position(eps: float, attained: float, sound: Optional[float]) -> Optional[float]:
    if sound is None or not sound > attained:
        return None
    return (eps - attained) / (sound - attained)


def judge(eps: float, config: TrainingConfig, steps: int, delta: float, relation: Substitution, *,
          accountant: str = "accountant", claims: Optional[str] = None,
          discretization: float = DISCRETIZATION) -> Verdict:
    """The verdict on a reported ``eps`` for one cell against tsdp's reference for ``relation``
    (:func:`judge_reference`): attained (lower bound) and sound (upper bound) ε.

    Args:
        eps: The ε the accountant reported.
        config: The cell's configuration.
        steps: The cell's number of training steps.
        delta: The cell's δ.
        relation: The relation the accountant claims to answer for.
        accountant: The accountant's name, for the verdict.
        claims: What the accountant says it answers for, for the verdict.
        discretization: The PLD grid of tsdp's reference.

    Returns:
        The cell's verdict.
    """
    settings = PldSettings(discretization)
    return _judge(eps, reference(config, steps, delta, relation, settings), config, steps, delta, relation, settings,
                  accountant, claims)


def _mismatch_bounds(eps: float, attained: float, config: TrainingConfig, steps: int, delta: float,
                     relation: Substitution, settings: PldSettings) -> tuple:
    """The other relations the accountant could have meant with ``eps`` (below the claim's ``attained``): those whose
    sound ε it meets and is nearer to, on a log scale, than to ``attained`` (ε_sound(other) ≤ eps ≤
    √(ε_sound(other) · attained)); a plain under-estimate of the claim is nearer to its attained ε."""
    found = []
    for other in other_relations(relation, config):
        ref = reference(config, steps, delta, other, settings, attained=False)
        s = ref.epsilon_sound
        if s is not None and s <= eps and eps * eps <= s * attained:
            found.append(RelationBound(other.name, s, ref.theorem))
    return tuple(found)


def judge_reference(eps: float, ref: Reference, config: TrainingConfig, steps: int, delta: float, relation: Substitution,
                    *, accountant: str = "accountant", claims: Optional[str] = None,
                    discretization: float = DISCRETIZATION) -> Verdict:
    """The verdict on a reported ``eps`` given tsdp's reference ``ref`` for the cell (module docstring of
    :mod:`tsdp.testing.verdicts`): unsound below the attained ε (a lower bound), sound at or above the sound ε (an
    upper bound; a value under the sound ε of the check's grid is compared with the sound ε at a ten times finer
    grid, still an upper bound), between otherwise; a value below the sound ε where no attained ε is known is judged
    on the sound side only; unchecked where tsdp has neither.

    Args:
        eps: The ε the accountant reported.
        ref: tsdp's reference for the cell (attained and sound ε).
        config: The cell's configuration.
        steps: The training steps.
        delta: The δ of the ε values.
        relation: The neighbouring relation the accountant claims.
        accountant: The accountant's name, for the verdict.
        claims: What the accountant says it accounts (None: not said).
        discretization: The PLD grid of the finer sound ε.

    Returns:
        The :class:`Verdict`.
    """
    return _judge(eps, ref, config, steps, delta, relation, PldSettings(discretization), accountant, claims)


def _judge(eps: float, ref: Reference, config: TrainingConfig, steps: int, delta: float, relation: Substitution,
           settings: PldSettings, accountant: str, claims: Optional[str]) -> Verdict:
    """:func:`judge_reference` at ``settings`` (the finer sound ε at a tenth of its discretisation)."""
    claimed = relation.config(config)
    common = dict(accountant=accountant, config=claimed.as_dict(), steps=steps, delta=delta,
                  relation=relation.as_dict(), relation_text=relation.describe(config), epsilon_reported=eps,
                  epsilon_attained=ref.epsilon_attained, theorem=ref.theorem, construction=ref.construction,
                  claims=claims)
    attained, sound = ref.epsilon_attained, ref.epsilon_sound
    ratio = eps / attained if attained else None
    if attained is None and sound is None:
        return Verdict(UNCHECKED, epsilon_sound=None, note=f"tsdp has no bound for this scheme ({ref.refused})",
                       **common)
    if attained is not None and eps < attained:
        return Verdict(UNSOUND, epsilon_sound=sound, pair=describe_pair(ref.construction, claimed),
                       audit_command=audit_command(ref.construction, claimed, steps, delta), ratio=ratio,
                       sound_under_bounds=_mismatch_bounds(eps, attained, config, steps, delta, relation,
                                                           settings), **common)
    if sound is not None and eps < sound:
        finer_settings = replace(settings, discretization=settings.discretization / 10)
        finer = reference(config, steps, delta, relation, finer_settings, attained=False).epsilon_sound
        sound = min(sound, finer) if finer is not None else sound
    if sound is not None and eps >= sound:
        return Verdict(SOUND, epsilon_sound=sound, ratio=ratio, **common)
    return Verdict(BETWEEN, epsilon_sound=sound, ratio=ratio,
                   bracket_position=None if attained is None else _bracket_position(eps, attained, sound),
                   note=ref.refused, **common)


def _cells(configs, steps) -> list:
    """The cells to check, in order, each once (``steps`` replaces the grid's own, which can repeat a cell)."""
    return list(dict.fromkeys(_all_cells(configs, steps)))


def _all_cells(configs, steps) -> list:
    if configs is None:
        return list(default_grid()) if steps is None else [Cell(c.config, s) for c in default_grid()
                                                            for s in _steps(steps)]
    cells = []
    for item in ([configs] if isinstance(configs, (TrainingConfig, Cell)) else configs):
        if isinstance(item, Cell):
            cells += [item] if steps is None else [Cell(item.config, s) for s in _steps(steps)]
        elif isinstance(item, TrainingConfig):
            cells += [Cell(item, s) for s in _steps(1000 if steps is None else steps)]
        else:
            raise ConfigError("configs", "must hold TrainingConfig or Cell objects", item)
    return cells


def _steps(steps) -> tuple:
    values = (steps,) if isinstance(steps, numbers.Integral) else tuple(steps)
    return tuple(check_int("steps", s, 1) for s in values)


def _verdict(worker: AccountantWorker, cell: Cell, delta: float, relation, name: str, claims: Optional[str],
             settings: PldSettings) -> Verdict:
    """Ask the worker for one cell and judge the answer (a decline is a verdict of its own, not judged). tsdp's
    reference comes first (cached for the judgement): a cell tsdp cannot account (δ below its resolution, too many
    steps) is an error naming tsdp's parameter, not blamed on the accountant."""
    rel = Substitution.parse(relation, cell.config)
    claimed = rel.config(cell.config)
    ref = reference(cell.config, cell.steps, delta, rel, settings)
    reply = worker.ask(claimed, cell.steps, delta)
    if reply.kind == REPLY_DECLINED:
        reason = reply.message if reply.type_name is None else f"raised {reply.type_name}: {reply.message}"
        return Verdict(DECLINED, accountant=name, config=claimed.as_dict(), steps=cell.steps, delta=delta,
                       relation=rel.as_dict(), relation_text=rel.describe(cell.config), epsilon_reported=None,
                       epsilon_attained=None, epsilon_sound=None, theorem=None, construction=None, claims=claims,
                       note=reason, output=reply.output)
    eps = _epsilon(reply, name, _where(claimed, cell.steps, delta), worker.timeout)
    verdict = _judge(eps, ref, cell.config, cell.steps, delta, rel, settings, name, claims)
    return replace(verdict, output=reply.output)


def check_accountant(fn: Accountant, configs: Union[None, TrainingConfig, Cell, Iterable] = None, *,
                     steps: Union[None, int, Sequence[int]] = None, delta: float = 1e-5,
                     relation: Union[None, str, Substitution] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
                     discretization: float = DISCRETIZATION, progress: bool = False,
                     worker: Optional[AccountantWorker] = None) -> CheckReport:
    """Check ``fn(config, steps, delta) -> ε`` on a grid against tsdp's attained (lower) and sound (upper) ε.

    ``fn`` runs in a worker process. A cell ``fn`` declines (it returns None, raises NotImplementedError or
    tsdp's TheoremError) is reported as declined.

    Args:
        fn: The accountant, ``fn(config, steps, delta) -> ε``.
        configs: TrainingConfigs (each at ``steps``), :class:`~tsdp.testing.grid.Cell`\\ s, or None for
            :func:`~tsdp.testing.grid.default_grid` (the paper's Section 5 configurations plus seeded random ones).
        steps: The training steps of each TrainingConfig of ``configs`` (one number or several; default 1000).
        delta: The δ of every cell.
        relation: What the accountant claims to answer for ("event", "user", "window", "series" or a
            :class:`Substitution`; None: each configuration's own, event level w = 1 by default).
        timeout: Seconds per call (default :data:`DEFAULT_TIMEOUT`; None: no limit).
        discretization: The PLD grid of tsdp's reference ε.
        progress: Show a progress bar (tqdm).
        worker: A running :class:`~tsdp.testing.worker.AccountantWorker` of ``fn`` to reuse, whose own limit then
            applies.

    Returns:
        Every cell's verdict, with counts per verdict.

    Raises:
        AccountantError: One line, when ``fn`` fails on a cell otherwise.

    Example:
        Check Opacus's RDP accountant at the guessed rate Λ/N on the default grid::

            from tsdp.testing import check_accountant, opacus_accountant

            report = check_accountant(opacus_accountant("rdp"))
            print(report.counts)
    """
    delta = check_delta(delta)
    settings = PldSettings(discretization)
    cells = _cells(configs, steps)
    name, claims = accountant_name(fn), getattr(fn, "claims", None)
    started = time.perf_counter()
    own = worker is None
    if own:
        worker = AccountantWorker(fn, timeout)
        worker.start()  # forked before the progress bar starts its thread
    bar = None
    if progress:
        from tsdp.verify.progress import progress_bar

        bar = progress_bar(total=len(cells), desc=f"checking {name}", unit="cell", leave=False)
    verdicts = []
    try:
        for cell in cells:
            verdicts.append(_verdict(worker, cell, delta, relation, name, claims, settings))
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
        if own:
            worker.close()
    return CheckReport(name, claims, tuple(verdicts), seconds=time.perf_counter() - started)


def assert_not_unsound(fn: Accountant, config: TrainingConfig, steps: int = 1000, delta: float = 1e-5, *,
                       relation: Union[None, str, Substitution] = None, discretization: float = DISCRETIZATION,
                       timeout: Optional[float] = DEFAULT_TIMEOUT,
                       worker: Optional[AccountantWorker] = None) -> Verdict:
    """Assert that ``fn`` reports at least tsdp's attained ε (a lower bound) on this cell.

    Args:
        fn: The accountant, ``fn(config, steps, delta) -> ε``.
        config: The cell's configuration.
        steps: The cell's number of training steps.
        delta: The cell's δ.
        relation: What the accountant claims to answer for, as in :func:`check_accountant`.
        discretization: The PLD grid of tsdp's reference ε.
        timeout: As in :func:`check_accountant`.
        worker: As in :func:`check_accountant`.

    Returns:
        The verdict (a declined cell's too).

    Raises:
        UnsoundAccountantError: An AssertionError (the verdict's message, the attack and its `tsdp audit`
            command) when ``fn`` reports less than tsdp's attained ε on this cell.
        AccountantError: ``fn`` fails on the cell (one line).
    """
    report = check_accountant(fn, Cell(config, check_int("steps", steps, 1)), delta=delta, relation=relation,
                              discretization=discretization, timeout=timeout, worker=worker)
    if report.unsound:
        raise UnsoundAccountantError(report.unsound)
    return report.verdicts[0]


def assert_sound(fn: Accountant, configs=None, *, steps=None, delta: float = 1e-5,
                 relation: Union[None, str, Substitution] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT) -> CheckReport:
    """:func:`check_accountant`, raising when any cell is unsound or no cell was judged.

    Args:
        fn: The accountant, ``fn(config, steps, delta) -> ε``.
        configs (TrainingConfig | Cell | Iterable | None): As in :func:`check_accountant` (None:
            :func:`~tsdp.testing.grid.default_grid`).
        steps (int | Sequence[int] | None): As in :func:`check_accountant`.
        delta: The δ of every cell.
        relation: As in :func:`check_accountant`.
        timeout: As in :func:`check_accountant`.

    Returns:
        The report.

    Raises:
        UnsoundAccountantError: Any cell is unsound.
        AccountantError: No cell was judged (every one declined or unchecked), or ``fn`` failed on a cell.
    """
    report = check_accountant(fn, configs, steps=steps, delta=delta, relation=relation, timeout=timeout)
    if report.unsound:
        raise UnsoundAccountantError(report.unsound)
    if not report.passed:
        raise AccountantError(nothing_judged(report))
    return report


def nothing_judged(report: CheckReport) -> str:
    """The one line for a report that judged no cell.

    Args:
        report: The report.

    Returns:
        The line, with the counts of declined and unchecked cells.
    """
    c = report.counts
    return (f"accountant {report.accountant}: no cell was judged ({c['declined']} declined, {c['unchecked']} "
            f"unchecked of {len(report.verdicts)}): nothing was checked")
