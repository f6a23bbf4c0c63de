"""Property 7: the symbolic reductions between bounds, proved with sympy.

Each check builds the symbolic pair of two bounds (``pair(config, symbolic=True)``: rates
r, ρ, q, φ, σ and τ(σ_C), τ(σ_F) as sympy symbols; structural integers λ, k, N_tot, Λ as
numbers), substitutes the reduction, and asks :meth:`MixturePair.equivalent` to prove the
two pairs equal (same means after merging, weight differences simplify to 0).
"""
from __future__ import annotations

from typing import List, Mapping, Optional, Tuple

from tsdp.theorems.bounds.base import SYMBOLS, PairBound
from tsdp.theorems.config import TrainingConfig

from .result import CheckResult, config_dict, result


def _weights_text(pair) -> str:
    nf = pair.normal_form()
    return f"P={nf.P}, Q={nf.Q}"


def reduction(reduced: PairBound, target: PairBound, config: TrainingConfig, substitution: Mapping,
              description: str, label: str = "", target_config: Optional[TrainingConfig] = None,
              target_substitution: Optional[Mapping] = None) -> CheckResult:
    """Property 7: ``reduced`` under ``substitution`` is symbolically ``target`` (sympy proof).

    The reductions of the paper: T11 at σ_C = σ_F = 0 is T6 (Thm G.1 → Thm 4.4); T6 at
    ρ = 1 is T1 (Thm 4.4 → Thm 4.2); T12 is T11 at σ_C = σ_F (Thm 4.5 ⊂ Thm G.1); T9 at
    λ = 1 is T6 (Thm F.7 → Thm 4.4); T3 at λ = 1 is T1 (Thm 4.3 → Thm 4.2); T14 at
    k = 1 is T13 (Prop. C.2 → Prop. C.1). ``config`` fixes the structural integers;
    the scheme check is skipped (the reductions cross schemes, e.g. ρ = 1 is a WOR top
    level that takes every sequence, the deterministic one of T1).

    Args:
        reduced: The bound reduced.
        target: The bound it must equal.
        config: ``reduced``'s configuration.
        substitution: Symbol values substituted into ``reduced``.
        description: The reduction in words.
        label: The configuration's label.
        target_config: ``target``'s configuration (None: ``config``).
        target_substitution: Symbol values substituted into ``target``.

    Returns:
        The check's result (pass where sympy proves the two equal).
    """
    target_config = config if target_config is None else target_config
    lhs = reduced.pair(config, symbolic=True, check=False).subs(dict(substitution))
    rhs = target.pair(target_config, symbolic=True, check=False)
    if target_substitution:
        rhs = rhs.subs(dict(target_substitution))
    proved = lhs.equivalent(rhs)
    return result(
        f"P7.reduction[{reduced.id}->{target.id}:{description}]@{label}", 7, (reduced.id, target.id), proved,
        f"sympy proves {reduced.id}|{description} ≡ {target.id}" if proved
        else f"{reduced.id}|{description} is not {target.id}: {_weights_text(lhs)} vs {_weights_text(rhs)}",
        measured={"reduced": str(lhs.normal_form()), "target": str(rhs.normal_form()), "proved": proved},
        tolerance={"symbolic": "difference simplifies to 0"}, config=config_dict(config),
    )


S = SYMBOLS
"""The symbols of :func:`theorems.bounds.base.params` (r, rho, q, phi, sigma, sigma_C, sigma_F)."""


def paper_reductions(config: TrainingConfig) -> List[Tuple[str, str, TrainingConfig, dict, str]]:
    """The reductions between bounds as data: (reduced id, target id, config, substitution, text).

    The six of the theorem-engine issue (T11 at σ_C = σ_F = 0 is T6; T6 at ρ = 1 is T1; T12
    is T11 at σ_C = σ_F; T9 at λ = 1 is T6; T3 at λ = 1 is T1; T14 at k = 1 is T13) and two
    more (T9 at ρ = 1 is T3; T10 at ρ = 1 is T4). λ and k are structural integers, so their
    reductions are configurations, the rates are symbols substituted.

    Args:
        config: The base configuration.

    Returns:
        (reduced id, target id, config, substitution, text) per reduction.
    """
    c = config.with_(sigma_context=0.0, sigma_forecast=0.0)
    one = c.with_(instances=1)
    return [
        ("T11", "T6", one, {S["sigma_C"]: 0, S["sigma_F"]: 0}, "sigma_C=sigma_F=0"),
        ("T6", "T1", one, {S["rho"]: 1}, "rho=1"),
        ("T11", "T12", one, {S["sigma_C"]: S["sigma_F"]}, "sigma_C=sigma_F"),
        ("T9", "T6", one, {}, "lambda=1"),
        ("T3", "T1", one, {}, "lambda=1"),
        ("T14", "T13", one.with_(top="pooled", context_length=0, forecast_length=1, w=1), {}, "k=1"),
        ("T9", "T3", c.with_(instances=3), {S["rho"]: 1}, "rho=1"),
        ("T10", "T4", c.with_(instances=2, bottom="poisson"), {S["rho"]: 1}, "rho=1"),
    ]
