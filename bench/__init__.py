"""Benchmarks (`tsdp bench WHAT`, tsdp/cli/cmd_bench.py) and the planted-bug loops the audits are tested on.

Benchmarks, one a module: ``accounting`` (the one-step PLD construction against dp-accounting's), ``loop`` (the DP
step against a non-private step and Opacus), ``audit`` (the Monte Carlo audit's trials and workers), ``canary``
(the one-run certifiers on idealised Gaussian scores), ``blackbox`` (spike-canary audits of a memoriser and of
tsdp's models), ``experiment`` (the experiment's baselines at scale and its pre-run estimate), ``startup`` (the
`tsdp` command's start against a bare interpreter), ``planted_opacus`` (canary audits of an Opacus loop with
planted bugs); ``rounds`` interleaves their timed rounds and records the machine. ``handwritten_dpsgd``: plain-torch
DP-SGD loops, each with one planted bug, for the white-box mechanism tests.
Nothing below imports this package: it sits above every layer but the command line.
"""
