"""Monte Carlo audits of the proofs' worst-case constructions through the real loop (lower bounds on ε).

``audit`` (the entry: construction, theory, statistics pipeline, result; its ``options``, one object per
concern) → ``shards`` (trials in shards, the unit of work :mod:`executor` runs on 1..N processes or Dask) →
``trials`` (batched trials through :mod:`training`).
``constructions`` (the proofs' datasets and gradient functions), ``planted`` (bugs the audit
must catch), ``laws`` (the statistic's law under the claimed pair), ``design`` (thresholds fixed before sampling), ``statistics`` (Clopper-Pearson
and likelihood-ratio statistics), ``exact_level`` (the union test certified at its exact level),
``counts`` (a shard's histograms and their exact merge), ``sequential`` (the anytime-valid
violation test), ``bracket`` (the attained bracket and the composition gap). `tsdp bench audit` is
:mod:`tsdp.bench.audit`.
"""
