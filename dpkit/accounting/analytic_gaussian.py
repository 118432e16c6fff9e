"""The analytic Gaussian mechanism: exact (ε, δ) of one Gaussian release (Balle & Wang 2018).

Adding N(0, σ²I) to a query of L2 sensitivity Δ is (ε, δ)-DP **if and only if**

    δ ≥ δ(σ, ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)

(Balle & Wang 2018, Thm 8; the same curve is the δ(ε) of μ-GDP with μ = Δ/σ,
Dong, Roth & Su 2022, Cor. 2.13). This module evaluates that curve stably in log space
and inverts it one-sidedly:

* :func:`gaussian_delta` / :func:`gaussian_log_delta` — δ(σ, ε, Δ);
* :func:`gaussian_epsilon` — the smallest ε with δ(σ, ε) ≤ δ, never below the true one;
* :func:`gaussian_sigma` — the smallest σ with δ(σ, ε) ≤ δ, never below the true one;
* :func:`classic_gaussian_sigma` — √(2 ln(1.25/δ))Δ/ε (Dwork & Roth 2014, Thm A.1),
  which is only a valid bound for ε < 1;
* :class:`AnalyticGaussianAccountant` — exact accounting of compositions of Gaussians.

Numerics
--------
The curve is evaluated by :mod:`dpkit.accounting.gdp_curve` (the one implementation of δ(ε) of
μ-GDP, in log space with a bound on its rounding error); the one-sided inversions require
``log δ + error ≤ log target``, so the float error is on the safe side.

References
----------
.. [1] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for Differential
   Privacy: Analytical Calibration and Optimal Denoising", ICML 2018, arXiv:1805.06530v2,
   Theorem 8 and Algorithm 1.
.. [2] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
   Theorem A.1.
.. [3] J. Dong, A. Roth and W. J. Su, "Gaussian Differential Privacy", JRSS-B 2022,
   arXiv:1905.02383v3, Corollary 2.13 and Corollary 3.3 (composition of Gaussians).
"""

from __future__ import annotations

import math
import sys
from typing import Any, Iterable

import numpy as np
from scipy import optimize

from dpkit._bisection import bisect_to_adjacent_floats
from dpkit._validation import check_open_unit, check_positive
from dpkit.accounting.certify import certified
from dpkit.accounting.base import (
    Accountant,
    flatten,
    AccountingResult,
    UnsupportedEventError,
    check_target_delta,
    check_target_epsilon,
    round_up,
)
from dpkit.accounting.events import GaussianEvent, PrivacyEvent
from dpkit.accounting.gdp_curve import gdp_log_delta, log_delta_with_error
from dpkit.accounting.neighbouring import NeighbouringRelation

__all__ = [
    "AnalyticGaussianAccountant",
    "classic_gaussian_sigma",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_log_delta",
    "gaussian_mu_upper",
    "gaussian_sigma",
]

_EPS = float(np.finfo(float).eps)
_MAX_STEPS = 200


def _checked(sigma: Any, sensitivity: Any) -> float:
    """μ = Δ/σ after validating both: ``inf`` where the quotient overflows (almost no noise; δ(ε) = 1 to
    float precision), and at least the smallest normal float, an upper bound on a quotient that
    underflows (δ and ε increase with μ) which keeps the curve's relative accuracy."""
    sigma = check_positive("sigma", sigma)
    sensitivity = check_positive("sensitivity", sensitivity)
    return max(sensitivity / sigma, sys.float_info.min)


def gaussian_log_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Natural log of :func:`gaussian_delta`, accurate where δ underflows (down to e^(−1e300)).

    Returns the upper end of the rounding-error interval (so it never understates δ).

    Examples
    --------
    The naive form loses everything at small δ; this one does not:

    >>> import math
    >>> from scipy.stats import norm
    >>> sigma, eps = 40.0, 1.0
    >>> float(norm.cdf(1 / (2 * sigma) - eps * sigma) - math.exp(eps) * norm.cdf(-1 / (2 * sigma) - eps * sigma))
    0.0
    >>> round(gaussian_log_delta(sigma, eps), 6)
    -811.487526
    """
    return gdp_log_delta(_checked(sigma, sensitivity), epsilon)


@certified("delta")
def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The exact δ(ε) of the Gaussian mechanism N(0, σ²) on a query of L2 sensitivity Δ.

    δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) (Balle & Wang 2018, Thm 8), evaluated in
    log space (see the module notes); the float result is rounded up by its error bound
    (the bound is ≤ 1e-11 relative for ε ∈ [1e-3, 1e3], δ ∈ [1e-300, 0.5]), so it never understates δ.

    Parameters
    ----------
    sigma : float
        Standard deviation of the noise, > 0.
    epsilon : float
        ε ≥ 0.
    sensitivity : float, optional
        L2 sensitivity Δ > 0 (default 1).

    Returns
    -------
    float
        δ in [0, 1]; 0.0 only when δ is below the smallest float (use
        :func:`gaussian_log_delta` there).

    Examples
    --------
    >>> round(gaussian_delta(1.0, 1.0), 10)
    0.1269367375
    """
    return math.exp(min(0.0, gaussian_log_delta(sigma, epsilon, sensitivity)))  # (its error bound can exceed 709)


def _meets(mu: float, epsilon: float, log_target: float) -> bool:
    """Whether δ(μ, ε), including its rounding-error bound, is ≤ the target."""
    log_delta, error = log_delta_with_error(mu, epsilon)
    return log_delta + error <= log_target


@certified("epsilon")
def gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest ε such that the Gaussian mechanism is (ε, δ)-DP (an upper bound on it).

    Solves δ(σ, ε) = δ for ε by Brent's method and then moves ε up (by ulps) until the
    evaluated δ plus its error bound is ≤ δ, so the returned ε is never below the true one;
    it is within ~1e-13 relative of it.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, > 0.
    delta : float
        Target δ in (0, 1).
    sensitivity : float, optional
        L2 sensitivity Δ > 0.

    Returns
    -------
    float
        ε ≥ 0 (0.0 when the mechanism is already (0, δ)-DP); ``inf`` when the ε exceeds the largest
        float (almost no noise: Δ/σ above about 1.3e154, where ε ≥ (Δ/σ)²/2 − 9Δ/σ overflows).

    Examples
    --------
    >>> round(gaussian_epsilon(1.0, 1e-5), 6)
    4.377178
    """
    mu = _checked(sigma, sensitivity)
    log_target = math.log(check_open_unit("delta", delta))
    if math.isinf(mu):
        return math.inf
    if _meets(mu, 0.0, log_target):
        return 0.0
    # ρ + 2√(ρ ln(1/δ)) with ρ = μ²/2 is a valid (ε, δ) for μ-GDP (Bun & Steinke 2016, Prop. 1.3).
    # (2√(ρ ln(1/δ)) = μ√(2 ln(1/δ)), written so that it does not underflow for tiny μ; the bracket
    # scales with μ, so Brent's method needs few steps even when ε is 1e-150.)
    high = min(2.0 * (mu * mu / 2.0 + mu * math.sqrt(-2.0 * log_target)), sys.float_info.max)
    while not _meets(mu, high, log_target):
        if high == sys.float_info.max:  # even the largest float is too small an ε (μ ≳ 1.3e154): only ε = ∞ holds
            return math.inf
        high = min(2.0 * high, sys.float_info.max)

    def excess(eps: float) -> float:
        return log_delta_with_error(mu, eps)[0] - log_target

    epsilon = optimize.brentq(excess, 0.0, high, xtol=1e-300, rtol=4 * _EPS, maxiter=500)
    meets = lambda e: _meets(mu, e, log_target)  # noqa: E731
    return _settle_down(_nudge_up(float(epsilon), meets), meets)


@certified("noise")
def gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest σ such that N(0, σ²) on sensitivity Δ is (ε, δ)-DP (Balle & Wang 2018, Alg. 1).

    Root finding on log μ = log(Δ/σ) by Brent's method followed by a one-sided
    post-check: σ is increased (by ulps) until δ(σ, ε) plus its rounding-error bound is
    ≤ δ, so it never gives less noise than needed. Accuracy: within ~1e-13 relative of the
    exact σ for ε ∈ [1e-3, 1e3], δ ∈ [1e-300, 0.5).

    Parameters
    ----------
    epsilon : float
        Target ε > 0.
    delta : float
        Target δ in (0, 1).
    sensitivity : float, optional
        L2 sensitivity Δ > 0.

    Returns
    -------
    float
        σ > 0.

    Examples
    --------
    Less noise than the classic bound √(2 ln(1.25/δ))/ε, and valid for every ε:

    >>> round(gaussian_sigma(1.0, 1e-5), 6)
    3.730632
    >>> round(classic_gaussian_sigma(0.5, 1e-5) / gaussian_sigma(0.5, 1e-5), 4)
    1.378
    """
    epsilon = check_positive("epsilon", epsilon)
    log_target = math.log(check_open_unit("delta", delta))
    sensitivity = check_positive("sensitivity", sensitivity)

    def excess(log_mu: float) -> float:
        return log_delta_with_error(math.exp(log_mu), epsilon)[0] - log_target

    spread = 2.0 * math.log(1.25) - 2.0 * log_target
    ratio = epsilon / math.sqrt(spread)  # the classic calibration's μ, whose log is the guess
    guess = math.log(ratio) if ratio > 0.0 else math.log(epsilon) - 0.5 * math.log(spread)  # (0 at ε = 5e-324)
    # log μ stays within the normal floats (μ = e^{log μ} neither 0 nor ∞), and the steps may cross all of
    # them: where ε ≪ δ, μ is set by δ rather than ε, hundreds away from the guess in log
    log_lowest, log_highest = math.log(sys.float_info.min), math.log(sys.float_info.max)
    guess = min(max(guess, log_lowest + 1.0), log_highest - 1.0)
    low, high = guess - 1.0, guess + 1.0
    steps = int(log_highest - log_lowest) // 2 + 2
    for _ in range(steps):
        if excess(low) < 0.0 or low == log_lowest:
            break
        low = max(low - 2.0, log_lowest)
    for _ in range(steps):
        if excess(high) > 0.0 or high == log_highest:
            break
        high = min(high + 2.0, log_highest)
    if not (excess(low) < 0.0 < excess(high)):
        raise ValueError(f"no Gaussian noise scale for epsilon={epsilon:g}, delta={math.exp(log_target):g} is "
                         f"representable in floating point (epsilon is too {'small' if epsilon < 1 else 'large'})")
    log_mu = optimize.brentq(excess, low, high, xtol=1e-300, rtol=4 * _EPS, maxiter=500)
    sigma = max(sensitivity / math.exp(float(log_mu)), math.ulp(0.0))  # (a subnormal Δ can make the quotient 0)
    if not math.nextafter(sigma, math.inf) * (1.0 + 2.0**-40) < math.inf:  # no room for the one-sided post-check
        raise ValueError(f"the Gaussian noise scale for epsilon={epsilon:g}, delta={math.exp(log_target):g}, "
                         f"sensitivity={sensitivity:g} exceeds the largest float; choose a smaller sensitivity "
                         "(the noise scales with it)")
    meets = lambda s: _meets(sensitivity / s, epsilon, log_target)  # noqa: E731
    return _settle_down(_nudge_up(sigma, meets), meets)


def _nudge_up(value: float, ok: Any) -> float:
    """The first of value, value·(1 + 2^k ulp), k = 0, 1, ... that satisfies ``ok``."""
    step = _EPS
    for _ in range(_MAX_STEPS):
        if ok(value):
            return value
        value = max(math.nextafter(value, math.inf), value * (1.0 + step))
        step *= 2.0
    raise ArithmeticError("one-sided post-check did not converge")  # pragma: no cover


def _settle_down(value: float, ok: Any) -> float:
    """The smallest float in (0, ``value``] from which ``ok`` holds up to ``value``, found by galloping down
    (steps of 2^k ulps, at most halving) and bisecting: the root finder's last digits then do not decide
    the answer, which is monotone in its targets (a larger δ never needs more noise, nor a larger ε)."""
    good, step = value, _EPS
    for _ in range(_MAX_STEPS):
        trial = min(math.nextafter(good, 0.0), good * (1.0 - step))
        if not (trial > 0.0 and ok(trial)):
            break
        good, step = trial, min(2.0 * step, 0.5)
    else:
        return good
    return bisect_to_adjacent_floats(ok, max(trial, 0.0), good)  # ok(good) holds, ok(trial) does not (or trial ≤ 0)


def squared_multiplier_upper(sensitivity: float, sigma: float) -> float:
    """(Δ/σ)², floored at the smallest normal float: a square that underflows (Δ/σ below ~1.5e-154)
    loses its relative accuracy, and 0 would certify ε = 0 for a mechanism that is not a no-op.

    >>> squared_multiplier_upper(1.0, 1e300) > 0.0
    True
    """
    return max((sensitivity / sigma) ** 2, sys.float_info.min)


def gaussian_mu_upper(squares: Iterable[float]) -> float:
    """An upper bound on μ = √Σ μᵢ² from the float terms μᵢ² = countᵢ·(Δᵢ/σᵢ)² (Dong, Roth & Su 2022, Cor. 3.3).

    Error analysis (unit round-off u = 2⁻⁵³): each term computed as ``count * (Δ/σ)**2`` is within
    4u relative of its true value (a quotient, a square and a product), ``math.fsum`` adds u and
    the square root halves the relative error and adds u: √(fsum) ≤ μ(1 + 3.5u + O(u²)). Rounding
    up by the factor 1 + 8u (and one ulp for that product) gives a certified upper bound, at most
    ~2e-15 relative above μ. Since ε(μ) and δ(μ) increase with μ, evaluating them at this bound
    keeps them on the safe side.

    >>> mu = gaussian_mu_upper([100 * (1 / 10.0) ** 2])
    >>> 1.0 < mu < 1.0 + 1e-14
    True
    """
    total = math.fsum(squares)
    if not total > 0.0:
        return 0.0
    return math.nextafter(math.sqrt(total) * (1.0 + 8.0 * 2.0**-53), math.inf)


@certified("noise")
def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = √(2 ln(1.25/δ)) Δ/ε, the classic Gaussian mechanism (Dwork & Roth 2014, Thm A.1).

    The theorem assumes ε < 1; for ε ≥ 1 the formula is not a valid bound and this function
    refuses. Prefer :func:`gaussian_sigma`, which is exact and always smaller.

    Raises
    ------
    ValueError
        If ε ≥ 1, or any argument is out of range.

    Examples
    --------
    >>> round(classic_gaussian_sigma(0.5, 1e-5), 6)
    9.689611
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    sensitivity = check_positive("sensitivity", sensitivity)
    if epsilon >= 1.0:
        raise ValueError(
            f"classic_gaussian_sigma is not a valid bound for epsilon >= 1 (Dwork & Roth 2014, Thm A.1 "
            f"assumes epsilon < 1), got epsilon={epsilon}; use gaussian_sigma"
        )
    return round_up(math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / epsilon)


class AnalyticGaussianAccountant(Accountant):
    """Exact accountant for compositions of Gaussian mechanisms.

    k Gaussians with noise multipliers σᵢ/Δᵢ compose (adaptively) to exactly one Gaussian
    with μ = √(Σ (Δᵢ/σᵢ)²) (Dong, Roth & Su 2022, Cor. 3.3), whose (ε, δ) curve is given
    by Balle & Wang (2018, Thm 8). So ``get_epsilon`` is the exact ε (rounded up) and no
    other accountant can certify less. Only :class:`~dpkit.accounting.events.GaussianEvent`
    (possibly composed or repeated) is supported; sampling is not.

    Examples
    --------
    >>> from dpkit.accounting.events import GaussianEvent
    >>> acc = AnalyticGaussianAccountant().compose(GaussianEvent(10.0), 100)
    >>> exact = gaussian_epsilon(1.0, 1e-5)
    >>> exact <= acc.get_epsilon(1e-5).epsilon <= exact * (1 + 1e-14)
    True
    """

    name = "analytic"
    references = ("balle2018improving", "dong2022gaussian")

    def __init__(self, neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE):
        super().__init__(neighbouring)

    def _check(self, event: PrivacyEvent) -> None:
        for leaf, _ in flatten(event):
            if not isinstance(leaf, GaussianEvent):
                raise UnsupportedEventError(
                    leaf, "the analytic Gaussian accountant only handles (composed) GaussianEvent"
                )

    def _mu(self) -> float:
        """μ of the ledger, rounded up (:func:`gaussian_mu_upper`)."""
        return gaussian_mu_upper(count * squared_multiplier_upper(leaf.sensitivity, leaf.sigma)
                                 for leaf, count in self.leaves())

    def get_epsilon(self, delta: float) -> AccountingResult:
        """The exact ε at ``delta`` (rounded up); 0 for an empty ledger."""
        delta = check_target_delta(delta)
        mu = self._mu()
        # σ = 1 and Δ = μ: the curve is evaluated at the rounded-up μ itself, with no 1/μ rounding.
        epsilon = 0.0 if mu == 0.0 else gaussian_epsilon(1.0, delta, sensitivity=mu)
        return self._result(epsilon, delta, _METHOD)

    def get_delta(self, epsilon: float) -> AccountingResult:
        """The exact δ at ``epsilon`` (rounded up); 0 for an empty ledger."""
        epsilon = check_target_epsilon(epsilon)
        mu = self._mu()
        delta = 0.0 if mu == 0.0 else gaussian_delta(1.0, epsilon, sensitivity=mu)
        return self._result(epsilon, delta, _METHOD)


_METHOD = "analytic Gaussian (Balle & Wang 2018, Thm 8) of the composed Gaussian (Dong, Roth & Su 2022, Cor. 3.3)"
