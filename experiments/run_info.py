"""How a grid ran (:func:`tsdp.experiments.table.run_grid`): the executor's record of its units and the grid's own
counts, one frozen record whose JSON form is ``tsdp experiment --json``'s ``run``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tsdp.executor.run import ExecutorRun
from tsdp.verify.json_data import Record, record_dict

NOT_RUN = "none"
"""The executor named when every cell was read back from the grid's folder (no unit ran)."""


@dataclass(frozen=True)
class GridRun(Record):
    """How a grid ran: its cells, those read back and those trained, and the executor that trained them.

    Its JSON form is flat: the executor's fields (:class:`~tsdp.executor.run.ExecutorRun`, or only ``executor``
    :data:`NOT_RUN` and ``workers`` when no unit ran), then the grid's counts; ``seconds`` is the grid's (the
    executor's own seconds are ``engine.seconds``) and keeps the executor's key position when there is one.

    Attributes:
        engine: How the executor ran the grid's units (None: every cell was read back).
        workers: The local worker processes asked for.
        cells: The grid's cells.
        resumed: The cells read back from the grid's folder.
        run: The cells trained.
        together: Whether the cells of a group trained together.
        seconds: The grid's wall-clock seconds, reading back included.
    """

    engine: Optional[ExecutorRun]
    workers: int
    cells: int
    resumed: int
    run: int
    together: bool
    seconds: float

    @property
    def executor(self) -> str:
        """The executor that trained the cells (``in-process``, ``processes``, ``dask``; :data:`NOT_RUN`: none)."""
        return NOT_RUN if self.engine is None else self.engine.executor

    def as_dict(self) -> dict:
        """The JSON form: the executor's fields (or ``executor`` and ``workers``), then the grid's counts."""
        own = record_dict(self)
        head = own.pop("engine") or {"executor": NOT_RUN, "workers": own["workers"]}
        del own["workers"]
        return {**head, **own}


__all__ = ["NOT_RUN", "GridRun"]
