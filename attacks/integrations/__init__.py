"""Adapters to other libraries: ``opacus_accountant`` (tsdp's accountant as an Opacus ``IAccountant``),
``dpoptimizer_canaries`` (white-box gradient canaries in an Opacus ``DPOptimizer``), ``planted_opacus``
(the planted-bug bench on an Opacus loop, `tsdp bench planted-opacus`), ``handwritten_dpsgd`` (a hand-written plain-torch
DP-SGD loop with planted bugs) and ``bug_bench`` (its bench over many seeds, `tsdp bench planted`)."""
