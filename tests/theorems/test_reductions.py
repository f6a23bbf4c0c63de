"""Symbolic reductions between bounds, proved with sympy: the reduced pair and the
target pair have the same means and weight differences that simplify to 0.

T11 at σ_C = σ_F = 0 is T6; T6 at ρ = 1 is T1; T12 is T11 at σ_C = σ_F; T9 at λ = 1 is T6;
T3 at λ = 1 is T1; T14 at k = 1 is T13 (plus T9 → T3 and T10 → T4 at ρ = 1). The list is
:func:`verify.checks.symbolic.paper_reductions`, shared with `tsdp verify`.
"""
import pytest
import sympy as sp

from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.theorems.registry import REGISTRY
from tsdp.verify.checks import symbolic

CONFIGS = {
    "paper": DEFAULT_CONFIG,
    "long-windows": DEFAULT_CONFIG.with_(N=50, L=30, context_length=4, forecast_length=3, batch_size=10),
}
CASES = [(name, item) for name, cfg in CONFIGS.items() for item in symbolic.paper_reductions(cfg)]


@pytest.mark.parametrize("name,item", CASES, ids=[f"{n}:{i[0]}->{i[1]}:{i[4]}" for n, i in CASES])
def test_reduction_is_proved_by_sympy(name, item):
    reduced, target, cfg, sub, text = item
    result = symbolic.reduction(REGISTRY[reduced], REGISTRY[target], cfg, sub, text, name)
    assert result.status == "pass", result.explanation


def test_pairs_are_symbolic_expressions_of_the_configuration():
    """T6's pair prints with the symbols ρ, r, σ and substitutes back to the numbers."""
    pair = REGISTRY["T6"].pair(DEFAULT_CONFIG, symbolic=True)
    names = {s.name for s in pair.free_symbols()}
    assert {"rho", "r", "sigma"} <= names
    S = symbolic.S
    numeric = pair.subs({S["rho"]: sp.Rational(1, 10), S["r"]: sp.Rational(1, 10), S["sigma"]: 1})
    assert numeric.equivalent(REGISTRY["T6"].pair(DEFAULT_CONFIG))


def test_a_wrong_substitution_is_not_proved():
    """The prover can fail: T6 at ρ = 1/2 is not T1."""
    S = symbolic.S
    r = symbolic.reduction(REGISTRY["T6"], REGISTRY["T1"], DEFAULT_CONFIG, {S["rho"]: sp.Rational(1, 2)}, "rho=1/2")
    assert r.status == "fail"
