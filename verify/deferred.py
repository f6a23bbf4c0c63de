"""Deferred imports: the modules dp-accounting imports but the accountant never calls, loaded on first use.

dp-accounting's package ``__init__`` imports every accountant it ships (RDP, mechanism
calibration: scipy.optimize; the Gaussian mechanism: scipy.stats) and its ``pld`` modules
import scipy.signal and scipy.stats at their top, yet tsdp's accountant calls none of them
(it convolves with :func:`tsdp.verify.pld.fftconvolve` and reads ε itself). Importing them
took 0.7 s of the 1 s `tsdp epsilon` spent importing.

:func:`defer_unused_imports` (run by ``tsdp.verify``'s ``__init__``, before anything imports
dp-accounting) puts stand-ins in ``sys.modules`` for those that are not loaded yet:

* scipy.signal, scipy.stats, scipy.optimize: a :class:`DeferredModule` whose first attribute
  read imports the real module and answers from it (every later read too), so
  ``from scipy import stats; stats.norm`` and ``signal.fftconvolve`` in the library behave as
  before, only later. A submodule import (``import scipy.stats.qmc``) loads the real package
  first (the stand-in has no ``__path__`` of its own).
* dp_accounting: a :class:`DeferredPackage` whose submodules import as usual
  (``dp_accounting.dp_event``, ``dp_accounting.pld.pld_pmf``) while its ``__init__`` runs on the
  first read of any other name (``dp_accounting.get_epsilon_gaussian``, ``dp_accounting.rdp``).

Numbers never depend on this: the same functions run, from the same modules. A process that
imported any of these before tsdp keeps its real module (nothing is replaced).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types

DEFERRED_MODULES = ("scipy.signal", "scipy.stats", "scipy.optimize")
"""scipy submodules the accountant never calls (dp-accounting imports them at its top)."""

DEFERRED_PACKAGES = ("dp_accounting",)
"""Packages whose ``__init__`` is deferred: their submodules import without it."""

_LOCK = threading.RLock()  # one load at a time; re-entrant (scipy.signal's import reads scipy.stats)


class DeferredModule(types.ModuleType):
    """Stand-in for a module not imported yet: the first attribute it lacks imports the real module."""

    def __getattr__(self, attr: str):
        with _LOCK:
            real = sys.modules.get(self.__name__)
            if real is self or real is None:
                del sys.modules[self.__name__]
                try:
                    real = importlib.import_module(self.__name__)
                except BaseException:
                    sys.modules.setdefault(self.__name__, self)
                    raise
        return getattr(real, attr)


class DeferredPackage(types.ModuleType):
    """A package whose submodules import without its ``__init__``; reading any other name runs the ``__init__``
    in place (this module object becomes the real package)."""

    def __getattr__(self, attr: str):
        if attr.startswith("__") or importlib.util.find_spec(f"{self.__name__}.{attr}") is not None:
            raise AttributeError(attr)  # a submodule: the import system loads it (``from pkg import sub``)
        with _LOCK:
            if type(self) is DeferredPackage:
                self.__class__ = types.ModuleType
                self.__spec__.loader.exec_module(self)
        return getattr(self, attr)


def _stand_in(name: str, cls):
    spec = importlib.util.find_spec(name)
    if spec is None:
        return None
    module = cls(name)
    module.__spec__ = spec
    if cls is DeferredPackage:
        module.__path__ = list(spec.submodule_search_locations)
        module.__file__, module.__loader__, module.__package__ = spec.origin, spec.loader, name
    return module


def defer_unused_imports() -> None:
    """Install the stand-ins (module docstring) for every deferred module not imported yet; idempotent."""
    with _LOCK:
        for names, cls in ((DEFERRED_MODULES, DeferredModule), (DEFERRED_PACKAGES, DeferredPackage)):
            for name in names:
                if name not in sys.modules:
                    module = _stand_in(name, cls)
                    if module is not None:
                        sys.modules[name] = module


def loaded(name: str) -> bool:
    """Whether module ``name`` has really been imported (a stand-in whose load is still deferred is not)."""
    module = sys.modules.get(name)
    return module is not None and type(module) not in (DeferredModule, DeferredPackage)
