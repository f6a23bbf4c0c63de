"""E epochs as the accountant charges them (``training_event(config, epochs=E)``) against E epochs as the loop and the
batch sampler run them (E · the sampler's steps per epoch, accounted as steps): the same compositions for every top
level, with equal and variable series lengths (a configuration that gives its series' lengths)."""
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.events import count_compositions, training_event

torch = pytest.importorskip("torch")
from tsdp.training.samplers import make_sampler  # noqa: E402


@st.composite
def runs(draw):
    top = draw(st.sampled_from(["deterministic", "shuffle", "shuffle-drop", "wor", "pooled"]))
    n = draw(st.integers(1, 12))
    lengths = draw(st.one_of(st.none(), st.lists(st.integers(1, 9), min_size=n, max_size=n)))
    instances = draw(st.integers(1, 3))
    per_step = draw(st.integers(1, n))
    batch = per_step * instances + draw(st.integers(0, instances - 1))
    config = TrainingConfig(N=n, L=None if lengths else 6, lengths=tuple(lengths) if lengths else None,
                            context_length=0, forecast_length=1, batch_size=batch, instances=instances,
                            top=top.split("-")[0], drop_last=top == "shuffle-drop")
    return config, draw(st.integers(1, 4))


@settings(max_examples=150, deadline=None)
@given(runs())
@example((TrainingConfig(N=2, lengths=(1, 9), context_length=0, forecast_length=1, batch_size=1, top="pooled"), 1))
def test_epochs_charged_are_the_epochs_the_sampler_runs(run):
    config, epochs = run
    steps = epochs * make_sampler(config).steps_per_epoch
    charged = count_compositions(training_event(config, epochs=epochs))
    assert count_compositions(training_event(config, steps=steps)) == charged, (config, epochs, steps)
