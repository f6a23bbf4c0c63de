"""White-box gradient canaries (tsdp.attacks.canary.gradient) in tsdp's loop, their participation law, and many runs
pooled on the sharded engine (tsdp.attacks.canary.runs): 1 and 2 workers identical, a lost run re-run."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from tsdp.theorems.config import TrainingConfig
from tsdp.attacks.canary.evidence import Evidence, certify_evidence, pool
from tsdp.attacks.canary.gradient import (GradientCanaries, Participation, canary_directions, canary_sum,
                                          participation_rate)
from tsdp.attacks.canary.runs import run_many
from tsdp.attacks.canary.steinke_bound import auc
from tsdp.attacks.canary.whitebox import LoopTask, audit_loop
from tsdp.datasets.series import synthetic
from tsdp.executor.seams import _units_wrapped

from fault_injection import failing_once

# 40 series of L = 9 = L_C + L_F training values: every window holds every element (r = 1), ρ = 1/4
SHORT_DATA = synthetic(40, 10, seed=0, noise=2.0)
SHORT = TrainingConfig(N=40, L=9, context_length=8, forecast_length=1, batch_size=10, sigma=8.0)




def _one_canary_counts(config, steps, seed=0):
    """(steps,) window counts of canary 0 of 200 (its own law: steps are drawn epoch by epoch)."""
    p = Participation(config, 200, np.random.default_rng(seed), torch.Generator().manual_seed(seed))
    return torch.stack([p.next() for _ in range(steps)])[:, 0].numpy()


def test_participation_follows_the_scheme_law_for_one_element():
    """WOR top / WR bottom (default config, ρ = r = 0.1, λ = 1): canary 0 takes part in a step independently with
    probability ρ r = 0.01, so its count over 20000 steps is Binomial(20000, 0.01); shuffled iteration: at most one
    step per epoch, the epoch's count Bernoulli(r); deterministic iteration: always the same step of the epoch.
    Two-sided binomial tests at level 1e-3 each (the false-failure rate; the seed is fixed, so the outcome is too)."""
    config = TrainingConfig()
    assert participation_rate(config) == pytest.approx(0.01)
    k = _one_canary_counts(config, 20000)
    assert set(np.unique(k)) <= {0, 1}
    assert stats.binomtest(int(k.sum()), 20000, 0.01).pvalue > 1e-3, k.sum()

    per_epoch = _one_canary_counts(config.with_(top="shuffle"), 20000).reshape(-1, config.steps_per_epoch).sum(1)
    assert per_epoch.max() <= 1
    assert stats.binomtest(int(per_epoch.sum()), len(per_epoch), 0.1).pvalue > 1e-3, per_epoch.sum()

    det = _one_canary_counts(config.with_(top="deterministic"), 2000).reshape(-1, config.steps_per_epoch)
    assert np.count_nonzero(det.sum(0)) == 1  # one fixed step of the epoch holds the canary's sequence


def test_inclusion_is_a_fair_coin_per_canary():
    """Each of 4000 canaries is included independently with probability 1/2: the count is Binomial(4000, 1/2)
    (two-sided test at level 1e-3, fixed seed), and another seed draws other bits."""
    a, b = (GradientCanaries(TrainingConfig(), 4000, clip=1.0, seed=s).included for s in (0, 1))
    assert stats.binomtest(int(a.sum()), 4000, 0.5).pvalue > 1e-3, a.sum()
    assert 0.4 < np.mean(a != b) < 0.6


def test_canaries_never_share_a_window_and_the_clipped_norm_is_C():
    """Each canary adds exactly K C u_i (unit u_i, orthonormal for m ≤ d); one window never holds two canaries, so
    with r = 1 and λ = 1 a step's count is 0 or 1 for each."""
    c = GradientCanaries(SHORT, 300, clip=2.5, seed=3)
    c.attach([torch.zeros(400, requires_grad=True), torch.zeros(7, requires_grad=True)])
    gram = c.directions @ c.directions.T
    assert torch.allclose(gram, torch.eye(300), atol=1e-5)
    total = torch.zeros(407)
    for _ in range(40):
        total += torch.cat([g.reshape(-1) for g in c.gradient()])
    coeff = (c.directions @ total).numpy() / 2.5
    expected = c.participations * c.included
    assert np.allclose(coeff, expected, atol=1e-3) and c.participations.max() <= 40
    assert abs(c.participations.mean() - 40 * 0.25) < 1.0  # ρ r = 1/4 per step


@settings(max_examples=80, deadline=None)
@given(log_clip=st.floats(-6.0, 6.0), m=st.integers(1, 40), d=st.integers(1, 3000), seed=st.integers(0, 2**31),
       step=st.integers(0, 3), dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float64]))
def test_every_canary_has_norm_at_most_C_in_the_dtype_it_is_added_in(log_clip, m, d, seed, step, dtype):
    """Each canary alone (one window, the others out: the rows of an identity weight matrix), as the step adds it
    (float32 directions, cast to the parameters' dtype), has norm ≤ C taken in float64, over hypothesis-drawn C,
    canaries, dimensions (orthonormal and i.i.d. directions) and dtypes; without the margin the float32 canary's norm
    is C (1 + ~1e-7) about half the time. The margin's cost is at most κ (< 2e-6 relative in float32)."""
    clip = 10.0 ** log_clip
    u = canary_directions(m, d, seed, step).float()
    added = canary_sum(torch.eye(m), u, clip, dtype).to(dtype).double().norm(dim=1)
    assert float(added.max()) <= clip, f"a canary exceeds C by {float(added.max()) / clip - 1:.3g} relative"
    if dtype != torch.bfloat16:
        assert float(added.min()) >= clip * (1 - 2e-6)


def test_no_noise_loop_separates_included_canaries(one_thread):
    """tsdp's loop without clipping or noise (SGD 0.05, simple-ff, 40 steps) on the short series with 300 gradient
    canaries: the mixture score puts included canaries on top (AUC > 0.95) and certifies ε ≥ 1.5 (95%) against
    the claim of the private run (sound ε ≈ 1.70 at σ = 8), which is thus flagged."""
    task = LoopTask("simple-ff", SHORT, SHORT_DATA, 300, epochs=10, delta=1e-5, private=False)
    evidence = task(np.random.SeedSequence(0))
    assert auc(evidence.scores["mixture"], evidence.included) > 0.95
    result = certify_evidence(evidence, 1e-5, 0.95, claimed=1.0)
    assert result.epsilon_lower >= 1.5 and result.violation, result


def test_private_loop_stays_below_its_sound_epsilon(one_thread):
    """The same loop with DP-SGD at σ = 8 (sound ε ≈ 1.70 after 40 steps): the certified bound stays below it."""
    r = audit_loop(LoopTask("simple-ff", SHORT, SHORT_DATA, 300, epochs=10, delta=1e-5), delta=1e-5)
    assert 1.5 < r.epsilon_sound < 1.9 and r.steps == 40 and r.runs == 1 and r.engine.shards_run == 1
    assert r.epsilon_lower < r.epsilon_sound and not r.violation, r
    assert list(r.as_dict()) == ["canaries", "included", "delta", "confidence", "epsilon_lower", "epsilon_claimed",
                                 "violation", "above_claim", "curve_rejected", "scores", "runs", "steps",
                                 "epsilon_sound", "engine", "epsilon_ideal"]  # the keys of the dict it replaced


def test_pool_concatenates_in_run_order():
    a = Evidence({"s": np.array([1.0, 2.0])}, np.array([True, False]))
    b = Evidence({"s": np.array([3.0])}, np.array([True]))
    p = pool([a, b])
    assert p.scores["s"].tolist() == [1.0, 2.0, 3.0] and p.included.tolist() == [True, False, True]
    with pytest.raises(ValueError):
        pool([a, Evidence({"t": np.array([1.0])}, np.array([True]))])


def test_pooled_runs_raise_the_certified_bound_of_a_no_noise_loop(one_thread):
    """Pooling: 4 runs of 50 canaries certify more than one run of 50 (the bound grows with m·R) and the pooled
    evidence is the runs' evidence in order."""
    task = LoopTask("simple-ff", SHORT, SHORT_DATA, 50, epochs=10, delta=1e-5, private=False)
    many = run_many(task, 4, seed=5)
    assert many.evidence.included.size == 200 and many.engine.shards_run == 4
    assert np.array_equal(many.evidence.scores["mixture"][50:100], many.runs[1].scores["mixture"])
    one = certify_evidence(many.runs[0], 1e-5, 0.95).epsilon_lower
    pooled = certify_evidence(many.evidence, 1e-5, 0.95).epsilon_lower
    assert pooled > one + 0.5, (one, pooled)


@pytest.mark.slow  # a Dask cluster and two pools of spawned workers: 13 s
def test_one_and_two_workers_and_a_lost_run_give_identical_evidence(tmp_path, one_thread):
    """Runs are seeded from one SeedSequence and pooled in run order: in-process, 2 spawned workers, a local Dask
    cluster of 2 workers, and a run that fails once (re-run) give bit-identical pooled scores and inclusion bits."""
    pytest.importorskip("distributed")
    task = LoopTask("simple-ff", SHORT, SHORT_DATA, 20, epochs=1, delta=1e-5)
    here = run_many(task, 3, seed=9)
    two = run_many(task, 3, seed=9, workers=2, threads=1)
    dask = run_many(task, 3, seed=9, workers=2, cluster="auto", threads=1)
    with _units_wrapped(failing_once(str(tmp_path / "m"), world="run", index=1)):
        lost = run_many(task, 3, seed=9)
    assert lost.engine.retries == 1 and two.engine.executor == "processes"
    assert dask.engine.executor == "dask"
    for other in (two, dask, lost):
        assert np.array_equal(here.evidence.included, other.evidence.included)
        for name, s in here.evidence.scores.items():
            assert np.array_equal(s, other.evidence.scores[name])


def test_the_sound_profile_is_the_accountants_curve_read_once():
    """The claimed curve gradient canaries are tested against: the sound accountant's δ(ε) on the f-DP test's grid
    (0, 0.05, ..., 20), equal to its reads one ε at a time (get_delta), computed once per (config, steps) and
    shared read-only by every audit of that configuration."""
    from tsdp.attacks.canary.gradient import sound_profile
    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    config = TrainingConfig()
    eps, deltas = sound_profile(config, 1)
    accountant = PldAccountant().compose(training_event(config, steps=1))
    assert np.array_equal(eps, np.linspace(0.0, 20.0, 401))
    assert np.allclose(deltas[::50], [accountant.get_delta(float(e)) for e in eps[::50]], rtol=1e-9, atol=0)
    assert sound_profile(config.with_(), 1) is sound_profile(config, 1)
    with pytest.raises(ValueError):
        deltas[0] = 0.0


@pytest.mark.parametrize("order", [(4, 40), (40, 4)])
def test_pooled_runs_are_tested_against_a_curve_that_holds_for_every_run(monkeypatch, order):
    """Runs of one audit may take different numbers of optimizer steps (a training with early stopping): the pooled
    canaries are tested against one claimed curve, which must be no stronger than any run's own sound profile, so a
    correct training is never flagged because its first run was shorter than the others (failed before with the
    first run at 4 steps and the second at 40: the curve was the 4 steps' one, up to 0.53 below the 40 steps' δ)."""
    import tsdp.attacks.canary.user_training as user_training
    from tsdp.attacks.canary.gradient import sound_profile
    from tsdp.attacks.canary.mechanism import MechanismTests, untested
    from tsdp.attacks.canary.options import AuditOptions, CanaryOptions
    from tsdp.attacks.canary.training_runs import GradientRunEvidence

    config = TrainingConfig(N=16, batch_size=4, L=6, context_length=1, forecast_length=1, sigma=1.0)
    rng = np.random.default_rng(0)

    def run(steps, m=50):
        return GradientRunEvidence(
            scores={"sum": rng.normal(size=m), "mixture": rng.normal(size=m)}, included=rng.random(m) < 0.5,
            parameters=10, optimizer="SGD", steps=steps, clip=1.0, scale=0.25, observed="gradient", data_span=None,
            data_part=None, mechanism=MechanismTests((untested("noise", 1e-3, steps, "a stub run"),)))

    tested = {}
    certify = user_training.certify_evidence
    monkeypatch.setattr(user_training, "certify_evidence",
                        lambda *a, **k: tested.setdefault("profile", k["profile"]) and certify(*a, **k))
    monkeypatch.setattr(user_training, "ideal_epsilon", lambda *a, **k: 0.0)
    runs = [run(steps) for steps in order]
    user_training.training_audit(runs, config, canary=CanaryOptions("gradient"), delta=1e-5, epsilon=None,
                                 options=AuditOptions(), seed=0)
    eps, claimed = tested["profile"]
    for r in runs:
        own_eps, own = sound_profile(config, r.steps)
        assert np.array_equal(eps, own_eps) and np.all(claimed >= own), r.steps


@pytest.mark.parametrize("top,bottom", [("wor", "poisson"), ("shuffle", "poisson"), ("pooled", "wr"), ("wor", "wr")])
def test_participation_rate_is_the_canaries_mean_count_with_unequal_lengths(top, bottom):
    """Series of lengths 2, 3, 10, 10 (L_C = 2, L_F = 1: T_n = 2, 3, 10, 10): the configuration's k = 3 is taken at the
    longest series, but the canaries sit in the shortest, where an element lies in min(L_C + L_F, T) = 2 windows. The
    mixture score's p must be their E[K_t] (measured over 50 canaries and 2000 steps: 0.498 for the Poisson bottom
    level, 0.162 pooled, where k at the longest says 0.75 and 0.24). Per-canary means over the 2000 steps spread
    0.010-0.015, so the mean over the 50 canaries stays within that even if they moved together in a replica; a 10%
    band (0.016 pooled, 0.05 otherwise) keeps the right rate and is far from the 50% overstatement; fixed seeds."""
    config = TrainingConfig(N=4, lengths=(2, 3, 10, 10), context_length=2, forecast_length=1, batch_size=2,
                            instances=1, top=top, bottom=bottom)
    p = Participation(config, 50, np.random.default_rng(0), torch.Generator().manual_seed(0))
    counts = torch.stack([p.next() for _ in range(2000)]).double()
    rate = participation_rate(config)
    assert abs(counts.mean().item() - rate) < 0.1 * rate, (counts.mean().item(), rate)


class FailsOnceAfterDrawing:
    """A run that draws its canaries from its seed (``GradientCanaries`` spawns children of it), then, on run 1's
    first attempt only, fails (as a training that hits a passing error midway): evidence = the inclusion bits."""

    def __init__(self, marker):
        self.marker = marker

    def __call__(self, seed):
        canaries = GradientCanaries(SHORT, 30, clip=1.0, seed=seed)
        if seed.spawn_key[-1] == 1 and not self.marker.exists():
            self.marker.touch()
            raise RuntimeError("passing failure after the canaries were drawn")
        return Evidence({"bits": canaries.included.astype(float)}, canaries.included)


def test_a_run_rerun_in_process_after_it_drew_its_canaries_draws_the_same_ones(tmp_path):
    """A run is re-run from its own seed: the re-run of run 1 (failed after drawing its canaries) draws the canaries
    of a run that never failed. Before, in this process the seed's children were spawned again, so the re-run drew
    other canaries: the evidence depended on which runs failed, and a run re-run until it passed was a run selected
    on its randomness."""
    (tmp_path / "failed before").touch()
    clean = run_many(FailsOnceAfterDrawing(tmp_path / "failed before"), 3, seed=4)
    hit = run_many(FailsOnceAfterDrawing(tmp_path / "once"), 3, seed=4)
    assert hit.engine.retries == 1 and (tmp_path / "once").exists()
    assert np.array_equal(hit.evidence.included, clean.evidence.included)
