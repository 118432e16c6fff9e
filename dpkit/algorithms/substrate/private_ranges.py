"""Column ranges estimated from the training rows with Gaussian noise, charged to the run's budget.

When no public bounds are given, a column's scale must come from the private rows. Each row puts
each of its values into one bucket of a fixed, data-independent grid of signed powers of two:

* the zero bucket, ``|x| < 2**GRID_LOW`` (``GRID_LOW = -20``);
* magnitude buckets ``(2**(GRID_LOW + m - 1), 2**(GRID_LOW + m)]`` for ``m = 1 .. MAGNITUDES``
  (up to ``2**40``; larger values fall in the last one), one set per sign.

The d per-column histograms are released together by one
:class:`~dpkit.mechanisms.gaussian.GaussianMechanism`: a row adds 1 to one bucket of every
column, so replacing a row changes 2d counts by 1 (L2 sensitivity √(2d)) and adding or removing
one changes d counts (√d). Everything after the release is post-processing of the noisy counts:

1. a bucket *survives* if its noisy count exceeds the threshold τ = σ·Φ⁻¹(1 − p/(d·B)), B the
   buckets per column and p = ``FALSE_BUCKET_RATE`` = 1 %, so an empty bucket survives anywhere
   in the table with probability at most 1 % (union bound), and a spurious far bucket rarely
   stretches a range;
2. a column's range runs from the lower edge of its lowest surviving bucket to the upper edge
   of its highest (the zero bucket's edges are 0); a column with no surviving non-zero bucket
   (mostly zeros, its other values too few to stand out of the noise) keeps [−1, 1]: its values
   are used as given and clipped, so a rare large value counts as its sign;
3. as for public ranges (:func:`~dpkit.algorithms.substrate.data.data_ranges`), a range that
   starts or ends at 0 becomes symmetric, [−m, m] with m its larger end's magnitude, so zeros
   stay zero.

The range is thus a robust one: it covers the buckets that hold more than about τ rows, and a
few extreme values (a heavy tail) fall outside it and are clipped, which is what a public clip
would do. The edges are powers of two, so a range is within a factor of 2 of the data's.

The noise is set from the run's budget: the release is μ_r-GDP with μ_r² = ``RANGE_SHARE`` ·
μ², μ the GDP parameter meeting the whole (ε, δ) (:func:`~dpkit.accounting.gdp.gdp_mu_for`),
so under GDP composition the training keeps 1 − ``RANGE_SHARE`` of μ². The event is recorded
in a one-agent ledger that the run's :class:`~dpkit.algorithms.substrate.budget.Budget` carries
(``spent_before``): its calibration composes it with the training's event, and every agent's
ledger starts with it (the histogram is computed on the pooled training rows, so every record
took part), so the run's certified ε covers the ranges.

>>> import numpy as np
>>> from dpkit.algorithms.substrate.budget import Budget
>>> gen = np.random.default_rng(0)
>>> X = np.column_stack([gen.uniform(17, 90, 5000), gen.integers(0, 2, 5000), gen.uniform(-3, 3, 5000)])
>>> ranges = estimate_ranges(X, Budget(1.0, 1e-5), rng=1)
>>> ranges.low.tolist(), ranges.high.tolist()
([16.0, -1.0, -4.0], [128.0, 1.0, 4.0])
>>> ranges.budget.spent_before.draws(0)
1
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np
from scipy import special

from dpkit._validation import check_rng, check_unit_interval
from dpkit.accounting.gdp import gdp_mu_for
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import INTERCEPT, Dataset, data_ranges, normalise, scale_to_ranges
from dpkit.mechanisms.float_sensitivity import sqrt_up
from dpkit.mechanisms.gaussian import GaussianMechanism
from dpkit.mechanisms.ledger import PrivacyLedger

__all__ = ["GRID_LOW", "MAGNITUDES", "RANGE_SHARE", "FALSE_BUCKET_RATE", "PrivateRanges", "ScaledSetting",
           "bucket_counts", "estimate_ranges", "ranges_from_counts", "scale_from_training_rows"]

GRID_LOW = -20
"""|x| < 2**GRID_LOW counts as zero."""
MAGNITUDES = 60
"""Magnitude buckets per sign: (2**(GRID_LOW + m − 1), 2**(GRID_LOW + m)], m = 1..60 (up to 2**40)."""
BUCKETS = 2 * MAGNITUDES + 1
"""Buckets per column: negative magnitudes (largest first), zero, positive magnitudes."""
RANGE_SHARE = 0.1
"""Share of the run's μ² (GDP) spent on the ranges: the training's noise grows by 1/√0.9 ≈ 1.054."""
FALSE_BUCKET_RATE = 0.01
"""Probability (union bound) that any empty bucket of the table survives the threshold."""


@dataclasses.dataclass(frozen=True)
class PrivateRanges:
    """Per-column ranges released with noise, and the budget that carries their cost.

    Attributes
    ----------
    low, high
        Per-column range for :func:`~dpkit.algorithms.substrate.data.scale_to_ranges` (low < high).
    sigma, threshold
        The noise's standard deviation per bucket and the survival threshold τ (counts).
    share
        The share of the run's μ² the release took.
    budget
        The run's budget with ``spent_before`` holding the release: calibrate and account the
        training with it.
    """

    low: np.ndarray
    high: np.ndarray
    sigma: float
    threshold: float
    share: float
    budget: Budget

    def describe(self) -> str:
        """One line for a run's config: how the ranges were obtained."""
        return (f"column ranges from the training rows with Gaussian noise (sigma {self.sigma:.4g} per bucket of a "
                f"power-of-two grid, {self.share:g} of the run's mu^2), charged to the run's epsilon")


def bucket_counts(X: np.ndarray) -> np.ndarray:
    """``(d, BUCKETS)`` counts: how many rows of ``X`` put column j's value in each bucket.

    Bucket ``MAGNITUDES`` is zero; ``MAGNITUDES + m`` holds (2**(GRID_LOW + m − 1), 2**(GRID_LOW + m)]
    and ``MAGNITUDES − m`` its negative (exact: the exponent comes from :func:`numpy.frexp`).

    >>> bucket_counts(np.array([[0.0], [1.0], [-3.0], [0.75]]))[0, [60 - 22, 60, 60 + 20, 60 + 21]].tolist()
    [1, 1, 2, 0]
    """
    X = np.asarray(X, dtype=float)
    mantissa, exponent = np.frexp(np.abs(X))  # |x| = mantissa·2**exponent, mantissa in [0.5, 1)
    ceiling = exponent - (mantissa == 0.5)  # ⌈log2 |x|⌉, exactly
    magnitude = np.clip(ceiling - GRID_LOW, 1, MAGNITUDES)
    index = np.where(np.abs(X) < 2.0 ** GRID_LOW, 0, np.sign(X) * magnitude).astype(int) + MAGNITUDES
    d = X.shape[1]
    flat = (np.arange(d)[None, :] * BUCKETS + index).ravel()
    return np.bincount(flat, minlength=d * BUCKETS).reshape(d, BUCKETS)


def _edges() -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper edge of every bucket (zero bucket: 0 and 0)."""
    m = np.arange(-MAGNITUDES, MAGNITUDES + 1)
    top = np.exp2(GRID_LOW + np.abs(m).astype(float))
    bottom = np.exp2(GRID_LOW + np.abs(m).astype(float) - 1.0)
    lower = np.where(m > 0, bottom, np.where(m < 0, -top, 0.0))
    upper = np.where(m > 0, top, np.where(m < 0, -bottom, 0.0))
    return lower, upper


def ranges_from_counts(noisy: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-column (low, high) from noisy ``(d, BUCKETS)`` counts (module docstring, steps 1–3).

    >>> counts = np.zeros((1, BUCKETS)); counts[0, [60, 61 + 20]] = 50.0
    >>> ranges_from_counts(counts, 10.0)
    (array([-2.]), array([2.]))
    """
    noisy = np.asarray(noisy, dtype=float)
    lower, upper = _edges()
    survives = noisy > threshold
    nonzero = np.ones(BUCKETS, dtype=bool)
    nonzero[MAGNITUDES] = False
    lonely = ~np.any(survives & nonzero, axis=1)
    low = np.min(np.where(survives, lower, np.inf), axis=1)
    high = np.max(np.where(survives, upper, -np.inf), axis=1)
    symmetric = (low == 0.0) | (high == 0.0)
    magnitude = np.maximum(np.abs(low), np.abs(high))
    low, high = np.where(symmetric, -magnitude, low), np.where(symmetric, magnitude, high)
    return np.where(lonely, -1.0, low), np.where(lonely, 1.0, high)


def estimate_ranges(X: np.ndarray, budget: Budget, *, rng: np.random.Generator | int | None,
                    share: float = RANGE_SHARE) -> PrivateRanges:
    """Release the bucket counts of the training rows ``X`` with Gaussian noise and read ranges off
    them (module docstring); the returned budget carries the release for the run's calibration.

    Raises ValueError for an empty ``X``, a ``share`` outside (0, 1) or a budget that already
    carries a release, TypeError for a budget that is not a :class:`Budget`.
    """
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got budget={budget!r}")
    if budget.spent_before is not None:
        raise ValueError("budget already carries a release before the run (spent_before); estimate ranges once")
    share = check_unit_interval("share", share, include_zero=False, include_one=False)
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be a non-empty 2-D array of training rows, got X.shape={X.shape}")
    d = X.shape[1]
    replace = budget.neighbouring == NeighbouringRelation.REPLACE_ONE
    # the counts are exact integers (no float error in the query); √(2d) or √d rounded up, never below
    sensitivity = sqrt_up((2 if replace else 1) * d)
    mu = math.sqrt(share) * gdp_mu_for(budget.epsilon, budget.delta)
    mechanism = GaussianMechanism(sigma=sensitivity / mu, sensitivity=sensitivity)
    ledger = PrivacyLedger(1, neighbouring=budget.neighbouring)
    noisy = np.asarray(mechanism.release(bucket_counts(X).ravel().astype(float), rng=check_rng(rng), ledger=ledger),
                       dtype=float).reshape(d, BUCKETS)
    threshold = mechanism.sigma * float(-special.ndtri(FALSE_BUCKET_RATE / (d * BUCKETS)))
    low, high = ranges_from_counts(noisy, threshold)
    return PrivateRanges(low, high, mechanism.sigma, threshold, share, dataclasses.replace(budget, spent_before=ledger))


@dataclasses.dataclass(frozen=True)
class ScaledSetting:
    """The agents' and the test rows after :func:`scale_from_training_rows`.

    Attributes
    ----------
    parts, test
        Columns mapped onto [−1, 1] by the ranges (clipped), rows scaled to norm ≤ 1.
    budget
        The run's budget, carrying the ranges' release (None for a non-private run).
    low, high
        The ranges (released values, covered by the run's ε when private).
    how
        One line saying where the ranges came from.
    """

    parts: list[Dataset]
    test: Dataset
    budget: Budget | None
    low: np.ndarray
    high: np.ndarray
    how: str


def scale_from_training_rows(parts: list[Dataset], test: Dataset, budget: Budget | None, *,
                             rng: np.random.Generator, estimate: Callable[..., Any] | None = None) -> ScaledSetting:
    """Scale the agents' rows and the test rows by column ranges taken from the training rows only.

    A private run (``budget`` given) releases the ranges with :func:`estimate_ranges` on the pooled
    training rows (or with ``estimate(X, budget, rng=rng)``, which returns the same fields, e.g. the
    quantile clip of :func:`~dpkit.algorithms.substrate.private_quantiles.estimate_quantile_ranges`)
    and returns the budget that carries the release; a non-private run (``budget``
    None) takes the training rows' own ranges (:func:`~dpkit.algorithms.substrate.data.data_ranges`).
    The test rows never set a range. The column named :data:`INTERCEPT` (the constant the loaders
    append) is not estimated: it keeps [−1, 1], so it stays 1.
    """
    pooled = np.vstack([part.X for part in parts])
    estimated = np.array([name != INTERCEPT for name in test.feature_names])
    low, high = -np.ones(pooled.shape[1]), np.ones(pooled.shape[1])
    if not estimated.any():
        how = "no column to scale (only the intercept)"
    elif budget is None:
        low[estimated], high[estimated] = data_ranges(pooled[:, estimated])
        how = "column ranges of the training rows (a non-private run: no noise)"
    else:
        ranges = (estimate or estimate_ranges)(pooled[:, estimated], budget, rng=rng)
        low[estimated], high[estimated] = ranges.low, ranges.high
        budget, how = ranges.budget, ranges.describe()

    def scaled(data: Dataset) -> Dataset:
        X = normalise(scale_to_ranges(data.X, low, high), column_max=False)
        return Dataset(X, data.y, data.name, data.feature_names)

    return ScaledSetting([scaled(part) for part in parts], scaled(test), budget, low, high, how)
