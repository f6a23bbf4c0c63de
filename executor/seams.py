"""Context-variable seams: a value that code reads from a context variable, replaced within a block.

A test replaces what a public function uses without a parameter for it (DESIGN.md: test hooks are not
parameters of public functions): the unit of work the executor runs (:func:`_units_wrapped`, fault injection) or
the sampler of a Monte Carlo audit (``attacks.montecarlo.audit._sampler_replaced``).
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, ContextManager, Iterator, Optional

UNIT_WRAPPER: contextvars.ContextVar[Optional[Callable[[Callable], Callable]]] = contextvars.ContextVar(
    "tsdp_shard_unit_wrapper", default=None)
"""A function of the unit of work that :func:`executor.run.run_shards` runs instead of it (None: the unit itself);
set only by :func:`_units_wrapped`."""


@contextlib.contextmanager
def holding(variable: contextvars.ContextVar, value: Any) -> Iterator[None]:
    """Within the block, ``variable`` holds ``value``; its value before is restored after.

    Args:
        variable: The context variable.
        value: What it holds within the block.

    Yields:
        None.
    """
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)


def _units_wrapped(wrap: Callable[[Callable], Callable]) -> ContextManager[None]:
    """Within the block (a context manager), :func:`executor.run.run_shards` runs ``wrap(shard_fn)`` in place of
    ``shard_fn`` (fault-injection tests: a unit that fails once, or kills its worker, must change no result)."""
    return holding(UNIT_WRAPPER, wrap)


__all__ = ["UNIT_WRAPPER", "holding"]
