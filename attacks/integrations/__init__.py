"""Adapters to other libraries: ``opacus_accountant`` (tsdp's accountant as an Opacus ``IAccountant``),
``dpoptimizer_canaries`` (white-box gradient canaries in an Opacus ``DPOptimizer``). The planted-bug Opacus loop
of `tsdp bench planted-opacus` is :mod:`tsdp.bench.planted_opacus`; the hand-written loops of `tsdp bench planted`
are :mod:`tsdp.bench.handwritten_dpsgd`."""
