"""Tied output gradients (training.tied_gradients) in both engines: DeepAR's hidden projections take their output
gradients from the input projection.

References are independent of the ties: vmap(grad) per-sample gradients (training.step.per_sample_gradients) and
each engine with its ties switched off (every output's gradient asked of autograd). Both engines regroup the factors
with a tie ([ih | hh] one group: one norm on the inputs side by side, one clipped-sum product split into the two
weights), so each agrees with itself without ties to rounding (float64 1e-10, float32 1e-4 relative); the stacked
engine's join is checked at K = 3 on each norm route. A declared tie that does not hold (a follower scaled before
the sum) is shown to break the reference comparison: the tests would catch it.
"""
from collections import Counter

import pytest
import torch
from torch import nn

from tsdp.training import factored, stacked
from tsdp.training.clipping import clip_factors, gradient_norms, sample_values
from tsdp.training.deepar import DeepAR, _LSTM
from tsdp.training.factored import factored_clipped_sum
from tsdp.training.linear_factors import NormRoute, norm_route
from tsdp.training.stacked import StackedModel
from tsdp.training.step import per_sample_gradients
from tsdp.training.tied_gradients import applied_ties, declared_ties

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

TOLERANCE = {torch.float32: 1e-4, torch.float64: 1e-10}


def deepar_case(dtype, with_covariates, model_type=DeepAR, batch=5, seed=0):
    """A DeepAR (2 layers, P = 24 unrolled positions) with every parameter moved off its init, a padded context."""
    torch.manual_seed(seed)
    model = model_type(22, 6, hidden=8, covariates=2, lags=(1, 2, 5)).to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    g = torch.Generator().manual_seed(seed + 1)
    context = (5 + 2 * torch.randn(batch, 22, generator=g)).to(dtype)
    context[0, :8] = 0.0  # padded front
    forecast = (5 + 2 * torch.randn(batch, 6, generator=g)).to(dtype)
    covariates = (torch.rand(batch, 28, 2, generator=g) - 0.5).to(dtype) if with_covariates else None
    return model, [context, forecast] + ([covariates] if with_covariates else [])


class StepByStepDeepAR(DeepAR):
    """DeepAR whose teacher-forced loss advances the LSTM one position at a time (:meth:`_LSTM.step`): ``ih`` is
    called per position, so the declared ties do not fit the calls and the engines must fall back."""

    def _unroll(self, x, state, whole=None):
        outputs = []
        for p in range(x.shape[1]):
            h, state = self.rnn.step(x[:, p], state, whole)
            outputs.append(h)
        return torch.stack(outputs, dim=1), state


class Recurrence(nn.Module):
    """A one-layer recurrence ih once on (B, P, features), hh per position: h_p = tanh(ih(x)[:, p] + scale ·
    hh(h_{p-1})), loss the squared error of head(h) against the forecast's first value per position. It declares
    (hh, ih) tied, which holds for scale 1 only: otherwise hh's output gradient is scale times ih's."""

    def __init__(self, scale: float, features: int = 2, hidden: int = 6):
        super().__init__()
        self.scale, self.features, self.hidden = scale, features, hidden
        self.ih, self.hh, self.head = nn.Linear(features, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, 1)

    def tied_output_gradients(self):
        return [(self.hh, self.ih)]

    def forward(self, context, forecast):
        x = torch.stack([context, context.square() / 10, torch.sin(context), torch.cos(context)][:self.features], -1)
        h, outputs = context.new_zeros(context.shape[0], self.hidden), []
        for projected in self.ih(x).unbind(1):
            h = torch.tanh(projected + self.scale * self.hh(h))
            outputs.append(h)
        return (self.head(torch.stack(outputs, dim=1))[..., 0] - forecast[:, :1]).square().mean(-1)


def untie(monkeypatch):
    """Switch every declared tie off: every engine then asks autograd for every output's gradient."""
    monkeypatch.setattr(_LSTM, "tied_output_gradients", lambda self: [])
    monkeypatch.setattr(Recurrence, "tied_output_gradients", lambda self: [])


def spy(monkeypatch, module):
    """Record the ties each call of the engine ``module`` applies."""
    seen = []

    def recorded(ties, outputs):
        applied = applied_ties(ties, outputs)
        seen.append(len(applied))
        return applied

    monkeypatch.setattr(module, "applied_ties", recorded)
    return seen


def reference(model, inputs):
    """vmap(grad) per-sample gradients and their norms."""
    grads = per_sample_gradients(model, inputs[0], inputs[1], covariates=inputs[2] if len(inputs) > 2 else None)
    return grads, gradient_norms(grads, 1)


def clipped_reference(grads, norms, clip):
    factor = clip_factors(norms, clip, next(iter(grads.values())).dtype, sample_values(grads, 1))
    return {n: torch.einsum("m,m...->...", factor, g) for n, g in grads.items()}


def assert_grads_close(got, want, dtype, msg=""):
    tol = TOLERANCE[dtype]
    for n, w in want.items():
        torch.testing.assert_close(got[n], w, rtol=tol, atol=tol * float(w.abs().max()), msg=f"{msg} {n}")


def factored_case(model, inputs, clip):
    return factored_clipped_sum(model, inputs[0], inputs[1], clip, covariates=inputs[2] if len(inputs) > 2 else None)


def stacked_sums(models, inputs, weight, clip):
    """The K models' stacked clipped sums {name: (K, *shape)} of the cell-major ``inputs`` (K·M rows), rows weighted."""
    stack = StackedModel(models)
    out = {n: torch.zeros_like(p) for n, p in stack.parameters.items()}
    stack.clipped_sums(inputs, clip, weight, out)
    return out


def stacked_case(model, inputs, clip):
    """The model in a stack of one: its clipped sum (row 0 of the stacked sums)."""
    out = stacked_sums([model], inputs, torch.ones(inputs[0].shape[0], dtype=inputs[0].dtype), clip)
    return {n: v[0] for n, v in out.items()}


def routes_taken(monkeypatch):
    """Record (t, i, o, route) of every norm route the stacked engine chooses."""
    taken = []

    def recorded(positions, inputs, outputs):
        route = norm_route(positions, inputs, outputs)
        taken.append((positions, inputs, outputs, route))
        return route

    monkeypatch.setattr(stacked, "norm_route", recorded)
    return taken


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_covariates", [False, True])
def test_factored_engine_with_ties_equals_without_and_vmap(dtype, with_covariates, monkeypatch):
    model, inputs = deepar_case(dtype, with_covariates)
    grads, ref_norms = reference(model, inputs)
    clip = float(ref_norms.median())  # some windows clipped, some not
    seen = spy(monkeypatch, factored)
    tied_sum, tied_norms = factored_case(model, inputs, clip)
    assert seen == [2]  # both layers' hh take ih's gradients
    untie(monkeypatch)
    free_sum, free_norms = factored_case(model, inputs, clip)
    assert seen == [2, 0]
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(tied_norms, free_norms, rtol=tol, atol=0)
    torch.testing.assert_close(tied_norms, ref_norms, rtol=tol, atol=0)
    want = clipped_reference(grads, ref_norms, clip)
    assert_grads_close(tied_sum, free_sum, dtype, "tied against untied")
    assert_grads_close(tied_sum, want, dtype, "tied against vmap")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_covariates", [False, True])
def test_stacked_engine_with_ties_equals_without_and_vmap(dtype, with_covariates, monkeypatch):
    """With its ties each LSTM layer's ``hh`` joins ``ih``'s group: one norm route, on the inputs side by side
    (width i_ih + i_hh), where without ties each takes its own."""
    model, inputs = deepar_case(dtype, with_covariates)
    grads, ref_norms = reference(model, inputs)
    clip = float(ref_norms.median())
    seen, taken = spy(monkeypatch, stacked), routes_taken(monkeypatch)
    tied_sum = stacked_case(model, inputs, clip)
    assert seen == [2]
    joined = Counter(i for _, i, _, _ in taken)
    untie(monkeypatch)
    taken.clear()
    free_sum = stacked_case(model, inputs, clip)
    assert seen == [2, 0]
    pairs = [(cell["ih"].in_features, cell["hh"].in_features) for cell in model.rnn.cells]
    assert joined == (Counter(i for _, i, _, _ in taken) - Counter(i for pair in pairs for i in pair)
                      + Counter(sum(pair) for pair in pairs))
    assert_grads_close(tied_sum, free_sum, dtype, "tied against untied")
    assert_grads_close(tied_sum, clipped_reference(grads, ref_norms, clip), dtype, "tied against vmap")


ROUTES = {NormRoute.ONE_POSITION: (1, 2, 6), NormRoute.GHOST: (3, 4, 16), NormRoute.MATERIALISED: (9, 2, 6)}
"""(positions, features, hidden) of a :class:`Recurrence` whose joined group [ih | hh] takes each norm route."""


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("route", list(ROUTES))
def test_a_stack_joins_each_tie_on_every_norm_route(route, dtype, monkeypatch):
    """K = 3 recurrences stacked: the tie's joined group [ih | hh] (one norm over both weights and both biases on the
    inputs side by side, one clipped-sum product split into the two weights, one bias sum added to both biases) on
    each norm route gives every model its vmap per-window clipped sum (rows weighted, a padded slot 0, half the
    windows clipped), and the stack with its ties switched off (ih and hh each their own factors) the same to
    rounding."""
    t, features, hidden = ROUTES[route]
    k, m = 3, 5
    models = []
    for j in range(k):
        torch.manual_seed(50 + j)
        models.append(Recurrence(1.0, features, hidden).to(dtype))
    g = torch.Generator().manual_seed(t)
    context, forecast = torch.randn(k, m, t, generator=g, dtype=dtype), torch.randn(k, m, 3, generator=g, dtype=dtype)
    weight = torch.rand(k, m, generator=g, dtype=dtype) + 0.5
    weight[1, -1] = 0.0
    per = [per_sample_gradients(models[j], context[j], forecast[j]) for j in range(k)]
    norms = torch.stack([gradient_norms(p, 1) for p in per])
    clip = float(norms.flatten().median())
    assert bool((norms[weight > 0] > clip).any()) and bool((norms[weight > 0] < clip).any())
    factors = [weight[j] * clip_factors(norms[j], clip, dtype, sample_values(per[j], 1)) for j in range(k)]
    want = {n: torch.stack([torch.einsum("m,m...->...", factors[j], per[j][n]) for j in range(k)]) for n in per[0]}
    inputs = [context.reshape(k * m, t), forecast.reshape(k * m, 3)]
    seen, taken = spy(monkeypatch, stacked), routes_taken(monkeypatch)
    tied = stacked_sums(models, inputs, weight.reshape(-1), clip)
    assert seen == [1] and (t, features + hidden, hidden, route) in taken
    assert_grads_close(tied, want, dtype, f"{route.value}, tied against vmap")
    untie(monkeypatch)
    free = stacked_sums(models, inputs, weight.reshape(-1), clip)
    assert seen == [1, 0]
    assert_grads_close(tied, free, dtype, f"{route.value}, tied against untied")


@pytest.mark.parametrize("engine", ["factored", "stacked"])
def test_calls_position_by_position_fall_back_exactly(engine, monkeypatch):
    """A loss through :meth:`_LSTM.step` calls ``ih`` per position: no tie applies, and the sums are still exact."""
    model, inputs = deepar_case(torch.float64, True, model_type=StepByStepDeepAR)
    assert len(declared_ties(model)) == 2
    grads, ref_norms = reference(model, inputs)
    clip = float(ref_norms.median())
    seen = spy(monkeypatch, factored if engine == "factored" else stacked)
    got = (factored_case(model, inputs, clip)[0] if engine == "factored" else stacked_case(model, inputs, clip))
    assert seen == [0]
    assert_grads_close(got, clipped_reference(grads, ref_norms, clip), torch.float64, engine)


def recurrence_case(scale):
    torch.manual_seed(3)
    model = Recurrence(scale).double()
    g = torch.Generator().manual_seed(4)
    inputs = [torch.randn(6, 9, generator=g, dtype=torch.float64),
              torch.randn(6, 3, generator=g, dtype=torch.float64)]
    return model, inputs


@pytest.mark.parametrize("engine", ["factored", "stacked"])
def test_a_tie_that_holds_is_exact_and_a_wrong_tie_fails_the_reference(engine, monkeypatch):
    """The same recurrence declares (hh, ih) tied: at scale 1 it holds and the engine equals vmap (1e-10); at scale 2
    it does not (hh's output gradient is twice ih's), the structure still fits, and the engine's clipped sum is
    wrong: the reference comparison above fails for it. Without the tie the scale-2 model is exact again."""
    run = factored_case if engine == "factored" else stacked_case
    seen = spy(monkeypatch, factored if engine == "factored" else stacked)
    for scale in (1.0, 2.0):
        model, inputs = recurrence_case(scale)
        grads, ref_norms = reference(model, inputs)
        clip = float(ref_norms.median())
        got = run(model, inputs, clip)
        got = got[0] if engine == "factored" else got
        want = clipped_reference(grads, ref_norms, clip)
        if scale == 1.0:
            assert_grads_close(got, want, torch.float64, "holding tie")
        else:
            with pytest.raises(AssertionError):
                assert_grads_close(got, want, torch.float64, "wrong tie")
    assert seen == [1, 1]
    untie(monkeypatch)
    got = run(model, inputs, clip)
    assert seen == [1, 1, 0]
    assert_grads_close(got[0] if engine == "factored" else got, want, torch.float64, "wrong tie switched off")


def test_applied_ties_require_the_tied_structure():
    """One leader call (B, P, o) and P follower calls (B, o); anything else, or an ambiguous declaration, is left out."""
    leader, follower, other = nn.Linear(2, 3), nn.Linear(3, 3), nn.Linear(3, 3)
    y = torch.zeros(4, 5, 3)
    calls = {id(leader): [[y]], id(follower): [[torch.zeros(4, 3)]] * 5, id(other): [[torch.zeros(4, 3)]] * 5}
    assert applied_ties([(follower, leader)], calls) == {id(follower): id(leader)}
    assert applied_ties([(follower, leader), (other, leader)], calls) == {id(follower): id(leader), id(other): id(leader)}
    assert applied_ties([(follower, leader), (follower, other)], calls) == {}  # two leaders declared
    assert applied_ties([(follower, leader), (leader, other)], calls) == {}  # a leader that follows
    assert applied_ties([(follower, leader)], {**calls, id(follower): [[torch.zeros(4, 3)]] * 4}) == {}  # P = 5
    assert applied_ties([(follower, leader)], {**calls, id(leader): [[y], [y]]}) == {}  # two leader calls
    assert applied_ties([(follower, leader)], {**calls, id(leader): [[torch.zeros(4, 3)]]}) == {}  # 2-D leader
    assert applied_ties([(follower, leader)], {**calls, id(follower): [[torch.zeros(4, 2)]] * 5}) == {}  # width
    assert applied_ties([(follower, leader)], {id(leader): [[y]]}) == {}  # follower not called


def test_declared_ties_are_found_on_classes_and_instances():
    """Ties declared by a class's method and by a function set on one instance are both found, in module order, and
    a module whose class does not declare (a plain ``nn.Linear``, ``nn.Sequential``) adds none: the same pairs as
    ``getattr(module, 'tied_output_gradients', None)`` on every module, the lookup this one replaces."""
    first, second = Recurrence(1.0), Recurrence(1.0)
    plain = nn.Linear(6, 6)
    plain.tied_output_gradients = lambda: [(second.head, plain)]  # on the instance: a module's __dict__
    model = nn.Sequential(first, nn.Sequential(plain, nn.ReLU()), second)
    want = [(first.hh, first.ih), (second.head, plain), (second.hh, second.ih)]
    by_getattr = [tie for module in model.modules()
                  for tie in (getattr(module, "tied_output_gradients", None) or (lambda: []))()]
    got = declared_ties(model)
    assert [(id(f), id(l)) for f, l in got] == [(id(f), id(l)) for f, l in want]
    assert [(id(f), id(l)) for f, l in by_getattr] == [(id(f), id(l)) for f, l in want]


def test_factored_engine_follows_a_swapped_in_declaring_module(monkeypatch):
    """The factored engine reads the declaring modules from its cached plan of the model: after the recurrence inside
    a wrapper is replaced by a new one, the new module's tie is the one applied (a module list cached without
    invalidation would offer the old module's tie, which matches no recorded call, and apply none), and the clipped
    sum equals vmap's (1e-10) before and after."""

    class Wrapper(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, context, forecast):
            return self.inner(context, forecast)

    seen = spy(monkeypatch, factored)
    model, inputs = recurrence_case(1.0)
    wrapper = Wrapper(model)
    for inner in (model, Recurrence(1.0).double()):
        wrapper.inner = inner
        grads, ref_norms = reference(wrapper, inputs)
        clip = float(ref_norms.median())
        got, _ = factored_case(wrapper, inputs, clip)
        assert_grads_close(got, clipped_reference(grads, ref_norms, clip), torch.float64, "swapped")
    assert seen == [1, 1]
