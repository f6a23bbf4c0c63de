"""The CPUs this process may use, and independent pieces of work spread over them in threads.

numpy's FFTs, powers and reductions release the GIL, so independent compositions (the estimates of
one question, the pieces of one envelope) run side by side on the cores there are; each result is
the one computed alone, bit for bit.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence


def available_cpus() -> int:
    """CPUs this process may run on (its affinity), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_workers(name: str, value) -> int:
    """A number of local worker processes: 1 to 4 per CPU this process may run on (:func:`available_cpus`, its
    affinity: a container or ``taskset`` limit counts, the machine's cores do not); more only add start-up time and
    memory. ConfigError naming ``name`` otherwise.

    Args:
        name: The flag or keyword (in the error).
        value: The number asked for.

    Returns:
        The number.

    Raises:
        ConfigError: Not an integer from 1 to 4 per available CPU.
    """
    from tsdp.theorems.config import check_int

    return check_int(name, value, 1, 4 * available_cpus())


def each(fn: Callable, items: Sequence) -> list:
    """``[fn(x) for x in items]``, on up to one thread per available CPU (in turn on one). The first error, in
    ``items``' order, is raised after all have finished.

    Args:
        fn: The function.
        items: Its arguments.

    Returns:
        ``fn`` of each item, in order.
    """
    from concurrent.futures import ThreadPoolExecutor

    threads = min(len(items), available_cpus())
    if threads < 2:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(fn, x) for x in items]
    return [f.result() for f in futures]


__all__ = ["available_cpus", "check_workers", "each"]
