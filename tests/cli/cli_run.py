"""What the CLI tests share outside fixtures: ``run_cli`` (the CLI in-process), ``error_line`` (its one error line)
and ``processes_marked`` (a run's processes, found by a mark in their environment). A plain module, imported by name:
``from conftest import ...`` would read whichever conftest.py pytest loaded first under that name (tests/reports has
one too)."""
import contextlib
import io
import os


def run_cli(argv):
    """(code, stdout, stderr) of ``tsdp argv`` run in this process (argparse's SystemExit included)."""
    from tsdp.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:  # argparse's usage errors (2) and --help (0)
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def error_line(err: str) -> str:
    """The one error line of stderr (progress bars and notes aside), or fail."""
    lines = [ln for ln in err.splitlines() if ": error: " in ln]
    assert len(lines) == 1, f"expected one error line on stderr, got: {err!r}"
    return lines[0]


def processes_marked(mark: str) -> list:
    """The pids of live processes whose environment holds ``mark`` (a run's processes, however deep)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if mark.encode() in f.read():
                    with open(f"/proc/{entry}/stat") as s:
                        if s.read().rsplit(")", 1)[1].split()[0] != "Z":
                            found.append(int(entry))
        except OSError:
            continue
    return found
