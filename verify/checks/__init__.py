"""Consistency checks of the theorem catalogue (``tsdp verify``).

One function per property, each returning a :class:`~verify.checks.result.CheckResult`
(name, theorem ids, configuration, measured numbers, tolerance, status pass/fail/finding):

* :mod:`.axioms` - property 1 (privacy-profile axioms) and 3 (α-symmetry);
* :mod:`.ordering` - property 2 (order between bounds) and 4 (T5, monotonicity in r, ρ, σ, σ_C, σ_F);
* :mod:`.lemmas` - property 5 (advanced joint convexity, mean monotonicity, binomial dominance);
* :mod:`.paths` - property 6 (closed form = mpmath = numpy = quadrature; PLD pessimism);
* :mod:`.symbolic` - property 7 (sympy reductions between bounds);
* :mod:`.composition` - property 8 (sound ≥ attained composed ε, monotone in steps);
* :mod:`.errata` - the documented errata of the paper as printed (``finding``);
* :mod:`.runner` - the quick/full plans, the runner and :func:`~verify.checks.runner.verify`.

The check functions take bound objects as parameters, so tests pass deliberately broken
bounds and see the checks fail.
"""
from .result import CheckResult, FAIL, FINDING, PASS, summarise  # noqa: F401

_RUNNER = ("plan", "run", "verify")
"""Names of :mod:`.runner`, loaded on first use: importing the paper's grid (:mod:`.grid`) does not import every
check (sympy, scipy)."""


def __getattr__(name: str):
    """Load the runner's names on first use (PEP 562)."""
    if name not in _RUNNER:
        raise AttributeError(f"module 'tsdp.verify.checks' has no attribute {name!r}")
    from . import runner

    return getattr(runner, name)
