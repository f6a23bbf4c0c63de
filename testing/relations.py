"""Neighbouring relations an accountant can answer for, and the configuration whose bounds answer for each.

tsdp's bounds are for **substitution**: two datasets that differ in the value of one record.
What a record is decides k, the windows a change touches (THEOREMS.md, "Generalisations"):

* ``window``: one window (subsequence) of one series (k = 1, record level; T13's relation);
* ``event``: w consecutive element values of one series (w-event level, the paper's
  relation and tsdp's default; one element lies in k = L_C + L_F windows);
* ``user``: w windows' worth of one series (w-user level, k = min(w (L_C + L_F), T));
* ``series``: a whole series (k = T: every window of the series).

A guessed sampling rate fed to a standard accountant (Opacus, dp-accounting) answers for
add/remove of one record under Poisson sampling; the check compares it with tsdp's numbers for
the relation the user *claims* (:func:`tsdp.testing.check.check_accountant`) and names the
relations under which it would have been sound.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from tsdp.verify.json_data import Record
from tsdp.theorems.config import Choice, ConfigError, Relation, TrainingConfig, check_int


class RecordUnit(Choice):
    """What one neighbour changes, finest first: one window, w elements (w-event), w windows' worth (w-user), or a
    whole series."""

    WINDOW = "window"
    EVENT = "event"
    USER = "user"
    SERIES = "series"

    @property
    def counts_elements(self) -> bool:
        """Event and user level: the unit is w elements (the configuration's own relations, :class:`Relation`)."""
        return self in (RecordUnit.EVENT, RecordUnit.USER)


@dataclass(frozen=True)
class Substitution(Record):
    """Substitution of one ``record``: the neighbouring relation an accountant answers for (the configuration's own
    relation, :class:`tsdp.theorems.config.Relation`, is its event and user cases).

    Attributes:
        record: The record one neighbour changes: window | event | user | series (a :class:`RecordUnit`; its
            string is accepted).
        w: The number of elements, for event and user level (1 for window and series).

    Raises:
        ConfigError: An unknown record, w below 1, or w ≠ 1 for window or series.
    """

    record: RecordUnit = RecordUnit.EVENT
    w: int = 1

    def __post_init__(self):
        object.__setattr__(self, "record", RecordUnit.of("relation", self.record))
        object.__setattr__(self, "w", check_int("w", self.w, 1))
        if not self.record.counts_elements and self.w != 1:
            raise ConfigError("w", f"must be 1 for the {self.record} relation (a record is one {self.record})", self.w)

    @classmethod
    def of(cls, config: TrainingConfig) -> "Substitution":
        """The substitution a configuration's relation states (``config.relation`` over ``config.w`` elements).

        Args:
            config: The configuration.

        Returns:
            Its :class:`Substitution`.
        """
        return cls(config.relation, config.w)

    @classmethod
    def parse(cls, value: "Substitution | str | None", config: TrainingConfig) -> "Substitution":
        """``value`` as a substitution: a :class:`Substitution`, a record name (w from ``config``), or None:
        ``config``'s own relation.

        Args:
            value: A :class:`Substitution`, a record name, or None.
            config: The configuration (w, and the relation for None).

        Returns:
            The :class:`Substitution`.

        Raises:
            ConfigError: An unknown record name.
        """
        if value is None:
            return cls.of(config)
        if isinstance(value, Substitution):
            return value
        record = RecordUnit.of("relation", value)
        return cls(record, config.w if record.counts_elements else 1)

    @property
    def name(self) -> str:
        """Short name: ``window``, ``1-event``, ``3-user``, ``series``."""
        return f"{self.w}-{self.record}" if self.record.counts_elements else self.record.value

    def config(self, config: TrainingConfig) -> TrainingConfig:
        """The configuration whose bounds answer for this relation on ``config``'s batching.

        Event and user level: ``config`` with the relation and w set. Window: one element in one
        window's forecast and no context (k = 1) on the same T, no augmentation (a record-level
        change is not bounded by v). Series: user level over every window of the series (k = T).

        Args:
            config: The batching.

        Returns:
            The configuration of this relation.
        """
        if self.record.counts_elements:
            return config.with_(relation=Relation(self.record.value), w=self.w)
        if self.record == RecordUnit.WINDOW:
            return config.with_(context_length=0, forecast_length=1, L=config.T, lengths=None, relation=Relation.EVENT,
                                w=1, sigma_context=0.0, sigma_forecast=0.0)
        return config.with_(relation=Relation.USER, w=config.L, sigma_context=0.0, sigma_forecast=0.0)

    def describe(self, config: TrainingConfig) -> str:
        """The relation in words, with the k windows one change touches on ``config``.

        Args:
            config: The batching.

        Returns:
            The words.
        """
        k = self.config(config).k
        return {
            RecordUnit.WINDOW: "substitution of one window (record = window, k = 1)",
            RecordUnit.EVENT: f"substitution of {self.w} consecutive element value(s) of one series ({self.w}-event level, "
                     f"k = {k} windows)",
            RecordUnit.USER: f"substitution of {self.w} windows' worth of one series ({self.w}-user level, k = {k} windows)",
            RecordUnit.SERIES: f"substitution of one whole series (record = series, k = T = {k} windows)",
        }[self.record]


def other_relations(claimed: Substitution, config: TrainingConfig) -> Iterator[Substitution]:
    """The relations the check names when a value is unsound for ``claimed``: one window and one element (1-event),
    each once, where a change touches fewer windows than the claim's (k). A relation whose change touches as many
    windows or more cannot be the one a value below the claim's attained ε is sound for: its sound ε is at least the
    claim's attained ε on the same batching (the bounds' mixture weights ρ k / T, Binom(k, q) grow with k; a test
    checks it for T4, T6, T7 and T11).

    Args:
        claimed: The relation the accountant claims.
        config: The batching.

    Returns:
        The other relations, each once.
    """
    k = claimed.config(config).k
    for relation in (Substitution(RecordUnit.WINDOW), Substitution(RecordUnit.EVENT, 1)):
        if relation != claimed and relation.config(config).k < k:
            yield relation
