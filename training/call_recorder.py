"""The factored engine's forward: every call of the parameter-owning modules recorded, inputs and outputs."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch import Tensor, nn

from .parameter_owners import FactoredGradientError, Owner

Call = Tuple[tuple, List[torch.Tensor]]
"""One call of a module: its positional arguments and its output tensors."""


def output_tensors(output: object) -> List[torch.Tensor]:
    """A module's output as a list of tensors.

    Args:
        output: what the module's forward returned.

    Returns:
        ``[output]`` for a tensor, the tensors of a tuple or list of tensors.

    Raises:
        FactoredGradientError: the output is neither.
    """
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in output):
        return list(output)
    raise FactoredGradientError(f"a parameter-owning module returned {type(output).__name__}; "
                                "the factored engine needs a tensor or a tuple of tensors")


class CallRecorder:
    """Records (inputs, outputs) of every call of the parameter-owning modules, for the duration of a ``with``.

    Each owner's ``forward`` is wrapped on the instance (restored on exit) rather than given a
    forward hook: no hook dispatch per call (about 8 µs each; DeepAR's forward calls its hidden
    projections once per position and layer), and the output recorded is the forward's own, before any user hook
    rewrites it, which is the output whose gradient the parameters' factors need.

    Attributes:
        batch: the batch size M every recorded tensor must lead with.
        owners: the modules recorded (:func:`training.parameter_owners.parameter_owners`' triples).
        calls: {id(module): its calls, in order}.
    """

    def __init__(self, batch: int, owners: List[Owner]):
        """Prepares to record ``owners``' calls (nothing is wrapped before ``with``).

        Args:
            batch: the batch size M.
            owners: (qualified name, module, own parameters) of the modules to record.
        """
        self.batch = batch
        self.owners = owners
        self.calls: Dict[int, List[Call]] = {id(m): [] for _, m, _ in self.owners}
        self._versions: List[Tuple[nn.Module, List[torch.Tensor], List[int]]] = []
        self._saved: List[Tuple[nn.Module, Optional[Callable]]] = []

    def _recording(self, module: nn.Module, forward: Callable) -> Callable:
        calls, versions, batch = self.calls[id(module)], self._versions, self.batch

        def forward_and_record(*args, **kwargs):
            if kwargs:
                raise FactoredGradientError(f"{type(module).__name__} was called with keyword arguments; "
                                            "the factored engine records positional tensors only")
            tensors = [a for a in args if isinstance(a, Tensor)]
            for a in tensors:
                shape = a.shape
                if not shape or shape[0] != batch:
                    raise FactoredGradientError(
                        f"{type(module).__name__} got an input of shape {tuple(shape)} whose first dim is not the "
                        f"batch ({batch}); the factored engine needs sample-major inputs")
            output = forward(*args)
            outputs = [output] if isinstance(output, Tensor) else output_tensors(output)
            calls.append((args, outputs))
            tensors += outputs
            versions.append((module, tensors, [t._version for t in tensors]))
            return output

        return forward_and_record

    def check_unmodified(self) -> None:
        """Refuses a recorded input or output changed in place after its call (its factors would be stale).

        Raises:
            FactoredGradientError: one was.
        """
        for module, tensors, recorded in self._versions:
            if [t._version for t in tensors] != recorded:
                raise FactoredGradientError(f"an input or output of {type(module).__name__} was modified in place after "
                                            "the call; the factored engine needs out-of-place ops (use engine='vmap')")

    def __enter__(self):
        # the instance attribute set directly: Module.__setattr__'s parameter/buffer/module checks cost more
        # than the forward of a small layer, and a plain function is none of those
        self._saved = [(m, m.__dict__.get("forward")) for _, m, _ in self.owners]
        for m, _ in self._saved:
            m.__dict__["forward"] = self._recording(m, m.forward)
        return self

    def __exit__(self, *exc):
        for m, own_forward in self._saved:
            if own_forward is None:
                del m.__dict__["forward"]
            else:
                m.__dict__["forward"] = own_forward
        self._saved = []
