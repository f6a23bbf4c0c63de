"""Extreme σ and step counts never eat the machine.

Each command runs in a subprocess whose address space is capped at 2 GiB
(``resource.setrlimit(RLIMIT_AS)``): it answers (a finite, huge ε is an answer) or refuses
with one line, within a time limit, and never imports torch (the accounting path must not:
torch alone reserves more address space than the cap).
"""
import json
import subprocess
import sys
import textwrap

import pytest

LIMIT = 2 * 2**30

RUNNER = textwrap.dedent("""
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
    from tsdp.cli.main import main
    code = main({argv!r})
    sys.stdout.flush()
    print(json.dumps({{"code": code, "torch": "torch" in sys.modules}}), file=sys.stderr)
""")


def run_capped(argv, timeout):
    proc = subprocess.run([sys.executable, "-c", RUNNER.format(limit=LIMIT, argv=argv)], capture_output=True,
                          text=True, timeout=timeout, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-2000:]
    status = json.loads(proc.stderr.strip().splitlines()[-1])
    assert not status["torch"], "the accounting path imported torch"
    return status["code"], proc.stdout, proc.stderr


def _sound_epsilon(out: str) -> float:
    return json.loads(out)["epsilon"]


@pytest.mark.parametrize("argv, expect", [
    (["epsilon", "--delta", "1e-5", "--steps", "10", "--sigma", "1e-6", "--json"], "--sigma"),
    (["epsilon", "--delta", "1e-5", "--steps", "10", "--sigma", "1e-300", "--json"], "--sigma"),
    (["profile", "--epsilon", "710", "1000", "--json"], None),
    (["epsilon", "--delta", "1e-16", "--steps", "10", "--discretization", "1e-2"], "--delta"),
    (["epsilon", "--delta", "1e-5", "--steps", "1000000000", "--json"], "--steps"),  # excess mass: refused, counted
    (["epsilon", "--delta", "1e-5", "--steps", "10000000000000000", "--discretization", "0.02"], "--steps"),
])
def test_extremes_refused_or_answered_fast(argv, expect):
    code, out, err = run_capped(argv, timeout=120)
    if expect is None:
        assert code == 0
        json.loads(out)
    else:
        assert code == 2
        lines = [ln for ln in err.splitlines() if ": error: " in ln]
        assert len(lines) == 1 and expect in lines[0], err


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["epsilon", "--delta", "1e-5", "--steps", "10", "--sigma", "0.01", "--json"],
    ["epsilon", "--delta", "1e-5", "--steps", "1000000000", "--discretization", "0.02", "--json"],
    ["epsilon", "--delta", "1e-5", "--steps", "1000000", "--sigma", "0.01", "--json"],
])
def test_extremes_answered_within_the_cap(argv):
    """σ = 0.01 (a one-step loss up to 2e4), 10^9 steps (at d = 0.02) and 10^6 steps at σ = 0.01: a
    finite sound ε ≥ the attained ε, computed at a coarser (announced) discretisation under the 2 GiB cap."""
    code, out, err = run_capped(argv, timeout=300)
    assert code == 0, err
    r = json.loads(out)
    assert r["epsilon"] is not None and r["epsilon"] > 0
    assert r["epsilon_attained"] is None or r["epsilon_attained"] <= r["epsilon"]


@pytest.mark.slow
def test_unreachable_calibration_target_answers_fast():
    """ε = 1e9 is met by every σ the calibration searches: it answers the floor, in bounded time."""
    code, out, err = run_capped(["calibrate", "--epsilon", "1e9", "--delta", "1e-5", "--steps", "10", "--json"],
                                timeout=300)
    assert code == 0, err
    r = json.loads(out)
    assert r["epsilon"] <= 1e9 and r["sigma_rejected"] is None
