"""What the real loop feeds the accountant: the series, the windows and the steps it is charged for are the ones the
loop trains on (the accountant's T, k, N_tot and steps against the loop's own)."""
import pytest

from tsdp.datasets.series import synthetic_for
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.training.options import Budget, Evaluation
from tsdp.training.train import train

DELTA = 1e-5


def test_a_pooled_run_refuses_series_that_pool_fewer_windows_than_its_configuration():
    """Configuration lengths (20, 30, 30, 30) (N_tot = 106), series trained on of lengths (20, 20, 20, 30) (86): the
    run once reported T13's ε = 9.04 for 20 steps where the series it sampled give 10.15; refused before training."""
    claimed = TrainingConfig(N=4, lengths=(20, 30, 30, 30), context_length=4, forecast_length=2, batch_size=4,
                             top="pooled")
    data = synthetic_for(claimed.with_(lengths=(20, 20, 20, 30)), seed=2)
    with pytest.raises(ConfigError) as err:
        train(claimed, "dlinear", data, budget=Budget(steps=20, delta=DELTA, theorem="T13"),
              evaluation=Evaluation(n_samples=4), device="cpu", progress=False)
    assert err.value.parameter == "lengths"
