"""`tsdp bench accounting`: one-step PLD construction time, our path vs dp-accounting's.

For a mixture-against-one-Gaussian pair (T6 at the paper's default configuration; T3 with
λ = 4, deterministic top level) both paths build the same two-direction pessimistic
connect-the-dots PLD (Doroshenko et al. 2022; paper Appendix B.3): ours evaluates δ(ε) on
the whole grid at once (:func:`verify.pld.pair_pld`), the library's
``from_mixture_gaussian_mechanism`` inverts the loss per grid point. Both are measured in
one run at the same discretisation, and their ε(δ) must agree to a relative 1e-3 (both
are upper estimates of the same pair's ε). Our sound one-step PLD
(:func:`verify.pld.sound_pld`) is timed as well.
"""
from __future__ import annotations

import time
from typing import Callable, Dict, List, Optional, Tuple

from tsdp.theorems.config import DEFAULT_CONFIG, TrainingConfig
from tsdp.theorems.registry import get

from .pld import DEFAULT_DISCRETIZATION, pair_pld, sound_pld

AGREEMENT_RTOL = 1e-3


def _cases() -> List[Tuple[str, str, TrainingConfig, float]]:
    """(label, theorem, configuration, speed-up goal)."""
    t3 = DEFAULT_CONFIG.with_(top="deterministic", instances=4, batch_size=4 * DEFAULT_CONFIG.batch_size)
    return [("T6 (default configuration)", "T6", DEFAULT_CONFIG, 20.0), ("T3, λ = 4", "T3", t3, 10.0)]


def _timed(fn: Callable, repeats: int) -> Tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _library_args(pair) -> Tuple[float, list, list]:
    """σ, sensitivities, probabilities of a MoG(means, w) ‖ N(0, σ) pair for the library."""
    num = pair.numeric()
    if len(num.b) != 1 or num.b[0] != 0:
        raise ValueError("the library's mixture mechanism needs a single N(0, σ) on the right")
    return num.sigma, list(num.a * num.sigma), list(num.p)


def bench_accounting(discretization: float = DEFAULT_DISCRETIZATION, delta: float = 1e-5, repeats: int = 3,
                     progress: Optional[Callable[[str], None]] = None) -> Dict:
    """Time one-step PLD construction, ours vs ``from_mixture_gaussian_mechanism``.

    Returns ``{"discretization", "delta", "cases": [{theorem, label, ours_s, ours_sound_s,
    library_s, speedup, goal, meets_goal, epsilon_ours, epsilon_library, rel_diff, agree}]}``.
    Ours is the best of ``repeats`` warm runs; the library (slow) runs once. Both ε are
    pessimistic (upper) estimates of the same pair; ``agree`` checks them to 1e-3 relative.
    """
    from dp_accounting.pld import privacy_loss_distribution as lib

    cases = []
    for label, theorem, config, goal in _cases():
        bound = get(theorem)
        pair = bound.pair(config)
        if progress:
            progress(f"{label}: our path")
        pair_pld(pair, discretization, pessimistic=True)  # warm-up (sympy caches, imports)
        ours_s, ours = _timed(lambda: pair_pld(bound.pair(config), discretization, pessimistic=True), repeats)
        sound_s, sound = _timed(lambda: sound_pld(bound, config, discretization), repeats)
        sigma, sens, probs = _library_args(pair)
        if progress:
            progress(f"{label}: dp-accounting from_mixture_gaussian_mechanism")
        lib_s, theirs = _timed(
            lambda: lib.from_mixture_gaussian_mechanism(sigma, sens, probs, value_discretization_interval=discretization),
            1,
        )
        e_ours = float(ours.get_epsilon_for_delta(delta))
        e_lib = float(theirs.get_epsilon_for_delta(delta))
        rel = abs(e_ours - e_lib) / max(abs(e_lib), 1e-12)
        cases.append({
            "theorem": theorem, "label": label, "config": config.as_dict(),
            "ours_s": ours_s, "ours_sound_s": sound_s, "library_s": lib_s, "speedup": lib_s / ours_s,
            "goal": goal, "meets_goal": lib_s / ours_s >= goal,
            "epsilon_ours": e_ours, "epsilon_sound": float(sound.get_epsilon_for_delta(delta)),
            "epsilon_library": e_lib, "rel_diff": rel, "agree": rel <= AGREEMENT_RTOL,
        })
    return {"discretization": discretization, "delta": delta, "cases": cases}


def format_bench(result: Dict) -> str:
    """Human-readable table of :func:`bench_accounting`'s result."""
    lines = [f"one-step PLD construction at discretisation {result['discretization']:g}, "
             f"ε at δ = {result['delta']:g}"]
    lines.append(f"{'case':<28} {'ours (s)':>9} {'sound (s)':>9} {'library (s)':>11} {'speed-up':>9} {'goal':>5}  "
                 f"{'ε ours':>10} {'ε library':>10}  agree")
    for c in result["cases"]:
        lines.append(
            f"{c['label']:<28} {c['ours_s']:>9.3f} {c['ours_sound_s']:>9.3f} {c['library_s']:>11.3f} "
            f"{c['speedup']:>8.1f}x {c['goal']:>4.0f}x  {c['epsilon_ours']:>10.6g} {c['epsilon_library']:>10.6g}  "
            f"{'yes' if c['agree'] else 'NO'} ({c['rel_diff']:.1e})"
        )
    return "\n".join(lines)
