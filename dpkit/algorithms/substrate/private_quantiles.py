"""Column clip points at private quantiles of the training rows: the exponential mechanism per column.

A heavy-tailed column (an income, a count of e-mail characters) squashes under range scaling:
its largest values set the range, and most rows land in a sliver of [−1, 1]. Clipping it at a
quantile keeps the bulk spread. :func:`estimate_quantile_ranges` works in two stages:

1. the private ranges of :mod:`~dpkit.algorithms.substrate.private_ranges` (noisy power-of-two
   histograms, their own share of the budget): each column's range [a_j, b_j], within a factor
   of 2 of the bulk of the data;
2. for every column j, a low clip point near its (1 − q)-quantile and a high one near its
   q-quantile, each chosen by the exponential mechanism (McSherry & Talwar 2007) among the
   candidates of a fixed grid that lie in [a_j, b_j]: 0 and ±2^(k/4), quarter powers of two from
   2^LOWEST to 2^HIGHEST. This is the exponential-mechanism quantile of Smith (2011, "Privacy-
   preserving statistical estimation with optimal convergence rates", STOC) on a finite grid, one
   quantile at a time (Gillenwater, Joseph & Kulesza 2021, "Differentially Private Quantiles",
   ICML, release several jointly, which two per column do not need). Stage 1 is what makes the
   grid small: over the whole grid the ~160 candidates beyond the data's maximum, each only
   (1 − q)·n ranks from the target, outweighed the few good ones at ε₀ ≈ 0.05 (measured on
   DAAG's spam7: every column's clip point landed far beyond its data).

The score of a candidate c for the target rank t is u(c) = −max(#{i : x_ij < c} − t,
t − #{i : x_ij ≤ c}, 0), with t = ⌈q·n⌉ (high) or ⌈(1 − q)·n⌉ (low): integers, computed exactly;
0 exactly when c is a t-th smallest value (or lies between it and the next), which keeps a column
with many zeros clipped at 0. Replacing one row moves each count by at most 1, hence the score by
at most 1 (sensitivity 1); adding or removing one moves the counts by at most 1 and t by at most 1
(sensitivity 2). The candidates depend on the data only through stage 1's release
(post-processing). Every draw goes through :class:`~dpkit.mechanisms.selection.ExponentialMechanism`
(float-safe: its Gumbel-max form decided exactly), which records its ε₀-bounded-range event in
the one-agent ledger that already holds stage 1's release; the run's
:class:`~dpkit.algorithms.substrate.budget.Budget` carries that ledger (``spent_before``), so the
training's noise is calibrated on both releases and the training together and the certified ε
covers them, as for the private ranges alone.

Budget: the 2d draws take ``share`` of the run's zero-concentrated budget. The run's ε, δ are met
by μ-GDP with μ = :func:`~dpkit.accounting.gdp.gdp_mu_for` (ε, δ), i.e. μ²/2-zCDP; an
ε₀-bounded-range mechanism is ε₀²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2), so 2d of them take
share·μ²/2 when ε₀ = μ·√(2·share/d). This only sets ε₀: the accountant composes the recorded
events as they are.

After the draws (post-processing): a range that starts or ends at 0 becomes symmetric, so zeros
stay zero; a column keeps stage 1's range when its clip points do not make a range (mostly one
value, e.g. a sparse indicator) or when that range is at most :data:`HEAVY_TAIL_RATIO` = 2 times
wider than the clip points' span: the column is not heavy tailed, and clipping it would only cut
informative tails (Ecdat's Workinghours, +1 = home owned: clipping age at its 5 % and 95 % points,
23 and 54, cost every algorithm accuracy on the validation splits). Values outside a range are clipped by
:func:`~dpkit.algorithms.substrate.data.scale_to_ranges`.

>>> from dpkit.algorithms.substrate.budget import Budget
>>> gen = np.random.default_rng(0)
>>> income = np.exp(gen.normal(10.0, 1.0, 4000))            # log-normal: max / 99th percentile ~ 2
>>> clip = estimate_quantile_ranges(income[:, None], Budget(1.0, 1e-5), quantile=0.9, rng=1)
>>> bool(clip.high[0] < np.quantile(income, 0.97)), clip.budget.spent_before.draws(0)
(True, 3)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpkit._validation import check_rng, check_unit_interval
from dpkit.accounting.gdp import gdp_mu_for
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.private_ranges import estimate_ranges
from dpkit.mechanisms.selection import ExponentialMechanism

__all__ = ["QUANTILE_SHARE", "STEPS_PER_OCTAVE", "HEAVY_TAIL_RATIO", "LOWEST", "HIGHEST", "PrivateQuantiles", "check_quantile", "candidate_grid", "rank_scores",
           "estimate_quantile_ranges"]

QUANTILE_SHARE = 0.1
"""Share of the run's zCDP budget (μ²/2) that the 2d clip points take, as ``RANGE_SHARE`` for the ranges."""
STEPS_PER_OCTAVE = 4
"""Candidates per factor of two: clip points are powers of 2^(1/4), within 19 % of the data's quantile."""
HEAVY_TAIL_RATIO = 2.0
"""A column is clipped only when its private range is more than this many times wider than its clip
points' span (its tails reach more than an octave beyond the bulk); otherwise it keeps its range."""
LOWEST, HIGHEST = -20, 40
"""The smallest and largest candidate magnitudes are 2**LOWEST and 2**HIGHEST."""


@dataclasses.dataclass(frozen=True)
class PrivateQuantiles:
    """Per-column clip points released by the exponential mechanism, and the budget carrying them.

    Attributes
    ----------
    low, high
        Per-column range for :func:`~dpkit.algorithms.substrate.data.scale_to_ranges` (low < high).
    quantile
        q: the high clip point aims at the q-quantile, the low one at the (1 − q)-quantile.
    epsilon_each
        ε₀ of each of the 2d exponential-mechanism draws.
    share
        The share of the run's zCDP budget the draws took.
    budget
        The run's budget with ``spent_before`` holding stage 1's release and the 2d draws.
    """

    low: np.ndarray
    high: np.ndarray
    quantile: float
    epsilon_each: float
    share: float
    budget: Budget

    def describe(self) -> str:
        """One line for a run's config: how the clip points were obtained."""
        return (f"columns clipped at private {1 - self.quantile:g}/{self.quantile:g} quantiles of the training rows "
                f"(exponential mechanism within the private ranges, epsilon {self.epsilon_each:.4g} per clip point, "
                f"{self.share:g} of the run's budget besides the ranges' share), charged to the run's epsilon")


def check_quantile(name: str, quantile: float) -> float:
    """``quantile`` as a float in (0.5, 1), the high clip point's level (ValueError/TypeError naming ``name``).

    >>> check_quantile("q", 0.99)
    0.99
    """
    quantile = check_unit_interval(name, quantile, include_zero=False, include_one=False)
    if quantile <= 0.5:
        raise ValueError(f"{name} must be in (0.5, 1) (the high clip point's quantile level), got {name}={quantile!r}")
    return quantile


def candidate_grid() -> np.ndarray:
    """The sorted candidate clip points: 0 and ±2^(k/STEPS_PER_OCTAVE) (module docstring).

    >>> grid = candidate_grid()
    >>> grid.size, float(grid[grid.size // 2]), float(grid[-1])
    (483, 0.0, 1099511627776.0)
    """
    k = np.arange(STEPS_PER_OCTAVE * LOWEST, STEPS_PER_OCTAVE * HIGHEST + 1)
    positive = np.exp2(k / STEPS_PER_OCTAVE)
    return np.concatenate([-positive[::-1], [0.0], positive])


def rank_scores(column: np.ndarray, grid: np.ndarray, target: int) -> np.ndarray:
    """u(c) = −max(#{x < c} − t, t − #{x ≤ c}, 0) for every candidate c of ``grid``, t = ``target``
    (exact integers, as floats): 0 when c is a t-th smallest value or lies between the t-th and the
    next, else how many ranks c is off. Counting both sides matters on a column with many equal
    values (zeros): its low quantile is 0 itself, not a candidate just below it.

    >>> rank_scores(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.0, 2.0, 2.5, 4.0]), 2).tolist()
    [-2.0, 0.0, 0.0, -1.0]
    >>> rank_scores(np.array([0.0, 0.0, 0.0, 5.0]), np.array([-0.5, 0.0, 1.0]), 1).tolist()
    [-1.0, 0.0, -2.0]
    """
    ordered = np.sort(np.asarray(column, dtype=float))
    below = np.searchsorted(ordered, grid, side="left")
    at_most = np.searchsorted(ordered, grid, side="right")
    t = int(target)
    return (0 - np.maximum(np.maximum(below - t, t - at_most), 0)).astype(float)


def estimate_quantile_ranges(X: np.ndarray, budget: Budget, *, quantile: float, rng: np.random.Generator | int | None,
                             share: float = QUANTILE_SHARE) -> PrivateQuantiles:
    """Release every column's clip points near its (1 − q)- and q-quantiles (module docstring); the
    returned budget carries the 2d draws for the run's calibration.

    Raises ValueError for an empty ``X``, a ``quantile`` outside (0.5, 1), a ``share`` outside
    (0, 1) or a budget that already carries a release, TypeError for a budget that is not a
    :class:`Budget`.
    """
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got budget={budget!r}")
    if budget.spent_before is not None:
        raise ValueError("budget already carries a release before the run (spent_before); estimate clip points once")
    quantile = check_quantile("quantile", quantile)
    share = check_unit_interval("share", share, include_zero=False, include_one=False)
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be a non-empty 2-D array of training rows, got X.shape={X.shape}")
    n, d = X.shape
    generator = check_rng(rng)
    ranges = estimate_ranges(X, budget, rng=generator)
    ledger = ranges.budget.spent_before
    sensitivity = 1.0 if budget.neighbouring == NeighbouringRelation.REPLACE_ONE else 2.0
    epsilon_each = gdp_mu_for(budget.epsilon, budget.delta) * math.sqrt(2.0 * share / d)
    mechanism = ExponentialMechanism(epsilon=epsilon_each, sensitivity=sensitivity)
    grid = candidate_grid()
    targets = (math.ceil((1.0 - quantile) * n), math.ceil(quantile * n))
    low, high = ranges.low.copy(), ranges.high.copy()
    for j in range(d):
        candidates = grid[(grid >= ranges.low[j]) & (grid <= ranges.high[j])]
        a, b = (candidates[mechanism.release(rank_scores(X[:, j], candidates, t), rng=generator, ledger=ledger)]
                for t in targets)
        if a == 0.0 or b == 0.0:
            a, b = -max(abs(a), abs(b)), max(abs(a), abs(b))
        if a < b and (ranges.high[j] - ranges.low[j]) > HEAVY_TAIL_RATIO * (b - a):
            low[j], high[j] = a, b
    return PrivateQuantiles(low, high, quantile, epsilon_each, share, ranges.budget)
