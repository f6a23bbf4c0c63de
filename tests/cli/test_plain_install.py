"""A plain install (`pip install tsdp`, no extra): the report runs its other sections and names the extra its
measured C7 grid needs; every command that needs an extra refuses in one line naming it, after its flags.

A whole process tree without the extras is simulated by a ``sitecustomize`` on PYTHONPATH that wraps the
interpreter's finders so that none finds an extra's top-level package (spawned worker processes inherit PYTHONPATH,
so the report's side processes run without them too); single in-process checks block a module through
``sys.modules`` as tests/integrations/test_optional_extras.py does.
"""
import os
import subprocess
import sys

import pytest

from cli_run import error_line
from extra_packages import EXTRA_PACKAGES

BLOCKER = """
import sys


class _PlainInstall:
    # every finder of the interpreter, except that the blocked packages are found by none, as when they are not
    # installed: importlib.util.find_spec answers None (torch probes so), an import raises ModuleNotFoundError

    def __init__(self, finders):
        self.finders = finders

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            return None
        for finder in self.finders:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                return spec
        return None

    def invalidate_caches(self):
        for finder in self.finders:
            getattr(finder, "invalidate_caches", lambda: None)()


sys.meta_path[:] = [_PlainInstall(list(sys.meta_path))]
"""


def plain_env(folder) -> dict:
    """The environment of a process tree without the extras (module docstring)."""
    (folder / "sitecustomize.py").write_text(BLOCKER.format(blocked=set(EXTRA_PACKAGES)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def test_the_blocker_blocks_in_spawned_children(tmp_path):
    """The simulation holds: the blocked process and a child it spawns both fail to import pandas (and find no spec
    of it, as torch probes); tsdp imports."""
    code = ("import multiprocessing as mp, importlib, importlib.util\n"
            "def probe(name):\n"
            "    try:\n        importlib.import_module(name)\n        return 'imported'\n"
            "    except ModuleNotFoundError:\n        return 'missing'\n"
            "if __name__ == '__main__':\n"
            "    with mp.get_context('spawn').Pool(1) as pool:\n"
            "        print(probe('pandas'), pool.apply(probe, ('pandas',)), probe('tsdp.cli.main'),\n"
            "              importlib.util.find_spec('pandas'))\n")
    script = tmp_path / "probe.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], env=plain_env(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split() == ["missing", "missing", "imported", "None"], done.stderr[-2000:]


def test_c7_without_statsforecast_names_the_extra(monkeypatch):
    """C7 without the experiments extra: not evaluated, its reason names pip install 'tsdp[experiments]' (nothing
    trained); the paper's tables are still judged."""
    from tsdp.reports.claim_c7 import CLAIM
    from tsdp.theorems.config import DEFAULT_CONFIG

    monkeypatch.setitem(sys.modules, "statsforecast", None)
    entry = CLAIM.evaluate(DEFAULT_CONFIG, quick=True)
    assert entry["verdict"] == "not evaluated" and entry["numbers"]["rows"] == []
    assert "pip install 'tsdp[experiments]'" in entry["reason"]
    assert entry["other_verdicts"][0]["verdict"] in ("confirmed", "refuted")


@pytest.mark.slow  # a fresh interpreter each (torch's import): 3-15 s a command on 2 shared cores
@pytest.mark.parametrize("argv, extra", [
    (["experiment", "--quick", "--seeds", "1", "--out", "{tmp}/grid"], "experiments"),
    (["bench", "baselines"], "experiments"),
    (["check-accountant", "--opacus", "rdp", "--sample-rate", "series"], "opacus"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--cluster", "auto"], "cluster"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--data", "{tmp}/panel.csv"], "data"),
])
def test_a_command_that_needs_an_extra_refuses_in_one_line(tmp_path, argv, extra):
    """Without the extras, a command that needs one exits 2 at once with one line naming it, never a traceback."""
    (tmp_path / "panel.csv").write_text("a,b\n" + "\n".join(f"{i},{i + 1}" for i in range(30)) + "\n")
    argv = [a.format(tmp=tmp_path) for a in argv]
    done = subprocess.run([sys.executable, "-m", "tsdp.cli", *argv], env=plain_env(tmp_path), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and f"pip install 'tsdp[{extra}]'" in error_line(done.stderr)
    assert not (tmp_path / "grid").exists()  # refused before the grid's folder is made


@pytest.mark.slow  # the whole quick report without its audits: about 2 minutes on 2 cores (4-5 when shared)
def test_quick_report_on_a_plain_install(tmp_path):
    """`tsdp report --quick` without any extra (its side processes too): exit 0, no traceback, every claim's line
    printed, C7's naming the experiments extra."""
    done = subprocess.run([sys.executable, "-m", "tsdp.cli", "report", "--quick", "--no-audit", "--no-progress",
                           "--workers", "2", "--out", str(tmp_path / "report")], env=plain_env(tmp_path),
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    claims = {line.split(":")[0]: line for line in done.stdout.splitlines() if line[:1] == "C" and ": " in line}
    assert {f"C{i}" for i in range(1, 8)} <= set(claims), done.stdout
    assert "not evaluated" in claims["C7"] and "pip install 'tsdp[experiments]'" in claims["C7"]
    assert (tmp_path / "report" / "index.html").is_file()
