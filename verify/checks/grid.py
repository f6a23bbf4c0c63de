"""The paper's grid, and the configurations the checks run over: its fixed grid and seeded random draws.

The one home of the paper's grid (the accountant checks' grid, :mod:`tsdp.testing.grid`, is built from it):
Section 5's default N = 320, Λ = 32, σ = 1, λ = 1, L_C = L_F = 1, L = 20 (r = ρ = 0.1), WOR top / WR
bottom level, at :data:`PAPER_STEPS` training steps; its scheme variants (:func:`section5_variants`:
deterministic top level (T1), λ = 2 (T7/T9), Poisson bottom level (T8/T10), context and forecast
augmentation σ_C = σ_F = 1 (T11), pooled windows (T14)); and the appendix grid (THEOREMS.md, claims C1/C2,
Appendix C) r ∈ {0.5, 0.1} × Λ/N ∈ {0.5, 0.1} (r = 2/T: L = 4 or 20; Λ = 160 or 32): :func:`fixed_grid`.
Random configurations come from a numpy ``Generator`` seeded by ``tsdp verify --seed``.
:func:`for_bound` adapts any configuration to a bound's scheme (top/bottom level, λ,
augmentation) so one base configuration serves every theorem.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

import numpy as np

from tsdp.theorems.config import DEFAULT_CONFIG, TrainingConfig

if TYPE_CHECKING:
    from tsdp.theorems.bounds.base import Bound

PAPER = DEFAULT_CONFIG
"""Paper Section 5 default (r = 0.1, ρ = 0.1), WOR top level, WR bottom level: the one home of the paper's
configuration, :data:`tsdp.theorems.config.DEFAULT_CONFIG` (the accountant checks' grid of :mod:`tsdp.testing.grid`
starts from it too)."""


@dataclass(frozen=True)
class Case:
    """A labelled base configuration (the label names the check).

    Attributes:
        label: The label (names the checks run on it).
        config: The configuration.
    """

    label: str
    config: TrainingConfig


PAPER_STEPS = (1, 10, 100, 1000)
"""The training steps Section 5 composes its default configuration over."""


def section5_variants() -> List[Case]:
    """Section 5's scheme variants of the paper default, one bound family each: deterministic top level (T1),
    λ = 2 (T7/T9), Poisson bottom level (T8/T10), augmentation σ_C = σ_F = 1 (T11), pooled windows (T14).

    Returns:
        The labelled configurations, in that order.
    """
    return [Case("deterministic", PAPER.with_(top="deterministic")), Case("instances=2", PAPER.with_(instances=2)),
            Case("poisson-bottom", PAPER.with_(bottom="poisson")),
            Case("augmented", PAPER.with_(sigma_context=1.0, sigma_forecast=1.0)),
            Case("pooled", PAPER.with_(top="pooled"))]


def fixed_grid() -> List[Case]:
    """The paper default, then the C1/C2 grid r, Λ/N ∈ {0.5, 0.1} (the default is r = Λ/N = 0.1)."""
    cases = [Case("paper", PAPER)]
    for r_label, L in (("0.5", 4), ("0.1", 20)):
        for b_label, batch in (("0.5", 160), ("0.1", 32)):
            if (r_label, b_label) == ("0.1", "0.1"):
                continue  # the paper default itself
            cases.append(Case(f"r={r_label},B/N={b_label}", PAPER.with_(L=L, batch_size=batch)))
    return cases


# augmentation settings used when a bound needs them (σ_C, σ_F in units of v)
AUGMENTATION = {"T11": (0.5, 1.0), "T12": (1.0, 1.0)}


def for_bound(bound: "Bound", config: TrainingConfig, instances: Optional[int] = None, **changes) -> TrainingConfig:
    """``config`` adapted to the bound's scheme.

    Top/bottom level from the scheme when the config's do not fit; λ = 1 for single-instance
    bounds, else ``instances`` (default: the config's); Λ kept (raised to λ if smaller, as
    in the paper, where λ varies at fixed batch size); σ_C = σ_F for bounds that need it
    and the :data:`AUGMENTATION` defaults for T11/T12 when the config has none; a bound that splits an element's
    windows into context and forecast ones (T11 with σ_C ≠ σ_F) gets L = L_C + 2 L_F - 1 on a shorter series, the
    shortest it covers. ``changes`` are applied last.

    Args:
        bound: The bound whose scheme the configuration must fit.
        config: The base configuration.
        instances: λ for bounds that allow more than one instance (None: the configuration's).
        **changes: Fields set last.

    Returns:
        The adapted configuration.
    """
    scheme = bound.scheme
    top = config.top if config.top in scheme.top else scheme.top[0]
    bottom = config.bottom if config.bottom in scheme.bottom else scheme.bottom[0]
    lam = 1 if scheme.single_instance else (instances if instances is not None else config.instances)
    batch = max(config.batch_size, lam)
    if batch // lam > config.N:
        batch = config.N * lam
    sc, sf = config.sigma_context, config.sigma_forecast
    if bound.id in AUGMENTATION and not config.augmented:
        sc, sf = AUGMENTATION[bound.id]
    if scheme.equal_augmentation or (config.w > 1 and (sc or sf)):
        sc = sf
    if scheme.split_windows and sc != sf and config.T < config.window_length:  # T11 needs T ≥ L_C + L_F
        changes = {"L": config.window_length + config.forecast_length - 1, "lengths": None, **changes}
    return config.with_(top=top, bottom=bottom, instances=lam, batch_size=batch, sigma_context=sc,
                        sigma_forecast=sf, **changes)


def random_config(rng: np.random.Generator) -> TrainingConfig:
    """One random configuration (any λ ≤ 4 fits it: Λ = 4 N' with N' ≤ N / 4).

    N log-uniform in [8, 2000], L_F ∈ 1..4, L_C ∈ 0..6, L ∈ [L_F, 100] (so short sequences
    with T < L_C + L_F, hence r = 1, occur), σ log-uniform in [0.5, 4], relation event or
    user with w ∈ {1, 2}, augmentation σ_C, σ_F each 0 or uniform in [0.1, 3].

    Args:
        rng: The seeded generator.

    Returns:
        One configuration.
    """
    N = int(np.exp(rng.uniform(np.log(8), np.log(2000))))
    forecast = int(rng.integers(1, 5))
    context = int(rng.integers(0, 7))
    L = int(rng.integers(forecast, 101))
    per_step = int(rng.integers(1, max(1, N // 4) + 1))
    sigma = float(np.round(np.exp(rng.uniform(np.log(0.5), np.log(4.0))), 4))
    relation = str(rng.choice(["event", "user"]))
    w = int(rng.integers(1, 3))
    sc = 0.0 if rng.random() < 0.3 else float(np.round(rng.uniform(0.1, 3.0), 3))
    sf = 0.0 if rng.random() < 0.3 else float(np.round(rng.uniform(0.1, 3.0), 3))
    if w > 1:
        sc = sf
    return TrainingConfig(N=N, L=L, context_length=context, forecast_length=forecast, batch_size=4 * per_step,
                          instances=1, sigma=sigma, relation=relation, w=w, sigma_context=sc, sigma_forecast=sf)


def random_cases(seed: int, count: int) -> List[Case]:
    """``count`` random configurations from ``numpy.random.default_rng(seed)``, labelled rand<seed>.<i>.

    Args:
        seed: The generator's seed.
        count: How many configurations.

    Returns:
        The labelled configurations.
    """
    rng = np.random.default_rng(seed)
    return [Case(f"rand{seed}.{i}", random_config(rng)) for i in range(count)]


def inference_cases() -> List[Case]:
    """Configurations of the inference bound T15 (Appendix H): the paper's rates r ∈ {1, 0.75, 0.5} at
    σ = v = 1, w ∈ {1, 3}, L_C = 8, plus a small-noise case (v/σ = 4)."""
    from tsdp.theorems.bounds.inference import InferenceConfig

    cases = [Case(f"inference:r={r},w={w}", InferenceConfig(r=r, sigma=1.0, w=w, v=1.0, context_length=8))
             for r in (1.0, 0.75, 0.5) for w in (1, 3)]
    cases.append(Case("inference:r=0.5,w=2,v/sigma=4",
                      InferenceConfig(r=0.5, sigma=0.25, w=2, v=1.0, context_length=8)))
    return cases
