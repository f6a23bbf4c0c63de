"""tsdp as a user has it: built into a wheel from a copy of the checkout, installed apart from it (``pip install
--target``), and run from an empty folder under an unwritable HOME (a file: not writable for root either), with
the PLD cache left at its default location (under HOME).

A file the code reads relative to the checkout (docs/, examples/, a data file that pyproject's package-data omits)
is missing there; a file written beside the installed modules lands in site-packages; a file written to the
current folder or HOME by a command that need not write shows up here. The checkout's own editable install
(setuptools' finder, which a .pth file appends to ``sys.meta_path``) would serve any tsdp module the wheel lacks,
so the processes here run without it (a ``sitecustomize`` on PYTHONPATH drops it)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest

from tsdp import layers

ROOT = Path(__file__).resolve().parents[1]

NO_CHECKOUT = """
import sys

sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
"""

READ_SHIPPED_FILES = """
import sys
from importlib.metadata import distributions
from pathlib import Path

target = Path(sys.argv[1]).resolve()
(dist,) = [d for d in distributions(path=[str(target)]) if d.metadata["Name"] == "tsdp"]
points = {(e.group, e.name): e for e in dist.entry_points}
main = points["console_scripts", "tsdp"].load()
points["pytest11", "tsdp"].load()
assert main(["theorems"]) == 0

from tsdp.datasets.grunfeld import grunfeld
from tsdp.datasets.tsf import m1_yearly
from tsdp.experiments.paper_tables import entries

data, names = grunfeld()
print(len(names), len(m1_yearly().names), len(entries()))
outside = sorted(name for name, module in sys.modules.items() if name.split(".")[0] == "tsdp"
                 and getattr(module, "__file__", None) and not Path(module.__file__).resolve().is_relative_to(target))
assert outside == [], outside
"""


class Installed(NamedTuple):
    """The built wheel, the folder it is installed in, an empty working folder and the environment to run in."""

    wheel: Path
    target: Path
    cwd: Path
    env: dict


def run(*cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, check=False, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    """The wheel built from a copy of the package folders (a build writes build/ and egg-info beside its sources),
    installed with pip into a target folder (its console script in target/bin)."""
    tmp = tmp_path_factory.mktemp("installed")
    src = tmp / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "out")
    for name in (*layers.FOLDERS, "pyproject.toml", "README.md"):
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, src / name, ignore=ignore)
        else:
            shutil.copy2(origin, src / name)
    wheels = tmp / "wheels"
    built = run(sys.executable, "-c", "import sys; from setuptools import build_meta; build_meta.build_wheel(sys.argv[1])",
                wheels, cwd=src)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("tsdp-*.whl")
    target = tmp / "target"
    done = run(sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "-q", "--target", target, wheel)
    assert done.returncode == 0, done.stderr[-3000:]
    hook = tmp / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(NO_CHECKOUT)
    home = tmp / "home"
    home.write_text("HOME is a file: nothing can be made under it")
    cwd = tmp / "cwd"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONSTARTUP", "TSDP_CACHE_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
                        "MPLCONFIGDIR")}
    env.update(PYTHONPATH=os.pathsep.join([str(target), str(hook)]), HOME=str(home), OMP_NUM_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1")
    return Installed(wheel, target, cwd, env)


def test_the_wheel_holds_one_tsdp_package_with_every_file_of_its_folders(installed):
    """The wheel's top level is `tsdp` and its dist-info only (no layer folder at the top of site-packages), and it
    holds every file git tracks in the package folders, at its installed place: a data file pyproject's
    package-data omits would be missing."""
    with zipfile.ZipFile(installed.wheel) as z:
        names = set(z.namelist())
    assert {n.split("/")[0] for n in names} == {"tsdp", installed.wheel.name.split("-py")[0] + ".dist-info"}
    assert (set(layers.FOLDERS) - {"tsdp"}) & {p.name for p in installed.target.iterdir()} == set()
    tracked = run("git", "ls-files", "--", *layers.FOLDERS, cwd=ROOT)
    assert tracked.returncode == 0 and tracked.stdout, tracked.stderr
    missing = [path for path in tracked.stdout.splitlines()
               if "{}/{}".format(layers.FOLDERS[path.split("/")[0]].replace(".", "/"), path.split("/", 1)[1])
               not in names]
    assert missing == [], f"tracked files of the package folders missing from the wheel: {missing}"


def test_the_installed_package_reads_its_shipped_files(installed):
    """Installed apart from the checkout, from an empty folder: the console script's and the pytest plugin's entry
    points load, `tsdp theorems` runs, the shipped Grunfeld, M1 yearly and paper tables are read, and every tsdp
    module loaded is the installed one."""
    done = run(sys.executable, "-c", READ_SHIPPED_FILES, installed.target, cwd=installed.cwd, env=installed.env)
    assert done.returncode == 0, done.stderr[-3000:]
    firms, m1, entries = map(int, done.stdout.split()[-3:])
    assert firms == 11 and m1 == 181 and entries > 0
    assert list(installed.cwd.iterdir()) == []


@pytest.mark.parametrize("command", [("{script}", "--help"), ("{python}", "-m", "tsdp", "--help"),
                                     ("{script}", "epsilon", "--epochs", "1", "--delta", "1e-5"),
                                     ("{script}", "calibrate", "--epochs", "1", "--delta", "1e-5", "--epsilon", "4"),
                                     *(("{script}", name, "--help") for name in ("report", "audit", "experiment"))],
                         ids=["script-help", "python-m-tsdp", "epsilon", "calibrate", "report-help", "audit-help",
                              "experiment-help"])
def test_the_installed_command_runs_from_an_empty_folder_under_an_unwritable_home(installed, command):
    """The console script and `python -m tsdp` from an empty folder: exit 0, no traceback, nothing written there;
    `tsdp epsilon` and `tsdp calibrate` answer though their PLD cache (under HOME) cannot be written; the help of the
    commands a newcomer reads first."""
    argv = [part.format(script=installed.target / "bin" / "tsdp", python=sys.executable) for part in command]
    done = run(*argv, cwd=installed.cwd, env=installed.env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.startswith("usage: tsdp") if "--help" in argv else "sound" in done.stdout, done.stdout
    assert "Matplotlib" not in done.stderr, done.stderr  # none of them draws: none imports it (its cache under HOME)
    assert list(installed.cwd.iterdir()) == []
