"""tsdp.attacks: the audits that attack the DP-SGD loop (tsdp.training) and users' own training code.

Subpackages, one job each:

* ``montecarlo``: Monte Carlo audits of the proofs' worst-case constructions through the loop
  (design, trials, shards, statistics, exact level, sequential violation test, planted bugs the
  audit is run with, ``loop=``);
* ``canary``: one-run canary audits of trained models and of your own training function;
* ``inference``: the inference-time mechanism of Appendix H and its CRPS table;
* ``integrations``: adapters to other libraries (the Opacus accountant, gradient canaries in an Opacus
  ``DPOptimizer``).

The loop they attack is tsdp.training, the series it reads tsdp.datasets; the paper's experiments are
tsdp.experiments, the benchmarks tsdp.bench.
"""
