"""Full IEEE precision for Algorithm 2's clip norms and clipped sums, whatever the user's float32 matmul precision or
autocast: :func:`full_precision`, the guard every DP engine runs them under.

Why. The clip margin κ (:func:`training.clipping.clip_margin`) bounds the rounding of each clipped per-sample
contribution c_i g_i that enters the sum, and its step (3) assumes that each product forming it rounds at most a few
times at the unit roundoff u of the parameters' dtype (2^-24 in float32). These user settings break that assumption
for float32 matrix products: ``torch.set_float32_matmul_precision("high")`` (TF32 on CUDA and on oneDNN CPUs: inputs
rounded to 10 mantissa bits, u = 2^-11; what H100/H200 users are told to set, and what Lightning sets), ``"medium"``
or ``torch.backends.mkldnn.matmul.fp32_precision = "bf16"`` (bf16 inputs on CPUs that have it, 7 bits), the newer
``torch.backends.*.fp32_precision`` slots that say the same per backend, and ``torch.autocast``, which runs matmuls,
``bmm``, ``einsum`` and ``vecdot`` in bf16/fp16 outright. Under any of them a contribution formed by the engines'
products (the factored engine's ``addmm``/``addmv`` of scaled rows, the stacked engine's ``bmm``, the vmap engine's
``einsum``) can have norm C (1 + 2^-11) or more: above the sensitivity C that T1-T14 assume.

What is guarded, and what is not. The forward and backward stay at the user's precision: a per-sample gradient (or
the layer factors a_i, g_i it is made of) computed in TF32 or bf16 is still a deterministic function of sample i's
data alone, so it is a valid g_i for Algorithm 2; what the sensitivity needs is that the clip norm is the norm of the
values the sum then multiplies, and that the sum's products of those values round as κ assumes. Both hold under this
guard: the engines take the norms (:func:`training.clipping.squared_row_norms`, the ghost norm, a materialised G_i)
and form the clipped sums inside it, from the factors as they came out of the backward, upcast to the parameters'
dtype where autocast handed them over in bf16/fp16 (:func:`upcast`; exact: every bf16/fp16 value is a float32
value). The float64 norm accumulations were never affected (reduced precision and autocast act on float32 and
narrower only), but the float32 products were: the clipped sums, the per-sample G_i of the materialised route, the
bias sums. cuDNN's flag (``torch.backends.cudnn.allow_tf32``, the ``cuda.conv``/``cuda.rnn`` slots) is left as the
user set it: it governs convolutions and RNN kernels only, and the guarded computations hold none (a module without a
rule gets its per-sample gradients by torch.func inside the guard, :func:`training.per_sample_rules.vmap_gradients`:
a per-sample gradient like the backward's, whose norm is then taken of the values the sum uses). Nor are half
precision GEMM settings (``allow_fp16_reduced_precision_reduction`` and the like): nothing inside runs in half.

How. Where float32 matmuls are IEEE already (no matmul slot at TF32 or bf16, the legacy precision "highest":
torch's default), the guard sets nothing. Otherwise, on entry, it records the user's settings and calls
``torch.set_float32_matmul_precision("highest")``, which sets the legacy precision and the per-backend slots
``cuda.matmul`` and ``mkldnn.matmul`` to IEEE together (torch checks the legacy cuBLAS flag
``torch.backends.cuda.matmul.allow_tf32`` against the ``cuda.matmul`` slot and raises where they disagree, and kernels
of some versions read the one, of others the other); on exit, also on an exception, it restores them. Restoring is
exact: torch's getters return each slot *resolved* (a slot set to ``"none"`` reads as its parent's value), so the guard
tells which of the two matmul slots, and of their parents ``cuda.all``/``mkldnn.all``, are ``"none"`` by setting the
parent to two precisions in turn and reading whether the child follows (:func:`_matmul_slots`), and writes each back
as it was: a later ``torch.backends.fp32_precision = ...`` reaches them as it would have. The legacy precision is read
once the two slots are IEEE (an IEEE slot never contradicts it), so a state mixing the legacy and the new API, which
torch's getter refuses to read, is restored too. Autocast is turned off by its per-thread flag on the device type
(``torch.set_autocast_enabled``) and turned back on. All of it is host-side flags: no tensor read, no device sync.
Nested guards, and guards in several threads, share one forcing (a lock and a depth count: the first in saves and
forces, the last out restores; the precision settings are process-wide, autocast is per thread).

Compiled steps. A compiled program cannot change the matmul precision halfway: the compiler fixes its kernels when it
traces. Inside ``torch.compile`` the guard only turns autocast off (dynamo traces that) and refuses to trace under
cuBLAS's TF32 flag (``torch.backends.cuda.matmul.allow_tf32``, which dynamo reads at trace time and guards on; the
oneDNN slot is not readable there); :class:`training.captured.CapturedStep` calls its compiled program inside the guard,
so the whole captured step, its forward and backward too, is traced and runs at full precision without autocast.
"""
from __future__ import annotations

import threading
from typing import ContextManager, Dict, List, Optional, Tuple

import torch

Slot = Tuple[str, str]
"""(backend, op) of torch's per-backend float32 precision: ``("cuda", "matmul")``, ``("generic", "all")``, ..."""

ROOT: Slot = ("generic", "all")
"""The slot every other slot falls back to where it is ``"none"``."""

MATMUL_BACKENDS = ("cuda", "mkldnn")
"""The backends whose float32 matmuls can run reduced: cuBLAS (TF32) and oneDNN on the CPU (TF32 or bf16)."""

REDUCED = ("tf32", "bf16")
"""The reduced float32 precisions a slot can hold."""

PROBES = ("ieee", "tf32")
"""Two precisions every backend accepts, set on a parent in turn: a child whose value follows both is ``"none"``."""

SLOTS = hasattr(torch._C, "_get_fp32_precision_getter")
"""Whether this torch has the per-backend ``fp32_precision`` slots (torch 2.9 on). Without them the legacy precision
(``torch.set_float32_matmul_precision``, which ``torch.backends.cuda.matmul.allow_tf32`` also sets) is the whole
float32 matmul setting, for cuBLAS and oneDNN alike, and the guard saves, forces and restores that alone."""

if SLOTS:
    _get = torch._C._get_fp32_precision_getter
    _set = torch._C._set_fp32_precision_setter


def _takes_device_type() -> bool:
    """Whether ``torch.is_autocast_enabled`` takes a device type (torch 2.4 on; before, it is CUDA's alone)."""
    try:
        torch.is_autocast_enabled("cpu")
    except TypeError:
        return False
    return True


DEVICE_AUTOCAST = _takes_device_type()
"""Whether ``torch.is_autocast_enabled`` / ``torch.set_autocast_enabled`` take a device type (torch 2.4 on); before,
they are CUDA's, and ``torch.is_autocast_<device>_enabled`` / ``torch.set_autocast_<device>_enabled`` another
device's."""


def autocast_enabled(device_type: str) -> bool:
    """Whether autocast is on for ``device_type`` in this thread, on any torch (:data:`DEVICE_AUTOCAST`).

    Args:
        device_type: ``"cpu"``, ``"cuda"``, ...

    Returns:
        Whether it is on.
    """
    if DEVICE_AUTOCAST:
        return torch.is_autocast_enabled(device_type)
    if device_type == "cuda":
        return torch.is_autocast_enabled()
    return getattr(torch, f"is_autocast_{device_type}_enabled", lambda: False)()


def _set_autocast(device_type: str, enabled: bool) -> None:
    """Turns autocast on or off for ``device_type`` in this thread, on any torch (:data:`DEVICE_AUTOCAST`)."""
    if DEVICE_AUTOCAST:
        torch.set_autocast_enabled(device_type, enabled)
    elif device_type == "cuda":
        torch.set_autocast_enabled(enabled)
    else:
        getattr(torch, f"set_autocast_{device_type}_enabled")(enabled)


def _compiling_check():
    """torch's "is dynamo tracing now" test: ``torch.compiler.is_compiling`` (torch 2.3 on), else dynamo's own."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling
    from torch._dynamo import is_compiling  # torch < 2.3

    return is_compiling


_is_compiling = _compiling_check()


class FullPrecisionError(RuntimeError):
    """A compiled DP step traced under reduced-precision float32 matmuls (it cannot change them itself)."""


def _following(parent: Slot, value: str, children: List[Slot]) -> Dict[Slot, bool]:
    """Which ``children`` follow ``parent`` (are ``"none"``): the parent set to each of :data:`PROBES` in turn and the
    children read; the parent then set back to ``value``, its own setting."""
    seen: Dict[Slot, list] = {child: [] for child in children}
    for probe in PROBES:
        _set(*parent, probe)
        for child in children:
            seen[child].append(_get(*child))
    _set(*parent, value)
    return {child: tuple(values) == PROBES for child, values in seen.items()}


def _matmul_slots() -> Dict[Slot, str]:
    """The user's own setting of each backend's matmul slot: ``"none"`` where it follows its parent, else its value.

    torch reads slots resolved through their parents, so a ``"none"`` slot reads as its parent's value; here each
    parent is probed (:func:`_following`), and restored, to tell the two apart."""
    root = _get(*ROOT)  # the root falls back to nothing: its reading is its setting
    parents = [(backend, "all") for backend in MATMUL_BACKENDS]
    leaves = [(backend, "matmul") for backend in MATMUL_BACKENDS]
    under_root = _following(ROOT, root, parents + leaves)
    own = {}
    for parent, leaf in zip(parents, leaves):
        value = _get(*leaf)
        if under_root[parent]:  # the parent passes the root's probes through: the leaf followed them iff "none"
            follows = under_root[leaf]
        else:
            follows = _following(parent, _get(*parent), [leaf])[leaf]
        own[leaf] = "none" if follows else value
    return own


def _save_and_force() -> Tuple[Dict[Slot, str], str]:
    """Forces IEEE float32 matmuls on every backend; returns what the last guard out restores: each matmul slot's
    own setting (:func:`_matmul_slots`) and the legacy precision."""
    slots = _matmul_slots() if SLOTS else {}
    for slot in slots:
        _set(*slot, "ieee")
    legacy = torch._C._get_float32_matmul_precision()  # readable now: IEEE slots never contradict it
    torch._C._set_float32_matmul_precision("highest")
    return slots, legacy


class _Forcing:
    """The process-wide forcing shared by every active guard: the first in saves the user's settings and forces IEEE
    matmuls (where they are not IEEE already), the last out restores them (:class:`_Guard`, which runs it inline: this
    runs every step, and each Python call costs there).

    Attributes:
        lock: held while the depth and the saved settings change.
        depth: the guards active.
        saved: (each matmul slot's own setting, the legacy precision) while forced; None while nothing is.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = 0
        self.saved: Optional[Tuple[Dict[Slot, str], str]] = None


_FORCING = _Forcing()


def _check_traced_precision() -> None:
    """Inside ``torch.compile``: refuses to trace the guarded computations under reduced-precision float32 matmuls."""
    if torch._C._get_cublas_allow_tf32():
        raise FullPrecisionError("the DP step was compiled with torch.backends.cuda.matmul.allow_tf32 (float32 matmul "
                                 "precision 'high' or 'medium'); call the compiled step inside "
                                 "tsdp.training.full_precision.full_precision, as CapturedStep does")


class _Guard:
    """The eager guard: the process-wide forcing (:data:`_FORCING`) and this thread's autocast off on one device type,
    both undone on exit (a class: cheaper per step than a ``contextlib.contextmanager`` generator)."""

    __slots__ = ("device_type", "autocast")

    def __init__(self, device_type: str):
        self.device_type = device_type
        self.autocast = False

    def __enter__(self) -> None:
        # the flags alone, cheaper than torch.autocast; the one without arguments first (no device parsed)
        self.autocast = torch._C._is_any_autocast_enabled() and autocast_enabled(self.device_type)
        forcing = _FORCING
        with forcing.lock:
            if forcing.depth == 0:  # the first in: IEEE already (torch's default: nothing to set), or save and force
                cuda, mkldnn = MATMUL_BACKENDS
                reduced_slot = SLOTS and (_get(cuda, "matmul") in REDUCED or _get(mkldnn, "matmul") in REDUCED)
                # the legacy precision is readable where no slot is reduced
                full = not reduced_slot and torch._C._get_float32_matmul_precision() == "highest"
                forcing.saved = None if full else _save_and_force()
            forcing.depth += 1
        if self.autocast:
            _set_autocast(self.device_type, False)

    def __exit__(self, *exc) -> None:
        if self.autocast:
            _set_autocast(self.device_type, True)
        forcing = _FORCING
        with forcing.lock:
            forcing.depth -= 1
            if forcing.depth == 0 and forcing.saved is not None:  # the last out restores
                slots, legacy = forcing.saved
                torch._C._set_float32_matmul_precision(legacy)  # the legacy precision (it sets both slots too) ...
                for slot, value in slots.items():  # ... then each slot as the user left it
                    _set(*slot, value)
                forcing.saved = None


def full_precision(device_type: str) -> ContextManager[None]:
    """A context in which float32 (and wider) matmuls run at full IEEE precision and autocast is off on
    ``device_type``; the user's settings are restored on exit, also on an exception (module docstring). Algorithm 2's
    clip norms and clipped sums run in it in every engine, so that step (3) of
    :func:`training.clipping.clip_margin` holds: each product forming a clipped contribution rounds at the unit
    roundoff of the parameters' dtype, and every clipped contribution has norm ≤ C (the sensitivity of T1-T14).

    Args:
        device_type: the device type the guarded tensors are on (``"cpu"``, ``"cuda"``): autocast is turned off there.

    Returns:
        The context manager (the guard; inside ``torch.compile``, autocast off after a check of the precision traced
        under, module docstring).

    Raises:
        FullPrecisionError: inside ``torch.compile``, traced under reduced-precision float32 matmuls.
    """
    if _is_compiling():  # the precision is fixed at trace time: checked, not set (module docstring)
        _check_traced_precision()
        return torch.autocast(device_type, enabled=False)
    return _Guard(device_type)


def upcast(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t`` in ``dtype`` where it is a floating tensor of fewer bits (autocast's bf16/fp16 factors), else ``t`` itself
    (no copy). Exact: every value of the narrower dtype is one of ``dtype``'s.

    Args:
        t: a factor of the clipped sum (a layer's input or output gradient).
        dtype: the parameters' dtype.

    Returns:
        ``t``, in ``dtype`` where it was narrower.
    """
    if t.is_floating_point() and t.dtype != dtype and torch.finfo(t.dtype).bits < torch.finfo(dtype).bits:
        return t.to(dtype)
    return t
