"""Hypothesis strategies for training configurations that fit one bound's scheme."""
from __future__ import annotations

from hypothesis import assume, strategies as st

from tsdp.theorems.bounds.base import Bound
from tsdp.theorems.config import TrainingConfig


@st.composite
def config_for(draw, bound: Bound, max_instances: int = 4, max_window: int = 8) -> TrainingConfig:
    """A random valid configuration whose scheme the bound covers."""
    forecast = draw(st.integers(1, 5))
    context = draw(st.integers(0, max_window - forecast))
    L = draw(st.integers(forecast, 60))
    lam = 1 if bound.scheme.single_instance else draw(st.integers(1, max_instances))
    N = draw(st.integers(1, 500))
    per_step = draw(st.integers(1, N))
    batch = per_step * lam + draw(st.integers(0, lam - 1))
    sigma = draw(st.floats(0.4, 4.0))
    aug = draw(st.sampled_from([0.0, 0.25, 1.0, 3.0]))
    aug_f = aug if bound.scheme.equal_augmentation else draw(st.sampled_from([0.0, 0.5, 2.0]))
    if bound.scheme.split_windows and aug != aug_f:  # T ≥ L_C + L_F: every element in L_C + L_F whole windows
        L = max(L, context + 2 * forecast - 1)
    if bound.scheme.top[0] == "pooled":  # Λ windows drawn without replacement from the N T pooled ones
        assume(batch <= N * (L - forecast + 1))
    return TrainingConfig(
        N=N, L=L, context_length=context, forecast_length=forecast, batch_size=batch, instances=lam,
        sigma=sigma, top=bound.scheme.top[0], bottom=bound.scheme.bottom[0],
        sigma_context=aug, sigma_forecast=aug_f,
    )


alphas = st.floats(-3.0, 3.0).map(lambda e: 10.0**e)
