"""The CLI in-process: ``cli(argv)`` runs ``tsdp.cli.main.main`` and returns (exit code, stdout, stderr)."""
import os
import sys

import pytest
from cli_run import run_cli


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    """A small model saved by `tsdp train --save` (L_C = 8), for the `tsdp forecast` tests."""
    path = tmp_path_factory.mktemp("model") / "m.pt"
    code, _, err = run_cli(["train", "--epochs", "1", "--delta", "1e-5", "--context-length", "8", "--N", "16",
                            "--L", "30", "--batch-size", "4", "--save", path, "--json"])
    assert code == 0, err
    return path


@pytest.fixture
def user_module_of(tmp_path, monkeypatch):
    """Write a user's functions as an importable module: ``user_module_of(source)`` puts it in a fresh folder made the
    working directory (where ``--train module:function`` looks first) and returns its name; unloaded afterwards."""
    names = []

    def write(source: str) -> str:
        name = f"tsdp_user_{os.getpid()}_{tmp_path.name}_{len(names)}"
        (tmp_path / f"{name}.py").write_text(source)
        monkeypatch.chdir(tmp_path)
        names.append(name)
        return name

    yield write
    for name in names:
        sys.modules.pop(name, None)
