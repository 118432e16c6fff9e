"""Exact binomial bounds, ε lower bounds from event frequencies, and p-values for a claim.

Every bound here is *one-sided* and exact (Clopper–Pearson), never a normal approximation.
For an event ``S`` and neighbouring inputs ``D, D'`` an (ε, δ)-DP mechanism satisfies
``p1 ≤ e^ε p2 + δ`` with ``p1 = Pr[M(D) ∈ S]``, ``p2 = Pr[M(D') ∈ S]``, so

    ε ≥ ln((p1 − δ) / p2) ≥ ln((p1_lower − δ) / p2_upper)

whenever ``p1_lower ≤ p1`` and ``p2_upper ≥ p2`` (each fails with probability ≤ α/2).

References
----------
.. [1] C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits illustrated
       in the case of the binomial", Biometrika 26(4), 1934.
.. [2] Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer, "Detecting Violations of Differential
       Privacy", CCS 2018 (events on neighbouring inputs, Sec. 3).
.. [3] M. Jagielski, J. Ullman, A. Oprea, "Auditing Differentially Private Machine Learning:
       How Private is Private SGD?", NeurIPS 2020 (Clopper–Pearson ε lower bound, Alg. 2).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy import special, stats

from dpkit._bisection import first_passing, threshold_bracket

__all__ = [
    "cp_lower",
    "cp_upper",
    "epsilon_lower_bound",
    "claim_p_value",
    "invert_bound",
    "ceiling_epsilon",
    "samples_to_refute",
    "detectable_epsilon",
]


def cp_lower(k: int | np.ndarray, n: int | np.ndarray, alpha: float) -> np.ndarray | float:
    """One-sided Clopper–Pearson lower bound: ``Pr[p < bound] ≤ alpha`` (0 when ``k = 0``)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        out = np.where(k > 0, special.betaincinv(np.maximum(k, 1), np.maximum(n - k + 1, 1), alpha), 0.0)
    return out if out.ndim else float(out)


def cp_upper(k: int | np.ndarray, n: int | np.ndarray, alpha: float) -> np.ndarray | float:
    """One-sided Clopper–Pearson upper bound: ``Pr[p > bound] ≤ alpha`` (1 when ``k = n``)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        out = np.where(k < n, special.betaincinv(k + 1, np.maximum(n - k, 1), 1.0 - alpha), 1.0)
    return out if out.ndim else float(out)


def _log_ratio(p1_low: float, p2_up: float, delta: float) -> float:
    if p1_low <= delta:
        return -math.inf
    return math.log(p1_low - delta) - math.log(p2_up)


def epsilon_lower_bound(k1: int, n1: int, k2: int, n2: int, delta: float, alpha: float) -> float:
    """ε lower bound ``ln((p1_lower − δ)/p2_upper)`` for one event and one direction.

    ``k1`` of ``n1`` outputs on D and ``k2`` of ``n2`` outputs on D′ fell in the event. The
    bound fails with probability at most ``alpha`` (α/2 for each Clopper–Pearson bound).
    Returns ``-inf`` when ``p1_lower ≤ δ`` (the event says nothing).
    """
    return _log_ratio(cp_lower(k1, n1, alpha / 2), cp_upper(k2, n2, alpha / 2), delta)


def claim_p_value(k1: int, n1: int, k2: int, n2: int, epsilon: float, delta: float, alpha_cap: float = 1.0) -> float:
    """p-value of H0 "the pair satisfies ``p1 ≤ e^ε p2 + δ``" obtained by inverting the bound.

    ``p = inf{α : epsilon_lower_bound(..., α) > ε}`` (see :func:`invert_bound`).
    """
    return invert_bound(lambda a: epsilon_lower_bound(k1, n1, k2, n2, delta, a), epsilon, alpha_cap)


def invert_bound(bound_at: Callable[[float], float], epsilon: float, alpha_cap: float = 1.0) -> float:
    """``inf{α : bound_at(α) > ε}``: the p-value of H0 "true ε ≤ ``epsilon``" for a family of
    lower bounds that hold with probability ≥ 1 − α and grow with α.

    Because the bound increases with α this is a valid p-value (``Pr_H0[p ≤ α] ≤ α``) and
    ``p ≤ α`` exactly when the level-α bound exceeds ε. Bisection (80 halvings in log α)
    returns the upper end of the bracket, so the p-value is never understated. ``alpha_cap``
    (≤ 1) lets callers bracket at their level.
    """
    def exceeds(a: float) -> bool:
        return bound_at(a) > epsilon

    hi = min(1.0, alpha_cap)
    if not exceeds(hi):
        if hi >= 1.0:
            return 1.0
        if not exceeds(1.0):
            return 1.0
        lo, hi = math.log(hi), 0.0
    else:
        lo = math.log(1e-300)
        if exceeds(1e-300):
            return 1e-300
        hi = math.log(hi)
    return math.exp(threshold_bracket(lambda log_level: exceeds(math.exp(log_level)), lo, hi, steps=80)[1])


def ceiling_epsilon(samples_per_input: int, confidence: float = 0.95) -> float:
    """Largest ε lower bound certifiable from ``samples_per_input`` draws on each input.

    Reached by an event with every output of D inside and none of D′ (a support-boundary
    event): ``ln(p1_lower / p2_upper)`` with ``k1 = n``, ``k2 = 0``. No audit with this many
    samples can report more, whatever the mechanism.
    """
    alpha = 1.0 - confidence
    return epsilon_lower_bound(samples_per_input, samples_per_input, 0, samples_per_input, 0.0, alpha)


def samples_to_refute(p1: float, p2: float, claimed_epsilon: float, claimed_delta: float = 0.0,
                      confidence: float = 0.95, max_samples: int = 10**10) -> int | None:
    """Outputs per input a confirmation needs to refute the claim with an event of
    probabilities ``p1`` (on D) and ``p2`` (on D′), or ``None`` if ``max_samples`` are not enough.

    The prediction is the smallest ``m`` at which :func:`epsilon_lower_bound` evaluated at
    the *expected* counts ``⌊p1 m⌋``, ``⌈p2 m⌉`` exceeds ``claimed_epsilon``: about half the
    audits of that size refute the claim, so plan a margin above it. Feed it the selection
    frequencies of an event (shrunk against it, as :func:`dpkit.audit.audit` does).

    Examples
    --------
    >>> m = samples_to_refute(0.01, 0.01 * math.exp(-2.0), claimed_epsilon=1.5)
    >>> 10_000 < m < 100_000
    True
    >>> samples_to_refute(0.01, 0.01 * math.exp(-1.0), claimed_epsilon=1.5) is None
    True
    """
    alpha = 1.0 - confidence
    if not (0.0 <= p2 < p1 <= 1.0):
        return None

    def refutes(m: int) -> bool:
        k1, k2 = math.floor(p1 * m), min(math.ceil(p2 * m), m)
        return epsilon_lower_bound(k1, m, k2, m, claimed_delta, alpha) > claimed_epsilon

    if not refutes(max_samples):
        return None
    return first_passing(refutes, 1, max_samples, relative=1000)  # 0.1 % resolution, rounded up


def detectable_epsilon(p2: float, samples_per_input: int, claimed_epsilon: float, claimed_delta: float = 0.0,
                       confidence: float = 0.95, level: float | None = None) -> float:
    """Smallest ε a confirmation of ``samples_per_input`` outputs per input detects with
    probability ≥ ``confidence``, for an event of probability ``p2`` on D′ and
    ``p1 = min(1, e^ε p2 + δ)`` on D.

    Detection means :func:`epsilon_lower_bound` at ``level`` (default ``1 − confidence``)
    exceeds ``claimed_epsilon``. The counts are set to the binomial quantiles
    ``k1 = F⁻¹((1 − c)/2; m, p1)`` and ``k2 = F̄⁻¹((1 − c)/2; m, p2)``: both hold together with
    probability ≥ c, and the bound grows with ``k1`` and falls with ``k2``. Returns ``inf``
    when no ε is detectable (e.g. ``p2 = 0`` is handled as one count in ``m``).

    Examples
    --------
    >>> x = detectable_epsilon(0.01, 1_000_000, claimed_epsilon=1.0)
    >>> 1.0 < x < 1.1
    True
    """
    c = confidence
    alpha = (1.0 - c) if level is None else level
    m = int(samples_per_input)
    q = min(max(p2, 1.0 / m), 1.0)
    k2 = int(stats.binom.isf((1.0 - c) / 2, m, q))

    def detected(eps: float) -> bool:
        p1 = min(1.0, math.exp(eps) * q + claimed_delta)
        k1 = int(stats.binom.ppf((1.0 - c) / 2, m, p1))
        return epsilon_lower_bound(k1, m, k2, m, claimed_delta, alpha) > claimed_epsilon

    top = math.log(max((1.0 - claimed_delta) / q, 1.0)) + 1e-9
    if not detected(top):
        return math.inf
    return threshold_bracket(detected, claimed_epsilon, top, steps=60)[1]
