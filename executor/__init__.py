"""Independent units of work run in this process, in local worker processes or on a Dask cluster, with re-runs.

The executor of every layer that runs many independent pieces of work: the Monte Carlo audits' trial shards
(:mod:`attacks.montecarlo.shards`), the canary audits' repeated trainings (:mod:`attacks.canary.runs`), the
paper's grid cells (:mod:`experiments.table`) and the benchmarks' audits. A unit of work is any picklable object
with a hashable ``key`` and a ``trials`` count (the progress bar's unit); the caller's function of it returns a
result with the same ``key`` and ``trials``. The executor knows nothing of what a unit computes, so it imports
neither torch nor any layer above :mod:`verify`.

``run`` (:func:`executor.run.run_shards`, the entry: the record of a run) → ``local`` (this process, or a warm
pool of spawned processes) or ``cluster`` (Dask distributed, the ``tsdp[cluster]`` extra) → ``tracker`` (the
results, the attempts, the stop rule, the errors). ``processes`` finds and ends a process with every process below
it (a worker, and what a user's code started in it); ``seams`` holds the tests' private seam (the unit of work
wrapped, to inject faults).

Dask rather than Ray: its scheduler speaks plain Python futures (the local-process path and the
cluster path share the retry and merge code), a ``LocalCluster`` starts in seconds in-process for
tests, it installs from pip without a platform-specific runtime, and it reschedules the tasks of a
lost worker by itself. A unit that fails (raised, or its worker process died) is re-run, never
dropped; after ``max_attempts`` failures of the same unit the run stops with an error.
"""
