"""The accounting commands' JSON is the release's: the stdout of ``tsdp epsilon``, ``tsdp calibrate`` and
``tsdp forecast`` on fixed inputs, as the release before the accountant was split into its jobs (and events made
plain data) wrote it, recorded in data/released_cli_json.json. A refactor of the accounting changes none of it: every
key, string and count the same, every float the same to ``REL`` (the recording's own releases give it bit for bit).
A key a later release adds on purpose is added to the recording from that release's own output (calibrate's and
forecast calibrate's ``total_variation`` and ``every_sigma``, the δ ≥ total-variation answer), so a key that appears
or vanishes by accident still fails.

REL: the floors' numpy, scipy and dp-accounting (numpy 1.24, scipy 1.13, dp-accounting 0.5.0; numpy below 1.26.4
alone is enough) round the composed PLDs' FFTs and sums differently in the 10th digit (up to 5e-11 relative seen),
far below the printed 6 digits and the PLDs' discretisation; a change of the accounting moves them far more."""
from __future__ import annotations

import contextlib
import io
import json
import math
import pathlib

import pytest

REL = 1e-9

from tsdp.cli.main import main

RELEASED = json.loads((pathlib.Path(__file__).parent / "data" / "released_cli_json.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.slow) if c.startswith("calibrate") else c
                                     for c in sorted(RELEASED)])
def test_the_command_prints_the_released_json(command, monkeypatch):
    monkeypatch.setenv("TSDP_CACHE_DIR", "off")  # computed here, not read back from a cache the release wrote
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            rc = main(command.split()) or 0
        except SystemExit as exc:
            rc = exc.code
    assert rc == RELEASED[command]["rc"] == 0
    assert same(json.loads(out.getvalue()), RELEASED[command]["stdout"])


def same(got, want) -> bool:
    """``got == want`` but floats (not ints), which agree to :data:`REL` relative."""
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(same, got, want))
    if isinstance(want, float) and isinstance(got, float):
        return math.isclose(got, want, rel_tol=REL)
    return type(got) is type(want) and got == want


def test_events_are_plain_data_and_the_bound_is_chosen_on_the_accountant_side():
    """An event holds what ran and the theorem a caller named, nothing that looks the catalogue up; the choice is
    :func:`tsdp.verify.resolution.resolve_event`'s, the same bound the registry selects for the scheme."""
    import attr

    from tsdp.theorems.config import DEFAULT_CONFIG
    from tsdp.theorems.registry import select_bound
    from tsdp.verify.events import BoundDpEvent, InferenceReleaseDpEvent, TrainingEpochDpEvent, TrainingStepDpEvent
    from tsdp.verify.resolution import resolve_event

    for cls in (BoundDpEvent, TrainingStepDpEvent, TrainingEpochDpEvent, InferenceReleaseDpEvent):
        assert not hasattr(cls, "resolve")
    event = TrainingStepDpEvent(DEFAULT_CONFIG)
    with pytest.raises(attr.exceptions.FrozenInstanceError):
        event.theorem = "T7"
    assert resolve_event(event).bound is select_bound(DEFAULT_CONFIG)[0]
