"""Appendix C: the pooled-window DP-SGD baseline (T13, T14).

All N_tot = Σ_n T_n windows pooled (N T for one length), a batch of Λ windows drawn without replacement per step.
"""
from __future__ import annotations

from .base import PairBound, Scheme
from .shapes import against_gaussian, hypergeometric_weights

POOLED = Scheme(("pooled",), ("wr", "poisson"))


def _record_rate(p):
    return p.ratio(p.batch_size, p.n_windows_total)


T13 = PairBound(
    id="T13",
    label="standard DP-SGD, one record (Zhu et al. 2022)",
    reference="Prop. C.1",
    kind="tight",
    scope="step",
    scheme=POOLED,
    statement="α ≥ 1: H_α(MoG([0,2],[1-Λ/N_tot, Λ/N_tot],σ) ‖ N(0,σ)); α < 1 swapped. "
    "Covers ONE window (record level), not one element",
    construction="T13",
    build=lambda p: against_gaussian([0, 2], [1 - _record_rate(p), _record_rate(p)], p.sigma),
)

T14 = PairBound(
    id="T14",
    label="standard_dp_sgd_optimistic",
    reference="Prop. C.2",
    kind="lower",
    scope="step",
    scheme=POOLED,
    statement="α ≥ 1: H_α(MoG(2i, Hypergeom(i; N_tot, k, Λ)) ‖ N(0,σ)), i = 0..k; α < 1 swapped "
    "(erratum 1: 0-based index)",
    construction="T14",
    build=lambda p: against_gaussian(
        [2 * i for i in range(min(p.k, p.batch_size) + 1)],
        hypergeometric_weights(p.n_windows_total, p.k, p.batch_size, numeric=p.numeric),
        p.sigma,
    ),
)

BOUNDS = (T13, T14)
