"""The registry of every bound of THEOREMS.md, and the choice of the bound for a scheme.

Adding a theorem is adding one object to a section module's ``BOUNDS``.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, Iterator, Optional, Tuple

from .bounds import augmentation, bilevel, bottom_level, inference, pooled
from .bounds.base import Bound, TheoremError, params
from .config import Bottom, Top, TrainingConfig
from .mixture import MixturePair

REGISTRY: Dict[str, Bound] = {
    b.id: b for module in (bottom_level, bilevel, augmentation, pooled, inference) for b in module.BOUNDS
}
"""Every bound (a privacy profile), by id: the one list that the checks, the accountant and the report iterate."""

CLAIMS: Dict[str, Bound] = {c.id: c for c in bottom_level.CLAIMS}
"""Statements about bounds (T5, Thm 4.1): listed by `tsdp theorems`, checked by `tsdp verify`, never accounted."""


@contextmanager
def substituted(*bounds: Bound) -> Iterator[Dict[str, Bound]]:
    """Within the block, ``REGISTRY`` holds ``bounds`` under their ids (replacing or adding), then is restored.

    Every consumer reads the registry, so a mutant of a bound (the checks' broken-bound tests)
    or a throw-away new bound is seen by ``tsdp verify``'s plan, the accountant and the report
    with no other edit.
    """
    saved = dict(REGISTRY)
    try:
        for bound in bounds:
            REGISTRY[bound.id] = bound
        yield REGISTRY
    finally:
        REGISTRY.clear()
        REGISTRY.update(saved)


def get(theorem_id: str) -> Bound:
    """The bound with this id (case-insensitive).

    Args:
        theorem_id: A catalogue id such as ``"T6"`` (THEOREMS.md), any case.

    Returns:
        The registered bound.

    Raises:
        TheoremError: An unknown id, or the id of a claim (not a bound; `tsdp verify` checks it).
    """
    key = {k.lower(): k for k in REGISTRY}.get(str(theorem_id).lower())
    if key is None:
        claim = {k.lower(): c for k, c in CLAIMS.items()}.get(str(theorem_id).lower())
        if claim is not None:
            raise TheoremError(f"{claim.id} is a claim ({claim.reference}, {claim.label}), not a bound; "
                               "`tsdp verify` checks it")
        raise TheoremError(f"unknown theorem id {theorem_id!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[key]


def attained_pair(bound: Bound, config: TrainingConfig, *, numeric: bool = False) -> Optional[MixturePair]:
    """The pair (P, Q) that a real attack on ``bound``'s proof construction attains, or None.

    **Lower** bound direction: the construction's neighbouring datasets and gradient function
    realise exactly this pair (T1 → T1, T2 → T3, T6 → T6, T7 → T9, T8 → T10, T11 → its own
    augmentation pair, T13 → T14 ...). ``bound.attained_build`` where the pair is the
    construction's own (T11), else the pair of the bound named by ``bound.construction``, read
    from this registry (so a substituted bound is seen); None without one. ``numeric``:
    plain-number weights, no sympy. It lives here, not on the bound, because it resolves an id:
    the registry imports the bounds, never the other way round. With variable lengths the construction is
    built on the shortest series (the largest r and q; a sound k taken at the longest series may belong to no
    series, and no attack would reach a pair built with it), except for pooled windows: their sampler draws from
    the pool of every series' windows (N_tot = Σ_n T_n), and an element of the longest series lies in k of them, so
    the configuration's own pair is attained there (on the shortest series alone the pool would be N T_min, a
    larger rate than any attack reaches).

    Args:
        bound: The bound.
        config: The configuration.
        numeric: Fractions and floats instead of sympy.

    Returns:
        The pair, or None without a construction.
    """
    if getattr(config, "lengths", None) is not None and config.top != Top.POOLED:  # a sound k may belong to none
        config = config.with_(lengths=None)
    if bound.attained_build is not None:
        return bound.attained_build(params(config, numeric=numeric))
    if bound.construction is None:
        return None
    return get(bound.construction).pair(config, check=False, numeric=numeric)


def select_bound(config: TrainingConfig) -> Tuple[Bound, str]:
    """The tightest sound upper bound of the catalogue for the configured scheme, and why.

    Tight bounds first (T1, T4, T6); T11 when augmentation is on (λ = 1, WOR + WR);
    the general upper bounds (T2, T7, T8) for λ > 1. Refuses (TheoremError) schemes with
    no sound upper bound in the catalogue: Poisson top level, and pooled windows when one
    element lies in more than one window (T13 covers one window only).

    Args:
        config: The training configuration (its top and bottom level, λ and augmentation).

    Returns:
        The bound, and the reason it was chosen in words.

    Raises:
        TheoremError: The scheme has no sound upper bound in the catalogue.
    """
    top, bottom, lam = config.top, config.bottom, config.instances
    if top in (Top.DETERMINISTIC, Top.SHUFFLE):
        if bottom == Bottom.POISSON:
            bound, reason = REGISTRY["T4"], "T4 is tight for deterministic top level with Poisson bottom level"
        elif lam == 1:
            bound, reason = REGISTRY["T1"], "T1 is tight for deterministic top level, WR bottom level, λ = 1"
        else:
            bound, reason = (REGISTRY["T2"],
                             "T2 is the sound upper bound for deterministic top level, WR bottom level, λ > 1")
        if top == Top.SHUFFLE:  # every order is a deterministic one: sound; tight is shown for a known order only
            reason += ("; sound for shuffled iteration too (each shuffled order is a deterministic one; an epoch whose "
                       "steps hold the changed sequence with probability ρ < 1 is mixed with silence by ρ), not shown "
                       "tight there: the order is hidden, and the attained value is the hidden-position epoch's "
                       "with the other sequences silent, a lower bound (whether it is the worst case is open)")
        return bound, reason
    if top == Top.WOR:
        if bottom == Bottom.POISSON:
            return REGISTRY["T8"], "T8 is the sound upper bound for WOR top level with Poisson bottom level"
        if lam == 1 and config.augmented:
            try:
                REGISTRY["T11"].check(config)
            except TheoremError as refused:
                return REGISTRY["T6"], f"T6 is tight for WOR top level, WR bottom level, λ = 1 ({refused})"
            return REGISTRY["T11"], "T11 amplifies T6 by the context/forecast augmentation noise (λ = 1)"
        if lam == 1:
            return REGISTRY["T6"], "T6 is tight for WOR top level, WR bottom level, λ = 1"
        return REGISTRY["T7"], "T7 is the sound upper bound for WOR top level, WR bottom level, λ > 1"
    if top == Top.POOLED:
        if config.k <= 1:
            return REGISTRY["T13"], "T13 is tight for pooled windows when one element lies in one window"
        raise TheoremError(
            f"no sound upper bound in the catalogue for pooled windows with k = {config.k} windows per element: "
            "T13 covers one window (record level) and T14 is a lower bound; pass --theorem T13 for record-level "
            "privacy or --theorem T14 for the optimistic element-level value"
        )
    raise TheoremError(
        f"no proven sound bound exists for top={top!r} (the catalogue has none); use deterministic, shuffle or wor "
        "(or pooled)"
    )


def resolve(config: TrainingConfig, theorem_id: str | None = None) -> Tuple[Bound, str]:
    """The bound named by ``theorem_id`` (checked against the scheme), or :func:`select_bound`.

    Args:
        config: The training configuration.
        theorem_id: The T-id (None: :func:`select_bound`).

    Returns:
        (bound, reason).

    Raises:
        TheoremError: No bound applies, or the one named does not fit the scheme.
    """
    if theorem_id is None:
        return select_bound(config)
    bound = get(theorem_id)
    bound.check(config)
    return bound, f"{bound.id} requested"
