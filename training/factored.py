"""Algorithm 2's clipped sum from layer factors: exact per-sample clipping at about the cost of one backward pass.

Algorithm 2 needs ĝ = Σ_i g_i / max(1, ||g_i||_2 / C) (paper Algorithm 2, lines 4-7), where
g_i is the gradient of window i's loss alone. :func:`training.step.per_sample_gradients`
gets every g_i by vmap(grad) and writes out a (M, P) tensor; for the forecasting models
that costs 3-7 batched backward passes. Here g_i is never assembled:

1. One batched forward records every call of a module that owns trainable parameters:
   its inputs and its output y.
2. One backward of Σ_i L_i gives ∂(Σ_j L_j)/∂y for every recorded output. Its row i is
   ∂L_i/∂y_i, because the models never mix samples (no batch statistics; the same
   assumption vmap's per-sample semantics encode).
3. From these factors, per parameter-owning module:

   - ``nn.Linear`` (y = a Wᵀ + b; any number of calls, any middle dims, stacked into t):
     the per-sample gradient is G_i = Σ_t g_it a_itᵀ and Σ_t g_it for the bias.
     ||G_i||² is ||g_i||²·||a_i||² at one position; otherwise the cheaper of
     Σ_{t,t'} (a_it·a_it')(g_it·g_it') (the ghost norm: Goodfellow 2015, "Efficient
     per-example gradient computations"; Li et al. 2022, "Large language models can be
     strong differentially private learners", Sec. 4) or materialising G_i (cost
     t²(i + o) against t·i·o per sample). The clipped sum Σ_i c_i G_i is then one matrix
     product over all (sample, position) rows with row weights c_i, from the stored
     factors (the book-keeping trick of Bu et al. 2023: no second backward pass).
     Linears whose outputs receive the same gradient tensors (an LSTM gate's
     x·W_ihᵀ + h·W_hhᵀ) share one set of factors: [W_ih | W_hh] on [x | h].
   - a module type with a registered per-sample rule (:func:`register_per_sample_rule`;
     ``nn.LayerNorm`` here): its
     small per-sample gradients in closed form from (inputs, g).
   - any other module: its per-sample parameter gradients by torch.func, vmap over samples
     of grad(p ↦ ⟨module(p, x_i), g_i⟩), the torch.func per-sample recipe on one layer
     (one transform for all such modules of the model).

4. The squared norms add up over modules to ||g_i||², the clip factors c_i follow
   (Algorithm 2, line 6), and the clipped sum is taken with them: added in place into the
   step's noise buffer by :func:`factored_noisy_gradient` (Algorithm 2, line 8, fused).
   The large factors (stacked positions, materialised G_i) live in per-thread buffers
   reused from step to step (:class:`_Workspace`), not in fresh allocations.

The model's structure (its parameter-owning modules and parameter names) is found once and
cached per model (:func:`_plan`), checked each step by one walk over its modules: at the
batch sizes of training, a step's Python overhead weighs as much as its arithmetic.

The result equals :func:`training.step.clipped_sum` of vmap(grad) per-sample
gradients up to float rounding (tests/training/test_factored.py checks it, and checks the
norms against a per-example autograd loop, for all four models). It is exact per-sample
clipping, not an approximation: the sensitivity of ĝ is C, as Algorithm 2 requires.
"""
from __future__ import annotations

import threading
import weakref
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from .clipping import Grads, clip_factors, squared_norms
from .noise import gaussian_noise


class FactoredGradientError(ValueError):
    """The model is outside what the factored engine handles (use the vmap engine)."""


PerSampleRule = Callable[[nn.Module, tuple, List[torch.Tensor]], Grads]
PER_SAMPLE_RULES: Dict[type, PerSampleRule] = {}


def register_per_sample_rule(module_type: type):
    """Decorator: ``rule(module, inputs, output_grads) -> {local parameter name: (M, *shape)}`` for one call.

    ``output_grads`` holds ∂L_i/∂y_i for each output tensor. A rule must equal the vmap
    per-sample gradient of the module's own trainable parameters (the tests check each).
    """
    def register(rule: PerSampleRule) -> PerSampleRule:
        PER_SAMPLE_RULES[module_type] = rule
        return rule
    return register


@register_per_sample_rule(nn.LayerNorm)
def _layer_norm_rule(module: nn.LayerNorm, inputs: tuple, output_grads: List[torch.Tensor]) -> Grads:
    """y = x̂ ⊙ w + b with x̂ = (x - mean) / sqrt(var + eps): per sample Σ_t g_t ⊙ x̂_t and Σ_t g_t."""
    x, g = inputs[0].detach(), output_grads[0]
    sample_dims = tuple(range(1, x.dim() - len(module.normalized_shape)))

    def per_sample(t: torch.Tensor) -> torch.Tensor:  # torch's sum over dims () would reduce every dimension
        return t.sum(sample_dims) if sample_dims else t

    out = {}
    if module.weight is not None and module.weight.requires_grad:
        x_hat = F.layer_norm(x, module.normalized_shape, eps=module.eps)
        out["weight"] = per_sample(g * x_hat)
    if module.bias is not None and module.bias.requires_grad:
        out["bias"] = per_sample(g)
    return out


def _owners(model: nn.Module) -> List[Tuple[str, nn.Module, Dict[str, nn.Parameter]]]:
    """(qualified name, module, its own trainable parameters) of every module that owns one.

    A parameter shared by two modules is refused: its per-sample gradient is the sum of both
    contributions, whose squared norms do not add, so the factored norms would be wrong.
    """
    owners, seen = [], set()
    for name, module in model.named_modules():
        own = {k: p for k, p in module._parameters.items() if p is not None and p.requires_grad}
        if not own:
            continue
        for p in own.values():
            if id(p) in seen:
                raise FactoredGradientError(f"a parameter of {name or 'the model'} is shared with another module; "
                                            "the factored engine needs untied parameters (use engine='vmap')")
            seen.add(id(p))
        owners.append((name, module, own))
    return owners


def _signature(model: nn.Module) -> list:
    """Every module reachable from ``model`` and each parameter slot's (id, requires_grad), in a fixed order.

    Equal signatures mean the same parameter-owning modules and the same trainable parameters:
    a plan holds its owners and parameters alive, so their ids cannot be reused meanwhile.
    """
    out, stack = [], [model]
    while stack:
        module = stack.pop()
        out.append(id(module))
        for p in module._parameters.values():
            out.append(None if p is None else (id(p), p.requires_grad))
        stack.extend(module._modules.values())
    return out


class _Plan:
    """What the factored engine needs of a model's structure, found once (:func:`_plan`): its parameter-owning
    modules (:func:`_owners`) and their trainable parameters by qualified name (``named_parameters``' names)."""

    def __init__(self, model: nn.Module, signature: list):
        self.signature = signature
        owners = _owners(model)
        # the model itself is the cache's weak key: holding it here would keep it alive, so None stands for it
        self._owners = [(name, None if module is model else module, own) for name, module, own in owners]
        self.params = {f"{name}.{k}" if name else k: p for name, _, own in owners for k, p in own.items()}

    def owners(self, model: nn.Module) -> List[Tuple[str, nn.Module, Dict[str, nn.Parameter]]]:
        """:func:`_owners` of ``model`` (the model this plan was made for)."""
        return [(name, model if module is None else module, own) for name, module, own in self._owners]


_PLANS: "weakref.WeakKeyDictionary[nn.Module, _Plan]" = weakref.WeakKeyDictionary()


def _plan(model: nn.Module) -> _Plan:
    """``model``'s plan, rebuilt when its signature changed (a module or parameter added, removed, replaced,
    frozen or unfrozen): one walk over the modules per step instead of named_modules' with its names."""
    signature = _signature(model)
    plan = _PLANS.get(model)
    if plan is None or plan.signature != signature:
        plan = _PLANS[model] = _Plan(model, signature)
    return plan


def trainable_parameters(model: nn.Module) -> Dict[str, nn.Parameter]:
    """The model's trainable parameters by qualified name, in ``named_parameters`` order, from its cached plan.

    Raises :class:`FactoredGradientError` when a parameter is shared between modules (not cached then).
    The mapping is the plan's own: read it, do not modify it.
    """
    return _plan(model).params


def _tensors(output) -> List[torch.Tensor]:
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in output):
        return list(output)
    raise FactoredGradientError(f"a parameter-owning module returned {type(output).__name__}; "
                                "the factored engine needs a tensor or a tuple of tensors")


class _Recorder:
    """Records (inputs, outputs) of every call of the parameter-owning modules, for the duration of a ``with``.

    Each owner's ``forward`` is wrapped on the instance (restored on exit) rather than given a
    forward hook: no hook dispatch per call (about 8 µs each; DeepAR makes 220 such calls per
    forward), and the output recorded is the forward's own, before any user hook rewrites it,
    which is the output whose gradient the parameters' factors need.
    """

    def __init__(self, batch: int, owners: List[Tuple[str, nn.Module, Dict[str, nn.Parameter]]]):
        self.batch = batch
        self.owners = owners
        self.calls: Dict[int, List[Tuple[tuple, List[torch.Tensor]]]] = {id(m): [] for _, m, _ in self.owners}
        self.versions: List[Tuple[nn.Module, List[torch.Tensor], List[int]]] = []
        self.saved: List[Tuple[nn.Module, Optional[Callable]]] = []

    def _recording(self, module: nn.Module, forward: Callable) -> Callable:
        calls, versions, batch = self.calls[id(module)], self.versions, self.batch

        def forward_and_record(*args, **kwargs):
            if kwargs:
                raise FactoredGradientError(f"{type(module).__name__} was called with keyword arguments; "
                                            "the factored engine records positional tensors only")
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            for a in tensors:
                if a.dim() == 0 or a.shape[0] != batch:
                    raise FactoredGradientError(
                        f"{type(module).__name__} got an input of shape {tuple(a.shape)} whose first dim is not the "
                        f"batch ({batch}); the factored engine needs sample-major inputs")
            output = forward(*args)
            outputs = _tensors(output)
            calls.append((args, outputs))
            tensors += outputs
            versions.append((module, tensors, [t._version for t in tensors]))
            return output

        return forward_and_record

    def check_unmodified(self) -> None:
        """Refuse when a recorded input or output was changed in place after its call (its factors would be stale)."""
        for module, tensors, recorded in self.versions:
            if [t._version for t in tensors] != recorded:
                raise FactoredGradientError(f"an input or output of {type(module).__name__} was modified in place after "
                                            "the call; the factored engine needs out-of-place ops (use engine='vmap')")

    def __enter__(self):
        # the instance attribute set directly: Module.__setattr__'s parameter/buffer/module checks cost more
        # than the forward of a small layer, and a plain function is none of those
        self.saved = [(m, m.__dict__.get("forward")) for _, m, _ in self.owners]
        for m, _ in self.saved:
            m.__dict__["forward"] = self._recording(m, m.forward)
        return self

    def __exit__(self, *exc):
        for m, own_forward in self.saved:
            if own_forward is None:
                del m.__dict__["forward"]
            else:
                m.__dict__["forward"] = own_forward
        self.saved = []


class _Factors:
    """Per-sample squared gradient norms of some parameters, and how to add their weighted sum into buffers."""

    def __init__(self, sq_norms: torch.Tensor, add_weighted_sum: Callable[[torch.Tensor, float, Grads], None]):
        self.sq_norms = sq_norms  # (M,), a fresh tensor the caller may accumulate into
        self.add_weighted_sum = add_weighted_sum  # (c (M,), w, out) -> out[name] += w Σ_i c_i g_i, in place


def _sq_norms(x: torch.Tensor, m: int) -> torch.Tensor:
    """||x_i||² over all but the first dim, (M,): one dot product per sample (no square root to square again)."""
    flat = x if x.dim() == 2 else x.reshape(m, -1)
    return torch.linalg.vecdot(flat, flat)


class _Workspace(threading.local):
    """Per-thread buffers for a step's large factors (stacked a and g, materialised G_i), reused by the next step.

    A fresh multi-megabyte tensor per step costs page faults (the C allocator maps and
    unmaps it each time): 14 ms of DeepAR's 100 ms step at batch 256 on CPU. Buffers are
    keyed by role, grown when a batch needs more rows and sliced to the batch; those a step
    did not use are dropped when it ends, so the memory held follows the model in use.
    Nothing read from them outlives the step that wrote them.
    """

    def __init__(self):
        self.buffers: Dict[tuple, torch.Tensor] = {}
        self.used: set = set()

    def take(self, key: tuple, shape: Tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        """An uninitialised (shape) tensor of ``like``'s dtype and device, rows 0..shape[0] of the ``key`` buffer."""
        buf = self.buffers.get(key)
        if (buf is None or buf.shape[1:] != shape[1:] or buf.shape[0] < shape[0] or buf.dtype != like.dtype
                or buf.device != like.device):
            buf = self.buffers[key] = like.new_empty(shape)
        self.used.add(key)
        return buf[: shape[0]]

    def end_step(self) -> None:
        for key in set(self.buffers) - self.used:
            del self.buffers[key]
        self.used = set()


_WORKSPACE = _Workspace()


def _stack_positions(tensors: List[torch.Tensor], m: int, key: tuple) -> torch.Tensor:
    """The calls' (M, *mid, d) tensors as one (M, t, d): every middle position of every call is a position t.

    One call of a 2-D (M, d) tensor is returned as it is: one position, no middle dim.
    """
    if len(tensors) == 1 and tensors[0].dim() == 2:
        return tensors[0]
    flat = [x.reshape(m, -1, x.shape[-1]) for x in tensors]
    if len(flat) == 1:
        return flat[0]
    shape = (m, sum(x.shape[1] for x in flat), flat[0].shape[-1])
    return torch.cat(flat, dim=1, out=_WORKSPACE.take(key, shape, flat[0]))


def _rows(x: torch.Tensor) -> torch.Tensor:
    """An (M, d) or (M, t, d) factor as its (M·t, d) rows, one per (sample, position); 2-D as it is."""
    return x if x.dim() == 2 else x.reshape(-1, x.shape[-1])


def _same_gradients(out_grads) -> tuple:
    """A key equal for two modules exactly when their output gradients are the same tensors, call by call."""
    return tuple((g.data_ptr(), g.shape, g.stride()) for gy in out_grads for g in gy)


def _linear_factors(members: List[Tuple[str, nn.Linear, list]], out_grads) -> _Factors:
    """nn.Linear: G_i = Σ_t g_it a_itᵀ; ||G_i||² by the cheapest exact route, Σ_i c_i G_i by one matrix product.

    ``members`` are (name, module, calls) of linears whose outputs received the SAME
    gradient tensors call by call (``out_grads``), as x·W_ihᵀ + h·W_hhᵀ in an LSTM gate:
    their weights act as one linear [W¹ | W² | ...] on the concatenated inputs
    [a¹ | a² | ...], so one set of factors serves them all (exact: the blocks of one G_i).
    Routes for the norm (t positions per sample, over all calls): t = 1, ||a_i||²·||g_i||²;
    the ghost norm Σ_{t,t'} (a_it·a_it')(g_it·g_it') when t²(i + o) < t·i·o; otherwise G_i
    itself by one batched product (then the clipped sum is c·G, a matrix-vector product).
    Without G_i, the clipped sum is ONE product over all (sample, position) rows with the
    row weights c_i (the book-keeping trick of Bu et al. 2023, "Differentially private
    optimization on large model at small cost": no second backward pass).
    """
    m = out_grads[0][0].shape[0]
    tag = tuple(name for name, _, _ in members)
    g = _stack_positions([gy[0] for gy in out_grads], m, (tag, "g"))
    prefixes = [f"{name}." if name else "" for name, _, _ in members]
    own = [mod._parameters for _, mod, _ in members]  # the dict itself: Module.__getattr__ is slow Python
    weights = [(prefix + "weight", p["weight"].shape[1]) for prefix, p in zip(prefixes, own) if p["weight"].requires_grad]
    biases = [prefix + "bias" for prefix, p in zip(prefixes, own) if p["bias"] is not None and p["bias"].requires_grad]
    inputs = [_stack_positions([args[0] for args, _ in calls], m, (name, "a"))
              for (name, _, calls), p in zip(members, own) if p["weight"].requires_grad]
    if len(inputs) > 1:  # the members' inputs side by side, (M, i¹ + i² + ...) or (M, t, i¹ + i² + ...)
        shape = (*g.shape[:-1], sum(x.shape[-1] for x in inputs))
        a = torch.cat(inputs, dim=-1, out=_WORKSPACE.take((tag, "a"), shape, g))
    else:
        a = inputs[0] if inputs else None
    t, o = g.shape[1] if g.dim() == 3 else 1, g.shape[-1]
    i = 0 if a is None else a.shape[-1]
    per_sample = None  # G_i flattened, (M, i·o), when materialising it is the cheaper way to its norm
    if t == 1:  # one position: ||G_i||² = ||a_i||²·||g_i||², each bias adds ||g_i||²
        if g.dim() == 3:  # (M, o) and (M, i) from here
            g = g.reshape(m, o)
            a = None if a is None else a.reshape(m, i)
        bias_grad = g if biases else None
        sq_g, nb = _sq_norms(g, m), len(biases)
        if a is None:
            sq = sq_g.mul_(nb)
        elif nb == 1:  # the usual Linear: ||g||² ||a||² + ||g||² in one op
            sq = torch.addcmul(sq_g, sq_g, _sq_norms(a, m))
        else:
            sq = sq_g.mul_(_sq_norms(a, m).add_(nb))
    else:
        bias_grad = g.sum(1) if biases else None  # the same Σ_t g_it for every member's bias
        sq = _sq_norms(bias_grad, m).mul_(len(biases)) if biases else g.new_zeros(m)
        if a is not None and t * (i + o) < i * o:  # ghost norm: O(M t² (i + o)) against O(M t i o)
            ghost = torch.linalg.vecdot(torch.bmm(a, a.transpose(1, 2)).reshape(m, -1),
                                        torch.bmm(g, g.transpose(1, 2)).reshape(m, -1))
            sq = sq.add_(ghost.clamp_min_(0))  # ||G_i||² ≥ 0: rounding must not take the total below
        elif a is not None:
            # G_i or G_iᵀ, whichever puts the longer side last: the faster operand order for CPU bmm (2-4x)
            left, right = (a, g) if i <= o else (g, a)
            per_sample = torch.bmm(left.transpose(1, 2), right, out=_WORKSPACE.take(
                (tag, "G"), (m, left.shape[2], right.shape[2]), g)).reshape(m, i * o)
            sq = sq.add_(_sq_norms(per_sample, m))

    def add_clipped_linear_sum(c: torch.Tensor, w: float, out: Grads) -> None:
        g_rows_t = None  # gᵀ over all (sample, position) rows, when taken: at one position, also the bias's
        if a is not None:
            dest = out[weights[0][0]] if len(weights) == 1 else g.new_zeros(o, i)
            if per_sample is not None:
                summed = per_sample.T @ c
                dest.add_(summed.view(i, o).T if i <= o else summed.view(o, i), alpha=w)
            else:  # one product over all (sample, position) rows, the smaller factor's rows scaled by c
                scale = c[:, None] if t == 1 else c[:, None, None]
                if i <= o:
                    g_rows_t = _rows(g).T
                    dest.addmm_(g_rows_t, _rows(a * scale), alpha=w)
                else:
                    dest.addmm_(_rows(g * scale).T, _rows(a), alpha=w)
            if len(weights) > 1:
                for (key, _), block in zip(weights, dest.split([width for _, width in weights], dim=1)):
                    out[key].add_(block)  # w is in dest already
        if bias_grad is not None:
            bias_grad_t = g_rows_t if t == 1 and g_rows_t is not None else bias_grad.T
            for key in biases:
                out[key].addmv_(bias_grad_t, c, alpha=w)

    return _Factors(sq, add_clipped_linear_sum)


def _materialised_factors(per_sample: Grads) -> _Factors:
    """Factors of small per-sample gradients held in full, {qualified name: (M, *shape)}."""
    def add(c: torch.Tensor, w: float, out: Grads) -> None:
        for k, g in per_sample.items():
            out[k].view(-1).addmv_(g.reshape(g.shape[0], -1).T, c, alpha=w)

    return _Factors(squared_norms(per_sample, 1), add)


def _rule_gradients(name: str, module: nn.Module, calls, out_grads) -> Grads:
    """A registered rule's per-sample gradients, summed over the module's calls, {qualified name: (M, *shape)}."""
    rule = PER_SAMPLE_RULES[type(module)]
    total: Grads = {}
    for (args, _), gy in zip(calls, out_grads):
        for k, g in rule(module, args, gy).items():
            key = f"{name}.{k}" if name else k
            total[key] = total[key] + g if key in total else g
    return total


def _vmap_gradients(owners) -> Grads:
    """Modules without a rule, all at once: per-sample gradients of their own parameters by one vmap over
    samples of grad(p ↦ Σ_calls ⟨module(p, x_i), g_i⟩), {qualified name: (M, *shape)}."""
    params = {f"{name}.{k}" if name else k: p.detach()
              for name, mod, _, _ in owners for k, p in mod._parameters.items() if p is not None and p.requires_grad}
    locals_of = [{k: f"{name}.{k}" if name else k for k, p in mod._parameters.items() if p is not None and p.requires_grad}
                 for name, mod, _, _ in owners]
    args = tuple(tuple(tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in call_args)
                       for call_args, _ in calls) for _, _, calls, _ in owners)
    in_dims = tuple(tuple(tuple(0 if isinstance(a, torch.Tensor) else None for a in call_args)
                          for call_args in module_args) for module_args in args)
    grads_out = tuple(tuple(tuple(gy) for gy in out_grads) for _, _, _, out_grads in owners)

    def inner(p, args, grads_out):
        total = 0
        for (_, mod, _, _), names, module_args, module_grads in zip(owners, locals_of, args, grads_out):
            own = {k: p[full] for k, full in names.items()}
            for call_args, gy in zip(module_args, module_grads):
                batch_of_one = tuple(a[None] if isinstance(a, torch.Tensor) else a for a in call_args)
                out = _tensors(functional_call(mod, own, batch_of_one))
                total = total + sum((o[0] * g).sum() for o, g in zip(out, gy))
        return total

    return vmap(grad(inner), in_dims=(None, in_dims, 0))(params, args, grads_out)


def _factored_sum(
    model: nn.Module, context: torch.Tensor, forecast: torch.Tensor, clip: float, mask: Optional[torch.Tensor],
    make_out: Callable[[Dict[str, nn.Parameter]], Grads], weight: float, covariates: Optional[torch.Tensor] = None,
) -> Tuple[Grads, torch.Tensor]:
    """Lines 4-7 of Algorithm 2 from layer factors: adds weight · Σ_i c_i g_i into ``make_out(params)``'s buffers.
    ``covariates`` (M, ...), when given, is the model's third argument (DeepAR's time features).

    Returns (those buffers, the per-sample norms ||g_i||_2 before clipping, (M,)).
    """
    m = context.shape[0]
    plan = _plan(model)
    recorder = _Recorder(m, plan.owners(model))
    out = make_out(plan.params)
    if m == 0:  # an empty (Poisson) batch: no gradients, the step releases pure noise
        return out, context.new_zeros(0)
    with torch.enable_grad(), recorder:
        loss = model(context, forecast) if covariates is None else model(context, forecast, covariates)
    if loss.shape != (m,):
        raise FactoredGradientError(f"the model must return one loss per sample, shape ({m},); got {tuple(loss.shape)}")
    recorder.check_unmodified()
    called = [(name, mod, recorder.calls[id(mod)]) for name, mod, _ in recorder.owners if recorder.calls[id(mod)]]
    outputs = [y for _, _, calls in called for _, ys in calls for y in ys]
    out_grads = iter(torch.autograd.grad(loss, outputs, grad_outputs=torch.ones_like(loss), allow_unused=True))
    with torch.no_grad():  # the factors below are data: no graph for them
        factors, per_sample, other, linears = [], {}, [], {}
        for name, mod, calls in called:
            grads = [[torch.zeros_like(y) if g is None else g for g, y in zip([next(out_grads) for _ in ys], ys)]
                     for _, ys in calls]
            if type(mod) is nn.Linear:
                linears.setdefault(_same_gradients(grads), ([], grads))[0].append((name, mod, calls))
            elif type(mod) in PER_SAMPLE_RULES:
                per_sample.update(_rule_gradients(name, mod, calls, grads))
            else:
                other.append((name, mod, calls, grads))
        factors += [_linear_factors(members, grads) for members, grads in linears.values()]
        if other:
            per_sample.update(_vmap_gradients(other))
        if per_sample:
            factors.append(_materialised_factors(per_sample))
        sq = factors[0].sq_norms
        for f in factors[1:]:
            sq = sq.add_(f.sq_norms)
        norms = sq.sqrt_()  # every term is ≥ 0 (products and sums of squares; ghost norms clamped)
        c = clip_factors(norms, clip)
        if mask is not None:
            c = c * mask.to(c.dtype)
        for f in factors:
            f.add_weighted_sum(c, weight, out)
    _WORKSPACE.end_step()
    return out, norms


def factored_clipped_sum(
    model: nn.Module, context: torch.Tensor, forecast: torch.Tensor, clip: float, mask: Optional[torch.Tensor] = None,
    covariates: Optional[torch.Tensor] = None,
) -> Tuple[Grads, torch.Tensor]:
    """Algorithm 2, lines 4-7 (paper Alg. 2; the step every theorem T1-T14 assumes): ĝ = Σ_i g_i / max(1, ||g_i||/C).

    Exact per-sample clipping from layer factors (module docstring); ``context`` (M, L_C),
    ``forecast`` (M, L_F), optional ``mask`` (M,) dropping padded slots, optional ``covariates`` (M, ...) the
    model's third argument. Returns
    ({name: tensor of the parameter's shape}, per-sample norms ||g_i||_2 before clipping, (M,)).
    Soundness: every clipped per-sample gradient has norm ≤ C, so ĝ has sensitivity C.
    """
    return _factored_sum(model, context, forecast, clip, mask,
                         lambda params: {k: torch.zeros_like(p) for k, p in params.items()}, 1.0, covariates)


def factored_noisy_gradient(
    model: nn.Module, context: torch.Tensor, forecast: torch.Tensor, *, clip: float, sigma: float, batch_size: int,
    generator: Optional[torch.Generator], mask: Optional[torch.Tensor] = None, covariates: Optional[torch.Tensor] = None,
) -> Grads:
    """Algorithm 2, lines 4-8 (paper Alg. 2): g̃ = (Σ_i g_i / max(1, ||g_i||/C) + N(0, σ² C² I)) / Λ, fused.

    The noise is drawn first (:func:`training.noise.gaussian_noise`, already scaled by
    σC/Λ), and the clipped sum, weighted by 1/Λ, is added into it in place by the factors'
    matrix products: no separate sum, no copy. Same clipping as :func:`factored_clipped_sum`
    (exact), same noise layout as :func:`training.step.noisy_mean`; equal to
    ``noisy_mean(factored_clipped_sum(...))`` up to float rounding.
    """
    def noise(params: Dict[str, nn.Parameter]) -> Grads:
        return gaussian_noise(params, sigma * clip / batch_size, generator=generator)

    return _factored_sum(model, context, forecast, clip, mask, noise, 1.0 / batch_size, covariates)[0]
