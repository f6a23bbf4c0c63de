"""Runs of a white-box audit of tsdp's loop trained together (tsdp.attacks.canary.loop_together through
tsdp.training.together): each run's evidence equals the run trained alone, to float rounding."""
import numpy as np
import pytest

from tsdp.theorems.config import TrainingConfig
from tsdp.attacks.canary.evidence import certify_evidence
from tsdp.attacks.canary.runs import run_many
from tsdp.attacks.canary.whitebox import LoopTask
from tsdp.datasets.series import synthetic

# 40 series of L = 9 = L_C + L_F training values: r = 1, ρ = 1/4, 4 steps an epoch
DATA = synthetic(40, 10, seed=0, noise=2.0)
CONFIG = TrainingConfig(N=40, L=9, context_length=8, forecast_length=1, batch_size=10, sigma=8.0)


@pytest.mark.parametrize("private", [True, False])
def test_runs_trained_together_give_each_run_its_evidence_alone(private, one_thread):
    """3 runs of 60 canaries (1 epoch, SGD 0.05, simple-ff) one at a time and in shards of 2 and 1 trained together:
    the same inclusion bits, steps and sound ε, and every run's scores equal to float rounding (float32 training,
    scores of order 0.1-1); the pooled certificate of the two is the same."""
    task = LoopTask("simple-ff", CONFIG, DATA, 60, epochs=1, delta=1e-5, private=private)
    alone = run_many(task, 3, seed=11)
    together = run_many(task, 3, seed=11, together=2)
    assert alone.engine.shards_run == 3 and together.engine.shards_run == 2
    for a, b in zip(alone.runs, together.runs):
        assert np.array_equal(a.included, b.included) and a.steps == b.steps == 4 and a.epsilon == b.epsilon
        for name in a.scores:
            np.testing.assert_allclose(b.scores[name], a.scores[name], rtol=1e-4, atol=1e-5)
    assert np.ptp(np.concatenate([r.scores["sum"] for r in alone.runs])) > 1e-2  # the scores differ between canaries
    one, two = (certify_evidence(m.evidence, 1e-5, 0.95) for m in (alone, together))
    assert one.epsilon_lower == pytest.approx(two.epsilon_lower, abs=1e-9)


def test_runs_without_dp_under_poisson_sampling_run_one_at_a_time(one_thread):
    """Runs without DP whose Poisson batches can be empty are not stacked (a run alone skips its empty steps): in
    shards of 2 they give exactly the evidence of the runs one at a time."""
    task = LoopTask("simple-ff", CONFIG.with_(top="poisson"), DATA, 10, epochs=1, delta=1e-5, private=False)
    alone, together = run_many(task, 2, seed=3), run_many(task, 2, seed=3, together=2)
    assert together.engine.shards_run == 1
    for a, b in zip(alone.runs, together.runs):
        assert np.array_equal(a.included, b.included)
        for name in a.scores:
            assert np.array_equal(a.scores[name], b.scores[name])


def test_together_must_be_a_positive_integer():
    task = LoopTask("simple-ff", CONFIG, DATA, 60, epochs=1, delta=1e-5)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="together"):
            run_many(task, 2, together=bad)


class OutOfTimeAtRunFive:
    """A task training its runs two by two whose shard holding run 5 (runs 4 and 5) runs out of time."""

    def __call__(self, seed):
        return self.together([seed])[0]

    def together(self, seeds):
        from tsdp.attacks.canary.evidence import Evidence
        from tsdp.attacks.canary.guarded_calls import TimeLimitError

        if any(s.spawn_key[-1] == 5 for s in seeds):
            raise TimeLimitError("train", "user.train", 1.0)
        return tuple(Evidence({"s": np.arange(4.0)}, np.array([True, False, True, False])) for _ in seeds)


def test_a_time_limit_in_runs_trained_together_counts_the_runs_that_finished():
    """Runs 0-3 (two shards of two) finished before the shard of runs 4 and 5 ran out of time: the error says 4 of 8
    runs had finished and names the shard's runs, not its shards (2) and its first run alone."""
    from tsdp.attacks.canary.guarded_calls import TimeLimitError

    with pytest.raises(TimeLimitError, match=r"in runs 4-5; 4 of 8 runs had finished"):
        run_many(OutOfTimeAtRunFive(), 8, seed=1, together=2)
