"""Start-up (issues 15, 26): `tsdp --help` and `tsdp epsilon --help` import neither sympy, torch, dp-accounting nor
scipy.signal/stats/optimize; `tsdp epsilon` imports neither sympy nor torch; none of them imports a package of an
optional extra (a plain install has none), and the accountant's sympy-free pairs
give exactly the numbers of the exact (sympy) pairs; importing tsdp and every module under it leaves
``sys.modules`` as the import system makes it (no stand-in modules)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from extra_packages import EXTRA_PACKAGES

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import REGISTRY, attained_pair

HEAVY = ("sympy", "torch")
# dp-accounting's package __init__ imports every accountant it ships, and with them these scipy modules; the accountant
# needs the library's PLD classes, and a submodule import runs the package __init__ first, so `tsdp epsilon` loads
# them all (`tsdp bench startup` times it); the help screens need none of them
LIBRARY = ("dp_accounting", "scipy.signal", "scipy.stats", "scipy.optimize")
ROOTS = ("tsdp", "tsdp.theorems", "tsdp.verify", "tsdp.attacks", "tsdp.testing", "tsdp.reports")  # tsdp.cli: in tsdp/
ROOT = Path(__file__).resolve().parents[1]

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
    extras = sorted({m.split(".")[0] for m in sys.modules} & set(%r))
    print(json.dumps({"code": code, "loaded": loaded, "extras": extras, "stdout": out.getvalue()}))
""" % (HEAVY + LIBRARY, EXTRA_PACKAGES))


def _probe(*argv: str, extra: str = "") -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", _PROBE + extra, *argv], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [("--help",), ("epsilon", "--help")])
def test_help_imports_neither_sympy_torch_nor_dp_accounting(argv):
    result = _probe(*argv)
    assert result["code"] == 0 and "usage: tsdp" in result["stdout"]
    assert result["loaded"] == {m: False for m in HEAVY + LIBRARY}, result["loaded"]
    assert result["extras"] == []


# After the sympy-free run, the same command on the exact pairs: PairBound.pair and
# registry.attained_pair forced onto the sympy Rationals (the reference path), caches cleared.
_EXACT_RERUN = textwrap.dedent("""
    from tsdp.theorems import registry
    from tsdp.theorems.bounds import base
    from tsdp.verify import one_step
    pair, attained = base.PairBound.pair, registry.attained_pair
    base.PairBound.pair = lambda self, config, symbolic=False, *, check=True, numeric=False: pair(
        self, config, symbolic, check=check)
    registry.attained_pair = lambda bound, config, *, numeric=False: attained(bound, config)
    one_step._bound_pld.cache_clear()
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
    assert first["code"] == 0 and not any(first["loaded"][m] for m in HEAVY), first["loaded"]
    assert first["extras"] == []
    assert first["loaded"]["dp_accounting"]  # the probe sees imports: the accountant's PLDs are the library's
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


# Imports tsdp, every subpackage and every module under them (not the `python -m` entry points, which run the
# command), checking after each import every entry of sys.modules against what the import system gives for its name.
_IMPORT_ALL = textwrap.dedent("""
    import importlib, importlib.util, json, pkgutil, sys, types

    odd = {}

    def check(after):
        for name, module in list(sys.modules.items()):
            if not isinstance(module, types.ModuleType):
                continue  # a library's own alias object (never tsdp's: a tsdp type is caught below)
            if type(module).__module__.split(".")[0] == "tsdp":
                odd.setdefault(name, f"after {after}: a module type of {type(module).__module__}")
                continue
            spec = getattr(module, "__spec__", None)
            if spec is None or spec.name != name:
                continue  # __main__, and aliases a library made itself
            if spec.has_location and getattr(module, "__file__", None) != spec.origin:
                odd.setdefault(name, f"after {after}: __file__ is not its spec's origin")

    imported, missing = [], []
    for root in %r:  # the layers install from folders of their own: each is walked from its own __path__
        package = importlib.import_module(root)
        imported.append(root)
        check(root)
        for info in pkgutil.walk_packages(package.__path__, root + "."):
            if info.name in imported or info.name.rsplit(".", 1)[-1] == "__main__":
                continue
            try:
                importlib.import_module(info.name)
            except ModuleNotFoundError as exc:  # an optional extra that is not installed
                if (exc.name or "").startswith("tsdp"):
                    raise
                missing.append(info.name)
                continue
            imported.append(info.name)
            check(info.name)
    for name in %r:
        importlib.import_module(name)
    check("the library")
    print(json.dumps({"imported": imported, "missing": missing, "odd": odd}))
""" % (ROOTS, LIBRARY))


def test_importing_every_module_leaves_sys_modules_as_the_import_system_makes_it():
    """No tsdp module puts a stand-in into sys.modules: after importing tsdp, and after each module under it, no
    entry is of a module type tsdp defines and every file module's ``__file__`` is its spec's origin, and so once
    dp-accounting and scipy.signal/stats/optimize (which ``tsdp.verify`` once replaced by stand-ins) are imported."""
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALL], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    sources = [p for folder in ("tsdp", "theorems", "verify", "attacks", "testing", "reports")
               for p in (ROOT / folder).rglob("*.py") if p.name != "__main__.py" and "__pycache__" not in p.parts]
    assert len(result["imported"]) + len(result["missing"]) == len(sources)  # every module was reached
    assert "tsdp.verify.pld.adapter" in result["imported"] and len(result["missing"]) <= 10, result["missing"]
    assert result["odd"] == {}
