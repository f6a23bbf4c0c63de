"""The factored engine's view of a model: the modules that own trainable parameters, found once and cached.

At the batch sizes of training a step's Python overhead weighs as much as its arithmetic, so
the structure (which modules own which trainable parameters, under which qualified names) is
found once per model (:func:`plan_of`) and only checked each step, by one walk over the
modules (:func:`module_signature`).
"""
from __future__ import annotations

import weakref
from typing import Dict, List, Tuple

from torch import nn

Owner = Tuple[str, nn.Module, Dict[str, nn.Parameter]]
"""(qualified name, module, its own trainable parameters by local name)."""


class FactoredGradientError(ValueError):
    """The model is outside what the factored engine handles (use the vmap engine)."""


def parameter_owners(model: nn.Module) -> List[Owner]:
    """Every module of ``model`` that owns a trainable parameter, in ``named_modules`` order.

    A parameter shared by two modules is refused: its per-sample gradient is the sum of both
    contributions, whose squared norms do not add, so the factored norms would be wrong.

    Args:
        model: the model to read.

    Returns:
        (qualified name, module, {local name: parameter}) for each owner.

    Raises:
        FactoredGradientError: a parameter is shared between two modules.
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


def module_signature(model: nn.Module) -> list:
    """Every module reachable from ``model`` with its children's names, and each parameter slot's name, id and
    requires_grad, in a fixed order.

    Equal signatures mean the same modules under the same names and the same trainable parameters in the same slots:
    a plan holds every module and its trainable parameters alive, so their ids cannot be reused meanwhile (a frozen
    parameter's could, but a frozen parameter is in no plan, and one turned trainable changes the signature).

    Args:
        model: the model to read.

    Returns:
        The flat list of module ids, their children's names and parameter slots ((name, None) for an empty slot).
    """
    out, stack = [], [model]
    while stack:
        module = stack.pop()
        children = module._modules
        out.append(id(module))
        out.append(tuple(children))
        for k, p in module._parameters.items():
            out.append((k, None) if p is None else (k, id(p), p.requires_grad))
        stack.extend(children.values())
    return out


class OwnerPlan:
    """What the factored engine needs of a model's structure, found once (:func:`plan_of`).

    Attributes:
        signature: the :func:`module_signature` it was made for.
        params: the trainable parameters by qualified name (``named_parameters``' names and order).
    """

    def __init__(self, model: nn.Module, signature: list):
        """Reads ``model``'s owners (:func:`parameter_owners`).

        Args:
            model: the model.
            signature: its :func:`module_signature`.
        """
        self.signature = signature
        owners = parameter_owners(model)
        # the model itself is the cache's weak key: holding it here would keep it alive, so None stands for it
        self._owners = [(name, None if module is model else module, own) for name, module, own in owners]
        self._modules = [None if module is model else module for module in model.modules()]
        self.params = {f"{name}.{k}" if name else k: p for name, _, own in owners for k, p in own.items()}

    def owners(self, model: nn.Module) -> List[Owner]:
        """:func:`parameter_owners` of the model this plan was made for.

        Args:
            model: that model.

        Returns:
            (qualified name, module, {local name: parameter}) for each owner.
        """
        return [(name, model if module is None else module, own) for name, module, own in self._owners]

    def modules(self, model: nn.Module) -> List[nn.Module]:
        """``model.modules()`` of the model this plan was made for (each module once, in module order).

        Args:
            model: that model.

        Returns:
            The modules, ``model`` first.
        """
        return [model if module is None else module for module in self._modules]


_PLANS: "weakref.WeakKeyDictionary[nn.Module, OwnerPlan]" = weakref.WeakKeyDictionary()


def plan_of(model: nn.Module) -> OwnerPlan:
    """``model``'s cached plan, rebuilt when its signature changed (a module or parameter added, removed, replaced,
    renamed, frozen or unfrozen): one walk over the modules per step instead of ``named_modules``' with its names.

    Args:
        model: the model.

    Returns:
        Its :class:`OwnerPlan`.

    Raises:
        FactoredGradientError: a parameter is shared between modules (nothing cached then).
    """
    signature = module_signature(model)
    plan = _PLANS.get(model)
    if plan is None or plan.signature != signature:
        plan = _PLANS[model] = OwnerPlan(model, signature)
    return plan


def trainable_parameters(model: nn.Module) -> Dict[str, nn.Parameter]:
    """The model's trainable parameters by qualified name, in ``named_parameters`` order, from its cached plan.

    The mapping is the plan's own: read it, do not modify it.

    Args:
        model: the model.

    Returns:
        {qualified name: parameter}.

    Raises:
        FactoredGradientError: a parameter is shared between modules (not cached then).
    """
    return plan_of(model).params
