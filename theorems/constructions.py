"""Which proof construction attacks which bound, under which scheme: the one table.

Each row is a worst-case construction of the paper's proofs that ``tsdp.attacks.montecarlo.constructions``
runs through the real loop: the scheme it runs (top and bottom level), the bound whose ε is
the sound claim for it, and the bound whose pair the attack attains (T11's attained pair is
the construction's own, :meth:`tsdp.theorems.bounds.base.Bound.attained_pair` of T11). The
auditors, the report's tightness section and the accountant's attained estimate all read
this table or ``Bound.construction``, which agrees with it (``tests/theorems``): for every
row whose sound bound covers the attacked relation, ``get(sound).construction`` is the row's
attained id.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional


@dataclass(frozen=True)
class Construction:
    """One audited construction: ``audited`` id, scheme (``top``, ``bottom``), ``sound`` and ``attained`` ids.

    ``same_relation`` is False where the sound bound is for another neighbouring relation than
    the attack (T13 bounds one record, the pooled-window attack changes one element in k
    windows: claim C6), so an audit above it is a finding about the relation, not a violation.

    Attributes:
        audited: The audited bound's id.
        top: The top level.
        bottom: The bottom level.
        sound: The sound bound's id.
        attained: The attained bound's id.
        same_relation: Whether both bounds speak of the same neighbouring relation.
    """

    audited: str
    top: str
    bottom: str
    sound: str
    attained: str
    same_relation: bool = True

    def relation_note(self, k: int) -> Optional[str]:
        """Why an attack above the sound bound is not a violation when the relations differ (None when they agree).

        Args:
            k: Windows holding the changed element.

        Returns:
            The note, or None.
        """
        return None if self.same_relation else RELATION_MISMATCH.format(k=k)


RELATION_MISMATCH = (
    "T13 bounds a change of one record (one window); the attack changes one element of a series, which lies "
    "in k = {k} windows (event-level relation), which T13 does not cover: an attack above T13 is the claim, "
    "not a privacy violation")
"""Claim C6's reading of an attack above T13 (a relation mismatch, not a bug): the one home of the text."""


CONSTRUCTIONS: Dict[str, Construction] = {c.audited: c for c in (
    Construction("T1", "deterministic", "wr", "T1", "T1"),        # Thm 4.2 / proof of Thm 4.3
    Construction("T3", "deterministic", "wr", "T2", "T3"),        # Thm 4.3 (λ > 1)
    Construction("T4", "deterministic", "poisson", "T4", "T4"),   # Lemma E.9 in the proof of Thm E.8
    Construction("T6", "wor", "wr", "T6", "T6"),                  # Thm 4.4, proof of Thm F.7
    Construction("T9", "wor", "wr", "T7", "T9"),                  # Thm F.7
    Construction("T10", "wor", "poisson", "T8", "T10"),           # Thm F.8
    Construction("T11", "wor", "wr", "T11", "T11"),               # Thm G.1 (its own augmentation pair)
    Construction("T13", "pooled", "wr", "T13", "T14", same_relation=False),  # Props. C.1, C.2 (claim C6)
    Construction("T14", "pooled", "wr", "T13", "T14", same_relation=False),
)}
"""The auditable constructions by audited id."""
