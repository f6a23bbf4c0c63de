"""The attack behind an 'unsound' verdict: the construction, its pair, and the `tsdp audit` command that runs it.

The pair is the one :func:`tsdp.theorems.registry.attained_pair` gives for the construction (a
lower bound: a concrete pair of neighbouring datasets realises it through the real loop). The
command audits that construction through the DP-SGD loop (:func:`tsdp.attacks.montecarlo.audit.audit`);
the loop's constructions change one element (event level, w = 1) of N series of one length, so
other relations get the pair but no command.
"""
from __future__ import annotations

from typing import Optional

from tsdp.theorems.config import Relation, Top, TrainingConfig
from tsdp.theorems.constructions import CONSTRUCTIONS
from tsdp.theorems.hidden_position import HIDDEN_POSITION_TOP, hidden_position_name
from tsdp.theorems.registry import attained_pair, get

AUDIT_TRIALS = 1_000_000
"""Trials per world the printed command asks for (the certified lower bound approaches the attained ε as they grow)."""


def _number(x) -> str:
    return f"{float(x):.6g}"


def describe_pair(construction: str, config: TrainingConfig) -> Optional[str]:
    """The attained pair (P, Q) of ``construction`` on ``config`` in words, weights as numbers; None without one.

    Shuffled iteration: the hidden-position epoch of that step pair, read through its maximum
    (:mod:`tsdp.theorems.hidden_position`), the law the attained ε composes.

    Args:
        construction: The T-id whose pair attains the ε.
        config: The configuration.

    Returns:
        The pair in words, or None when ``construction`` has no pair on ``config``.
    """
    pair = attained_pair(get(construction), config, numeric=True)
    if pair is None:
        return None

    def mixture(m) -> str:
        if len(m.means) == 1:
            return f"N({_number(m.means[0])}, σ)"
        return (f"MoG(means [{', '.join(_number(x) for x in m.means)}], weights "
                f"[{', '.join(_number(x) for x in m.weights)}], σ)")

    step = f"P = {mixture(pair.P)} vs Q = {mixture(pair.Q)}, σ = {_number(pair.sigma)} (units of C)"
    if config.top in HIDDEN_POSITION_TOP:
        return (f"{hidden_position_name(construction)}: the max over the epoch's {config.steps_per_epoch} releases, "
                f"the step holding the changed sequence releasing {step}, the others N(0, σ)")
    return step


def audit_command(construction: str, config: TrainingConfig, steps: int, delta: float,
                  trials: int = AUDIT_TRIALS) -> Optional[str]:
    """The `tsdp audit` command line that runs ``construction`` on ``config``'s sizes through the real loop,
    or None where the loop has no such construction (another relation than 1-event, variable lengths, no context:
    the loop's model reads the last L_C values of every window, and `tsdp audit` refuses L_C = 0).
    A shuffled configuration's command keeps ``--top shuffle``: the audit then runs shuffled iteration and
    reads the hidden-position epoch (the attained ε `tsdp epsilon --top shuffle` prints), never the
    known-position construction.

    Args:
        construction: The T-id whose pair the audit runs.
        config: The configuration (its sizes become the command's flags).
        steps: Training steps.
        delta: δ.
        trials: ``--trials`` of the command.

    Returns:
        The command line, or None where the loop has no such construction.
    """
    if construction not in CONSTRUCTIONS or config.relation != Relation.EVENT or config.w != 1:
        return None
    if (config.lengths is not None and len(set(config.lengths)) > 1) or config.context_length < 1:
        return None
    parts = ["tsdp audit", f"--theorem {construction}", *(["--top shuffle"] if config.top == Top.SHUFFLE else []),
             f"--trials {trials}", f"--steps {steps}", f"--delta {delta:g}",
             f"--N {config.N}", f"--L {config.L}", f"--context-length {config.context_length}",
             f"--forecast-length {config.forecast_length}", f"--batch-size {config.batch_size}",
             f"--instances {config.instances}", f"--sigma {config.sigma!r}"]
    if config.v != 1:
        parts.append(f"--v {config.v!r}")
    if construction == "T11":
        parts += [f"--sigma-context {config.sigma_context!r}", f"--sigma-forecast {config.sigma_forecast!r}"]
    return " ".join(parts)
