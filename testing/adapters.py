"""Adapters: the common forms of an accountant as ``fn(config, steps, delta) -> ε`` for :func:`check_accountant`.

* :func:`opacus_accountant`: an Opacus accountant (``rdp``, ``prv``, ``gdp`` or an ``IAccountant``
  class) fed a guessed sampling rate, S steps at the configuration's σ (needs ``tsdp[opacus]``);
* :func:`poisson_pld` / :func:`dp_accounting_accountant`: dp-accounting's PLD (or RDP) accountant
  over a ``DpEvent`` (a Poisson-subsampled Gaussian at a guessed rate, or your own builder);
* :func:`tsdp_accountant`: tsdp's own (the sound estimate of :func:`tsdp.verify.accounting.epsilon`);
* :func:`accountant`: a plain function with a name and the relation it claims.

The guessed rates (:data:`SAMPLE_RATES`) are what people feed a standard accountant for time
series: ``series`` = Λ/N (a series as the record; the top-level rate ρ = ⌊Λ/λ⌋/N only for λ = 1, larger for
λ > 1) and ``window`` = Λ/(N·T) (a window as the record; the pooled rate Λ/N_tot for series of one length, larger
for variable lengths, whose T is the shortest series'), both read as Poisson rates of add/remove of one record.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable, Optional

from tsdp.theorems.config import Choice, ConfigError, TrainingConfig


class GuessedRate(Choice):
    """A Poisson rate people guess for a standard accountant on time series (:data:`SAMPLE_RATES`)."""

    SERIES = "series"
    WINDOW = "window"


class DpAccountingKind(Choice):
    """A dp-accounting accountant the adapters compose with: ``PLDAccountant`` or ``RdpAccountant``."""

    PLD = "pld"
    RDP = "rdp"


SAMPLE_RATES = {
    GuessedRate.SERIES: ("Λ/N", "add/remove of one series under Poisson sampling at rate Λ/N"),
    GuessedRate.WINDOW: ("Λ/(N·T)", "add/remove of one window under Poisson sampling at rate Λ/(N·T)"),
}
"""Guessed sampling rates: name -> (formula, the relation an accountant fed it answers for)."""

OPACUS_ACCOUNTANTS = ("rdp", "prv", "gdp")


def sample_rate(config: TrainingConfig, which: str) -> float:
    """The guessed Poisson rate ``which`` (:data:`SAMPLE_RATES`) of ``config``, at most 1.

    Args:
        config: The configuration.
        which: ``"series"`` (Λ/N; the top-level rate for λ = 1) or ``"window"`` (Λ/(N·T); the pooled rate for
            series of one length).

    Returns:
        The rate, at most 1.

    Raises:
        ConfigError: An unknown ``which`` (named ``sample_rate``).
    """
    if GuessedRate.of("sample_rate", which) == GuessedRate.SERIES:
        return min(1.0, config.batch_size / config.N)
    return min(1.0, config.batch_size / (config.N * config.T))


@dataclass(frozen=True)
class NamedAccountant:
    """An accountant with a ``name`` and the relation it ``claims`` to answer for; calls ``fn``.

    Attributes:
        fn: The accountant, ``fn(config, steps, delta) -> ε``.
        name: Its name in the report.
        claims: The relation it claims to answer for, in words (None: not stated).
    """

    fn: Callable[[TrainingConfig, int, float], float]
    name: str
    claims: Optional[str] = None

    def __call__(self, config: TrainingConfig, steps: int, delta: float) -> float:
        return self.fn(config, steps, delta)


def accountant(fn: Callable[[TrainingConfig, int, float], float], name: Optional[str] = None,
               claims: Optional[str] = None) -> NamedAccountant:
    """A plain ``fn(config, steps, delta) -> ε`` with a name and a claim.

    Args:
        fn: The accountant, ``fn(config, steps, delta) -> ε``.
        name: Its name in verdicts (default: its qualified name).
        claims: The relation it claims to answer for, in words.

    Returns:
        The named accountant; calling it calls ``fn``.
    """
    return NamedAccountant(fn, name or getattr(fn, "__qualname__", repr(fn)), claims)


def _rate_guess(compute: Callable[[float, float, int, float], float], name: str, rate: str) -> NamedAccountant:
    formula, claims = SAMPLE_RATES[GuessedRate.of("sample_rate", rate)]

    def fn(config: TrainingConfig, steps: int, delta: float) -> float:
        return float(compute(sample_rate(config, rate), float(config.sigma), int(steps), float(delta)))

    return NamedAccountant(fn, f"{name} at rate {formula}", claims)


def opacus_accountant(kind, sample_rate: str = "series") -> NamedAccountant:
    """Opacus's accountant ``kind`` with the history (σ, guessed rate, S): what ``PrivacyEngine`` records for S
    steps at a Poisson ``sample_rate``. Needs ``tsdp[opacus]``.

    Args:
        kind (str | type): "rdp", "prv", "gdp" or an ``IAccountant`` subclass.
        sample_rate: The guessed rate (:data:`SAMPLE_RATES`): ``"series"`` (Λ/N) or ``"window"`` (Λ/(N·T)).

    Returns:
        The accountant, named after ``kind`` and the rate's formula, claiming the rate's relation.

    Raises:
        MissingExtraError: Opacus is not installed.
        ConfigError: An unknown ``kind`` or ``sample_rate``.
    """
    try:
        from opacus.accountants import GaussianAccountant, PRVAccountant, RDPAccountant
    except ImportError as exc:
        from tsdp.theorems.errors import MissingExtraError

        raise MissingExtraError("the Opacus adapter needs opacus", "opacus") from exc
    classes = {"rdp": RDPAccountant, "prv": PRVAccountant, "gdp": GaussianAccountant}
    if isinstance(kind, str):
        if kind not in classes:
            raise ConfigError("opacus", f"must be one of {', '.join(OPACUS_ACCOUNTANTS)} or an IAccountant class", kind)
        cls, label = classes[kind], f"Opacus {kind.upper()}"
    else:
        cls, label = kind, f"Opacus {getattr(kind, '__name__', kind)}"

    def compute(q: float, sigma: float, steps: int, delta: float) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # GDP's "experimental" warning, RDP's α-range notes
            acc = cls()
            acc.history = [(sigma, q, steps)]
            return acc.get_epsilon(delta)

    return _rate_guess(compute, label, sample_rate)


DP_ACCOUNTING_GRID = 1e-3
"""dp-accounting's PLD grid here (the library's default is 1e-4): ten times faster, and pessimistic on a grid
whose points are every tenth of the default's, so it rounds the privacy loss up at least as much: a value
below tsdp's attained ε here is below it at the default grid too (on Section 5 the two differ by < 1e-5
relative)."""


def _dp_accounting(kind: str):
    if DpAccountingKind.of("dp_accounting", kind) == DpAccountingKind.PLD:
        from dp_accounting.pld import PLDAccountant

        return PLDAccountant(value_discretization_interval=DP_ACCOUNTING_GRID)
    from dp_accounting.rdp import RdpAccountant

    return RdpAccountant()


def dp_accounting_accountant(builder: Callable, accountant: str = "pld", name: Optional[str] = None,
                             claims: Optional[str] = None) -> NamedAccountant:
    """``builder(config, steps) -> DpEvent`` composed by dp-accounting's ``accountant``; ε at δ.

    Args:
        builder: ``builder(config, steps) -> DpEvent``, the event of S steps.
        accountant: "pld": ``PLDAccountant`` on the grid :data:`DP_ACCOUNTING_GRID`; "rdp": ``RdpAccountant``.
        name: Its name in verdicts (default: the accountant and the builder's qualified name).
        claims: The relation it claims to answer for, in words.

    Returns:
        The named accountant.

    Raises:
        ConfigError: An unknown ``accountant``.
    """
    _dp_accounting(accountant)  # refuses an unknown kind now

    def fn(config: TrainingConfig, steps: int, delta: float) -> float:
        acc = _dp_accounting(accountant)
        acc.compose(builder(config, steps))
        return float(acc.get_epsilon(delta))

    return NamedAccountant(fn, name or f"dp-accounting {accountant.upper()} of {getattr(builder, '__qualname__', builder)}",
                           claims)


def poisson_pld(sample_rate: str = "series", accountant: str = "pld") -> NamedAccountant:
    """dp-accounting's ``accountant`` over S self-composed Poisson-subsampled Gaussians (σ) at the guessed rate.

    Args:
        sample_rate: The guessed rate (:data:`SAMPLE_RATES`): ``"series"`` (Λ/N) or ``"window"`` (Λ/(N·T)).
        accountant: "pld" (on the grid :data:`DP_ACCOUNTING_GRID`) or "rdp".

    Returns:
        The accountant, named after the rate's formula, claiming the rate's relation.

    Raises:
        ConfigError: An unknown ``sample_rate`` or ``accountant``.
    """
    from dp_accounting import dp_event

    _dp_accounting(accountant)

    def compute(q: float, sigma: float, steps: int, delta: float) -> float:
        acc = _dp_accounting(accountant)
        acc.compose(dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)),
                                                 steps))
        return float(acc.get_epsilon(delta))

    return _rate_guess(compute, f"dp-accounting Poisson {accountant.upper()}", sample_rate)


def tsdp_accountant(theorem: Optional[str] = None, *, discretization: float = 1e-4) -> NamedAccountant:
    """tsdp's own accountant: the sound ε of :func:`tsdp.verify.accounting.epsilon` (an upper bound).

    Args:
        theorem: The bound's T-id (None: the tightest sound bound for the scheme).
        discretization: The PLD grid.

    Returns:
        The accountant; it answers inf (no finite guarantee) where the catalogue has no sound bound for the scheme
            (pooled windows with k > 1, Poisson top level) and no ``theorem`` was given.
    """
    from tsdp.theorems.errors import TheoremError
    from tsdp.verify import accounting

    def fn(config: TrainingConfig, steps: int, delta: float) -> float:
        try:
            return accounting.epsilon(config, delta, steps=steps, theorem=theorem, estimates=("sound",),
                                      discretization=discretization).epsilon
        except TheoremError:
            if theorem is not None:
                raise
            return math.inf

    return NamedAccountant(fn, f"tsdp {theorem or 'tightest sound bound'}",
                           "the configuration's own relation (substitution, w-event or w-user)")
