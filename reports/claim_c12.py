"""Claim C12 (Appendix "Effect of Subsampling Parameters on Non-Private Utility", its second figure): at the
experiments' batch size (Λ = 256 on traffic), neither the number of subsequences λ ∈ {1, 2, 4, 8, 16} nor the
top-level scheme has a significant effect on non-private utility.

Measured and judged as :mod:`reports.non_private` says (the same protocols, seeds, test and rule as C10), at Λ = 32
with λ ∈ {1, 2, 4, 8, 16} (the quick report λ ∈ {1, 16}), N' = Λ / λ = 32, 16, 8, 4, 2 series per step: Λ = 256
at λ = 1 needs N ≥ 256 series (M1 yearly has 170 training series), and 32 is the largest Λ of C10's grid, the paper's
batch sizes scaled to M1 (its Λ = 32, λ = 1 cells are C10's, the same trainings). An epoch is floor(170 λ / 32)
steps (5 at λ = 1, 85 at λ = 16), as in the authors' code: under an epochs cap a larger λ trains more steps on the
same series, which the paper's protocol (every cell the same steps, Λ windows each) equalises.
"""
from __future__ import annotations

from .non_private import NonPrivateClaim

BATCH_SIZE = 32
"""Λ of the claim on M1 yearly (the paper's 256 on traffic)."""


class C12(NonPrivateClaim):
    """Claim C12 (THEOREMS.md; paper Appendix "Effect of Subsampling Parameters on Non-Private Utility",
    fig:non_dp_training_subsequences_traffic): without DP, at a fixed batch size Λ, neither the number of
    subsequences λ nor the top-level scheme has a significant effect on utility, measured on M1 yearly at ε = ∞,
    Λ = 32, by a two-way ANOVA with each test's power stated (:class:`~reports.non_private.NonPrivateClaim`)."""

    id = "C12"
    statement = ("without DP, at batch size Λ = 256, neither the number of subsequences λ ∈ {1, 2, 4, 8, 16} nor the "
                 "top-level scheme has a significant effect on utility (Appendix 'Effect of Subsampling Parameters on "
                 "Non-Private Utility')")
    factor = "instances"
    levels = (1, 2, 4, 8, 16)
    quick_levels = (1, 16)
    fixed = {"batch_size": BATCH_SIZE}
    paper_figure = "fig:non_dp_training_subsequences_traffic"
    data_text = f"M1 yearly at ε = ∞, Λ = {BATCH_SIZE} for the paper's 256"


CLAIM = C12()
