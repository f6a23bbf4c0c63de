"""Where HOME cannot be written, the report's figures draw without matplotlib's warning about its cache folder (which
landed mid-output), in a temporary folder of tsdp's removed at exit; a user's MPLCONFIGDIR is never changed."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tsdp.reports import matplotlib_dir

DRAW = """
import json, sys
import tsdp.reports.figures as figures
import matplotlib
fig, ax = figures.plt.subplots()
ax.set_title("text needs the font cache")
fig.savefig(sys.argv[1])
print(json.dumps([matplotlib.get_configdir(), matplotlib.get_cachedir()]))
"""

MATPLOTLIB_ENV = ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")


def _draw(tmp_path, **env):
    base = {k: v for k, v in os.environ.items() if k not in MATPLOTLIB_ENV}
    done = subprocess.run([sys.executable, "-c", DRAW, str(tmp_path / "f.png")], capture_output=True, text=True,
                          timeout=120, env=dict(base, **env), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import json

    return json.loads(done.stdout), done.stderr


def _unwritable_home(tmp_path, kind):
    home = tmp_path / "home"
    if kind == "a file":  # binds for root too
        home.write_text("HOME is a file: nothing can be made under it")
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into a 0o500 folder anyway (permission bits do not bind root); the 'a file' "
                        "case covers an unwritable HOME here")
        home.mkdir()
        home.chmod(0o500)
    return home


@pytest.mark.parametrize("kind", ["a file", "a folder of mode 0o500"])
def test_figures_under_an_unwritable_home_print_nothing(tmp_path, kind):
    """Before: matplotlib's own 'created a temporary cache directory ... not a writable directory' lines on stderr.
    Now: nothing on stderr, both of matplotlib's folders in tsdp's temporary folder, which is gone after the exit."""
    home = _unwritable_home(tmp_path, kind)
    try:
        (config, cache), err = _draw(tmp_path, HOME=str(home))
    finally:
        home.chmod(0o700) if home.is_dir() else None
    assert err == ""
    assert config == cache and Path(config).name.startswith(matplotlib_dir.PREFIX)
    assert Path(config).parent == Path(tempfile.gettempdir())
    assert not Path(config).exists()  # removed at exit
    assert (tmp_path / "f.png").stat().st_size > 0


def test_a_users_mplconfigdir_is_never_changed(tmp_path):
    home = _unwritable_home(tmp_path, "a file")
    mine = tmp_path / "mine"
    mine.mkdir()
    (config, cache), err = _draw(tmp_path, HOME=str(home), MPLCONFIGDIR=str(mine))
    assert (config, cache, err) == (str(mine), str(mine), "")
    assert mine.is_dir()  # not removed: it is the user's


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """use_writable_dir as before matplotlib's first import, with no matplotlib variable set and HOME in tmp_path;
    what it sets is undone after the test."""
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    for name in MATPLOTLIB_ENV:  # set, then removed: monkeypatch puts back what was there, also what the test set
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    made = []

    def call():
        folder = matplotlib_dir.use_writable_dir()
        if folder is not None:
            made.append(folder)
        return folder

    yield call
    for folder in made:
        os.rmdir(folder)


def _not_a_folder(tmp_path):
    path = tmp_path / "file"
    path.write_text("not a folder")
    return str(path)


@pytest.mark.parametrize("setting, changed", [
    ({}, False),  # HOME writable: matplotlib's own folders
    ({"HOME": "file"}, True),
    ({"XDG_CACHE_HOME": "file"}, True),  # the cache alone unwritable
    ({"XDG_CONFIG_HOME": "file"}, True),  # the settings alone
    ({"HOME": "file", "MPLCONFIGDIR": "given"}, False),  # the user's, even where it cannot be written
    ({"HOME": "file", "MPLCONFIGDIR": ""}, True),  # empty: matplotlib ignores it, so does this
])
def test_mplconfigdir_is_set_only_where_matplotlib_would_warn(fresh, monkeypatch, tmp_path, setting, changed):
    for name, value in setting.items():
        monkeypatch.setenv(name, _not_a_folder(tmp_path) if value == "file" else value)
    folder = fresh()
    assert (folder is not None) == changed
    if changed:
        assert os.environ["MPLCONFIGDIR"] == folder and os.access(folder, os.W_OK)
    else:
        assert os.environ.get("MPLCONFIGDIR") == setting.get("MPLCONFIGDIR")


def test_nothing_is_set_once_matplotlib_is_imported(fresh, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", _not_a_folder(tmp_path))
    monkeypatch.setitem(sys.modules, "matplotlib", object())  # its folders are chosen already
    assert fresh() is None and "MPLCONFIGDIR" not in os.environ


def test_an_unwritable_temporary_folder_leaves_it_to_matplotlib(fresh, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", _not_a_folder(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", _not_a_folder(tmp_path))
    assert fresh() is None and "MPLCONFIGDIR" not in os.environ
