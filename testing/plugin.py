"""tsdp's pytest plugin (entry point ``pytest11``: loaded in every pytest session where tsdp is installed).

Loading it imports nothing but this module (no torch, sympy or hypothesis); the fixture loads
:mod:`tsdp.testing` when a test uses it. A downstream project writes::

    def test_my_accountant_is_sound(tsdp_accountant_check):
        tsdp_accountant_check(my_epsilon)            # my_epsilon(config, steps, delta) -> ε

and gets hypothesis-shrunk counterexamples: the failure names the smallest configuration it found,
the attack (the proof's construction and its pair) and the `tsdp audit` command that shows it.
The marker ``@pytest.mark.tsdp_accountant(...)`` sets the check's options for one test
(``strategy``, ``delta``, ``relation``, ``max_examples``, ``seed``, ``timeout``: those of
:func:`tsdp.testing.strategies.assert_sound_for_all`); keyword arguments of the call override it.
The accountant runs in a worker process under ``timeout`` seconds per call (default 60, as
``tsdp check-accountant``'s): one that hangs, even in a C call, fails the test within its limit.
"""
from __future__ import annotations

import pytest

MARKER = "tsdp_accountant"


def pytest_configure(config):
    """Register the ``tsdp_accountant`` marker (pytest's hook).

    Args:
        config (pytest.Config): pytest's configuration.
    """
    config.addinivalue_line("markers", f"{MARKER}(**options): options of the tsdp_accountant_check fixture (strategy, "
                                       "delta, relation, max_examples, seed, timeout)")


@pytest.fixture
def tsdp_accountant_check(request):
    """A function ``check(fn, **options)``: the hypothesis soundness property of ``fn(config, steps, delta) -> ε``
    against tsdp's attained ε, a lower bound (:func:`tsdp.testing.strategies.assert_sound_for_all`).

    Args:
        request (pytest.FixtureRequest): pytest's request; its ``tsdp_accountant`` marker, if any, gives the
            default options.

    Returns:
        check (Callable[..., None]): ``check(fn, **options)``, options from the ``tsdp_accountant`` marker then
            the call (``strategy``, ``delta``, ``relation``, ``max_examples``, ``seed``, ``timeout``); it raises
            :class:`~tsdp.testing.check.UnsoundAccountantError` on a (shrunk) counterexample.

    Example:
        In a downstream project's tests::

            @pytest.mark.tsdp_accountant(max_examples=20)
            def test_my_accountant_is_sound(tsdp_accountant_check):
                tsdp_accountant_check(my_epsilon, delta=1e-6)
    """
    marker = request.node.get_closest_marker(MARKER)
    defaults = dict(marker.kwargs) if marker is not None else {}

    def check(fn, **options):
        from tsdp.testing.strategies import assert_sound_for_all

        return assert_sound_for_all(fn, **{**defaults, **options})

    return check
