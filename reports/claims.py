"""The claims C1-C12 of THEOREMS.md "Claims" (paper Section 5 and Appendices C and H), in report order.

Each claim is a :class:`reports.claim_base.Claim` in its own module (``claim_c1`` ... ``claim_c7``;
C7, the privacy-utility claim, trains forecasters on the shipped real dataset, worded on it, and
is judged a second time on the paper's own reported tables, in each of the paper's two wordings; C8, C9 and C11 are
judged on the paper's appendix tables, :mod:`claim_paper_tables`; C10 and C12, non-private utility, train on the
shipped data at ε = ∞, :mod:`non_private`):
``compute`` (numbers, with the cells covered and not evaluable), a pure ``rule`` (verdict and
reason from those numbers), the ``statement`` and the ``figure``. ``CLAIMS[id](config, quick,
ctx)`` returns the claim's entry of results.json.

Evidence of every comparison: where a claim says bound A is more private than bound B (C1, C2,
C4), ``confirmed`` rests on the like-for-like comparisons, both pairs evaluated the same way
(pessimistic buckets against pessimistic, optimistic against optimistic), as the paper compares
them; the **robust** cross comparison, A evaluated pessimistically (an upper bound on its δ,
rounded up) against B optimistically (B's construction pair, a lower bound, rounded down),
which no discretisation error can favour, is counted in the reason beside it. The claim's own parameters (the paper's grid) are combined
with the given configuration: its N, L_C, L_F, σ and its r, Λ/N always form one cell of the
grid, so a different configuration gives different numbers and verdicts.
"""
from __future__ import annotations

from typing import Dict

from . import claim_c1, claim_c2, claim_c3, claim_c4, claim_c5, claim_c6, claim_c7, claim_c10, claim_c12
from .claim_base import Claim
from .claim_paper_tables import C8, C9, C11

CLAIMS: Dict[str, Claim] = {c.id: c for c in (
    *(m.CLAIM for m in (claim_c1, claim_c2, claim_c3, claim_c4, claim_c5, claim_c6, claim_c7)), C8, C9,
    claim_c10.CLAIM, C11, claim_c12.CLAIM)}
