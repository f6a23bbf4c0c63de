"""Check anyone's accountant against tsdp's bracket: ``check_accountant`` and the assertion helpers.

An accountant is any ``fn(config, steps, delta) -> ε``: a :class:`~tsdp.theorems.config.TrainingConfig`,
the number of training steps S and δ in, the ε it claims out (:mod:`tsdp.testing.adapters` wraps
Opacus accountants, dp-accounting events and guessed sampling rates). Each cell is compared with
tsdp's attained ε (a **lower** bound reached by the proofs' constructions) and sound ε (an
**upper** bound) for the neighbouring relation the accountant is claimed to answer for
(:mod:`tsdp.testing.relations`; default: the configuration's own, event level w = 1 as in tsdp).
An accountant below the attained ε is provably wrong for that relation, and the verdict says
which attack shows it (:mod:`tsdp.testing.verdicts`).
"""
from __future__ import annotations

import math
import numbers
import threading
import time
from typing import Callable, Iterable, Optional, Sequence, Union

from tsdp.theorems.config import ConfigError, TrainingConfig, check_delta, check_int

from .attack import audit_command, describe_pair
from .grid import Cell, default_grid
from .brackets import DISCRETIZATION, reference
from .relations import Relation, other_relations
from .verdicts import BETWEEN, SOUND, UNCHECKED, UNSOUND, CheckReport, Verdict, scheme_line

Accountant = Callable[[TrainingConfig, int, float], float]


class AccountantError(ValueError):
    """The accountant under check did not give a usable ε (it raised, hung, or returned NaN, a negative
    number or a non-number); the message is one line naming the cell."""


class UnsoundAccountantError(AssertionError):
    """An accountant reported less than tsdp's attained ε for the claimed relation (raised by the assertions)."""

    def __init__(self, verdicts: Sequence[Verdict]):
        self.verdicts = tuple(verdicts)
        super().__init__("\n".join(v.message() for v in self.verdicts))


def accountant_name(fn) -> str:
    """``fn.name`` where the adapter set one, else its qualified name."""
    return str(getattr(fn, "name", None) or getattr(fn, "__qualname__", None) or repr(fn))


def _call(fn: Accountant, config: TrainingConfig, steps: int, delta: float, timeout: Optional[float]):
    """``fn(config, steps, delta)``, in a daemon thread when ``timeout`` is given (a hang cannot block the check)."""
    if timeout is None:
        return fn(config, steps, delta)
    box = {}

    def run():
        try:
            box["value"] = fn(config, steps, delta)
        except BaseException as exc:  # noqa: BLE001 - reported as the accountant's error
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name="tsdp-accountant-under-check")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def reported_epsilon(fn: Accountant, config: TrainingConfig, steps: int, delta: float,
                     timeout: Optional[float] = None) -> float:
    """The accountant's ε for one cell as a float ≥ 0 (inf allowed: a vacuous guarantee), or
    :class:`AccountantError` with one line: it raised, hung past ``timeout`` s, or returned NaN, a negative
    number or something that is not a real number."""
    where = f"at {scheme_line(config.as_dict())}, {steps} step(s), δ = {delta:g}"
    name = accountant_name(fn)
    try:
        value = _call(fn, config, steps, delta, timeout)
    except TimeoutError as exc:
        raise AccountantError(f"accountant {name} hung {where}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the user's code: any failure is one line
        text = " ".join(str(exc).split())[:200]
        raise AccountantError(f"accountant {name} raised {type(exc).__name__} {where}: {text}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        shown = repr(value)[:60]
        raise AccountantError(f"accountant {name} returned {shown} ({type(value).__name__}) {where}, not a real ε")
    value = float(value)
    if math.isnan(value):
        raise AccountantError(f"accountant {name} returned NaN {where}")
    if value < 0:
        raise AccountantError(f"accountant {name} returned a negative ε = {value:g} {where}")
    return value


def _bracket_position(eps: float, attained: float, sound: Optional[float]) -> Optional[float]:
    if sound is None or not sound > attained:
        return None
    return (eps - attained) / (sound - attained)


def judge(eps: float, config: TrainingConfig, steps: int, delta: float, relation: Relation, *,
          accountant: str = "accountant", claims: Optional[str] = None,
          discretization: float = DISCRETIZATION) -> Verdict:
    """The verdict on a reported ``eps`` for one cell (module docstring of :mod:`tsdp.testing.verdicts`):
    unsound below tsdp's attained ε (lower bound), sound at or above its sound ε (upper bound), between
    otherwise; unchecked where tsdp has neither."""
    ref = reference(config, steps, delta, relation, discretization)
    claimed = relation.config(config)
    common = dict(accountant=accountant, config=claimed.as_dict(), steps=steps, delta=delta,
                  relation=relation.as_dict(), relation_text=relation.describe(config), epsilon_reported=eps,
                  epsilon_attained=ref.epsilon_attained, epsilon_sound=ref.epsilon_sound, theorem=ref.theorem,
                  construction=ref.construction, claims=claims)
    attained, sound = ref.epsilon_attained, ref.epsilon_sound
    ratio = eps / attained if attained else None
    if attained is None and sound is None:
        return Verdict(UNCHECKED, note=f"tsdp has no bound for this scheme ({ref.refused})", **common)
    if attained is not None and eps < attained:
        others = [(o, reference(config, steps, delta, o, discretization, attained=False).epsilon_sound)
                  for o in other_relations(relation, config)]
        sound_under = tuple(o.name for o, s in others if s is not None and eps >= s)
        return Verdict(UNSOUND, pair=describe_pair(ref.construction, claimed),
                       audit_command=audit_command(ref.construction, claimed, steps, delta), ratio=ratio,
                       sound_under=sound_under, **common)
    if sound is not None and eps >= sound:
        return Verdict(SOUND, ratio=ratio, **common)
    return Verdict(BETWEEN, ratio=ratio, bracket_position=_bracket_position(eps, attained, sound),
                   note=None if sound is not None else ref.refused, **common)


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


def check_accountant(fn: Accountant, configs: Union[None, TrainingConfig, Cell, Iterable] = None, *,
                     steps: Union[None, int, Sequence[int]] = None, delta: float = 1e-5,
                     relation: Union[None, str, Relation] = None, timeout: Optional[float] = None,
                     discretization: float = DISCRETIZATION, progress: bool = False) -> CheckReport:
    """Check ``fn(config, steps, delta) -> ε`` on a grid against tsdp's attained (lower) and sound (upper) ε.

    ``configs``: TrainingConfigs (each at ``steps``, default 1000), :class:`~tsdp.testing.grid.Cell`\\ s, or None
    for :func:`~tsdp.testing.grid.default_grid` (the paper's Section 5 configurations plus seeded random
    ones). ``relation``: what the accountant claims to answer for ("event", "user", "window", "series" or a
    :class:`Relation`; None: each configuration's own, event level w = 1 by default). ``timeout``: seconds
    per call (None: no limit). Raises :class:`AccountantError` (one line) when ``fn`` fails on a cell.
    """
    delta = check_delta(delta)
    cells = _cells(configs, steps)
    name, claims = accountant_name(fn), getattr(fn, "claims", None)
    started = time.perf_counter()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(cells), desc=f"checking {name}", unit="cell", leave=False)
    verdicts = []
    try:
        for cell in cells:
            rel = Relation.parse(relation, cell.config)
            claimed = rel.config(cell.config)
            eps = reported_epsilon(fn, claimed, cell.steps, delta, timeout)
            verdicts.append(judge(eps, cell.config, cell.steps, delta, rel, accountant=name, claims=claims,
                                  discretization=discretization))
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
    return CheckReport(name, claims, tuple(verdicts), seconds=time.perf_counter() - started)


def assert_not_unsound(fn: Accountant, config: TrainingConfig, steps: int = 1000, delta: float = 1e-5, *,
                       relation: Union[None, str, Relation] = None,
                       discretization: float = DISCRETIZATION) -> Verdict:
    """Raise :class:`UnsoundAccountantError` (an AssertionError: the verdict's message, the attack and its
    `tsdp audit` command) when ``fn`` reports less than tsdp's attained ε on this cell; return the verdict."""
    report = check_accountant(fn, Cell(config, check_int("steps", steps, 1)), delta=delta, relation=relation,
                              discretization=discretization)
    if report.unsound:
        raise UnsoundAccountantError(report.unsound)
    return report.verdicts[0]


def assert_sound(fn: Accountant, configs=None, *, steps=None, delta: float = 1e-5,
                 relation: Union[None, str, Relation] = None, timeout: Optional[float] = None) -> CheckReport:
    """:func:`check_accountant`, raising :class:`UnsoundAccountantError` when any cell is unsound; the report."""
    report = check_accountant(fn, configs, steps=steps, delta=delta, relation=relation, timeout=timeout)
    if report.unsound:
        raise UnsoundAccountantError(report.unsound)
    return report
