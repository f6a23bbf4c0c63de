"""K models of one architecture as one model with stacked parameters: Algorithm 2 for K runs in one batched program.

The runs of a grid that differ only in seed, budget or σ train the same architecture on batches of the same
shape. Here their K models become one: every ``nn.Linear`` of the architecture becomes a :class:`StackedLinear`
holding the K weights as one (K, out, in) tensor, every ``nn.LayerNorm`` a :class:`StackedLayerNorm` (K, d), and
the model runs on a batch of K·M windows, run k's M windows in rows k·M .. k·M + M - 1 (cell-major). The models
never mix samples and their other operations act per sample, so the model code runs unchanged on that batch; only
the parameter-owning layers know the K blocks, and apply block k's weights to block k's rows by one batched matrix
product (``baddbmm``). A parameter-owning module of another type is refused (:class:`StackError`). On the CPU each
block of a ``baddbmm`` is, bit for bit, the product of that block alone, and nothing else a row computes depends on
the rows around it, so a model's losses, gradients and clipped sums in a stack of K are those of its stack of one,
bit for bit (tests/training/test_together.py, every model); against the model itself (``F.linear``) they agree to
float rounding.

Algorithm 2 (lines 4-7) is then per run, exact: one forward and one backward of the K·M per-window losses give
every stacked layer's inputs a and output gradients g; each window's squared gradient norm is summed over layers
from these factors, in float64 (t = 1: ||a||²·||g||²; t > 1: the ghost norm Σ_{t,t'} (a_t·a_t')(g_t·g_t') with its
rounding bound, :func:`training.linear_factors.ghost_squared_norms`, or the materialised G_i, whichever is cheaper:
:func:`training.linear_factors.norm_route`, the factored engine's choice too), the clip factors
1 / max(1, ||g_i||/(C (1 - κ))) follow (:func:`training.clipping.clip_factors`, κ its rounding margin), and each run's
clipped sum Σ_{i in run k} c_i G_i is one batched product per group of factors; norms and sums under
:func:`training.full_precision.full_precision` (IEEE matmuls, autocast off, whatever the user set), as the factored
engine's. A tied follower (DeepAR's ``hh``,
:mod:`training.tied_gradients`) is not asked of autograd: where its calls fit the declared tie, its output gradients
are its leader's (``ih``'s) one (K·M, P, o) tensor, and the two are one group, as in the factored engine: one linear
[W_ih | W_hh] on their inputs side by side [a_ih | a_hh] (:func:`training.linear_factors.side_by_side`), one norm
over both weights and both biases (the biases' per-window gradient Σ_t g_it is the same: counted once per bias), one
batched product whose (K, o, i_ih + i_hh) result is split into the two weights; with the ties switched off (each
its own factors) the sums agree to float rounding (tests/training/test_tied_gradients.py). Run k's noise is its own
draw (:func:`training.noise.gaussian_noise` from its own generator, in its model's ``named_parameters`` order and
dtype), so the noise of a seed is the noise it draws alone.
"""
from __future__ import annotations

import copy
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from .clipping import Grads, clip_factors, squared_row_norms
from .full_precision import full_precision, upcast
from .linear_factors import NormRoute, ghost_squared_norms, norm_route, side_by_side
from .noise import fill_flat_noise
from .tied_gradients import applied_ties, declared_ties


class StackError(ValueError):
    """The models cannot be stacked (another architecture, or a parameter-owning layer of an unsupported type)."""


class StackedLinear(nn.Module):
    """K ``nn.Linear`` layers of one shape: ``weight`` (K, out, in), ``bias`` (K, out) or None. Input (K·M, ..., in),
    cell-major; block k of the rows goes through layer k. Records (input, output) of every call while
    ``calls`` is a list.

    Args:
        layers: The K layers (one shape).
    """

    def __init__(self, layers: Sequence[nn.Linear]):
        super().__init__()
        self.weight = nn.Parameter(torch.stack([m.weight.detach() for m in layers]))
        self.bias = (None if layers[0].bias is None else
                     nn.Parameter(torch.stack([m.bias.detach() for m in layers])))
        self.calls: Optional[list] = None
        self.views: Optional[tuple] = None

    def _views(self) -> tuple:
        """The parameters as this pass's calls read them, transposed for the batched product. Made at the pass's first
        call and shared by its calls (a recurrent layer is called once per position), so
        autograd sums each block's gradient over the calls before one node stacks it (:meth:`StackedModel.new_pass`
        drops them)."""
        if self.views is None:
            views = (self.weight.transpose(1, 2), None if self.bias is None else self.bias[:, None, :])
            self.__dict__["views"] = views  # a plain attribute: nn.Module's __setattr__ checks cost more than the view
        return self.views

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Block k of the rows through layer k (one batched product).

        Args:
            x: The cell-major input (K·M, ..., in).

        Returns:
            The output (K·M, ..., out).
        """
        k, o, i = self.weight.shape
        weights, biases = self._views()
        rows = x.reshape(k, -1, i)
        y = torch.bmm(rows, weights) if biases is None else torch.baddbmm(biases, rows, weights)
        y = y.reshape(*x.shape[:-1], o)
        if self.calls is not None:
            self.calls.append((x, y))
        return y


class StackedLayerNorm(nn.Module):
    """K ``nn.LayerNorm`` layers over one last dim: ``weight``, ``bias`` (K, d); records (x̂, output) of every call.

    Args:
        layers: The K layers (one last dim, with weight and bias).

    Raises:
        StackError: Another normalised shape or no weight or bias.
    """

    def __init__(self, layers: Sequence[nn.LayerNorm]):
        super().__init__()
        first = layers[0]
        if len(first.normalized_shape) != 1 or first.weight is None or first.bias is None:
            raise StackError("a LayerNorm is stacked over one last dim with its weight and bias")
        self.eps = first.eps
        self.weight = nn.Parameter(torch.stack([m.weight.detach() for m in layers]))
        self.bias = nn.Parameter(torch.stack([m.bias.detach() for m in layers]))
        self.calls: Optional[list] = None
        self.views: Optional[tuple] = None

    def _views(self) -> tuple:
        """The parameters as this pass's calls read them (broadcast over the rows), shared by its calls as
        :meth:`StackedLinear._views`."""
        if self.views is None:
            self.__dict__["views"] = (self.weight[:, None, :], self.bias[:, None, :])
        return self.views

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Block k of the rows normalised by layer k.

        Args:
            x: The cell-major input (K·M, ..., d).

        Returns:
            The output, of ``x``'s shape.
        """
        k, d = self.weight.shape
        weights, biases = self._views()
        x_hat = F.layer_norm(x, (d,), eps=self.eps)
        y = (x_hat.reshape(k, -1, d) * weights + biases).reshape(x.shape)
        if self.calls is not None:
            self.calls.append((x_hat.detach(), y))
        return y


STACKED = {nn.Linear: StackedLinear, nn.LayerNorm: StackedLayerNorm}
"""Each parameter-owning layer type that stacks, and its stacked form."""


def _owners(model: nn.Module) -> List[str]:
    """The qualified names of the modules that own trainable parameters; StackError for a type that does not stack,
    a frozen parameter or parameters owned by the model itself."""
    names = []
    for name, module in model.named_modules():
        own = [p for p in module._parameters.values() if p is not None]
        if not own:
            continue
        if not name:
            raise StackError(f"{type(model).__name__} owns parameters itself; only its layers can be stacked")
        if type(module) not in STACKED:
            raise StackError(f"{name} is a {type(module).__name__}; stacked training handles "
                             f"{', '.join(t.__name__ for t in STACKED)} layers")
        if not all(p.requires_grad for p in own):
            raise StackError(f"{name} holds a frozen parameter; stacked training trains every parameter")
        names.append(name)
    return names


def _replace(root: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    (root.get_submodule(parent) if parent else root)._modules[child] = module


class StackedModel:
    """K models of one architecture as one (module docstring): ``module`` runs a cell-major batch of K·M windows
    and returns the K·M per-window losses; ``parameters`` maps each of the models' parameter names (their
    ``named_parameters`` order) to its stacked (K, *shape) tensor.

    A layer with a ``whole_gates`` switch (:class:`tsdp.training.deepar._LSTM`) computes its activations over whole
    tensors in the stack (faster; its model alone, with the per-gate views, agrees to float rounding).

    Args:
        models: The K models (one architecture).

    Raises:
        StackError: No model, other architectures, or a layer that does not stack.
    """

    def __init__(self, models: Sequence[nn.Module]):
        if not models:
            raise StackError("no model to stack")
        names = _owners(models[0])
        shapes = [(n, p.shape) for n, p in models[0].named_parameters()]
        for m in models[1:]:
            if type(m) is not type(models[0]) or [(n, p.shape) for n, p in m.named_parameters()] != shapes:
                raise StackError("the models differ in architecture; only one architecture stacks")
        self.template = copy.deepcopy(models[0])
        self.module = copy.deepcopy(models[0])
        for m in self.module.modules():  # layers that offer it compute over whole tensors
            if hasattr(m, "whole_gates"):
                m.whole_gates = True
        self.layers: Dict[str, nn.Module] = {}
        for name in names:
            layer = STACKED[type(self.module.get_submodule(name))]([m.get_submodule(name) for m in models])
            _replace(self.module, name, layer)
            self.layers[name] = layer
        self.names = [n for n, _ in shapes]
        self._slots = [(self.layers[layer], key) for layer, _, key in (n.rpartition(".") for n in self.names)]
        """Each parameter's (stacked layer, key in its ``_parameters``), in ``names`` order: :attr:`parameters` reads
        the current parameters from these (no module walk per step; :meth:`keep` replaces them in the slots)."""
        self.values = sum(p.numel() for p in self.template.parameters())
        """n, the values of one model's gradient (:func:`training.clipping.clip_margin`'s argument)."""
        self.ties = [(f, l) for f, l in declared_ties(self.module)
                     if isinstance(f, StackedLinear) and isinstance(l, StackedLinear)]
        """The model's declared tied output gradients between its stacked linears
        (:func:`training.tied_gradients.declared_ties`), applied by :meth:`clipped_sums` where the calls fit."""

    @property
    def size(self) -> int:
        """K, the models stacked."""
        return next(iter(self.layers.values())).weight.shape[0]

    @property
    def parameters(self) -> Dict[str, nn.Parameter]:
        """The stacked parameters {name: (K, *shape)}, in the models' ``named_parameters`` order (a fresh dict)."""
        return {name: layer._parameters[key] for name, (layer, key) in zip(self.names, self._slots)}

    def keep(self, rows: Sequence[int]) -> Dict[str, Tuple[nn.Parameter, nn.Parameter]]:
        """Keep the models at ``rows`` only (the others' training is over): each stacked parameter replaced by its
        rows; returns {name: (old, new)} for an optimizer's state to follow.

        Args:
            rows: The models to keep, in their new order.

        Returns:
            {name: (old parameter, new parameter)}.
        """
        index = torch.as_tensor(list(rows), dtype=torch.long)
        moved = {}
        for layer_name, layer in self.layers.items():
            for key, p in list(layer._parameters.items()):
                if p is None:
                    continue
                new = nn.Parameter(p.detach()[index.to(p.device)].clone())
                layer._parameters[key] = new
                moved[f"{layer_name}.{key}"] = (p, new)
        self.new_pass()
        return moved

    def model(self, row: int) -> nn.Module:
        """Model ``row`` alone, as an ordinary module of the architecture (a copy of its current parameters).

        Args:
            row: The model's row.

        Returns:
            A copy of it as an ordinary module.
        """
        one = copy.deepcopy(self.template)
        stacked = self.parameters
        with torch.no_grad():
            for name, p in one.named_parameters():
                p.copy_(stacked[name][row])
        return one.to(next(iter(stacked.values())).device)

    def losses(self, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
        """The (K·M,) per-window losses of a cell-major batch (context, forecast[, covariates]).

        Args:
            inputs: The cell-major batch (context, forecast[, covariates]).

        Returns:
            The per-window losses.
        """
        self.new_pass()
        return self.module(*inputs)

    def new_pass(self) -> None:
        """Start a forward pass: every layer makes its parameters' views afresh at its first call (the parameters
        were stepped, or replaced by :meth:`keep`, since the last pass)."""
        for layer in self.layers.values():
            layer.__dict__["views"] = None

    def clipped_sums(self, inputs: Sequence[torch.Tensor], clip: float, weight: torch.Tensor, out: Grads) -> None:
        """Algorithm 2, lines 4-7 per model: out[name][k] += weight_k · Σ_{i in block k} g_i / max(1, ||g_i||/C),
        exact per-window clipping from the layers' factors (module docstring). ``weight`` (K·M,) is the row's
        weight (1/Λ, 0 for a padded slot).

        Args:
            inputs: The cell-major batch (K·M rows).
            clip: The clip norm C.
            weight: Each row's weight (K·M,).
            out: The stacked sums to add to, {name: (K, *shape)}.
        """
        self.new_pass()
        for layer in self.layers.values():  # plain attributes: nn.Module's __setattr__ checks cost more
            layer.__dict__["calls"] = []
        try:
            with torch.enable_grad():
                loss = self.module(*inputs)
        finally:
            calls = {name: layer.calls for name, layer in self.layers.items()}
            for layer in self.layers.values():
                layer.__dict__["calls"] = None
        names = {id(layer): name for name, layer in self.layers.items()}
        tied = {names[f]: names[l] for f, l in applied_ties(
            self.ties, {id(self.layers[name]): [[y] for _, y in layer_calls] for name, layer_calls in calls.items()
                        if layer_calls}).items()}
        # the called layers whose gradients autograd gives; a tied follower's g is its leader's
        asked = [name for name, layer_calls in calls.items() if layer_calls and name not in tied]
        outputs = [y for name in asked for _, y in calls[name]]
        grads = iter(torch.autograd.grad(loss, outputs, grad_outputs=torch.ones_like(loss), allow_unused=True))
        k, m = self.size, loss.shape[0] // self.size
        dtype = next(iter(out.values())).dtype  # the parameters': the factors in it where autocast made them narrower
        # the norms and sums at full precision, autocast off (training.full_precision)
        with torch.no_grad(), full_precision(loss.device.type):
            factors = []
            for name in asked:  # a tied follower joins its leader's group: one set of factors, [leader | follower]
                layer_calls = calls[name]
                g = upcast(_positions([torch.zeros_like(y) if dy is None else dy
                                       for dy, (_, y) in zip([next(grads) for _ in layer_calls], layer_calls)], k * m),
                           dtype)
                if isinstance(self.layers[name], StackedLinear):
                    group = [name] + [f for f, l in tied.items() if l == name]
                    factors.append(_linear_factors([[x for x, _ in calls[n]] for n in group], g,
                                                   [self.layers[n] for n in group], group))
                else:
                    factors.append(_norm_factors(upcast(_positions([x for x, _ in layer_calls], k * m), dtype), g,
                                                 name))
            sq = sum(sq_norms for sq_norms, _ in factors)  # float64
            c = (clip_factors(sq.sqrt(), clip, dtype, self.values) * weight).reshape(k, 1, m)
            for _, add in factors:
                add(c, out)


def _positions(tensors: List[torch.Tensor], rows: int) -> torch.Tensor:
    """The calls' (K·M, *mid, d) tensors as one contiguous (K·M, t, d): every middle position of every call is a
    position (one call reshaped, copied only where not contiguous)."""
    if len(tensors) == 1:
        return tensors[0].detach().reshape(rows, -1, tensors[0].shape[-1]).contiguous()
    return torch.cat([x.detach().reshape(rows, -1, x.shape[-1]) for x in tensors], dim=1)


def _position_sum(x: torch.Tensor) -> torch.Tensor:
    """Σ_t x_it of a (K·M, t, d) tensor, (K·M, d): at one position the position itself, a view (no reduction)."""
    return x[:, 0] if x.shape[1] == 1 else x.sum(1)


def _linear_factors(inputs: List[List[torch.Tensor]], g: torch.Tensor, layers: Sequence[StackedLinear],
                    names: Sequence[str]):
    """(||G_i||² + ||b_i||², add) of a group of stacked linears whose outputs receive the same gradients ``g`` by
    position, (K·M, t, o): one linear, or a tied follower with its leader (:mod:`training.tied_gradients`), which act
    as one linear [W¹ | W²] on their inputs side by side [a¹ | a²], (K·M, t, i¹ + i²)
    (:func:`training.linear_factors.side_by_side`). G_i = Σ_t g_it a_itᵀ over the group's columns and b_i = Σ_t g_it,
    the same for every bias of the group, so ||b_i||² counts once per bias; the norm's route is
    :func:`training.linear_factors.norm_route`'s. ``add(c, out)`` adds Σ_i c_i G_i per block by one batched product,
    split by columns into out[name + '.weight'] of each member, and Σ_i c_i b_i into each member's
    out[name + '.bias'].

    Args:
        inputs: Per member, its calls' inputs (K·M, *mid, i).
        g: The group's output gradients by position, (K·M, t, o).
        layers: The members (the leader first).
        names: Their names.

    Returns:
        (per-window squared norms (K·M,), add).
    """
    rows, t, o = g.shape
    widths = [layer.weight.shape[2] for layer in layers]
    a = (upcast(_positions(inputs[0], rows), g.dtype) if len(inputs) == 1 else  # autocast's narrower inputs in
         side_by_side(inputs, g.new_empty(rows, t, sum(widths)), rows))  # g's dtype, the parameters' (clipped_sums)
    i = a.shape[2]
    biases = [f"{name}.bias" for name, layer in zip(names, layers) if layer.bias is not None]
    bias = _position_sum(g)
    sq_bias = squared_row_norms(bias, rows)
    per_sample = None
    route = norm_route(t, i, o)
    if route is NormRoute.ONE_POSITION:  # ||G_i||² = ||g_i||²·||a_i||²
        sq = sq_bias * squared_row_norms(a[:, 0], rows)
    elif route is NormRoute.GHOST:
        sq = ghost_squared_norms(a, g)
    else:
        per_sample = torch.bmm(g.transpose(1, 2), a).reshape(rows, o * i)  # G_i, (o, i) row-major
        sq = squared_row_norms(per_sample, rows)
    if biases:  # the same Σ_t g_it for every bias of the group: its squared norm once per bias
        sq = sq + sq_bias * len(biases)

    def add(c: torch.Tensor, out: Grads) -> None:  # c: (K, 1, M) clip factors times weights
        k, m = c.shape[0], c.shape[2]
        if per_sample is not None:
            w = torch.bmm(c, per_sample.reshape(k, m, o * i)).reshape(k, o, i)
        else:
            scaled = (a * c.reshape(k * m, 1, 1)).reshape(k, m * t, i)
            w = torch.bmm(g.reshape(k, m * t, o).transpose(1, 2), scaled)
        for name, block in zip(names, w.split(widths, dim=2)):  # [W¹ | W²]: each member's columns
            out[f"{name}.weight"].add_(block)
        if biases:
            b = torch.bmm(c, bias.reshape(k, m, o)).reshape(k, o)
            for key in biases:
                out[key].add_(b)

    return sq, add


def _norm_factors(x_hat: torch.Tensor, g: torch.Tensor, name: str):
    """(||∇w_i||² + ||∇b_i||², add) for the stacked LayerNorm ``name`` from x̂ and its output gradients by position,
    (K·M, t, d): ∇w_i = Σ_t g_it ⊙ x̂_it, ∇b_i = Σ_t g_it; ``add(c, out)`` adds their clipped sums per block."""
    gw, gb = _position_sum(g * x_hat), _position_sum(g)
    sq = squared_row_norms(gw, gw.shape[0]) + squared_row_norms(gb, gb.shape[0])

    def add(c: torch.Tensor, out: Grads) -> None:
        k, m = c.shape[0], c.shape[2]
        out[f"{name}.weight"].add_(torch.bmm(c, gw.reshape(k, m, -1)).reshape(k, -1))
        out[f"{name}.bias"].add_(torch.bmm(c, gb.reshape(k, m, -1)).reshape(k, -1))

    return sq, add


def stacked_noise(stack: StackedModel, stds: Sequence[float], generators: Sequence[torch.Generator]) -> Grads:
    """Algorithm 2, line 8 per model: model k's N(0, stds[k]² I) drawn from ``generators[k]`` exactly as it draws
    alone (:func:`training.noise.gaussian_noise`'s one flat draw over its parameters, in their order, here drawn in
    place into row k of one (K, P) buffer), stacked (K, *shape): each parameter's tensor is a view of its columns of
    that buffer (not contiguous where K > 1).

    Args:
        stack: The stacked models.
        stds: Each model's noise standard deviation.
        generators: Each model's generator.

    Returns:
        {name: (K, *shape)} noise.
    """
    stacked = stack.parameters
    first = next(iter(stacked.values()))
    flat = torch.empty(len(stds), stack.values, dtype=first.dtype, device=first.device)
    for row, std, gen in zip(flat, stds, generators):  # row k: model k's one flat draw, as gaussian_noise draws it alone
        fill_flat_noise(row, std, generator=gen)
    # each parameter's columns (K, numel) viewed as (K, *shape), not copied: rows P apart, each row contiguous (the
    # in-place sums and the optimizer read and write them elementwise, the same numbers as in a contiguous copy)
    blocks = flat.split([p[0].numel() for p in stacked.values()], dim=1)
    return {name: block.view(p.shape) for (name, p), block in zip(stacked.items(), blocks)}


def stacked_noisy_gradient(stack: StackedModel, inputs: Sequence[torch.Tensor], mask: torch.Tensor, *, clip: float,
                           sigmas: Sequence[float], batch_size: int,
                           generators: Sequence[torch.Generator]) -> Grads:
    """Algorithm 2, lines 4-8 for every stacked model k (paper Alg. 2; the mechanism of T1-T14): g̃_k = (Σ_{i in
    block k, mask_i} g_i / max(1, ||g_i||/C) + N(0, σ_k² C² I)) / Λ, its noise from ``generators[k]`` as it draws
    alone. ``inputs``: the cell-major batch (K·M rows), ``mask`` (K, M) its real windows. Returns {name: (K, *shape)}.
    Soundness: every window's clipped gradient has norm ≤ C, exactly, as alone.

    Args:
        stack: The stacked models.
        inputs: The cell-major batch.
        mask: (K, M) the real windows.
        clip: The clip norm C.
        sigmas: Each model's noise multiplier.
        batch_size: The expected batch Λ.
        generators: Each model's generator.
    """
    gradient = stacked_noise(stack, [sigma * clip / batch_size for sigma in sigmas], generators)
    stack.clipped_sums(inputs, clip, mask.reshape(-1).to(inputs[0].dtype) / batch_size, gradient)
    return gradient
