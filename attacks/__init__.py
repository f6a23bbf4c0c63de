"""tsdp.attacks: the DP-SGD forecasting loop and the audits that attack it; the only torch users.

Subpackages, one job each:

* ``loop``: the paper's Algorithms 1-6 in torch (samplers, the torch ``BatchSampler`` for your
  ``DataLoader``, the noisy step and its clipping engines, models, metrics, training);
* ``data``: every series tsdp reads (synthetic, CSV / JSON lines, pandas, parquet, GluonTS);
* ``montecarlo``: Monte Carlo audits of the proofs' worst-case constructions through the loop
  (design, trials, shards, statistics, exact level, sequential violation test, planted bugs);
* ``canary``: one-run canary audits of trained models and of your own training function;
* ``inference``: the inference-time mechanism of Appendix H, its audit and its CRPS table;
* ``integrations``: adapters to other libraries (the Opacus accountant).
"""
