"""The hand-written DP-SGD loops a reader copies (examples/hand_dp_sgd_audit.py, the one of
docs/tutorials/audit-your-training.md, and bench/handwritten_dpsgd.py's, which `tsdp bench planted` plants bugs in)
clip every window to norm at most C, float rounding included.

Clipping by the factor min(1, C / ||g||) formed in float32 leaves a clipped norm that float rounding can put above C:
the sensitivity C that the claimed ε assumes then does not hold (tsdp's engines clip to C (1 - κ),
training.clipping.clip_margin). Each loop runs one step at σ = 0 on per-window gradients given to it (its ``vmap``
replaced): window 0 a witness for which that naive factor gives a norm above C (checked here in float64), the others
zero; the step's gradient times Λ (2 or 4) is then window 0's clipped gradient exactly (adding zeros and dividing by a
power of two are exact), whose float64 norm must be at most C. Each failed on the naive factor (by 2e-8 to 7e-8).
"""
import math
import runpy
import types
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).parents[2]


def _witness(shapes, clip):
    """Per-parameter tensors of one window's gradient (float32) whose naively clipped copy, g min(1, C / ||g||) in
    float32, has float64 norm above C: the first of seeded draws that does."""
    total = sum(math.prod(s) for s in shapes.values())
    for seed in range(1000):
        flat = 5 * torch.randn(total, generator=torch.Generator().manual_seed(seed))
        naive = flat * (clip / flat.norm().clamp_min(1e-12)).clamp(max=1.0)
        if float(naive.double().norm()) > clip:
            parts, start = {}, 0
            for name, shape in shapes.items():
                parts[name] = flat[start:start + math.prod(shape)].reshape(shape)
                start += math.prod(shape)
            return parts
    raise AssertionError("no witness")


def _step_gradient(train, series, clip, batch_size, monkeypatch):
    """The gradient the loop ``train`` (its noise off) steps on in its first step, on the given per-window gradients
    (window 0: :func:`_witness`, the others zero), times Λ = ``batch_size`` (a power of two: exact)."""
    seen = {}

    def fake_vmap(*args, **kwargs):
        def per_window(params, context, forecast):
            assert len(context) == batch_size
            witness = _witness({k: v.shape for k, v in params.items()}, clip)
            return {k: torch.cat([w[None], w.new_zeros(batch_size - 1, *w.shape)]) for k, w in witness.items()}
        return per_window

    def step(optimizer, *args, **kwargs):
        seen["grads"] = [p.grad.clone() for group in optimizer.param_groups for p in group["params"]]

    monkeypatch.setitem(train.__globals__, "vmap", fake_vmap)  # the loop's own globals (runpy answers a copy)
    monkeypatch.setattr(torch.optim.SGD, "step", step)
    train(series)
    return [batch_size * g for g in seen["grads"]]


def _assert_clipped_to_c(step, clip):
    norm = math.sqrt(sum(float(g.double().square().sum()) for g in step))
    assert norm <= clip, f"the clipped window's norm exceeds C by {norm / clip - 1:.3g}"
    assert norm >= clip * (1 - 1e-5)  # clipped to C, not far below it


def test_the_examples_loop_clips_every_window_to_at_most_c(monkeypatch):
    example = runpy.run_path(str(ROOT / "examples" / "hand_dp_sgd_audit.py"))
    train = example["dp_sgd"](sigma=0.0, steps=1)
    _assert_clipped_to_c(_step_gradient(train, example["SERIES"].series, example["CLIP"], 2, monkeypatch),
                         example["CLIP"])


def test_the_planted_bugs_correct_loop_clips_every_window_to_at_most_c(monkeypatch):
    """bench/handwritten_dpsgd.py, the loop `tsdp bench planted` plants its bugs in (its noise off: ``noise-off``)."""
    from tsdp.bench import handwritten_dpsgd as planted

    train = planted.dp_sgd("noise-off", steps=1)
    _assert_clipped_to_c(_step_gradient(train, planted.SERIES.series, planted.CLIP, 4, monkeypatch), planted.CLIP)


def test_the_tutorials_loop_clips_every_window_to_at_most_c(monkeypatch):
    """The tutorial's python fences up to the one that defines ``dp_sgd``, run in order in one namespace as the page
    harness does, with ``audit_training`` answering at once and their asserts on its answer dropped (the audits are
    the page test's)."""
    import sys

    import tsdp

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from docs.fences import fences
    finally:
        sys.path.remove(str(ROOT / "tests"))
    answer = types.SimpleNamespace(epsilon_lower=0.0, violation=False, gradient=types.SimpleNamespace(epsilon_ideal=0.0),
                                   scores={"memorisation": types.SimpleNamespace(auc=0.5, ceiling={"dp": 0.0},
                                                                                  limited_by="")})
    monkeypatch.setattr(tsdp, "audit_training", lambda *a, **k: answer, raising=False)
    page = ROOT / "docs" / "tutorials" / "audit-your-training.md"
    runs = [f for f in fences(page) if f.lang == "python" and f.runs]
    upto = next(i for i, f in enumerate(runs) if "def dp_sgd" in f.code)
    namespace = {"__name__": "tutorial"}
    for fence in runs[:upto + 1]:
        code = "\n".join(line for line in fence.code.splitlines() if not line.startswith("assert "))
        exec(compile(code, fence.where, "exec"), namespace)
    train = namespace["dp_sgd"](sigma=0.0, steps=1)
    _assert_clipped_to_c(_step_gradient(train, namespace["series"].series, 1.0, 2, monkeypatch), 1.0)
