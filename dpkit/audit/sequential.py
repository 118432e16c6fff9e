"""Anytime-valid one-sided bounds on a Bernoulli mean: betting confidence sequences.

For a sequence of i.i.d. indicators with mean ``p`` and any candidate mean ``m``, the capital
``K_t(m) = Π (1 + λ_i (x_i − m))`` of a gambler who bets a *predictable* fraction ``λ_i``
is a non-negative martingale when ``p = m`` (supermartingale when ``p ≤ m``), so by Ville's
inequality ``Pr[∃t: K_t(m) ≥ 1/α] ≤ α``. The lower bound at time ``t`` is the largest ``m``
below which every candidate has been rejected; it holds *simultaneously for all t*, so an
audit may stop whenever it likes (Waudby-Smith & Ramdas 2023, Sec. 3–4, predictable plug-in
bets, their Eq. (26), with the truncation ``λ ≤ c/m`` of Remark 3).

Bets are fixed per batch (chosen from the data of earlier batches), which keeps them
predictable while letting a batch of ``n_b`` indicators update the capital in closed form:
``k_b log(1 + λ(1 − m)) + (n_b − k_b) log(1 − λ m)``.

References
----------
.. [1] I. Waudby-Smith and A. Ramdas, "Estimating means of bounded random variables by
       betting", J. R. Stat. Soc. B 86(1), 2024 (arXiv:2010.09686v7).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BettingBound"]

_TAIL = np.geomspace(1e-12, 0.5, 3000)
_GRID = np.unique(np.concatenate([[0.0], _TAIL, 1.0 - _TAIL, [1.0]]))


class BettingBound:
    """Running one-sided confidence bound (``side="lower"`` or ``"upper"``) on a Bernoulli mean.

    Parameters
    ----------
    alpha
        Error probability of the whole sequence (all times together).
    side
        ``"lower"`` bets that the mean is larger than ``m`` and yields a lower bound;
        ``"upper"`` the mirror image.
    truncation
        ``c`` in ``λ ≤ c / m`` (resp. ``c / (1 − m)``), ``0 < c < 1``.

    Notes
    -----
    Bounds are read off a grid of 6 000 points (geometric near 0 and 1, relative spacing
    0.9 %), rounded outwards, so they are conservative by at most one grid step.
    """

    def __init__(self, alpha: float, side: str, truncation: float = 0.5):
        if side not in ("lower", "upper"):
            raise ValueError(f"side must be 'lower' or 'upper', got side={side!r}")
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got alpha={alpha}")
        self.alpha = float(alpha)
        self.side = side
        self.c = float(truncation)
        self.log_capital = np.zeros(_GRID.shape)
        self.count = 0
        self.total = 0

    def update(self, k: int, n: int) -> None:
        """Add a batch of ``n`` indicators of which ``k`` are 1."""
        if n <= 0:
            return
        mu = (self.count + 0.5) / (self.total + 1.0)
        var = max(mu * (1.0 - mu), 1e-12)
        lam = math.sqrt(2.0 * math.log(1.0 / self.alpha) / (var * (self.total + n)))
        m = _GRID
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.side == "lower":
                lam_m = np.minimum(lam, self.c / np.maximum(m, 1e-300))
                gain = k * np.log1p(lam_m * (1.0 - m)) + (n - k) * np.log1p(-lam_m * m)
            else:
                lam_m = np.minimum(lam, self.c / np.maximum(1.0 - m, 1e-300))
                gain = k * np.log1p(-lam_m * (1.0 - m)) + (n - k) * np.log1p(lam_m * m)
        self.log_capital += np.nan_to_num(gain, nan=0.0, neginf=-1e300)
        self.count += int(k)
        self.total += int(n)

    def bound(self) -> float:
        """Current bound (valid simultaneously with every earlier and later one)."""
        rejected = self.log_capital >= math.log(1.0 / self.alpha)
        if self.side == "lower":
            keep = np.flatnonzero(~rejected)
            first = keep[0] if keep.size else len(_GRID)
            return float(_GRID[first - 1]) if first > 0 else 0.0
        keep = np.flatnonzero(~rejected)
        last = keep[-1] if keep.size else -1
        return float(_GRID[last + 1]) if last + 1 < len(_GRID) else 1.0
