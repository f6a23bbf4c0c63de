"""Fault injection for the sharded executor's tests: a unit of work that fails once, by raising or by killing its
worker process, as a lost machine would (:func:`tsdp.executor.seams._units_wrapped` puts it in place)."""
import os


class FailOnce:
    """Shard ``index`` of ``world`` fails on its first attempt, then runs.

    ``mode="raise"`` raises; ``mode="exit"`` kills the worker process (``os._exit``). The first attempt is recorded by
    creating ``marker`` (a path every worker sees). ``fn`` is the unit of work it wraps.
    """

    def __init__(self, marker: str, world: str = "p", index: int = 1, mode: str = "raise", fn=None):
        self.marker, self.world, self.index, self.mode, self.fn = marker, world, index, mode, fn

    def __call__(self, spec):
        if spec.key == (self.world, self.index):
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                return self.fn(spec)
            os.close(fd)
            if self.mode == "exit":
                os._exit(3)
            raise RuntimeError(f"injected failure of shard {spec.key}")
        return self.fn(spec)


def failing_once(marker: str, **where):
    """The wrapper :func:`tsdp.executor.seams._units_wrapped` takes: each unit of work in a
    :class:`FailOnce` (``where``: world, index, mode)."""
    return lambda fn: FailOnce(marker, fn=fn, **where)
