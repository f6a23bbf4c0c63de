"""Start-up (issues 15, 26): `tsdp --help` and `tsdp epsilon` import neither sympy nor torch, `tsdp epsilon`
neither scipy.signal/stats/optimize nor dp-accounting's package ``__init__`` (which stay usable, loaded on
first use), and the accountant's sympy-free pairs give exactly the numbers of the exact (sympy) pairs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import REGISTRY, attained_pair

HEAVY = ("sympy", "torch")
DEFERRED = ("scipy.signal", "scipy.stats", "scipy.optimize", "dp_accounting")  # dp_accounting: its __init__

# Runs `tsdp ARGS` in a fresh interpreter, then prints which heavy modules it loaded.
_PROBE = textwrap.dedent("""
    import contextlib, io, json, sys
    from tsdp.cli.main import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = main(sys.argv[1:])
        except SystemExit as exc:
            code = exc.code
    loaded = {m: m in sys.modules for m in %r}
    from tsdp.verify.deferred import loaded as really_loaded
    deferred = {m: really_loaded(m) for m in %r}
    print(json.dumps({"code": code, "loaded": loaded, "deferred": deferred, "stdout": out.getvalue()}))
""" % (HEAVY, DEFERRED))


def _probe(*argv: str, extra: str = "") -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", _PROBE + extra, *argv], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [("--help",), ("epsilon", "--help")])
def test_help_imports_neither_sympy_nor_torch(argv):
    result = _probe(*argv)
    assert result["code"] == 0 and "usage: tsdp" in result["stdout"]
    assert result["loaded"] == {m: False for m in HEAVY}, result["loaded"]


# After the sympy-free run, the same command on the exact pairs: PairBound.pair and
# registry.attained_pair forced onto the sympy Rationals (the reference path), caches cleared.
_EXACT_RERUN = textwrap.dedent("""
    from tsdp.theorems import registry
    from tsdp.theorems.bounds import base
    from tsdp.verify import accountant
    pair, attained = base.PairBound.pair, registry.attained_pair
    base.PairBound.pair = lambda self, config, symbolic=False, *, check=True, numeric=False: pair(
        self, config, symbolic, check=check)
    registry.attained_pair = lambda bound, config, *, numeric=False: attained(bound, config)
    accountant._bound_pld.cache_clear()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(sys.argv[1:])
    print(json.dumps({"exact": json.loads(out.getvalue()), "sympy_used": "sympy" in sys.modules}))
""")


def test_epsilon_imports_neither_sympy_nor_torch_and_matches_the_sympy_path():
    """`tsdp epsilon --delta 1e-5 --steps 10`: no sympy, no torch; sound and attained ε equal
    (to 1e-12) those of the same run on the exact sympy pairs (grid 1e-3 to keep it fast; the
    pairs themselves are compared bit for bit below)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    argv = ["epsilon", "--delta", "1e-5", "--steps", "10", "--discretization", "1e-3", "--json"]
    done = subprocess.run([sys.executable, "-c", _PROBE + _EXACT_RERUN, *argv], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.strip().splitlines()[-2:])
    assert first["code"] == 0 and first["loaded"] == {m: False for m in HEAVY}, first["loaded"]
    assert first["deferred"] == {m: False for m in DEFERRED}, first["deferred"]  # deferring them saves 0.7 s of imports
    assert second["sympy_used"]  # the reference really went through sympy
    fast, exact = json.loads(first["stdout"]), second["exact"]
    for key in ("epsilon", "epsilon_attained"):
        assert fast[key] == pytest.approx(exact[key], rel=1e-12, abs=0), key
    assert 4.0 < fast["epsilon_attained"] <= fast["epsilon"] < 5.0  # T6 at 10 steps of the default configuration


CONFIGS = [
    TrainingConfig(),
    TrainingConfig(instances=3, sigma=0.7),
    TrainingConfig(bottom="poisson", instances=2),
    TrainingConfig(sigma_context=0.5, sigma_forecast=0.3),  # τ irrational: erf
    TrainingConfig(sigma_context=0.02, sigma_forecast=0.01),  # τ within 1e-300 of 1: 1 - τ cancels
    TrainingConfig(w=4, sigma_context=0.4, sigma_forecast=0.4),  # shift √w
    TrainingConfig(top="pooled", N=50, batch_size=7),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.top}-{c.bottom}-l{c.instances}-w{c.w}-s{c.sigma_context}")
def test_numeric_pairs_are_the_exact_pairs_floats(config):
    """Every pair of the catalogue (both α branches and the attained pair), built on the
    numeric path, gives bit for bit the float arrays of the exact sympy pair."""
    compared = 0
    for bound in REGISTRY.values():
        if not hasattr(bound, "pairs"):
            continue
        fast = (*bound.pairs(config, check=False, numeric=True), attained_pair(bound, config, numeric=True))
        exact = (*bound.pairs(config, check=False), attained_pair(bound, config))
        for x, y in zip(fast, exact):
            if y is None:
                assert x is None
                continue
            x, y = x.numeric(), y.numeric()
            for field in ("a", "p", "b", "q", "sigma"):
                np.testing.assert_array_equal(getattr(x, field), getattr(y, field), err_msg=f"{bound.id} {field}")
            compared += 1
    assert compared >= 20


_DEFERRED_USE = textwrap.dedent("""
    import json, sys
    import tsdp.verify.accountant  # installs the stand-ins, imports dp-accounting's PLD modules
    from tsdp.verify.deferred import loaded
    before = {m: loaded(m) for m in %r}
    import dp_accounting
    from scipy import signal, stats
    import scipy.optimize
    import scipy.stats.qmc  # a submodule of a deferred module: loads the real package first
    values = [stats.norm.cdf(0.0), float(signal.fftconvolve([1.0, 2.0], [3.0, 4.0])[1]),
              scipy.optimize.brentq(lambda x: x - 1.0, 0.0, 2.0), dp_accounting.get_epsilon_gaussian(1.0, 1e-5),
              dp_accounting.rdp.RdpAccountant().get_epsilon(1e-5), scipy.stats.qmc.Sobol(1).d]
    after = {m: loaded(m) for m in %r}
    print(json.dumps({"before": before, "after": after, "values": values,
                      "same": sys.modules["scipy.stats"].norm is stats.norm}))
""" % (DEFERRED, DEFERRED))


def test_deferred_modules_load_on_first_use():
    """The stand-ins answer every name of the real modules: dp-accounting's ``__init__`` (its RDP
    accountant, the Gaussian mechanism), scipy.stats, scipy.signal, scipy.optimize, a scipy.stats submodule."""
    done = subprocess.run([sys.executable, "-c", _DEFERRED_USE], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["before"] == {m: False for m in DEFERRED}
    assert result["after"] == {m: True for m in DEFERRED}
    norm_cdf, conv, root, eps_gauss, eps_rdp, dim = result["values"]
    assert (norm_cdf, conv, root, eps_rdp, dim) == (0.5, 10.0, 1.0, 0.0, 1) and 4.0 < eps_gauss < 5.0
    assert result["same"]
