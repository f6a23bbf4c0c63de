"""tsdp.testing: soundness checks for anyone's accountant.

An accountant is a function ``fn(config, steps, delta) -> ε``. tsdp knows, for every scheme of
the paper, an **attained** ε (a lower bound that a concrete pair of neighbouring datasets, the
proofs' construction, reaches through the real loop) and a **sound** ε (an upper bound). An
accountant below the attained ε for the same configuration, steps, δ and neighbouring relation
is provably wrong, and the check names the attack and the `tsdp audit` command that shows it.

* :func:`check_accountant` (a :class:`CheckReport` of per-cell :class:`Verdict`\\ s), and the
  assertions :func:`assert_sound`, :func:`assert_not_unsound` (raise :class:`UnsoundAccountantError`);
* :class:`Substitution`: the neighbouring relation the accountant answers for (window, w-event, w-user, series;
  ``Relation``, its former name here, still loads it);
* adapters: :func:`opacus_accountant` (an Opacus accountant with a guessed sample rate),
  :func:`dp_accounting_accountant` (a dp-accounting ``DpEvent`` builder), :func:`poisson_pld`
  (dp-accounting's Poisson PLD at a guessed rate), :func:`tsdp_accountant`, :func:`accountant`
  (a plain function with a name and a claim);
* :func:`configs` and :func:`cells`: hypothesis strategies of valid configurations;
  :func:`assert_sound_for_all`: the hypothesis property (shrunk counterexamples);
* :func:`default_grid`: the paper's Section 5 configurations plus seeded random ones;
* a pytest plugin (:mod:`tsdp.testing.plugin`, fixture ``tsdp_accountant_check``).

The accountant runs in a forked worker process (:mod:`tsdp.testing.worker`) under a time limit per call
(60 s by default, as ``tsdp check-accountant --timeout``); a cell it declines (returns None, raises
NotImplementedError) is reported as declined, not judged.

Names load on first use: importing this package imports neither torch nor hypothesis.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "check_accountant": "tsdp.testing.check",
    "judge": "tsdp.testing.check",
    "assert_sound": "tsdp.testing.check",
    "assert_not_unsound": "tsdp.testing.check",
    "reported_epsilon": "tsdp.testing.check",
    "AccountantError": "tsdp.testing.check",
    "UnsoundAccountantError": "tsdp.testing.check",
    "Verdict": "tsdp.testing.verdicts",
    "CheckReport": "tsdp.testing.verdicts",
    "Substitution": "tsdp.testing.relations",
    "Cell": "tsdp.testing.grid",
    "default_grid": "tsdp.testing.grid",
    "reference": "tsdp.testing.brackets",
    "accountant": "tsdp.testing.adapters",
    "opacus_accountant": "tsdp.testing.adapters",
    "dp_accounting_accountant": "tsdp.testing.adapters",
    "poisson_pld": "tsdp.testing.adapters",
    "tsdp_accountant": "tsdp.testing.adapters",
    "sample_rate": "tsdp.testing.adapters",
    "configs": "tsdp.testing.strategies",
    "cells": "tsdp.testing.strategies",
    "assert_sound_for_all": "tsdp.testing.strategies",
}

__all__ = sorted(_EXPORTS)

_FORMER_NAMES = {"Relation": "Substitution"}
"""Names this package exported before, loading what they name now (``tsdp.testing.Relation`` is
:class:`Substitution`; :class:`tsdp.theorems.config.Relation` is the configuration's event/user choice)."""


def __getattr__(name: str):
    """Load a public name on first use (PEP 562)."""
    current = _FORMER_NAMES.get(name, name)
    module = _EXPORTS.get(current)
    if module is None:
        raise AttributeError(f"module 'tsdp.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), current)
    globals()[name] = value
    return value


def __dir__():
    return __all__
