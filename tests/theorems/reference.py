"""An independent reference for H_α: direct quadrature of max(dP - α dQ, 0) in mpmath.

It does not use the engine's single-root reduction: the sign changes of dP - α dQ are
located on a fine float grid of the log-density ratio, refined with mpmath, and the
integral is split at every one of them.
"""
from __future__ import annotations

import mpmath as mp
import numpy as np
from scipy.special import logsumexp

from tsdp.theorems.mixture import MixturePair


def _components(pair: MixturePair):
    nf = pair.normal_form()
    sigma = mp.mpf(nf.sigma.evalf(mp.mp.dps + 10))
    P = [(mp.mpf(m.evalf(mp.mp.dps + 10)), mp.mpf(w.evalf(mp.mp.dps + 10))) for m, w in zip(nf.P.means, nf.P.weights)]
    Q = [(mp.mpf(m.evalf(mp.mp.dps + 10)), mp.mpf(w.evalf(mp.mp.dps + 10))) for m, w in zip(nf.Q.means, nf.Q.weights)]
    return [c for c in P if c[1] > 0], [c for c in Q if c[1] > 0], sigma


def hockey_stick_quadrature(pair: MixturePair, alpha: float, dps: int = 40) -> mp.mpf:
    """∫ max(p(x) - α q(x), 0) dx by mpmath.quad, split at the roots of p - α q."""
    with mp.workdps(dps):
        P, Q, sigma = _components(pair)
        alpha = mp.mpf(alpha)

        def density(comps, x):
            return mp.fsum(w * mp.npdf(x, m, sigma) for m, w in comps)

        g = lambda x: density(P, x) - alpha * density(Q, x)  # noqa: E731
        # log-ratio on a float grid to find the sign changes (robust in the tails)
        means = [float(m) for m, _ in P + Q]
        s = float(sigma)
        span = max(abs(min(means)), abs(max(means))) + 40 * s
        grid = np.linspace(-span, span, 20001)

        def logdens(comps):
            m = np.array([float(c[0]) for c in comps])
            w = np.log(np.array([float(c[1]) for c in comps]))
            return logsumexp(w - 0.5 * ((grid[:, None] - m) / s) ** 2, axis=1)

        h = logdens(P) - logdens(Q) - float(mp.log(alpha)) if alpha > 0 else np.full(grid.shape, np.inf)
        roots = [mp.mpf(x) for x in grid[h == 0]]
        for i in np.flatnonzero(np.sign(h[:-1]) * np.sign(h[1:]) < 0):
            roots.append(mp.findroot(g, (mp.mpf(grid[i]), mp.mpf(grid[i + 1])), solver="anderson"))
        points = [-mp.inf, *sorted(roots), mp.inf]
        total = mp.mpf(0)
        for lo, hi in zip(points[:-1], points[1:]):
            inner = sorted({lo, hi, *[mp.mpf(m) for m in means if lo < m < hi]})
            mid = (lo + hi) / 2 if mp.isfinite(lo) and mp.isfinite(hi) else (
                hi - 1 if mp.isfinite(hi) else (lo + 1 if mp.isfinite(lo) else mp.mpf(0))
            )
            if g(mid) > 0:
                total += mp.quad(g, inner)
        return total
