"""The accounting commands' JSON is the release's: the stdout of ``tsdp epsilon``, ``tsdp calibrate`` and
``tsdp forecast`` on fixed inputs, as the release before the accountant was split into its jobs (and events made
plain data) wrote it, recorded in data/released_cli_json.json. A refactor of the accounting changes none of it."""
from __future__ import annotations

import contextlib
import io
import json
import pathlib

import pytest

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
    assert json.loads(out.getvalue()) == RELEASED[command]["stdout"]


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
