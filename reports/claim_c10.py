"""Claim C10 (Appendix "Effect of Subsampling Parameters on Non-Private Utility", its first figure): without DP,
neither the batch size nor the top-level scheme has any significant effect on utility.

Measured and judged as :mod:`reports.non_private` says (the paper's protocol: every cell the same steps, the
checkpoint with the lowest validation loss; in the full report also every cell the same epochs, 800; an epochs
cap's last iterate beside it), at λ = 1 with Λ ∈ {4, 8, 16, 32}
(the paper's {16, ..., 128} on traffic, scaled to M1's 170 training series; the quick report Λ ∈ {4, 32}).
"""
from __future__ import annotations

from .non_private import NonPrivateClaim


class C10(NonPrivateClaim):
    """Claim C10 (THEOREMS.md; paper Appendix "Effect of Subsampling Parameters on Non-Private Utility",
    fig:non_dp_training_batchsize_traffic): without DP, neither the batch size Λ nor the top-level scheme has a
    significant effect on utility, measured on M1 yearly at ε = ∞ by a two-way ANOVA with each test's power stated
    (:class:`~reports.non_private.NonPrivateClaim`)."""

    id = "C10"
    statement = ("without DP, neither the batch size Λ nor the top-level scheme has any significant effect on utility "
                 "(Appendix 'Effect of Subsampling Parameters on Non-Private Utility', λ = 1)")
    factor = "batch_size"
    levels = (4, 8, 16, 32)
    quick_levels = (4, 32)
    equal_epochs = 800
    """Every cell's epochs in the full report's equal-epochs design: 4000 to 4800 steps at Λ = 32, 33600 to 34400 at
    Λ = 4."""
    fixed = {"instances": 1}
    paper_figure = "fig:non_dp_training_batchsize_traffic"


CLAIM = C10()
