"""The direct forecasters' quantiles from the draws of the quantiles' ranks only
(:func:`tsdp.training.student_t.student_t_sample_quantiles`, ``DirectForecaster.path_quantiles``) against the
reference: every sample path drawn (``sample``), sorted and ranked by :func:`tsdp.training.metrics.sample_quantiles`;
and the order property of ``stdtrit`` the fast path rests on (:data:`tsdp.training.student_t.ORDER_GAP`)."""
import numpy as np
import pytest
import torch
from scipy import special

from tsdp.training import student_t
from tsdp.training.evaluation import evaluate
from tsdp.training.metrics import QUANTILES, crps_from_samples, sample_quantiles
from tsdp.training.models import make_model
from tsdp.training.observations import UNOBSERVED
from tsdp.training.student_t import (LEAST_ORDERED_LEVEL, ORDER_GAP, student_t_draws, student_t_sample, student_t_sample_quantiles,
                                     student_t_sample_quantiles_at)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal as float64 bit patterns (so -0.0, ±inf and nan count)."""
    return a.shape == b.shape and np.array_equal(np.asarray(a, np.float64).view(np.int64),
                                                 np.asarray(b, np.float64).view(np.int64))


def reference_quantiles(df, loc, scale, n_samples, generator, quantiles=QUANTILES):
    """Every one of the (B, S, L) draws of ``student_t_sample``, sorted and ranked: (Q, B, L)."""
    shape = (loc.shape[0], n_samples, loc.shape[1])
    draws = student_t_sample(df[:, None].expand(shape), loc[:, None].expand(shape), scale[:, None].expand(shape),
                             generator)
    return sample_quantiles(draws.numpy(), quantiles)


def laws(b, length, dtype, seed):
    """Student-t parameters as the heads give them (ν >= 2, scale > 0), over several orders of magnitude."""
    g = torch.Generator().manual_seed(seed)
    df = 2.0 + torch.exp(4 * torch.rand(b, length, generator=g, dtype=dtype)) - 1.0
    loc = 100 * torch.randn(b, length, generator=g, dtype=dtype)
    scale = torch.exp(6 * torch.randn(b, length, generator=g, dtype=dtype))
    return df, loc, scale


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n_samples", [100, 37, 2, 1])
def test_quantiles_of_the_ranks_draws_are_the_sorted_draws_quantiles(dtype, n_samples):
    """Bit for bit the reference's quantiles, and the generator left where the reference leaves it, at the default
    levels and at others (0.0 and 1.0, the extreme ranks, and a half-way rank)."""
    df, loc, scale = laws(40, 6, dtype, seed=n_samples)
    for quantiles in (QUANTILES, (0.0, 0.25, 0.5, 1.0)):
        g, ref = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
        got = student_t_sample_quantiles(df, loc, scale, n_samples, g, quantiles)
        want = reference_quantiles(df, loc, scale, n_samples, ref, quantiles)
        assert same_bits(got, want)
        assert torch.equal(g.get_state(), ref.get_state())


def test_parameters_not_finite_or_not_positive_take_the_sorted_draws():
    """Laws with ν, loc or the scale nan or ±inf, ν <= 0, a scale of 0 (where 0 · t⁻¹(0) = nan) or below: the
    reference's quantiles, bit for bit (those laws sort all their draws)."""
    df, loc, scale = laws(4, 8, torch.float32, seed=1)
    bad = [float("nan"), float("inf"), -float("inf"), 0.0, -1.0]
    for k, v in enumerate(bad):
        df[0, k], loc[1, k], scale[2, k], scale[3, k] = max(v, -1.0) if k != 3 else -0.5, v, v, 0.0
    g, ref = torch.Generator().manual_seed(2), torch.Generator().manual_seed(2)
    got = student_t_sample_quantiles(df, loc, scale, 100, g)
    want = reference_quantiles(df, loc, scale, 100, ref)
    assert same_bits(got, want)
    assert not np.isfinite(want).all()  # the cases are there


def test_levels_ulps_apart_take_the_sorted_draws():
    """Samples whose levels sit a few float64 ulps apart around the quantiles' ranks (where ``stdtrit`` can swap
    the quantiles of adjacent levels) and exact ties, in float64 (no rounding to float32 hides a swap): the
    reference's quantiles of the same levels, bit for bit."""
    rng = np.random.default_rng(3)
    b, s, length = 200, 100, 3
    centre = rng.random((b, 1, length))
    u = centre + np.arange(-s // 2, s - s // 2)[None, :, None] * np.spacing(centre)  # S adjacent doubles
    u = np.take_along_axis(u, rng.permuted(np.tile(np.arange(s)[None, :, None], (b, 1, length)), axis=1), axis=1)
    u[0, 1] = u[0, 0]  # exact ties
    df, loc, scale = laws(b, length, torch.float64, seed=4)
    got = student_t_sample_quantiles_at(df, loc, scale, u)
    shape = (b, s, length)
    draws = student_t_draws(df[:, None].expand(shape), loc[:, None].expand(shape), scale[:, None].expand(shape),
                            torch.as_tensor(u))
    assert same_bits(got, sample_quantiles(draws.numpy()))


def test_every_sample_taking_the_sorted_draws_or_none_changes_no_quantile(monkeypatch):
    """The two ways to a sample's quantiles give the same bits: every sample sorted (a gap no two levels clear) and
    no sample sorted (a negative gap) both give the reference's quantiles of float32 laws."""
    df, loc, scale = laws(30, 6, torch.float32, seed=6)
    want = reference_quantiles(df, loc, scale, 100, torch.Generator().manual_seed(7))
    for gap in (1.0, -1.0):
        monkeypatch.setattr(student_t, "ORDER_GAP", gap)
        assert same_bits(student_t_sample_quantiles(df, loc, scale, 100, torch.Generator().manual_seed(7)), want)


EXTREME_DF = np.array([2.0, np.nextafter(2.0, 3.0), 2.0 + 1e-9, 2.5, 3.0, 7.3, 30.0, 1e3, 1e6, 1e10, 1e15, 1e20, 1e300])


def test_stdtrit_keeps_the_order_of_levels_the_order_gap_apart():
    """``stdtrit`` (the draws' inverse CDF) gives levels u < v with v - u > ORDER_GAP · v quantiles in their order,
    the property the quantiles of the ranks' draws rest on: over ν from 2 to 1e300 and the generator's levels u
    (multiples of 2^-53 from LEAST_ORDERED_LEVEL): uniform on (0, 1), on a log scale down to 2^-53 and up to
    1 - 2^-52, v the next double past u + ORDER_GAP · v (the closest such pair)."""
    rng = np.random.default_rng(8)
    u = np.concatenate([rng.random(40000), 2.0 ** -rng.uniform(0, 53, 20000), 1 - 2.0 ** -rng.uniform(1, 52, 20000)])
    u = np.round(u * 2.0 ** 53) * 2.0 ** -53
    u = u[(u >= LEAST_ORDERED_LEVEL) & (u < 1 - 4 * ORDER_GAP)]
    v = np.nextafter(u / (1 - ORDER_GAP), 1.0)
    assert np.all(v - u > ORDER_GAP * v) and np.all(v < 1)
    df = np.concatenate([np.resize(EXTREME_DF, len(u)), 2.0 + rng.exponential(10.0, len(u))])
    u, v = np.tile(u, 2), np.tile(v, 2)
    assert np.all(special.stdtrit(df, v) >= special.stdtrit(df, u))


def test_positive_levels_below_the_generators_take_the_sorted_draws():
    """Levels far below the generator's least positive one (1e-300 .. 1e-100, where ``stdtrit``'s quantiles swap at
    any gap) and 0: the reference's quantiles of the same levels, bit for bit."""
    rng = np.random.default_rng(12)
    b, s, length = 50, 100, 2
    u = 10.0 ** -rng.uniform(100, 300, (b, s, length))
    u[:, 0] = 0.0
    df, loc, scale = laws(b, length, torch.float64, seed=13)
    df[:] = 2.5
    got = student_t_sample_quantiles_at(df, loc, scale, u)
    shape = (b, s, length)
    draws = student_t_draws(df[:, None].expand(shape), loc[:, None].expand(shape), scale[:, None].expand(shape),
                            torch.as_tensor(u))
    assert same_bits(got, sample_quantiles(draws.numpy()))


@pytest.mark.parametrize("name", ["simple-ff", "dlinear", "itransformer"])
def test_direct_forecasters_path_quantiles_are_their_sampled_paths_quantiles(name):
    """``path_quantiles`` of simple-ff, DLinear and iTransformer (weights off their init; contexts with a padded
    front) is ``sample_quantiles`` of ``sample``'s paths, bit for bit, the generator left where ``sample`` leaves
    it; and ``evaluate`` (which takes ``path_quantiles``) scores the CRPS of those paths."""
    torch.manual_seed(9)
    model = make_model(name, 12, 4)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    g = torch.Generator().manual_seed(10)
    contexts = 5 + torch.rand(23, 12, generator=g) * 10
    contexts[0, :5] = UNOBSERVED
    targets = (5 + torch.rand(23, 4, generator=g) * 10).numpy().astype(np.float64)
    model.eval()
    g, ref = torch.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    got = model.path_quantiles(contexts, 100, g)
    paths = model.sample(contexts, 100, ref).numpy()
    assert same_bits(got, sample_quantiles(paths))
    assert torch.equal(g.get_state(), ref.get_state())
    crps = evaluate(model, contexts, targets, n_samples=100, generator=torch.Generator().manual_seed(11),
                    device=torch.device("cpu"))
    assert crps == crps_from_samples(targets, paths)
