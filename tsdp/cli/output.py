"""What the CLI writes to stdout: JSON with one convention for non-finite numbers.

JSON output is RFC 8259 valid: NaN, +inf and -inf (which the standard has no token for)
are written as ``null`` (:func:`tsdp.verify.json_data.json_data`, the one convention of tsdp);
every command's ``--json`` goes through :func:`dumps`, which also refuses
(``allow_nan=False``) anything that slipped past the conversion. A number that is legitimately
non-finite at exit 0 (ε = ∞ without noise) says so: ``<key>_note`` beside its null
(:func:`tsdp.verify.json_data.with_note`), and :data:`NO_NOISE` in human output. Everything else that would be
non-finite is refused as bad input, one line naming the flag.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from typing import Iterator

from tsdp.verify.json_data import json_data
from tsdp.verify.rounded import rounded_up

NO_NOISE = "∞ (no noise)"
"""An infinite ε (training or a release without noise) in human output: the one label of every command (and of the
report's inference table)."""


def _default(x):
    return str(x)


def sigma_text(sigma: float, digits: int = 6) -> str:
    """A calibrated σ as a person copies it: ``digits`` significant digits, rounded up. A σ printed below the one
    whose ε was accounted would spend more than the budget; a larger σ spends less
    (:func:`tsdp.verify.rounded.rounded_up`).

    Args:
        sigma: The calibrated σ.
        digits: Significant digits.

    Returns:
        The text, at least ``sigma``.
    """
    return rounded_up(sigma, digits)


def auc_text(auc: float) -> str:
    """A canary AUC for human output: 3 decimals, or what a NaN means (every canary included, or none: no ranking to
    score), never "nan".

    Args:
        auc: The AUC.

    Returns:
        The text.
    """
    from tsdp.attacks.canary.steinke_bound import AUC_UNDEFINED

    return f"{auc:.3f}" if math.isfinite(auc) else AUC_UNDEFINED


def dumps(payload, indent=2) -> str:
    """``payload`` as RFC 8259 JSON: non-finite numbers as null (see the module docstring).

    Args:
        payload (object): The JSON data.
        indent (int): Indentation.

    Returns:
        The JSON text.
    """
    return json.dumps(json_data(payload), indent=indent, allow_nan=False, default=_default)


class Heartbeat:
    """A tqdm line on stderr for work that reports phases but no fraction (a library call that
    runs for a minute): the current phase and the elapsed time, redrawn every second by a
    daemon thread, so the line never sits still. ``phase(text)`` is a progress callback.

    Args:
        desc: The line's first words.
    """

    def __init__(self, desc: str):
        import threading

        from tqdm import tqdm

        self._bar = tqdm(desc=desc, bar_format="{desc} [{elapsed}]", leave=False, dynamic_ncols=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self):
        while not self._stop.wait(1.0):
            self._bar.refresh()

    def phase(self, text: str) -> None:
        """Show ``text`` as the current phase (a progress callback).

        Args:
            text: The phase.
        """
        self._bar.set_description_str(text)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._bar.close()


@contextlib.contextmanager
def user_output_to_stderr() -> Iterator[None]:
    """Run user code (a train, loss or accountant function) with its stdout sent to stderr: what it prints stays
    visible, and stdout holds the command's own output only (its ``--json`` stays parseable). Both ``sys.stdout``
    and file descriptor 1 are redirected, so worker processes started meanwhile write to stderr too.

    Yields:
        Nothing; stdout is restored on exit.
    """
    sys.stdout.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no descriptor 1 or 2 (an embedding host): sys.stdout alone is redirected
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        for stream in (sys.stderr, sys.__stdout__):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)
