"""The DP step's clip norms and clipped sums run at full IEEE precision, autocast off, whatever the user set
(:mod:`tsdp.training.full_precision`), and the user's settings come back exactly.

Three kinds of check. (1) The settings seen at the moment the norms and the sums are formed, recorded by wrappers
around the functions that form them in each engine (vmap, factored, stacked): full precision and no autocast inside,
the user's "medium" precision and bf16 autocast after, also after an exception raised inside; this fails on code
without the guard on any CPU, bf16 hardware or not. (2) The guard's save and restore against an independent
fingerprint of torch's precision state (each slot's reading after a fixed sequence of changes to its parents, which
tells a slot set to "none" from one set to its parent's value). (3) Autocast on the CPU genuinely runs the forward and
the engines' products in bf16: each window's clipped contribution (its sum with every other window masked out) has
norm ≤ C in all three engines, and the vmap engine's clipped sum of given per-sample gradients equals, bit for bit,
the one at full precision without autocast; without the guard the vmap and stacked engines' contributions exceeded C
by 5e-4 to 3e-3 relative and the factored engine raised a dtype error (measured on the unguarded code).
"""
import contextlib
import math

import pytest
import torch

from tsdp.training import clipping, factored, full_precision as fp, stacked
from tsdp.training.clipping import clipped_sum
from tsdp.training.factored import factored_clipped_sum
from tsdp.training.models import MLP, make_model
from tsdp.training.stacked import StackedModel
from tsdp.training.step import per_sample_gradients

from float32_precision import reset_float32_precision

pytestmark = pytest.mark.usefixtures("one_thread", "default_precision")

LC, LF, M = 12, 3, 6
SLOTS = [("generic", "all")] + [(b, o) for b in ("cuda", "mkldnn") for o in ("all", "matmul")]
REDUCED = ("tf32", "bf16")


def _full(state):
    """Whether a :func:`_state` is full precision without autocast: what the guarded computations must see."""
    legacy, tf32, cuda, mkldnn, autocast = state
    return legacy == "highest" and tf32 is False and cuda not in REDUCED and mkldnn not in REDUCED and not autocast


def _legacy():
    try:
        return torch.get_float32_matmul_precision()
    except RuntimeError:  # a state mixing the legacy and the new API, which torch refuses to read
        return "mixed"


def _state():
    """(legacy precision, cuBLAS TF32 flag, cuda and mkldnn matmul slots (None on a torch without them), CPU autocast)
    as torch reports them."""
    try:
        tf32 = torch.backends.cuda.matmul.allow_tf32
    except RuntimeError:
        tf32 = "mixed"
    slots = (fp._get("cuda", "matmul"), fp._get("mkldnn", "matmul")) if fp.SLOTS else (None, None)
    return _legacy(), tf32, *slots, fp.autocast_enabled("cpu")


MEDIUM_AUTOCAST = ("medium", True, *(("tf32", "bf16") if fp.SLOTS else (None, None)), True)
""":func:`_state` at the legacy precision "medium" inside CPU autocast."""
NEW_API = pytest.mark.skipif(not fp.SLOTS, reason="this torch has no per-backend fp32_precision slots (torch < 2.9)")


def _fingerprint():
    """Every slot's reading now, then after each of a fixed sequence of changes to the root and the parents: equal for
    two states exactly when their slots are set alike ("none" or a value) and their legacy precisions agree."""
    if not fp.SLOTS:
        return [_legacy()]
    get, set_ = torch._C._get_fp32_precision_getter, torch._C._set_fp32_precision_setter
    readings = [(_legacy(), tuple(get(*s) for s in SLOTS))]
    for slot, value in [(("generic", "all"), "ieee"), (("generic", "all"), "tf32"), (("cuda", "all"), "ieee"),
                        (("mkldnn", "all"), "ieee"), (("mkldnn", "all"), "tf32"), (("cuda", "all"), "tf32")]:
        set_(*slot, value)
        readings.append(tuple(get(*s) for s in SLOTS))
    return readings


def _new_api(**slots):
    def apply():
        for key, value in slots.items():
            torch._C._set_fp32_precision_setter(*key.split("_"), value)
    return apply


USER_SETTINGS = {
    "default": lambda: None,
    "legacy high": lambda: torch.set_float32_matmul_precision("high"),
    "legacy medium": lambda: torch.set_float32_matmul_precision("medium"),
    "mkldnn matmul bf16": _new_api(mkldnn_matmul="bf16"),
    "legacy high then mkldnn bf16": lambda: (torch.set_float32_matmul_precision("high"),
                                             _new_api(mkldnn_matmul="bf16")()),
    "generic tf32": _new_api(generic_all="tf32"),
    "cuda all tf32, matmul none": _new_api(cuda_all="tf32"),
    "mkldnn all bf16, matmul ieee": _new_api(mkldnn_all="bf16", mkldnn_matmul="ieee"),
    "matmul slots set to their parents' value": _new_api(generic_all="tf32", cuda_matmul="tf32", mkldnn_all="tf32"),
}


@pytest.mark.parametrize("setting", [s if s.startswith(("default", "legacy high", "legacy medium")) and "then" not in s
                                     else pytest.param(s, marks=NEW_API) for s in sorted(USER_SETTINGS)])
def test_the_guard_forces_ieee_matmuls_and_restores_the_users_settings_exactly(setting):
    reset_float32_precision()
    USER_SETTINGS[setting]()
    reference = _fingerprint()
    reset_float32_precision()
    USER_SETTINGS[setting]()
    before = _state()
    with fp.full_precision("cpu"):
        inside = _state()
    assert _full(inside)
    assert _state() == before
    assert _fingerprint() == reference
    assert fp._FORCING.depth == 0


def test_nested_guards_and_an_exception_inside_leave_the_users_settings():
    torch.set_float32_matmul_precision("medium")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        user = _state()
        with pytest.raises(ZeroDivisionError):
            with fp.full_precision("cpu"):
                with fp.full_precision("cpu"):
                    assert _full(_state())
                assert _full(_state())  # the inner exit restores nothing while the outer guard holds
                1 / 0
        assert _state() == user == MEDIUM_AUTOCAST
    assert fp._FORCING.depth == 0


def test_the_legacy_api_path_forces_and_restores(monkeypatch):
    """The path of a torch without the fp32_precision slots (< 2.9) and with per-device-type autocast flags only
    (< 2.4), taken here by turning the feature tests off: the legacy precision and the CPU autocast flag are forced
    inside and come back after, also after an exception."""
    monkeypatch.setattr(fp, "SLOTS", False)
    monkeypatch.setattr(fp, "DEVICE_AUTOCAST", False)
    torch.set_float32_matmul_precision("medium")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(ZeroDivisionError):
            with fp.full_precision("cpu"):
                assert torch.get_float32_matmul_precision() == "highest"
                assert not torch.is_autocast_cpu_enabled()
                1 / 0
        assert torch.get_float32_matmul_precision() == "medium" and torch.is_autocast_cpu_enabled()
    assert fp._FORCING.depth == 0


def _model(name):
    torch.manual_seed(0)
    if name == "itransformer":  # small: one layer of width 8
        return make_model(name, LC, LF, d_model=8, n_heads=2, d_ff=16, n_layers=1)
    return MLP(LC, LF, hidden=16) if name == "mlp" else make_model(name, LC, LF)


def _batch(name):
    g = torch.Generator().manual_seed(1)
    c, f = 5 + 2 * torch.randn(M, LC, generator=g), 5 + 2 * torch.randn(M, LF, generator=g)
    cov = torch.randn(M, LC + LF, 1, generator=g) if name == "deepar" else None
    return c, f, cov


def _engine(engine, model, c, f, cov):
    """``run(clip, mask) -> clipped sum`` of one engine on the batch (per-sample gradients taken once for vmap)."""
    if engine == "vmap":
        grads = per_sample_gradients(model, c, f, None, cov)
        return lambda clip, mask: clipped_sum(grads, clip, 1, mask)
    if engine == "factored":
        return lambda clip, mask: factored_clipped_sum(model, c, f, clip, mask, cov)[0]
    stack = StackedModel([model])
    inputs = [c, f] + ([] if cov is None else [cov])

    def run(clip, mask):
        out = {k: torch.zeros_like(p) for k, p in stack.parameters.items()}
        stack.clipped_sums(inputs, clip, torch.ones(M) if mask is None else mask, out)
        return out
    return run


def _norm(grads):
    return math.sqrt(sum(float(v.double().square().sum()) for v in grads.values()))


class _Raised(Exception):
    pass


def _recording(monkeypatch, engine, seen, raise_in_sum):
    """Wraps the functions that form the engine's norms and sums, recording :func:`_state` when they run (the sum's
    wrapper raises :class:`_Raised` after recording where ``raise_in_sum``)."""
    def sum_hook():
        seen["sum"].append(_state())
        if raise_in_sum:
            raise _Raised

    if engine == "vmap":
        norms, weighted = clipping.gradient_norms, clipping.weighted_sum

        def gradient_norms(*a):
            seen["norm"].append(_state())
            return norms(*a)

        def weighted_sum(*a):
            sum_hook()
            return weighted(*a)
        monkeypatch.setattr(clipping, "gradient_norms", gradient_norms)
        monkeypatch.setattr(clipping, "weighted_sum", weighted_sum)
    elif engine == "factored":
        linear = factored.linear_factors

        def linear_factors(*a):
            seen["norm"].append(_state())
            f = linear(*a)
            add = f.add_weighted_sum

            def add_weighted_sum(*b):
                sum_hook()
                return add(*b)
            f.add_weighted_sum = add_weighted_sum
            return f
        monkeypatch.setattr(factored, "linear_factors", linear_factors)
    else:
        linear = stacked._linear_factors

        def linear_factors(*a):
            seen["norm"].append(_state())
            sq, add = linear(*a)

            def add_sum(*b):
                sum_hook()
                return add(*b)
            return sq, add_sum
        monkeypatch.setattr(stacked, "_linear_factors", linear_factors)


@pytest.mark.parametrize("raise_in_sum", [False, True])
@pytest.mark.parametrize("engine", ["vmap", "factored", "stacked"])
def test_norms_and_sums_are_formed_at_full_precision_and_the_users_settings_come_back(monkeypatch, engine,
                                                                                      raise_in_sum):
    """The user runs the step at "medium" inside bf16 autocast: every norm and sum is formed at full precision without
    autocast, and the user's state holds after the step, also where the sum raised."""
    model = _model("mlp")
    c, f, cov = _batch("mlp")
    run = _engine(engine, model, c, f, cov)
    seen = {"norm": [], "sum": []}
    _recording(monkeypatch, engine, seen, raise_in_sum)
    torch.set_float32_matmul_precision("medium")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        user = _state()
        with pytest.raises(_Raised) if raise_in_sum else contextlib.nullcontext():
            run(1.0, None)
        assert _state() == user == MEDIUM_AUTOCAST
    assert seen["norm"] and seen["sum"]
    assert all(map(_full, seen["norm"] + seen["sum"]))
    assert fp._FORCING.depth == 0


def _contributions(run, clip):
    """Each window's clipped contribution as the engine forms it: its sum with every other window masked out."""
    return [_norm(run(clip, torch.eye(M)[i])) for i in range(M)]


@pytest.mark.parametrize("name", ["mlp", "deepar", "itransformer"])
@pytest.mark.parametrize("engine", ["vmap", "factored", "stacked"])
def test_under_bf16_autocast_every_clipped_contribution_is_at_most_c(engine, name):
    """bf16 autocast on the CPU (the forward's linears really return bf16): every window's clipped contribution ≤ C
    with every window clipped, in each engine; the clipped sum within the bf16 forward's error (5e-2 of its norm; 3e-3
    measured) of the one without autocast. Unguarded: vmap and stacked above C by 5e-4 to 3e-3, factored a dtype
    error; iTransformer's vmap engine raised in the batched layer-norm backward (its residual stream is bf16)."""
    model = _model(name)
    c, f, cov = _batch(name)
    first = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        assert first(torch.ones(1, first.in_features)).dtype == torch.bfloat16
    run = _engine(engine, model, c, f, cov)
    clip = 0.5 * min(_contributions(run, 1e30))  # every window clipped
    reference = run(clip, None)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = run(clip, None)
        contributions = _contributions(run, clip)
    assert max(contributions) <= clip, f"a contribution exceeds C by {max(contributions) / clip - 1:.3g}"
    assert min(contributions) >= clip * (1 - 2e-6)
    assert all(got[k].dtype == reference[k].dtype for k in reference)
    assert _norm({k: got[k] - reference[k] for k in reference}) <= 5e-2 * _norm(reference)


def test_itransformers_per_sample_gradients_under_bf16_autocast_are_the_eager_ones():
    """The vmap engine's per-sample gradients of iTransformer under CPU bf16 autocast (whose layer norms get bf16
    inputs and float32 weights: torch.func's batched backward of that raised "expected scalar type BFloat16 but found
    Float") against two references: each window's own eager backward under the same autocast, and the float32 ones
    without autocast. Float32 like the parameters, each within 5e-2 of either reference's norm (bf16 rounding: 6e-3
    measured, the eager one as far from float32); the layer norms really saw bf16 inputs; clipped under autocast,
    each window's contribution is C to within the margin, never above."""
    model = _model("itransformer")
    c, f, _ = _batch("itransformer")
    seen = []
    hooks = [m.register_forward_hook(lambda mod, i, o: seen.append(i[0].dtype)) for m in model.modules()
             if isinstance(m, torch.nn.LayerNorm)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = per_sample_gradients(model, c, f)
    for h in hooks:
        h.remove()
    assert torch.bfloat16 in seen
    full = per_sample_gradients(model, c, f)
    for i in range(M):
        model.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            model(c[i:i + 1], f[i:i + 1]).sum().backward()
        eager = {k: p.grad for k, p in model.named_parameters()}
        mine = {k: got[k][i] for k in got}
        assert all(v.dtype == torch.float32 for v in mine.values())
        for reference in (eager, {k: full[k][i] for k in full}):
            assert _norm({k: mine[k] - reference[k] for k in mine}) <= 5e-2 * _norm(reference)
    clip = 0.5 * float(clipping.gradient_norms(got, 1).min())  # every window clipped, under autocast as the step does
    with torch.autocast("cpu", dtype=torch.bfloat16):
        contributions = [_norm(clipped_sum(got, clip, 1, torch.eye(M)[i])) for i in range(M)]
    assert clip * (1 - 2e-6) <= min(contributions) <= max(contributions) <= clip


@pytest.mark.parametrize("user", ["high", "medium", "autocast", "medium+autocast"])
def test_the_vmap_clipped_sum_of_given_gradients_is_the_full_precision_one_bit_for_bit(user):
    """The clip stage alone (norms, factors, sum) of the same per-sample gradients under the user's setting equals
    the one at "highest" without autocast, bit for bit, as do its contributions (all ≤ C)."""
    model = _model("mlp")
    c, f, _ = _batch("mlp")
    grads = per_sample_gradients(model, c, f)
    clip = 0.5 * float(clipping.gradient_norms(grads, 1).min())
    mask = torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    reference = clipped_sum(grads, clip, 1, mask)
    alone = [clipped_sum(grads, clip, 1, torch.eye(M)[i]) for i in range(M)]
    if "medium" in user or user == "high":
        torch.set_float32_matmul_precision(user.split("+")[0])
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled="autocast" in user):
        got = clipped_sum(grads, clip, 1, mask)
        got_alone = [clipped_sum(grads, clip, 1, torch.eye(M)[i]) for i in range(M)]
    for k in reference:
        assert torch.equal(got[k], reference[k])
        assert all(torch.equal(a[k], b[k]) for a, b in zip(got_alone, alone))
    assert max(_norm(a) for a in got_alone) <= clip


def test_upcast_widens_narrow_floats_only():
    bf16 = torch.tensor([1.0, 2.0 ** -8 + 1], dtype=torch.bfloat16)
    wide = fp.upcast(bf16, torch.float32)
    assert wide.dtype == torch.float32 and torch.equal(wide.to(torch.bfloat16), bf16)
    x64, ints = torch.ones(2, dtype=torch.float64), torch.arange(3)
    assert fp.upcast(x64, torch.float32) is x64 and fp.upcast(ints, torch.float32) is ints
    x32 = torch.ones(2)
    assert fp.upcast(x32, torch.float32) is x32
