"""Every example of the README and the manual runs (the rules: tests/docs/fences.py).

One test per page runs its fences in a fresh process and folder, in order, as a reader would;
a skipped fence must say why; a fence in a language the harness does not know is shown only.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from .fences import ROOT, fences, pages

RUN_PAGE = pathlib.Path(__file__).with_name("run_page.py")
PAGES = [p for p in pages() if any(f.runs for f in fences(p))]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_examples_run(page, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg", TSDP_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    done = subprocess.run([sys.executable, str(RUN_PAGE), str(page)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-6000:]
    assert done.stdout.strip().splitlines()[-1] == f"{sum(f.runs for f in fences(page))} example(s) ran", done.stdout[-2000:]


def test_every_skip_gives_a_reason_and_every_fence_is_known():
    for page in pages():
        for fence in fences(page):  # a skip without reason raises here
            assert fence.lang, f"{fence.where}: a fence names its language (```python, ```console, ```text ...)"


def test_harness_runs_python_in_order_and_checks_shell_exit(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 2\n```\n\n```python\nassert x == 2\n```\n\n<!-- exit: 3 -->\n```console\n"
                    "$ exit 3\n```\n\n<!-- skip: shows a failure -->\n```python\nraise SystemExit(1)\n```\n")
    ok = subprocess.run([sys.executable, str(RUN_PAGE), str(page)], cwd=tmp_path, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.strip() == "3 example(s) ran", ok.stderr
    page.write_text("```python\nx = 1\n```\n\n<!-- check-output -->\n```console\n$ echo hello\nhullo\n```\n")
    bad = subprocess.run([sys.executable, str(RUN_PAGE), str(page)], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 1 and "page.md:6" in bad.stderr and "'hullo'" in bad.stderr, bad.stderr
