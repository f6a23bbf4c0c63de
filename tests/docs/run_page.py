"""Run the examples of one Markdown page as a reader would: ``python run_page.py PAGE``.

Python fences run in order in one namespace (``__name__ == "__main__"``), shell fences through
bash; both in the current folder. A shell line that is a plain ``tsdp ...`` call (no shell syntax: no
pipe, redirection, variable, quote or comment) runs the command's ``main`` in this process, as the
``tsdp`` console script would in its own: the same exit status and output, without an interpreter
start and a torch import per line. The first failure is reported with the fence's file and line
and ends the run with exit 1. See :mod:`fences` for the rules.
"""
from __future__ import annotations

import contextlib
import io
import os
import pathlib
import re
import shlex
import subprocess
import sys
import traceback

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fences import fences  # noqa: E402


def _normalised(text: str) -> str:
    return " ".join(text.split())


_PLAIN_TSDP = re.compile(r"tsdp(\s+[^\s|&;<>()$`\\\"'*?~#!{}]+)*\s*")


def _tsdp_here(command: str) -> subprocess.CompletedProcess:
    """A plain ``tsdp ARGS`` line run by the CLI's ``main`` in this process (exit status from its return value or
    ``SystemExit``, as the console script turns it into one; output from ``sys.stdout`` and ``sys.stderr``)."""
    from tsdp.cli.main import main as tsdp_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = tsdp_main(shlex.split(command)[1:])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) or exc.code is None else 1
    return subprocess.CompletedProcess(command, code or 0, out.getvalue(), err.getvalue())


def run_shell(fence) -> None:
    for command, shown in fence.commands():
        if _PLAIN_TSDP.fullmatch(command):
            done = _tsdp_here(command)
        else:
            done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True)
        if done.returncode != fence.exit_code:
            raise AssertionError(f"`{command}` exited {done.returncode}, the page says {fence.exit_code}\n"
                                 f"stdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-2000:]}")
        if fence.check_output:
            got = _normalised(done.stdout + done.stderr)
            missing = [line for line in shown if _normalised(line) not in got]
            if missing:
                raise AssertionError(f"`{command}` did not print what the page shows: {missing[0]!r}\n"
                                     f"it printed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def main(page: str) -> int:
    # the shell examples find this interpreter's `tsdp` and `python` first, as in an activated venv
    os.environ["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    namespace = {"__name__": "__main__"}
    ran = 0
    for fence in fences(pathlib.Path(page).resolve()):
        if not fence.runs:
            continue
        try:
            if fence.lang == "python":
                exec(compile(fence.code, fence.where, "exec"), namespace)
            else:
                run_shell(fence)
        except BaseException as exc:  # noqa: BLE001 - a SystemExit from an example is a failure too
            print(f"example at {fence.where} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            traceback.print_exc()
            return 1
        ran += 1
    print(f"{ran} example(s) ran")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
