"""`tsdp` where stdout cannot encode its Greek letters (a latin-1 or ASCII terminal: PYTHONIOENCODING, PYTHONUTF8=0
under LC_ALL=C, a non-UTF-8 locale): `tsdp --help` and every human answer (ε, δ, σ, λ) ended in a UnicodeEncodeError
traceback, exit 1. They are written with the letters escaped (``\\u03b5``) instead; --json output is ASCII anyway."""
import json
import os
import subprocess
import sys

import pytest


def _tsdp(*argv, encoding):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL", "LANG")}
    if encoding == "C locale, UTF-8 mode off":  # stdout ascii with surrogateescape, not strict
        env.update(LC_ALL="C", PYTHONUTF8="0")
    else:
        env.update(PYTHONIOENCODING=encoding)
    return subprocess.run([sys.executable, "-m", "tsdp", *argv], capture_output=True, timeout=120,
                          env=dict(env, OMP_NUM_THREADS="1"))


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "C locale, UTF-8 mode off"])
def test_help_and_an_answer_are_written_where_stdout_cannot_encode_them(encoding):
    helped = _tsdp("--help", encoding=encoding)
    assert helped.returncode == 0 and helped.stdout.startswith(b"usage: tsdp"), helped.stderr[-2000:]
    answered = _tsdp("epsilon", "--steps", "1", "--delta", "1e-5", "--sound-only", encoding=encoding)
    assert answered.returncode == 0 and b"Traceback" not in answered.stderr, answered.stderr[-2000:]
    assert answered.stdout.startswith(b"\\u03b5 at \\u03b4 = 1e-05: sound "), answered.stdout


def test_json_is_unchanged_there():
    done = _tsdp("epsilon", "--steps", "1", "--delta", "1e-5", "--sound-only", "--json", encoding="ascii")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["delta"] == 1e-5
