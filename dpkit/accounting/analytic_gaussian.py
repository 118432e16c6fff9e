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
Write μ = Δ/σ, a = μ/2 − ε/μ, b = −μ/2 − ε/μ (so b² − a² = 2ε). The naive difference
Φ(a) − e^ε Φ(b) cancels catastrophically as soon as δ ≪ Φ(a) and is 0 below δ ≈ 1e-17.
With the scaled complementary error function erfcx(x) = e^{x²} erfc(x),
Φ(t) = ½ erfcx(−t/√2) e^{−t²/2} and e^ε e^{−b²/2} = e^{−a²/2}, so, exactly,

    δ = ½ e^{−a²/2} [erfcx(u) − erfcx(v)],   u = −a/√2,  v = u + μ/√2.

The bracket is evaluated as ∫_u^v (2/√π − 2t·erfcx(t)) dt by 16-point Gauss–Legendre
quadrature when v − u ≤ 1 (erfcx is entire, so the rule is exact to rounding), as a
plain difference otherwise, and by the integrated asymptotic series of erfcx when u > 1e4. For a > 5 (δ > 0.5-ish, no cancellation) the direct form
log Φ(a) + log1p(−e^{ε + log Φ(b) − log Φ(a)}) with ``scipy.special.log_ndtr`` is used.
Every evaluation also returns a bound on its relative rounding error; the one-sided
inversions require ``log δ + error ≤ log target``, so the float error is on the safe side.

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
from scipy import optimize, special

from dpkit._validation import check_nonnegative, check_open_unit, check_positive
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
_SQRT2 = math.sqrt(2.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_LOG2 = math.log(2.0)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)
_MAX_STEPS = 200
_ASYMPTOTIC_FROM = 1e4  # erfcx by its asymptotic series beyond this argument


def _erfcx_difference(u: float, h: float) -> tuple[float, float]:
    """erfcx(u) − erfcx(u + h) for h > 0 and its relative error bound."""
    if u > _ASYMPTOTIC_FROM:
        # erfcx(t) = (1/(t√π))(1 − 1/(2t²) + 3/(4t⁴) − 15/(8t⁶) + …) (Abramowitz & Stegun 7.1.23),
        # integrated term by term; the first omitted term is < 2t⁻⁶ ≤ 2e-24 relative.
        v = u + h
        uv = u * v
        first = h / uv
        second = 0.5 * first * (1.0 / (v * v) + 1.0 / uv + 1.0 / (u * u))
        third = 0.75 * (u**-4 / u - v**-4 / v)
        return (first - second + third) / math.sqrt(math.pi), 16.0 * _EPS
    if h <= 1.0:
        t = u + 0.5 * h * (_GL_NODES + 1.0)
        integrand = _TWO_OVER_SQRT_PI - 2.0 * t * special.erfcx(t)
        value = 0.5 * h * float(np.dot(_GL_WEIGHTS, integrand))
        # 2t·erfcx(t) ≈ 2/√π − 1/(√π t²): the subtraction loses a factor ~ 1 + 2t².
        t_max = max(abs(u), abs(u + h))
        return value, 16.0 * _EPS * (1.0 + 2.0 * t_max * t_max)
    first, second = float(special.erfcx(u)), float(special.erfcx(u + h))
    value = first - second
    return value, 16.0 * _EPS * (first / value + abs(u) + 1.0)


def _log_delta_mu(mu: float, epsilon: float) -> tuple[float, float]:
    """(log δ, relative error bound of δ) for noise multiplier 1/μ = σ/Δ and ε ≥ 0."""
    a = mu / 2.0 - epsilon / mu
    if a > 5.0:
        b = -mu / 2.0 - epsilon / mu
        log_phi_a = float(special.log_ndtr(a))
        x = epsilon + float(special.log_ndtr(b)) - log_phi_a
        if x >= 0.0:  # ε ≫ 1 cancels against log Φ(b) beyond float precision: δ ≤ Φ(a) still holds
            return log_phi_a, 16.0 * _EPS * (1.0 + epsilon) + 4.0 * _EPS * abs(log_phi_a)
        log_delta = log_phi_a + math.log1p(-math.exp(x))
        return log_delta, 16.0 * _EPS * (1.0 + epsilon) + 4.0 * _EPS * abs(log_delta)
    u = -a / _SQRT2
    difference, error = _erfcx_difference(u, mu / _SQRT2)
    if difference <= 0.0:  # only reachable when δ underflows every representation
        return -math.inf, 0.0
    log_delta = math.log(difference) - _LOG2 - 0.5 * a * a
    # (the sum that makes log δ is rounded relative to its own size: 4u|log δ|, 1.4e-14 at δ = 4e-31)
    return log_delta, error + 8.0 * _EPS * (1.0 + a * a) + 4.0 * _EPS * abs(log_delta)


def _checked(sigma: Any, sensitivity: Any) -> float:
    """μ = Δ/σ after validating both."""
    sigma = check_positive("sigma", sigma)
    sensitivity = check_positive("sensitivity", sensitivity)
    mu = sensitivity / sigma
    if not (math.isfinite(mu) and mu > 0.0):
        raise ValueError(f"sensitivity/sigma must be a positive finite number, got {sensitivity}/{sigma}")
    return mu


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
    mu = _checked(sigma, sensitivity)
    epsilon = check_nonnegative("epsilon", epsilon)
    log_delta, error = _log_delta_mu(mu, epsilon)
    return log_delta + error if math.isfinite(log_delta) else log_delta


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
    log_delta, error = _log_delta_mu(mu, epsilon)
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
        ε ≥ 0 (0.0 when the mechanism is already (0, δ)-DP).

    Examples
    --------
    >>> round(gaussian_epsilon(1.0, 1e-5), 6)
    4.377178
    """
    mu = _checked(sigma, sensitivity)
    log_target = math.log(check_open_unit("delta", delta))
    if _meets(mu, 0.0, log_target):
        return 0.0
    # ρ + 2√(ρ ln(1/δ)) with ρ = μ²/2 is a valid (ε, δ) for μ-GDP (Bun & Steinke 2016, Prop. 1.3).
    # (2√(ρ ln(1/δ)) = μ√(2 ln(1/δ)), written so that it does not underflow for tiny μ; the bracket
    # scales with μ, so Brent's method needs few steps even when ε is 1e-150.)
    high = 2.0 * (mu * mu / 2.0 + mu * math.sqrt(-2.0 * log_target))
    while not _meets(mu, high, log_target):
        high *= 2.0

    def excess(eps: float) -> float:
        return _log_delta_mu(mu, eps)[0] - log_target

    epsilon = optimize.brentq(excess, 0.0, high, xtol=1e-300, rtol=4 * _EPS, maxiter=500)
    return _nudge_up(float(epsilon), lambda e: _meets(mu, e, log_target))


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
        return _log_delta_mu(math.exp(log_mu), epsilon)[0] - log_target

    guess = math.log(epsilon / math.sqrt(2.0 * math.log(1.25) - 2.0 * log_target))
    low, high = guess - 1.0, guess + 1.0
    for _ in range(_MAX_STEPS):
        if excess(low) < 0.0:
            break
        low -= 2.0
    for _ in range(_MAX_STEPS):
        if excess(high) > 0.0:
            break
        high += 2.0
    if not (excess(low) < 0.0 < excess(high)):
        raise ValueError(f"no Gaussian noise scale for epsilon={epsilon:g}, delta={math.exp(log_target):g} is "
                         f"representable in floating point (epsilon is too {'small' if epsilon < 1 else 'large'}); "
                         "choose epsilon in about [1e-100, 1e100]")
    log_mu = optimize.brentq(excess, low, high, xtol=1e-300, rtol=4 * _EPS, maxiter=500)
    sigma = sensitivity / math.exp(float(log_mu))
    return _nudge_up(sigma, lambda s: _meets(sensitivity / s, epsilon, log_target))


def _nudge_up(value: float, ok: Any) -> float:
    """The first of value, value·(1 + 2^k ulp), k = 0, 1, ... that satisfies ``ok``."""
    step = _EPS
    for _ in range(_MAX_STEPS):
        if ok(value):
            return value
        value = max(math.nextafter(value, math.inf), value * (1.0 + step))
        step *= 2.0
    raise ArithmeticError("one-sided post-check did not converge")  # pragma: no cover


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
