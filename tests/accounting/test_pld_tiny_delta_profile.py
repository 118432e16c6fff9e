"""δ(ε) of the PLD accountant where δ is tiny (down to 1e-300): ``get_delta`` and ``delta_curve``.

References, independent of dpkit:

* Gaussian: the exact profile δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Thm 8),
  mpmath at 50 digits; a composition of k Gaussians of σ is one with μ = √k/σ.
* Laplace (scale b, sensitivity 1, ε₀ = 1/b): under P one step's loss is +ε₀ with mass 1/2, −ε₀ with
  mass e^{−ε₀}/2, and has density e^{(l−ε₀)/2}/4 on (−ε₀, ε₀) (the image of x ∈ (0, 1) under l = ε₀ − 2x/b).
  A sum with i atoms at +ε₀, j at −ε₀ and r continuous parts has the continuous density
  (1/4)^r e^{(s − rε₀)/2} (2ε₀)^{r−1} IH_r((s + rε₀)/(2ε₀)), IH_r the Irwin–Hall density, so
  δ(ε) = Σ multinomial · 2^{−i} (e^{−ε₀}/2)^j ∫ density · (1 − e^{ε − (i−j)ε₀ − s})₊ ds (mpmath quadrature
  between the Irwin–Hall knots). Checked against the one-step closed form δ(ε) = 1 − e^{(ε−ε₀)/2}.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting.events import GaussianEvent, LaplaceEvent, PoissonSampledEvent
from dpkit.accounting.pld import PLDAccountant

DPS = 50


def gaussian_delta(epsilon: float, mu: float) -> mpmath.mpf:
    with mpmath.workdps(DPS):
        e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        return +(mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2))


def gaussian_epsilon_at(delta: float, mu: float) -> float:
    """The float ε whose exact δ is ``delta`` (to 1e-15 relative in ε)."""
    with mpmath.workdps(DPS):
        return float(mpmath.findroot(lambda e: mpmath.log(gaussian_delta(e, mu)) - mpmath.log(delta), 1.0 + mu * 10))


def _irwin_hall(u, r: int):
    if u <= 0 or u >= r:
        return mpmath.mpf(0)
    return sum((-1) ** j * mpmath.binomial(r, j) * (u - j) ** (r - 1)
               for j in range(int(mpmath.floor(u)) + 1)) / mpmath.factorial(r - 1)


def laplace_delta(epsilon: float, eps0: float, count: int) -> mpmath.mpf:
    with mpmath.workdps(DPS):
        eps, e0 = mpmath.mpf(epsilon), mpmath.mpf(eps0)
        total = mpmath.mpf(0)
        for i in range(count + 1):
            for j in range(count + 1 - i):
                r, shift = count - i - j, (i - j) * e0
                weight = (mpmath.factorial(count) / (mpmath.factorial(i) * mpmath.factorial(j) * mpmath.factorial(r))
                          * mpmath.mpf(2) ** -i * (mpmath.exp(-e0) / 2) ** j)
                if r == 0:
                    total += weight * max(mpmath.mpf(0), -mpmath.expm1(eps - shift))
                    continue
                lo, hi = max(-r * e0, eps - shift), r * e0
                if lo >= hi:
                    continue
                knots = [lo] + [-r * e0 + 2 * e0 * k for k in range(1, r) if lo < -r * e0 + 2 * e0 * k < hi] + [hi]

                def integrand(s, r=r, shift=shift):
                    density = mpmath.mpf(4) ** -r * mpmath.exp((s - r * e0) / 2) * (2 * e0) ** (r - 1)
                    return density * _irwin_hall((s + r * e0) / (2 * e0), r) * -mpmath.expm1(eps - shift - s)

                total += weight * mpmath.quad(integrand, knots)
        return total


def test_laplace_reference_matches_the_one_step_closed_form():
    for eps in (0.0, 0.25, 0.9):
        with mpmath.workdps(DPS):
            closed = 1 - mpmath.exp((mpmath.mpf(eps) - 1) / 2)
            assert abs(laplace_delta(eps, 1.0, 1) - closed) < mpmath.mpf(10) ** -40


@pytest.mark.parametrize("delta", [1e-50, 1e-300])
@pytest.mark.parametrize("sigma,count", [(1.0, 1), (2.0, 10)])
def test_gaussian_get_delta_is_certified_at_tiny_delta(sigma, count, delta):
    mu = math.sqrt(count) / sigma
    epsilon = gaussian_epsilon_at(delta, mu)
    exact = gaussian_delta(epsilon, mu)
    acc = PLDAccountant()
    result = acc.compose(GaussianEvent(sigma), count).get_delta(epsilon)
    assert result.delta_lower <= exact <= result.delta
    assert result.delta - result.delta_lower <= acc.delta_width * result.delta
    assert result.delta <= 10 * exact  # the bar of 10x; the width above gives 1e-3


@pytest.mark.parametrize("count,epsilon", [(3, 3.0 - 1e-9), (10, 10.0 - 1e-9)])
def test_laplace_get_delta_is_certified_where_delta_is_small(count, epsilon):
    """Laplace(b = 1) compositions at δ ≈ 1e-10 and 1e-12, 1e-9 below the largest loss k. A pure-DP
    composition has an atom at its largest loss (mass 2^{−k}), so δ(k − u) ≈ 2^{−k} u: smaller δ needs ε
    within an ulp of k."""
    exact = laplace_delta(epsilon, 1.0, count)
    acc = PLDAccountant()
    result = acc.compose(LaplaceEvent(1.0), count).get_delta(epsilon)
    assert exact < 1e-9
    assert result.delta_lower <= exact <= result.delta
    # best effort (no target_width given): within the 1e-9 of the top atom the tilted pessimistic grid pays its
    # FFT noise floor over every entry, so the default relative width is not always reached; the bar is 1 %
    assert result.delta <= 1.01 * exact


def test_target_width_is_honoured_by_tilted_get_delta():
    mu, target = 1.0, 1e-6
    epsilon = gaussian_epsilon_at(1e-100, mu)
    exact = gaussian_delta(epsilon, mu)
    result = PLDAccountant(target_width=target).compose(GaussianEvent(1.0 / mu)).get_delta(epsilon)
    assert result.delta_lower <= exact <= result.delta
    assert result.delta - result.delta_lower <= target * result.delta


@pytest.mark.parametrize("sigma,count", [(1.0, 1), (2.0, 10)])
def test_delta_curve_brackets_exact_in_the_tilted_range(sigma, count):
    """Where the FFT value is below 1e-9 the curve is recomputed by tilting: the upper curve never falls
    below the exact δ and stays within 1e-3 of it (the profile grid h = 1e-3), the lower one never above."""
    mu = math.sqrt(count) / sigma
    acc = PLDAccountant().compose(GaussianEvent(sigma), count)
    eps = np.linspace(gaussian_epsilon_at(1e-10, mu), gaussian_epsilon_at(1e-300, mu), 12)
    upper, lower = acc.delta_curve(eps), acc.delta_curve(eps, pessimistic=False)
    for e, up, lo in zip(eps, upper, lower):
        exact = gaussian_delta(float(e), mu)
        assert lo <= exact <= up <= exact * (1 + 1e-3)


@pytest.mark.parametrize("delta", [1e-14, 1e-50])
def test_subsampled_laplace_at_tiny_delta_is_certified_within_the_default_width(delta):
    """dp_accounting's test vector (pld_privacy_accountant_test, Poisson-subsampled Laplace, scale 0.5,
    rate 0.2, 3 steps, δ = 1e-14: 2.46964 ± 1e-3), and the same at δ = 1e-50. The largest loss of a step
    is t = log(1 − q + q e²), attained with P-mass p = (1 − q) e⁻²/2 + q/2, so δ(3t − u) ≥ p³(1 − e^{−u})
    and the exact ε lies in [3t − 3e-12, 3t] (for both δ); dpkit's interval must contain it and be at
    most target_width wide."""
    q = mpmath.mpf("0.2")
    top = float(3 * mpmath.log(1 - q + q * mpmath.e**2))
    p = float((1 - q) * mpmath.e**-2 / 2 + q / 2)
    assert p**3 * -math.expm1(-3e-12) > 1e-14  # so ε ≥ top − 3e-12
    acc = PLDAccountant()
    result = acc.compose(PoissonSampledEvent(LaplaceEvent(0.5), 0.2), 3).get_epsilon(delta)
    assert result.epsilon_lower <= top - 3e-12 and top <= result.epsilon
    assert result.epsilon - result.epsilon_lower <= acc.target_width
    assert abs(result.epsilon - 2.46964) <= 1e-3


@pytest.mark.parametrize("count,gap", [(3, 1e-12), (10, 1e-12), (10, 1e-13)])
def test_laplace_get_delta_brackets_exact_next_to_the_largest_loss(count, gap):
    """Within 1e-12 of the largest loss k the top atom (mass 2^{−k}) decides δ; the grid losses are floats
    a few ulps off the grid, which must not move the bounds across the exact δ."""
    epsilon = count - gap
    exact = laplace_delta(epsilon, 1.0, count)
    result = PLDAccountant().compose(LaplaceEvent(1.0), count).get_delta(epsilon)
    assert result.delta_lower <= exact <= result.delta


@settings(max_examples=8, deadline=None)
@given(mu=st.floats(0.1, 6.0), exponent=st.integers(9, 300), count=st.integers(1, 50))
def test_gaussian_get_delta_brackets_exact_for_any_tiny_delta(mu, exponent, count):
    """Any composition of Gaussians (μ = √count/σ) at the ε whose exact δ is 10^−exponent."""
    epsilon = gaussian_epsilon_at(10.0**-exponent, mu)
    exact = gaussian_delta(epsilon, mu)
    acc = PLDAccountant()
    result = acc.compose(GaussianEvent(math.sqrt(count) / mu), count).get_delta(epsilon)
    assert result.delta_lower <= exact <= result.delta
    assert result.delta - result.delta_lower <= acc.delta_width * result.delta


@pytest.mark.parametrize("delta", [1e-20, 1e-300])
def test_epsilon_at_profile_grid_is_tilted_at_tiny_delta(delta):
    """The report's ε at the profile grid (h = 1e-3) stays finite and above the exact ε below 1e-12."""
    mu = 1.0
    exact = gaussian_epsilon_at(delta, mu)
    value = PLDAccountant().compose(GaussianEvent(1.0 / mu)).epsilon_at_profile_grid(delta)
    assert exact <= value <= exact + 1e-2
