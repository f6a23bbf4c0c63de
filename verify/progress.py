"""Progress bars on stderr that stay readable in a log: :func:`progress_bar`, the one constructor of tsdp's bars.

On a terminal (or in a notebook) a bar is tqdm's, as drawn there. On a file or a pipe (``tsdp epsilon ... 2> log``) a
bar's redraws are carriage returns that a file keeps, and bars drawn at once by several threads (the accountant's PLD
grids, sound and attained) are positioned by cursor-up escapes, which a log shows as interleaved fragments. There a bar
draws nothing while it runs and writes one line when it closes: its description, count and elapsed time, as the
terminal's bar would end (:class:`LoggedBar`), and only when a terminal would have shown it (its ``delay`` passed).
A terminal that reports 0 columns (a pseudo-terminal given no size), on which tqdm draws nothing at all, is written
to as a log is.
"""
from __future__ import annotations

import os
import sys

from tqdm import tqdm


def _terminal(stream) -> bool:
    """Whether ``stream`` is a terminal tqdm draws on (False for a file, a pipe, a closed stream, one without
    ``isatty``, and a terminal that reports 0 columns: a pseudo-terminal given no size, as `script` without a terminal
    and some CI or container shells make, where tqdm draws nothing at all)."""
    try:
        if not stream.isatty():
            return False
    except (AttributeError, ValueError):
        return False
    try:
        return os.get_terminal_size(stream.fileno()).columns > 0
    except (AttributeError, ValueError, OSError):  # no descriptor to ask (io.UnsupportedOperation is both)
        return True


class LoggedBar(tqdm):
    """A tqdm bar for a file or a pipe: no redraw while it runs (its count and postfix are kept as tqdm keeps them),
    one line when it closes (:func:`progress_bar`)."""

    def display(self, msg=None, pos=None):
        """Draw nothing (the line is written by :meth:`close`).

        Args:
            msg: tqdm's message to draw (ignored).
            pos: tqdm's line position (ignored).
        """
        return None

    def close(self):
        """Write the bar's one line (when its delay has passed and it is not closed yet), then close it."""
        if not self.disable and self._time() - self.start_t >= self.delay:
            line = self.format_meter(**{**self.format_dict, "ncols": 0})
            with self.get_lock():
                self.fp.write(line + "\n")
                self.fp.flush()
        self.leave = False  # tqdm's own close would end the (empty) line
        super().close()


def progress_bar(**kwargs) -> tqdm:
    """A progress bar on stderr (or ``kwargs["file"]``): tqdm's on a terminal, its widget in a notebook
    (``tqdm.autonotebook``), a :class:`LoggedBar` on a file or a pipe (module docstring).

    Args:
        **kwargs: tqdm's arguments.

    Returns:
        The bar.
    """
    stream = kwargs.get("file") or sys.stderr
    if kwargs.get("disable") or _terminal(stream):
        return tqdm(**kwargs)
    from tqdm.autonotebook import tqdm as notebook_tqdm  # tqdm's own where no IPython kernel runs

    if notebook_tqdm is not tqdm:  # a notebook: its widget, not a stream
        return notebook_tqdm(**kwargs)
    return LoggedBar(**kwargs)


__all__ = ["LoggedBar", "progress_bar"]
