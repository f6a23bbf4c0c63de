"""What the precision tests share outside fixtures: ``reset_float32_precision``. A plain module, imported by name
(as tests/cli/cli_run.py)."""
import torch


def reset_float32_precision():
    """torch's initial float32 matmul precision state: the legacy precision "highest", the ``generic.all`` slot and
    the ``cuda``/``mkldnn`` ``all`` and ``matmul`` slots of the ``fp32_precision`` API "none"."""
    torch.set_float32_matmul_precision("highest")
    if not hasattr(torch._C, "_set_fp32_precision_setter"):  # torch < 2.9: the legacy precision is the whole state
        return
    for backend in ("cuda", "mkldnn"):
        for op in ("all", "matmul"):
            torch._C._set_fp32_precision_setter(backend, op, "none")
    torch._C._set_fp32_precision_setter("generic", "all", "none")
