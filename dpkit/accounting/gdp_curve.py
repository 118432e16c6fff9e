"""δ(ε) of μ-GDP — the privacy curve of the Gaussian mechanism — in one place.

For μ = Δ/σ,

    δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)

is the exact δ(ε) of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13) and of one Gaussian release
with noise σ on a query of L2 sensitivity Δ (Balle & Wang 2018, Thm 8). Every dpkit module
that needs it (the analytic Gaussian, the GDP accountant and conversions, the audit's Gaussian
route) calls :func:`log_delta_with_error`, :func:`gdp_log_delta` or :func:`gdp_delta`.

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

>>> round(gdp_delta(1.0, 1.0), 10)
0.1269367375
>>> gdp_delta(1.0, 1.0, upper=False) <= gdp_delta(1.0, 1.0)
True
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpkit._validation import check_nonnegative, check_positive

__all__ = ["gdp_delta", "gdp_log_delta", "log_delta_with_error"]

_EPS = float(np.finfo(float).eps)
_SQRT2 = math.sqrt(2.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_LOG2 = math.log(2.0)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)
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


def log_delta_with_error(mu: float, epsilon: float) -> tuple[float, float]:
    """(log δ_μ(ε), a bound on the relative rounding error of δ) for μ > 0 and ε ≥ 0 (unchecked).

    The true log δ lies within ``log δ ± error`` (to first order in ``error``)."""
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


def gdp_log_delta(mu: float, epsilon: float, *, upper: bool = True) -> float:
    """log δ_μ(ε), rounded outwards: the upper end of its rounding-error interval by default (never
    understates δ, for accounting), the lower end with ``upper=False`` (never overstates δ, for an
    audit's lower bounds). ``mu = inf`` gives log δ = 0 (no privacy)."""
    epsilon = check_nonnegative("epsilon", epsilon)
    if mu == math.inf:
        return 0.0
    mu = check_positive("mu", mu)
    log_delta, error = log_delta_with_error(mu, epsilon)
    if not math.isfinite(log_delta):
        return log_delta
    return min(0.0, log_delta + error) if upper else log_delta - error


def gdp_delta(mu: float, epsilon: float, *, upper: bool = True) -> float:
    """δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Cor. 2.13), rounded
    outwards as :func:`gdp_log_delta` says; 0.0 only when δ underflows (use the log there)."""
    return math.exp(gdp_log_delta(mu, epsilon, upper=upper))
