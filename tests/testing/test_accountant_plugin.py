"""The pytest plugin in a throw-away downstream project: a wrong accountant fails with a shrunk configuration
and the attack, a correct one passes; loading the plugin imports neither torch, sympy nor hypothesis."""
import os
import subprocess
import sys
import textwrap

import pytest

DOWNSTREAM = textwrap.dedent('''
    import pytest
    from tsdp import epsilon
    from tsdp.testing import cells, configs, tsdp_accountant

    SMALL = cells(configs(schemes=[("wor", "wr")], max_N=4, max_L=3, max_window=2, sigma=(2.0, 2.0)), steps=(1,))


    def halved(config, steps, delta):
        """My accountant, with a bug: T6 with rho * r halved."""
        return epsilon(config.with_(N=2 * config.N), delta, steps=steps, estimates=("sound",),
                       discretization=1e-3).epsilon


    @pytest.mark.tsdp_accountant(strategy=SMALL, max_examples=5)
    def test_my_accountant(tsdp_accountant_check):
        tsdp_accountant_check(halved)


    @pytest.mark.tsdp_accountant(strategy=SMALL, max_examples=5)
    def test_tsdps_accountant(tsdp_accountant_check):
        tsdp_accountant_check(tsdp_accountant())
''')


def _pytest(project, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    env["TSDP_CACHE_DIR"] = "off"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=project,
                          env=env, capture_output=True, text=True, timeout=600)


def test_a_downstream_project_gets_a_shrunk_counterexample_and_the_attack(tmp_path):
    (tmp_path / "test_downstream.py").write_text(DOWNSTREAM, encoding="utf-8")
    run = _pytest(tmp_path)
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "1 failed, 1 passed" in out
    assert "FAILED test_downstream.py::test_my_accountant" in out
    assert "accountant_is_not_below_the_attained_epsilon(" in out  # hypothesis's report of the shrunk example
    # hypothesis's heading of the shrunk example: "Falsifying example" before 6.16x, "Failing test case" since
    assert any(f"{heading}: accountant_is_not_below_the_attained_epsilon(" in out
               for heading in ("Falsifying example", "Failing test case"))
    assert "N=1 L=1 L_C=0 L_F=1 Λ=1 λ=1 σ=2, 1 step(s)" in out  # shrunk: one series, one window
    assert "UNSOUND: halved reports ε = " in out and "where an attack attains" in out
    assert "the T6 construction, P = MoG(means [0, 2]" in out  # no audit command: `tsdp audit` refuses L_C = 0
    assert "the loop has no construction for this configuration" in out and "tsdp audit --theorem" not in out


def test_loading_the_plugin_imports_nothing_heavy(tmp_path):
    """The plugin is loaded by every pytest session where tsdp is installed (tsdp's own suite too)."""
    (tmp_path / "test_modules.py").write_text(textwrap.dedent('''
        import sys

        def test_no_heavy_module(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("tsdp")
            assert not {"torch", "sympy", "tsdp.testing.check"} & set(sys.modules)
    '''), encoding="utf-8")
    run = _pytest(tmp_path, "-p", "no:hypothesispytest")
    assert run.returncode == 0, run.stdout + run.stderr


HANGING = textwrap.dedent('''
    import time

    import pytest
    from tsdp.testing import cells, configs

    SMALL = cells(configs(schemes=[("wor", "wr")], max_N=4, max_L=3, max_window=2, sigma=(2.0, 2.0)), steps=(1,))


    def sleeps(config, steps, delta):
        time.sleep(600)


    def holds_the_gil(config, steps, delta):
        return sum(range(10 ** 12))


    @pytest.mark.tsdp_accountant(strategy=SMALL, timeout=1)
    def test_sleeps(tsdp_accountant_check):
        tsdp_accountant_check(sleeps)


    def test_holds_the_gil(tsdp_accountant_check):
        tsdp_accountant_check(holds_the_gil, strategy=SMALL, timeout=1)
''')


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
def test_a_hanging_accountant_fails_the_test_within_its_time_limit(tmp_path):
    """The fixture takes the CLI's time limit (marker or call): a sleeping accountant and one stuck in a C call that
    holds the GIL each fail their test after about 1 s (plus the 1 s SIGTERM grace), with the one-line reason, and
    hypothesis does not re-run them while shrinking."""
    import time

    (tmp_path / "test_hanging.py").write_text(HANGING, encoding="utf-8")
    started = time.monotonic()
    run = _pytest(tmp_path)
    took = time.monotonic() - started
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "2 failed" in out
    for name in ("sleeps", "holds_the_gil"):
        assert (f"AccountantError: accountant {name} hung at wor/wr N=" in out and
                "no answer within 1 s (its worker process was ended)" in out), out
    assert took < 120, took  # the interpreter start and imports, plus about 2 s per test
