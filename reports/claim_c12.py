"""Claim C12 (Appendix "Effect of Subsampling Parameters on Non-Private Utility", its second figure): at the
experiments' batch size (Λ = 256 on traffic), neither the number of subsequences λ ∈ {1, 2, 4, 8, 16} nor the
top-level scheme has a significant effect on non-private utility.

Measured and judged as :mod:`reports.non_private` says (the same training, seeds, cap and test as C10), at Λ = 32
with λ ∈ {1, 2, 4, 8, 16}, N' = Λ / λ = 32, 16, 8, 4, 2 series per step: Λ = 256 at λ = 1 needs N ≥ 256 series
(M1 yearly has 170 training series), and 32 is the largest Λ of C10's grid, the paper's batch sizes scaled to M1
(in the full report its Λ = 32, λ = 1 cells are C10's, the same trainings). Under the epochs cap an epoch is
floor(170 λ / 32) steps (5 at λ = 1, 85 at λ = 16), as in the authors' code: a larger λ trains more steps on the same
series. The quick report caps C12 at 5 epochs (at 10 its grid trains about twice C10's steps, the longest claim of a
quick report); the full report at C10's 10.
"""
from __future__ import annotations

from .non_private import EPOCHS, NonPrivateClaim

BATCH_SIZE = 32
"""Λ of the claim on M1 yearly (the paper's 256 on traffic)."""
QUICK_EPOCHS = 5
"""The epochs cap of the quick report (module docstring)."""


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
    fixed = {"batch_size": BATCH_SIZE}
    paper_figure = "fig:non_dp_training_subsequences_traffic"
    epochs = {True: QUICK_EPOCHS, False: EPOCHS}
    data_text = f"M1 yearly at ε = ∞, Λ = {BATCH_SIZE} for the paper's 256"


CLAIM = C12()
