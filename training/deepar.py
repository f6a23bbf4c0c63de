"""DeepAR (Salinas et al. 2020) as GluonTS 0.17's ``DeepARModel`` in the official configuration, its LSTM written
with torch ops (per-sample-gradient friendly) and unrolled layer by layer wherever the inputs are known in advance."""
from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import torch
from torch import nn

from .observations import Forecaster, mean_scale, observed_values
from .student_t import StudentTHead, student_t_nll, student_t_sample

DEFAULT_LAGS = (1, 2, 3, 4, 5, 6, 7, 23, 24, 25)
"""DeepAR's lags by default (those up to the context length are kept)."""


SAMPLER_ROWS = 2048
"""Paths the sampler's forecast step advances at a time: a block's (rows, 4·hidden) gates stay in cache through the
step's elementwise ops, faster on a CPU than the thousands of paths of a test set at once. Rows never mix, and each
position's draws are taken for all paths at once, in path order, so the blocks change no draw's uniform."""

WHOLE_VECTOR_ROWS = 32
"""The sampler's first forecast step (one row per series) runs on a multiple of this many rows (the last row
repeated): then every (rows, hidden) and (rows, 4·hidden) tensor of its gates holds whole pairs of the widest CPU
vectors (16 floats), so each row takes the vectorised activations, as each path's row does in the step of all paths
(a CPU's elementwise kernels give the last elements of a tensor that is not whole vectors the scalar function,
which rounds differently)."""


class _LSTM(nn.Module):
    """Stacked LSTM written with torch ops (per-sample-gradient friendly): :meth:`unroll` runs it over positions
    whose inputs are all known (layer by layer), :meth:`step` advances every layer by one position.

    ``nn.LSTM``'s gates (rows i, f, g, o) and init: every weight and bias uniform on ±1/√hidden (as opacus's
    ``DPLSTM``, which the official code trains, initialises them too). Each layer holds two ``nn.Linear``: ``ih``
    on its input and ``hh`` on its hidden state, the gates' pre-activations their sum ``ih(x) + hh(h)``."""

    whole_gates = False
    """Whether the gates' activations apply to whole tensors by default (:meth:`gates`' ``whole``): False for a model
    trained alone by :func:`tsdp.training.train.train` (its numbers as they always were);
    :class:`tsdp.training.stacked.StackedModel` sets it on every stack (private runs, and runs without DP, whose cells
    alone train as a stack of one), which agrees with the model alone to float rounding only."""

    def __init__(self, input_size: int, hidden: int, n_layers: int):
        super().__init__()
        self.hidden = hidden
        self.cells = nn.ModuleList(
            nn.ModuleDict({"ih": nn.Linear(input_size if i == 0 else hidden, 4 * hidden), "hh": nn.Linear(hidden, 4 * hidden)})
            for i in range(n_layers)
        )
        bound = 1.0 / math.sqrt(hidden)
        for weight in self.parameters():
            nn.init.uniform_(weight, -bound, bound)

    def tied_output_gradients(self) -> List[Tuple[nn.Module, nn.Module]]:
        """Each layer's (``hh``, ``ih``): a tied output gradient (:mod:`training.tied_gradients`). In :meth:`unroll`
        ``hh``'s call at position p reaches the loss only through ``ih(x)[:, p] + hh(h)``, so its output gradient is
        position p of ``ih``'s; the engines apply the tie where the calls have that structure (one ``ih`` call on
        (B, P, ·), P ``hh`` calls), not to :meth:`step`'s position-by-position calls. The current submodules: a stack
        (:class:`training.stacked.StackedModel`) replaces them.

        Returns:
            Per layer (follower ``hh``, leader ``ih``).
        """
        return [(cell["hh"], cell["ih"]) for cell in self.cells]

    def initial_state(self, batch: int, like: torch.Tensor):
        zero = like.new_zeros(batch, self.hidden)
        return [(zero, zero) for _ in self.cells]

    def gates(self, gates: torch.Tensor, c: torch.Tensor, whole: bool) -> Tuple[torch.Tensor, torch.Tensor]:
        """A layer's new (h, c) from its gates' pre-activations (B, 4·hidden) (rows i, f, g, o) and its cell state.

        ``whole``: the activations on whole contiguous tensors (the sigmoid of all four gate blocks at once, the tanh
        of a contiguous copy of g) instead of on each gate's strided (B, hidden) view: several times faster. The same
        functions; only the float rounding of some elements differs (on CPU the last elements of each strided row
        take the scalar sigmoid, which rounds differently from the vectorised one). Either way a row's numbers do not
        depend on the rows around it at hidden 40 (a row of 4·hidden gates is whole vectors). A model trained alone by
        :func:`tsdp.training.train.train` keeps the views (its numbers stay those it always had); every stack takes
        whole tensors (:attr:`whole_gates`).

        Args:
            gates: the pre-activations ih(x) + hh(h), (B, 4·hidden).
            c: the cell state (B, hidden).
            whole: whether the activations apply to whole tensors.

        Returns:
            (h, c) after the position.
        """
        if whole:
            blocks = gates.view(gates.shape[0], 4, self.hidden)
            i, f, _, o = torch.sigmoid(blocks).unbind(1)
            c = f * c + i * torch.tanh(blocks[:, 2].contiguous())
        else:
            i, f, g, o = gates.chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            o = torch.sigmoid(o)
        return o * torch.tanh(c), c

    def unroll(self, x: torch.Tensor, state, whole: Optional[bool] = None):
        """Every layer over P positions whose inputs ``x`` (B, P, input) are all known, layer by layer: a layer's
        ``ih`` is one call on the (B, P, ·) inputs of all positions, then only its ``hh`` and gates go position by
        position; its (B, P, hidden) outputs are the next layer's inputs. The numbers of P :meth:`step` calls, up to
        the float rounding of the products.

        Args:
            x: (B, P, input) inputs of the positions, in order.
            state: per layer (h, c), each (B, hidden), before the first position.
            whole: :meth:`gates`' (None: :attr:`whole_gates`).

        Returns:
            (last layer's outputs (B, P, hidden), per layer (h, c) after the last position).
        """
        if x.shape[1] == 0:  # no position (a context of L_C = 1): the state as it was
            return x.new_empty(x.shape[0], 0, self.hidden), state
        whole = self.whole_gates if whole is None else whole
        new_state = []
        for cell, (h, c) in zip(self.cells, state):
            hh, outputs = cell["hh"], []
            for projected in cell["ih"](x).unbind(1):  # hh(h) enters this sum only: tied_output_gradients
                h, c = self.gates(projected + hh(h), c, whole)
                outputs.append(h)
            new_state.append((h, c))
            x = torch.stack(outputs, dim=1)
        return x, new_state

    def step(self, x: torch.Tensor, state, whole: Optional[bool] = None):
        """One position of every layer (the sampler's forecast steps, whose inputs depend on the draws).

        Args:
            x: (B, input) the position's inputs.
            state: per layer (h, c), each (B, hidden).
            whole: :meth:`gates`' (None: :attr:`whole_gates`).

        Returns:
            (last layer's output (B, hidden), per layer (h, c) after the position).
        """
        whole = self.whole_gates if whole is None else whole
        new_state = []
        for cell, (h, c) in zip(self.cells, state):
            h, c = self.gates(cell["ih"](x) + cell["hh"](h), c, whole)
            new_state.append((h, c))
            x = h
        return x, new_state


def deepar_window(context_length: int, lags: Sequence[int]) -> int:
    """The context DeepAR reads: L_C + max lag - 1 values, GluonTS's ``past_length`` (``context_length +
    max(lags_seq)`` with its ``lags_seq`` the lags less 1), the context length the official code's accountant is given
    (jan-schuchardt/dp_forecasting, models/dp_estimator.py: ``splitter.past_length``) and tsdp's accountant sees: every
    one of those values enters the loss.

    Args:
        context_length: L_C.
        lags: the lags read.

    Returns:
        W = L_C + max lag - 1.
    """
    return context_length + max(lags) - 1


class DeepAR(Forecaster):
    """DeepAR (Salinas et al. 2020) as GluonTS 0.17's ``DeepARModel`` in the official configuration: a 2-layer LSTM
    (hidden 40) over lagged, mean-scaled values and covariates, Student-t output.

    ``context_length`` is the window's context it reads, W = L_C + max lag - 1 (:func:`deepar_window`, GluonTS's
    ``past_length``). The scale is GluonTS's ``MeanScaler`` of the last L_C = W - max lag + 1 context values
    (:func:`mean_scale`). Teacher-forced, the LSTM unrolls over the L_C - 1 + L_F positions that follow the first of
    those L_C values: the input at position p is the values at p - l for every lag l (so the oldest value, W - L_C +
    1 - max lag = 0, is read), a learned constant (GluonTS's embedding of the single static category, cardinality [1],
    dimension 1), log(scale) and position p's ``covariates`` (GluonTS's time features: the frequency's calendar
    features and the age feature, :mod:`tsdp.datasets.time_features`); its output is the Student-t law of the value
    at p. The training loss is GluonTS's (``DeepARModel.loss`` as ``DeepARLightningModule.training_step`` calls it,
    ``future_only=False``): the NLL in data units averaged over all L_C - 1 + L_F unrolled positions, context and
    forecast. Teacher-forced, every position's input is known: they are built at once and the LSTM unrolls layer by
    layer (:meth:`_LSTM.unroll`: a layer's input projection is one call over all positions), the same function as a
    position-by-position unrolling up to float rounding; a layer's hidden projection takes its output gradients from
    the input projection's (:meth:`_LSTM.tied_output_gradients`, both DP engines). Sampling unrolls the context the
    same way, then draws the L_F forecast values ancestrally, one position of every path at a time
    (:meth:`_LSTM.step`). Given ``lags`` are all kept (a lag longer than the window is refused); by default
    :data:`DEFAULT_LAGS` up to context_length.

    ``forward(context, forecast, covariates)`` and ``sample(context, n, generator, covariates)`` take the window's
    covariates (B, W + L_F, ``covariates``), position by position; tsdp's loop computes them from each window's
    position in its series (:func:`tsdp.datasets.time_features.window_covariates`). Without them (None: a window
    whose position is unknown, as an audit's worst-case window) they are 0, GluonTS's value for positions before a
    series' start.

    With equal weights, tsdp's loss and laws are those of GluonTS's ``DeepARModel(context_length=L_C, lags_seq=lags,
    num_feat_dynamic_real=covariates, num_layers=2, hidden_size=40, dropout_rate=0, scaling=True)`` on the same
    window and covariates (tests/integrations/test_gluonts_models.py), front padding included: tsdp's loop pads
    with :data:`UNOBSERVED`, which the scale leaves out and whose terms of the loss are 0, as GluonTS treats its
    padding (unobserved). GluonTS's input also holds a static real 0, which adds nothing (its weights get no
    gradient) and is left out here; and the ``default_scale`` 1.0 of a context without an observed non-zero value
    (module docstring) is tsdp's.

    Args:
        context_length: the window's context W = L_C + max lag - 1.
        forecast_length: L_F.
        hidden: the LSTM's width.
        n_layers: the LSTM's layers.
        lags: the lags read (None: :data:`DEFAULT_LAGS` up to ``context_length``).
        covariates: covariates per window position.

    Raises:
        ValueError: a lag outside [1, context_length] or a negative ``covariates``.
    """

    def __init__(self, context_length: int, forecast_length: int, hidden: int = 40, n_layers: int = 2,
                 lags: Optional[Sequence[int]] = None, covariates: int = 1):
        super().__init__()
        if lags is None:
            lags = tuple(l for l in DEFAULT_LAGS if l <= context_length)
        lags = tuple(int(l) for l in lags)
        if not lags or min(lags) < 1 or max(lags) > context_length:
            raise ValueError(f"DeepAR's lags must be in [1, context_length] (context_length {context_length} = "
                             f"L_C + max lag - 1; got lags {lags}): give context_length >= L_C + max lag - 1 with "
                             "L_C >= 1")
        if int(covariates) < 0:
            raise ValueError(f"DeepAR's covariates per position must be >= 0, got {covariates}")
        self.context_length = context_length
        self.forecast_length = forecast_length
        self.lags = lags
        self.covariates = int(covariates)
        self.first = max(lags)
        """The first unrolled position: L_C - 1 positions before the forecast (W - L_C + 1 = max lag)."""
        self.register_buffer("lag_index", torch.tensor(lags, dtype=torch.long), persistent=False)
        positions = torch.arange(self.first, context_length + forecast_length)
        self.register_buffer("input_index", positions[:, None] - self.lag_index, persistent=False)
        """(P, lags): the window position of each lagged value at each unrolled position, first .. W + L_F - 1."""
        self.static = nn.Linear(1, 1, bias=False)
        """GluonTS's ``FeatureEmbedder`` of the one static category: a learned constant, N(0, 1) as ``nn.Embedding``
        initialises it (a bias-free ``nn.Linear`` on 1, so the factored engine clips it as a Linear)."""
        nn.init.normal_(self.static.weight)
        self.rnn = _LSTM(len(lags) + 2 + self.covariates, hidden, n_layers)
        self.head = StudentTHead(hidden)

    def _scale(self, values: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
        return mean_scale(values[:, self.first - 1:], observed[:, self.first - 1:])

    def _covariates(self, context: torch.Tensor, covariates: Optional[torch.Tensor]) -> torch.Tensor:
        width = self.context_length + self.forecast_length
        if covariates is None:
            return context.new_zeros(context.shape[0], width, self.covariates)
        if covariates.shape[1:] != (width, self.covariates):
            raise ValueError(f"DeepAR's covariates must have shape (B, {width}, {self.covariates}) (W + L_F positions, "
                             f"{self.covariates} per position), got {tuple(covariates.shape)}")
        return covariates.to(context.dtype)

    def _static(self, log_scale: torch.Tensor) -> torch.Tensor:
        """Every position's static inputs (B, 2): the learned constant and log(scale)."""
        return torch.cat([self.static(torch.ones_like(log_scale)), log_scale], dim=-1)

    def _inputs(self, series: torch.Tensor, covariates: torch.Tensor, end: int, static: torch.Tensor) -> torch.Tensor:
        """The LSTM's inputs (B, P, lags + 2 + covariates) at the positions first .. end - 1 of the scaled ``series``,
        built at once: the lagged values by one gather, then the static inputs and each position's covariates."""
        index = self.input_index[:end - self.first]
        constant = static[:, None].expand(-1, index.shape[0], -1)
        return torch.cat([series[:, index], constant, covariates[:, self.first:end]], dim=-1)

    def _unroll(self, x: torch.Tensor, state, whole: Optional[bool] = None):
        """The LSTM over positions whose inputs ``x`` (B, P, ·) are known: (outputs (B, P, hidden), state after them),
        by :meth:`_LSTM.unroll` (a subclass may run another recurrence: the bench's ``nn.LSTM`` floor)."""
        return self.rnn.unroll(x, state, whole)

    def forward(self, context: torch.Tensor, forecast: torch.Tensor,
                covariates: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The per-sample training loss: the NLL averaged over the unrolled context and forecast positions.

        Teacher-forced, every position's input is known: they are built at once and the LSTM unrolls layer by layer
        (:meth:`_LSTM.unroll`).

        Args:
            context: (B, W) contexts.
            forecast: (B, L_F) forecast targets.
            covariates: (B, W + L_F, covariates) time features, or None (0).

        Returns:
            (B,) losses.
        """
        values, observed = observed_values(context)
        scale = self._scale(values, observed)
        window = torch.cat([values, forecast], dim=-1)
        x = self._inputs(window / scale, self._covariates(context, covariates), window.shape[1],
                         self._static(torch.log(scale)))
        outputs, _ = self._unroll(x, self.rnn.initial_state(context.shape[0], context))
        df, loc, s = self.head(outputs)
        nll = student_t_nll(window[:, self.first:], df, loc * scale, s * scale)
        return (nll * torch.cat([observed, torch.ones_like(forecast)], dim=-1)[:, self.first:]).mean(dim=-1)

    @torch.no_grad()
    def sample(self, context: torch.Tensor, n_samples: int, generator: torch.Generator,
               covariates: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Forecast sample paths, drawn ancestrally after the context's unrolling.

        The context's L_C - 1 positions unroll once per series, layer by layer (:meth:`_LSTM.unroll`, their inputs
        known). The first forecast position's input and state are the same for every path of a series (no draw
        before it), so it takes one :meth:`_LSTM.step` per series (:meth:`_first_step`) and its laws and new state
        are copied to the S paths; each later position takes one :meth:`_LSTM.step` of all paths, in blocks of
        :data:`SAMPLER_ROWS`, its input holding the values drawn before it. Every position's draws are taken for all
        paths at once, in path order (the paths of a series together), from ``generator``.

        Args:
            context: (B, W) contexts.
            n_samples: S, paths per context.
            generator: the draws' generator.
            covariates: (B, W + L_F, covariates) time features, or None (0).

        Returns:
            (B, S, L_F) paths.
        """
        b, width = context.shape[0], self.context_length
        values, observed = observed_values(context)
        scale = self._scale(values, observed)
        series, covariates = values / scale, self._covariates(context, covariates)
        x = self._inputs(series, covariates, width, self._static(torch.log(scale)))
        _, state = self._unroll(x, self.rnn.initial_state(b, series), whole=True)  # once per series, not per path

        def paths_of(t: torch.Tensor) -> torch.Tensor:
            return t.repeat_interleave(n_samples, dim=0)

        scale = paths_of(scale)
        static = self._static(torch.log(scale))
        future = paths_of(covariates[:, width:])
        series = torch.cat([paths_of(series), series.new_empty(b * n_samples, self.forecast_length)], dim=1)
        blocks = [slice(start, start + SAMPLER_ROWS) for start in range(0, max(1, b * n_samples), SAMPLER_ROWS)]
        states = None
        for p in range(width, width + self.forecast_length):  # position p reads values before p only (lags >= 1)
            x = torch.cat([series[:, p - self.lag_index], static, future[:, p - width]], dim=-1)
            if states is None:  # the first position: every path of a series as its first path
                (df, loc, s), state = self._first_step(x[::n_samples], state)
                df, loc, s = paths_of(df), paths_of(loc), paths_of(s)
                state = [(paths_of(h), paths_of(c)) for h, c in state]
                states = [[(h[rows], c[rows]) for h, c in state] for rows in blocks]
            else:
                laws = []
                for k, rows in enumerate(blocks):
                    h, states[k] = self.rnn.step(x[rows], states[k], whole=True)
                    laws.append(self.head(h))
                df, loc, s = (torch.cat(law) for law in zip(*laws))
            series[:, p] = student_t_sample(df, loc, s, generator)  # every path's draw at once, in path order
        paths = series[:, width:] * scale
        return paths.reshape(b, n_samples, self.forecast_length)

    def _first_step(self, x: torch.Tensor, state):
        """The first forecast position of one path per series: ((ν, loc, scale), state after it), each row that of
        every path of its series. It runs on :data:`WHOLE_VECTOR_ROWS`-whole rows (the last repeated; dropped after),
        so its rows' numbers are those of the paths' rows in a step of all paths (a row's numbers never depend on
        the rows around it then: tests/training/test_deepar_unroll.py checks the paths bit for bit).

        Args:
            x: (B, input) the position's inputs, one row per series.
            state: per layer (h, c), each (B, hidden).

        Returns:
            ((ν, loc, scale), each (B,); per layer (h, c) after the position, each (B, hidden)).
        """
        b = x.shape[0]
        extra = -b % WHOLE_VECTOR_ROWS

        def padded(t: torch.Tensor) -> torch.Tensor:
            return torch.cat([t, t[-1:].expand(extra, *t.shape[1:])]) if extra else t

        h, state = self.rnn.step(padded(x), [(padded(h), padded(c)) for h, c in state], whole=True)
        laws = tuple(law[:b] for law in self.head(h))
        return laws, [(h[:b], c[:b]) for h, c in state]
