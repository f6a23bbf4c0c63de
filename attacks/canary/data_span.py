"""The data's gradients taken off a gradient-canary observation: white-box canaries that see through a training
without noise.

In the one-run game (Steinke, Nasr & Jagielski 2023, Sec. 3; Mahloujifar, Melis & Chaudhuri
2025) the auditor knows every element but the canaries: only their inclusion bits are secret.
At step t the optimizer steps on

    g̃_t = s (Σ_{w in the batch} c_w ∇ℓ_w(θ_t) + noise) + s Σ_i [i included] K_{t,i} C u_i,

where c_w ∈ (0, 1] is window w's clipping factor (1 without clipping). Whatever the batch, the
clipping or its absence, the data's part lies in S_t = span{∇ℓ_w(θ_t) : w a window of the
data}, which the auditor computes from θ_t (a function of the transcript) and the known data.
:class:`DataSpan` projects an observation off S_t before it is scored: without noise what is
left is the canaries' part alone (their directions lose the share n / d of their energy that
falls in S_t, n windows, d parameters); with noise the noise is projected alike, so a canary's
signal-to-noise ratio shrinks by about √(1 - n / d). So the whole span is taken off only when
n ≤ d / 4 (:data:`MAX_WINDOW_SHARE`) and n · d fits (``max_entries``).

With more windows (S_t is then most or all of the space) the step's data part is recovered as
a *sparse* combination instead: a batch of Λ windows is a few of the n, so orthogonal
matching pursuit (:meth:`DataSpan.pursuit`) picks, one at a time, the window whose gradient
best explains what is left of the observed gradient, up to ``atoms`` windows (2Λ from the
optimizer hooks, at most d / 4) or until nothing is left, and the observation is projected
off the span of the windows picked. The per-window gradients of a model are far from
orthogonal (measured on an MLP of d = 385 at initialisation over 1240 windows: median |cosine|
0.57), which defeats a plain pursuit (it found 0-4 of a batch's 10 windows); it runs in the
geometry that whitens them, x ↦ (Σ + τ² I)^(-1/2) x with Σ the covariance of the n per-window
gradients at θ_t and τ = C (``floor``: directions where the windows' gradients vary by less
than a clipped gradient are not stretched further), where the median |cosine| is 0.03 and the
pursuit finds 8-10 of the 10. Without noise or clipping the data part is exactly such a
combination and, once found, what is left is the canaries' part less its share in the ≤ 2Λ
dimensions; with the DP noise those ≤ 2Λ of d dimensions are lost, as the span of 2Λ windows
would cost. Cost per step: the n per-window gradients (in chunks of at most
:data:`CHUNK_ENTRIES` entries), streamed twice (covariance, then the atoms), d² for Σ (when
d² exceeds ``max_entries`` the pursuit runs unwhitened) and at most ``max_entries``
per-window entries held: when n · d exceeds it, the max_entries / d windows most aligned with
the whitened observation are kept; raise ``max_entries`` to keep all.

Soundness (the **lower**-bound direction) needs nothing of the span: the projected observation
is a function of the transcript and of the non-canary data, fixed before the run, so it is a
valid score of the one-run theorems whatever the loss given (a loss, a windowing or an
augmentation other than the training's leaves part of the data's gradient in, which only costs
power). The per-window gradients are those of ``loss(model, context, forecast) -> (B,)`` on a
copy of your model (hooks removed, eval mode), taken with ``torch.func`` (``vmap`` of ``grad``)
at the parameters the optimizer is about to step from; the span is an orthonormal basis by QR
in float64.
"""
from __future__ import annotations

import copy
import gc
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import torch
from tsdp.verify.json_data import Record

MAX_WINDOW_SHARE = 0.25
"""The most windows per parameter (n / d) for which the span is taken off (module docstring: SNR × √(1 - n/d))."""

FAILED = "the per-window gradients failed"
"""How :attr:`DataSpan.reason` begins when the loss or the model failed under ``torch.func`` (not a size limit)."""

DIVERGED = "the training diverged"
"""How :attr:`DataSpan.reason` begins when the per-window gradients turned non-finite after the first step, at parameters
the training made (the training's doing, not the loss's: at the first step they are checked as the loss's)."""

MAX_ENTRIES = 2 ** 24
"""Default of the most n · d per-window gradient entries held per step (128 MiB in float64; ``max_entries``)."""

CHUNK_ENTRIES = 2 ** 22
"""The most per-window gradient entries computed at once (``torch.func.vmap`` over a chunk of windows)."""


def owning_module(params: Sequence[torch.Tensor]) -> Optional[torch.nn.Module]:
    """The smallest live ``nn.Module`` whose parameters include every one of ``params`` (the deepest when several
    hold the same, e.g. a model and its Opacus ``GradSampleModule``), or None.

    Args:
        params: The optimizer's parameters.

    Returns:
        The module, or None when no live module holds them all.
    """
    wanted = {id(p) for p in params}
    best, best_size = None, None
    for obj in gc.get_objects():
        if not issubclass(type(obj), torch.nn.Module):  # type(): no attribute access on lazy proxies
            continue
        own = {id(p) for p in obj.parameters()}
        if not wanted <= own:
            continue
        if best is None or len(own) < best_size or (len(own) == best_size and obj in set(best.modules())):
            best, best_size = obj, len(own)
    return best


def _bare_copy(module: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of ``module`` without its hooks (e.g. Opacus's), in eval mode, with no gradients held."""
    twin = copy.deepcopy(module)
    for sub in twin.modules():
        for name, value in vars(sub).items():
            if name.startswith(("_forward", "_backward", "_state_dict", "_load_state_dict")) and isinstance(value, dict):
                value.clear()
    for p in twin.parameters():
        p.grad = None
        for attr in ("grad_sample", "summed_grad"):
            if hasattr(p, attr):
                delattr(p, attr)
    return twin.eval()


class _NonFinite(ValueError):
    """Non-finite per-window gradients (:data:`DIVERGED` when met after the first step)."""


@dataclass(frozen=True)
class DataPart(Record):
    """How a gradient-canary run took the data's part off the observed gradient (:mod:`attacks.canary.data_span`).

    Attributes:
        mode: ``span`` (the whole span of the per-window gradients) or ``sparse`` (the windows a matching pursuit
            found).
        atoms: the pursuit's most windows per step.
        steps: the steps it ran on.
        windows_per_step: the mean windows found per step.
        seconds_per_step: its mean seconds per step.
        summary: the above in one line.
    """

    mode: str
    atoms: int
    steps: int
    windows_per_step: float
    seconds_per_step: float
    summary: str


class DataSpan:
    """Takes the data's part off an observed gradient: the projection off the span of the data's per-window gradients
    at the current parameters (``mode`` "span"), or off the few of them that orthogonal matching pursuit finds in it
    (``mode`` "sparse"; module docstring). Either is a score of the one-run game (Steinke, Nasr & Jagielski 2023;
    Mahloujifar, Melis & Chaudhuri 2025): a function of the transcript and the non-canary data, so the ε certified
    from it stays a **lower** bound whatever it finds. Build with :meth:`of`; ``reason`` says why it is off (None
    when on); ``seconds`` and ``steps`` its cost so far.

    Args:
        twin: A copy of the model that computes the per-window gradients (None until :meth:`of` binds it).
        names: The twin's names of the optimizer's parameters, in order.
        loss: The per-window training loss ``loss(model, context, forecast) -> (B,)``.
        context: The data's windows' contexts, (n, L_C).
        forecast: The data's windows' forecasts, (n, L_F).
        mode: "span" (every window's gradient) or "sparse" (matching pursuit).
        atoms: The most windows a pursuit picks per step.
        max_entries: The most per-window gradient entries held per step.
        floor: The whitening's floor (module docstring).
    """

    def __init__(self, twin: torch.nn.Module, names: List[str], loss: Callable, context: torch.Tensor,
                 forecast: torch.Tensor, mode: str = "span", atoms: int = 0, max_entries: int = MAX_ENTRIES,
                 floor: float = 1.0):
        self.twin, self.names, self.loss = twin, names, loss
        self.context, self.forecast = context, forecast
        self.mode, self.atoms, self.max_entries = mode, atoms, max_entries
        self.floor = floor
        self.reason: Optional[str] = None
        self.seconds, self.steps, self.windows_found = 0.0, 0, 0

    @classmethod
    def of(cls, params: Sequence[torch.Tensor], windows: Tuple[torch.Tensor, torch.Tensor],
           loss: Callable, *, atoms: Optional[int] = None, max_entries: int = MAX_ENTRIES,
           floor: float = 1.0, device=None) -> "DataSpan":
        """The data's part for the optimizer's ``params`` over the data's ``windows`` (context (n, L_C), forecast
        (n, L_F)) under ``loss``: the whole span when n ≤ d / 4 and n · d ≤ ``max_entries``, else a pursuit of up to
        ``atoms`` windows per step (default and cap d / 4); off (with its ``reason``) when it fails on the current
        parameters. ``device``: where a copy of the model computes the per-window gradients (None: the parameters'
        device).

        Args:
            params: The optimizer's parameters.
            windows: The data's (context (n, L_C), forecast (n, L_F)).
            loss: The per-window training loss.
            atoms: The most windows a pursuit picks per step (None: d / 4).
            max_entries: The most per-window gradient entries held per step.
            floor: The whitening's floor.
            device: Where the model's copy computes (None: the parameters' device).

        Returns:
            The :class:`DataSpan` (off, with its ``reason``, when it cannot run).
        """
        context, forecast = windows
        n, d = context.shape[0], sum(p.numel() for p in params)
        span = cls(None, [], loss, context, forecast, max_entries=max_entries, floor=floor)
        if n > MAX_WINDOW_SHARE * d or n * d > max_entries:
            span.mode = "sparse"
            span.atoms = int(min(atoms or d, MAX_WINDOW_SHARE * d, n))
            if span.atoms < 1:
                return span.off(f"{d} parameters: too few for a pursuit of the data's windows")
        module = owning_module(params)
        if module is None:
            return span.off("no torch module holds the optimizer's parameters")
        try:
            twin = _bare_copy(module)
        except Exception as exc:  # noqa: BLE001 - any model that cannot be copied just keeps the data in
            return span.off(f"the model cannot be copied ({type(exc).__name__}: {exc})")
        by_id = {id(p): name for name, p in module.named_parameters()}
        device, dtype = params[0].device if device is None else torch.device(device), params[0].dtype
        span.twin, span.names = twin.to(device), [by_id[id(p)] for p in params]
        span.context, span.forecast = context.to(device, dtype), forecast.to(device, dtype)
        try:  # fails now rather than mid-run when the loss or the model does not fit torch.func
            span._gradients(params, 0, min(n, 2))
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a loss or model torch.func cannot take: said, not run
            span._failed(exc)
        return span

    def off(self, reason: str) -> "DataSpan":
        """This span turned off, with ``reason``.

        Args:
            reason: Why the data's part is kept.

        Returns:
            This span, off.
        """
        self.reason = reason
        return self

    def _failed(self, exc: BaseException) -> None:
        self.off(f"{FAILED} ({type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:160]})")

    @property
    def chunk(self) -> int:
        """Windows per vmap call."""
        d = sum(t.numel() for t in self.twin.parameters()) if self.twin is not None else 1
        return max(1, CHUNK_ENTRIES // max(d, 1))

    def _gradients(self, params: Sequence[torch.Tensor], lo: int, hi: int) -> torch.Tensor:
        """(hi - lo, d) per-window gradients of windows lo..hi-1 at ``params`` (float64; raises on failure)."""
        from torch.func import grad, vmap

        trainable = {name: p.detach().to(self.context.device) for name, p in zip(self.names, params)}
        fixed = {name: t for name, t in list(self.twin.named_parameters()) + list(self.twin.named_buffers())
                 if name not in trainable}

        def one_window(values, context, forecast):
            bound = _Bound(self.twin, {**fixed, **values})
            return self.loss(bound, context[None], forecast[None]).sum()

        per_window = vmap(grad(one_window), in_dims=(None, 0, 0))(trainable, self.context[lo:hi],
                                                                  self.forecast[lo:hi])
        jacobian = torch.cat([per_window[name].reshape(hi - lo, -1) for name in self.names], 1).double()
        if not bool(torch.isfinite(jacobian).all()):
            raise _NonFinite("non-finite per-window gradients")
        return jacobian

    def _chunks(self, params: Sequence[torch.Tensor]):
        n = self.context.shape[0]
        for lo in range(0, n, self.chunk):
            yield lo, self._gradients(params, lo, min(n, lo + self.chunk))

    def basis(self, params: Sequence[torch.Tensor], observed: Optional[torch.Tensor] = None) -> Optional[torch.Tensor]:
        """(d, k) orthonormal basis of the data's part at ``params`` (float64), or None when off: the span of every
        per-window gradient ("span"), or of the windows :meth:`pursuit` finds in the ``observed`` flat gradient
        ("sparse").

        Args:
            params: The optimizer's parameters at the step.
            observed: The observed flat gradient (the pursuit's target; "sparse" only).

        Returns:
            The (d, k) orthonormal basis, or None when off.
        """
        if self.reason is not None:
            return None
        started = time.perf_counter()
        try:
            if self.mode == "span":
                jacobian = torch.cat([rows for _, rows in self._chunks(params)])
                q, _ = torch.linalg.qr(jacobian.T)
            else:
                q = self.pursuit(params, observed)
        except _NonFinite:
            self.off(f"{DIVERGED}: non-finite per-window gradients at the parameters of step {self.steps + 1}")
            return None
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a loss or model torch.func cannot take: said, not run
            self._failed(exc)
            return None
        self.seconds += time.perf_counter() - started
        self.steps += 1
        self.windows_found += q.shape[1]
        return q

    def clipped_mean(self, params: Sequence[torch.Tensor], clip: float) -> Optional[torch.Tensor]:
        """(d,) mean of the data's per-window gradients at ``params``, each clipped to norm ``clip``, in units of
        ``clip`` (float64), or None when off or when they fail (:meth:`basis` then says why): the direction of the
        sampling test of :mod:`attacks.canary.mechanism`, a function of the parameters and the data only. One more
        pass over the per-window gradients (counted in ``seconds``).

        Args:
            params: The optimizer's parameters at the step.
            clip: The clipping norm C.

        Returns:
            The (d,) mean in units of C, or None.
        """
        if self.reason is not None:
            return None
        started = time.perf_counter()
        total, n = None, 0
        try:
            for _, rows in self._chunks(params):
                factor = (clip / rows.norm(dim=1).clamp_min(1e-300)).clamp(max=1.0) / clip
                part = (rows * factor[:, None]).sum(0)
                total, n = (part if total is None else total + part), n + rows.shape[0]
        except (Exception, SystemExit):  # noqa: BLE001 - the step's basis meets the same failure and names it
            return None
        self.seconds += time.perf_counter() - started
        return None if total is None else total / n

    def _whitening(self, params: Sequence[torch.Tensor], d: int) -> Optional[torch.Tensor]:
        """(Σ + τ² I)^(-1/2), Σ the covariance of the per-window gradients at ``params`` (streamed; d × d held), τ the
        ``floor``; None when d² exceeds ``max_entries`` (the pursuit then runs unwhitened)."""
        if d * d > self.max_entries:
            return None
        total = torch.zeros(d, dtype=torch.float64)
        second = torch.zeros(d, d, dtype=torch.float64)
        n = 0
        for _, chunk in self._chunks(params):
            chunk = chunk.cpu()
            total += chunk.sum(0)
            second += chunk.T @ chunk
            n += chunk.shape[0]
        mean = total / n
        eigenvalues, vectors = torch.linalg.eigh(second / n - torch.outer(mean, mean))
        return vectors @ torch.diag((eigenvalues.clamp_min(0) + self.floor ** 2) ** -0.5) @ vectors.T

    def pursuit(self, params: Sequence[torch.Tensor], observed: torch.Tensor) -> torch.Tensor:
        """Orthogonal matching pursuit of ``observed`` (flat, d) over the per-window gradients at ``params``, in the
        geometry that whitens them (module docstring): the (d, k) orthonormal basis of the k ≤ ``atoms`` windows'
        gradients it picks.

        Held: every window's gradient when n · d ≤ ``max_entries``, else the max_entries / d (at least ``atoms``)
        whose whitened gradients are most aligned with the whitened observation (|cosine|), kept in a second
        streaming pass over chunks of windows.

        Args:
            params: The optimizer's parameters at the step.
            observed: The observed flat gradient (d,).

        Returns:
            The (d, k) orthonormal basis of the picked windows' gradients.
        """
        g = observed.detach().to(torch.float64).reshape(-1).cpu()
        d = g.numel()
        whiten = self._whitening(params, d)
        white = (lambda x: x) if whiten is None else (lambda x: x @ whiten)  # whiten is symmetric
        y = white(g)
        hold = max(self.atoms, self.max_entries // d)
        rows = torch.zeros(0, d, dtype=torch.float64)
        atoms = torch.zeros(0, d, dtype=torch.float64)
        fit = torch.zeros(0, dtype=torch.float64)
        for _, chunk in self._chunks(params):
            chunk = chunk.cpu()
            w = white(chunk)
            rows, atoms = torch.cat([rows, chunk]), torch.cat([atoms, w])
            fit = torch.cat([fit, (w @ y).abs() / w.norm(dim=1).clamp_min(1e-300)])
            if rows.shape[0] > hold:
                keep = torch.topk(fit, hold).indices
                rows, atoms, fit = rows[keep], atoms[keep], fit[keep]
        norms = atoms.norm(dim=1)
        usable = norms > 0
        atoms = atoms / norms.clamp_min(1e-300)[:, None]
        found = torch.zeros(d, 0, dtype=torch.float64)  # orthonormal basis of the whitened atoms picked
        picked, scale = [], float(y.norm())
        for _ in range(self.atoms):
            if not bool(usable.any()) or float(y.norm()) <= 1e-12 * scale:
                break
            j = int(torch.where(usable, (atoms @ y).abs(), torch.tensor(-1.0, dtype=torch.float64)).argmax())
            usable[j] = False
            a = atoms[j] - found @ (found.T @ atoms[j])
            a = a - found @ (found.T @ a)  # twice: orthogonal to working precision
            if float(a.norm()) <= 1e-8:
                continue  # already in the span found
            q = a / a.norm()
            found = torch.cat([found, q[:, None]], 1)
            y = y - q * float(q @ y)
            picked.append(j)
        if not picked:
            return torch.zeros(d, 0, dtype=torch.float64, device=observed.device)
        basis, _ = torch.linalg.qr(rows[picked].T)
        return basis.to(observed.device)

    @staticmethod
    def residual(vector: torch.Tensor, basis: Optional[torch.Tensor]) -> torch.Tensor:
        """``vector`` (flat, d) less its projection on the span of ``basis`` (:meth:`basis`; unchanged for None).

        Args:
            vector: The flat (d,) vector.
            basis: A (d, k) orthonormal basis, or None.

        Returns:
            ``vector`` less its projection, in its dtype.
        """
        if basis is None:
            return vector
        v = vector.double()
        return (v - basis.to(v.device) @ (basis.to(v.device).T @ v)).to(vector.dtype)


class _Bound:
    """``module`` called with the given parameters and buffers (``torch.func.functional_call``), as a loss calls a
    model."""

    def __init__(self, module: torch.nn.Module, values: dict):
        self.module, self.values = module, values

    def __call__(self, *args, **kwargs):
        from torch.func import functional_call

        return functional_call(self.module, self.values, args, kwargs)


__all__ = ["CHUNK_ENTRIES", "DIVERGED", "DataPart", "DataSpan", "FAILED", "MAX_ENTRIES", "MAX_WINDOW_SHARE",
           "owning_module"]
