"""One run's book: the results of its units (one per key), the attempts of each, the progress bar and the stop rule.

Every executor (:mod:`executor.local`, :mod:`executor.cluster`) reports each finished or failed unit here; a
failure is counted and the unit re-run, until :data:`MAX_ATTEMPTS` failures of the same unit stop the run with
:class:`ShardError`, or at once with :class:`Aborted` when the failure is one the caller declared fatal.
"""
from __future__ import annotations

import sys
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Dict, Hashable, List, Optional, Protocol, Sequence, Tuple, Type

MAX_ATTEMPTS = 4
"""Attempts of one unit before the run stops with :class:`ShardError`."""


class Shard(Protocol):
    """A unit of work: a hashable ``key`` (its name in the results) and a ``trials`` count (the progress bar's unit).
    The result of running it has the same ``key`` and ``trials``."""

    @property
    def key(self) -> Hashable: ...

    @property
    def trials(self) -> int: ...


StopRule = Callable[[Dict[Hashable, Any]], bool]
"""Called with the results so far after each unit finishes; True ends the run early."""


class ShardError(RuntimeError):
    """A unit failed ``max_attempts`` times; the run is not completed (no unit is ever dropped)."""


class Aborted(RuntimeError):
    """A unit failed with one of the caller's ``fatal`` exceptions (re-running it cannot help, e.g. a time limit):
    the run stopped at once and the units in flight were ended.

    Args:
        cause: That exception.
        key: Its unit's key.
        done: The units that had finished.
        planned: The units of the run.
        done_trials: The trials of the units that had finished (a unit may hold several).
    """

    def __init__(self, cause: BaseException, key: Hashable, done: int, planned: int, done_trials: int):
        super().__init__(f"shard {key} failed: {cause} ({done} of {planned} shards had finished)")
        self.cause, self.key, self.done, self.planned, self.done_trials = cause, key, done, planned, done_trials


class Tracker:
    """The book of one run (module docstring).

    Args:
        specs: The units of the run.
        stop: The stop rule (None: run every unit).
        progress: Show a progress bar (tqdm, stderr) counting trials done of planned.
        max_attempts: Failures of one unit before :class:`ShardError`.
        desc: The progress bar's label.
        fatal: Exception classes that end the run at once (:class:`Aborted`).

    Raises:
        ValueError: Two units share a key.
    """

    def __init__(self, specs: Sequence[Shard], stop: Optional[StopRule], progress: bool, max_attempts: int,
                 desc: str, fatal: Tuple[Type[BaseException], ...] = ()):
        from tsdp.verify.progress import progress_bar

        self.fatal = tuple(fatal)
        self.specs = {}
        for s in specs:  # one result per key: a second unit under a key would run once and be counted once
            if s.key in self.specs:
                raise ValueError(f"two units share the key {s.key!r}: each unit needs its own")
            self.specs[s.key] = s
        self.results: Dict[Hashable, Any] = {}
        self.attempts: Dict[Hashable, int] = {}
        self.stop, self.max_attempts = stop, max_attempts
        self.stopped = False
        self.bar = progress_bar(total=sum(s.trials for s in specs), disable=not progress, desc=desc,
                        unit="trial", unit_scale=True, file=sys.stderr)

    def done(self, result: Any) -> None:
        """Record a finished unit's result (a re-run that raced its original is identical: one is kept) and apply the
        stop rule.

        Args:
            result: The result, with the unit's ``key`` and ``trials``.
        """
        if result.key in self.results:
            return
        self.results[result.key] = result
        self.bar.update(result.trials)
        if self.stop is not None and self.stop(self.results):
            self.stopped = True

    def failed(self, key: Hashable, exc: BaseException) -> None:
        """Count a failure of unit ``key``; it is re-run unless this ends the run.

        Args:
            key: The unit.
            exc: Why it failed.

        Raises:
            Aborted: ``exc`` is one of the fatal exceptions.
            ShardError: The unit has failed ``max_attempts`` times.
        """
        if isinstance(exc, self.fatal):
            raise Aborted(exc, key, len(self.results), len(self.specs),
                          sum(r.trials for r in self.results.values())) from exc
        self.attempts[key] = self.attempts.get(key, 0) + 1
        if self.attempts[key] >= self.max_attempts:
            hint = ""
            if isinstance(exc, BrokenProcessPool):  # the commonest cause: a script whose main module re-runs in workers
                hint = ("; worker processes kept dying: workers are spawned, so a script that calls the audit with "
                        "workers > 1 must guard it with `if __name__ == \"__main__\":`")
            raise ShardError(f"shard {key} failed {self.attempts[key]} times; last error: {exc!r}{hint}") from exc

    def pending(self) -> List[Shard]:
        """The units without a result yet, in the run's order.

        Returns:
            The units still to run.
        """
        return [s for k, s in self.specs.items() if k not in self.results]

    @property
    def retries(self) -> int:
        """Failures so far (each one re-run, or the one that ended the run)."""
        return sum(self.attempts.values())


__all__ = ["MAX_ATTEMPTS", "Aborted", "Shard", "ShardError", "StopRule", "Tracker"]
