"""The PLD accountant at tiny δ (down to 1e-300) and at the edges of its grid.

References: the Gaussian mechanism's exact profile δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
(Balle & Wang 2018, Thm 8) evaluated with mpmath (30 digits) and solved for ε here, independent
of dpkit; a composition of Gaussians is one Gaussian with μ = √Σμᵢ².
"""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from dpkit.accounting.events import (
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    RandomizedResponseEvent,
)
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.registry import make_accountant
from dpkit.accounting.tightest import TightestAccountant

mpmath.mp.dps = 30


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε(δ) of μ-GDP, to 1e-12 relative (mpmath profile, float root)."""
    mu_ = mpmath.mpf(mu)

    def excess(eps: float) -> float:
        e = mpmath.mpf(eps)
        value = mpmath.ncdf(-e / mu_ + mu_ / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu_ - mu_ / 2)
        return float(mpmath.log(value) - mpmath.log(delta))

    return optimize.brentq(excess, 1e-9, mu * mu / 2 + 40 * mu + 10, xtol=1e-13, rtol=1e-14)


@pytest.mark.parametrize("delta", [1e-13, 1e-50, 1e-150, 1e-300])
@pytest.mark.parametrize("sigma,count", [(1.0, 1), (5.0, 30)])
def test_gaussian_interval_contains_exact_down_to_1e300(sigma, count, delta):
    result = PLDAccountant().compose(GaussianEvent(sigma), count).get_epsilon(delta)
    exact = gaussian_epsilon(math.sqrt(count) / sigma, delta)
    assert math.isfinite(result.epsilon)
    assert result.epsilon_lower <= exact <= result.epsilon
    assert result.epsilon - result.epsilon_lower <= 1e-3
    assert any("exponential tilting" in note for note in result.notes)


@pytest.mark.parametrize("delta", [1e-40, 1e-300])
def test_fft_path_contains_exact(delta):
    """Rate-1 Poisson sampling keeps the Gaussian pair but goes through the (tilted) FFT."""
    count, sigma = 20, 4.0
    acc = PLDAccountant().compose(PoissonSampledEvent(GaussianEvent(sigma), 1.0), count)
    result = acc.get_epsilon(delta)
    exact = gaussian_epsilon(math.sqrt(count) / sigma, delta)
    assert result.epsilon_lower <= exact <= result.epsilon <= exact + 5e-3


def test_dpsgd_tiny_delta_below_rdp():
    event = PoissonSampledEvent(GaussianEvent(1.0), 0.01)
    for delta in (1e-20, 1e-300):
        pld = PLDAccountant().compose(event, 300).get_epsilon(delta)
        rdp = make_accountant("rdp").compose(event, 300).get_epsilon(delta).epsilon
        assert 0.0 < pld.epsilon_lower <= pld.epsilon <= rdp


def test_laplace_tiny_delta_is_the_largest_loss():
    """Ten Laplace(b = 1) steps: losses ≤ 10 and P(S = 10) = 2⁻¹⁰, so δ(ε) = 2⁻¹⁰(1 − e^{ε−10}) near 10
    and ε(1e-300) = 10 − 1.02e-297, which is 10 in double precision."""
    result = PLDAccountant().compose(LaplaceEvent(1.0), 10).get_epsilon(1e-300)
    assert result.epsilon_lower <= 10.0 <= result.epsilon <= 10.0 + 1e-12


def test_randomized_response_tiny_delta():
    # k binary RR steps at ε₀: the loss is ε₀(2·Bin(k, e^ε₀/(1+e^ε₀)) − k) ≤ k ε₀, attained with
    # probability p^k ≫ 1e-300, so ε(1e-300) = k ε₀ up to 1e-280.
    result = PLDAccountant().compose(RandomizedResponseEvent(0.5), 20).get_epsilon(1e-300)
    assert result.epsilon_lower <= 10.0 <= result.epsilon <= 10.0 + 1e-9


@settings(max_examples=10, deadline=None)
@given(mu=st.floats(0.2, 3.0), exponent=st.integers(13, 300))
def test_tiny_delta_is_finite_and_above_analytic(mu, exponent):
    delta = 10.0 ** -exponent
    result = PLDAccountant().compose(GaussianEvent(1.0 / mu)).get_epsilon(delta)
    exact = gaussian_epsilon(mu, delta)
    assert math.isfinite(result.epsilon) and result.epsilon >= exact
    assert result.epsilon_lower <= exact


def test_tiny_sigma_dpsgd_is_answered():
    """σ = 1e-3 (μ = 1000, losses up to ~5e5): the grid spacing is raised up front instead of failing
    after building infeasible grids; the certified interval lies below RDP."""
    event = PoissonSampledEvent(GaussianEvent(1e-3), 0.01)
    result = PLDAccountant().compose(event, 100).get_epsilon(1e-5)
    rdp = make_accountant("rdp").compose(event, 100).get_epsilon(1e-5).epsilon
    assert 0.0 < result.epsilon_lower <= result.epsilon < rdp
    assert (result.epsilon - result.epsilon_lower) / result.epsilon < 1e-4
    assert any("grid spacing raised" in note for note in result.notes)


def test_huge_count_says_why_and_tightest_falls_back():
    """10¹² Laplace steps: the FFT power's round-off allowance exceeds δ, so the PLD grid certifies no
    finite ε; it says so, and answers with the RDP accountant's finite bound, naming that route."""
    result = PLDAccountant().compose(LaplaceEvent(1e4), 10**12).get_epsilon(1e-5)
    rdp = make_accountant("rdp").compose(LaplaceEvent(1e4), 10**12).get_epsilon(1e-5).epsilon
    assert math.isfinite(result.epsilon) and result.epsilon <= rdp * (1 + 1e-9)  # (the exit's outward rounding)
    assert any("the PLD certifies no finite epsilon" in note for note in result.notes)
    assert any(note.startswith("route: rdp") for note in result.notes)
    best = TightestAccountant().compose(LaplaceEvent(1e4), 10**12).get_epsilon(1e-5)
    assert math.isfinite(best.epsilon) and best.epsilon <= rdp * (1 + 1e-9)


def test_gaussian_beyond_any_grid_is_answered_by_exact_gdp():
    """σ = 1e-6: no grid holds the losses, but a Gaussian ledger needs none (exact μ-GDP)."""
    result = PLDAccountant().compose(GaussianEvent(1e-6)).get_epsilon(1e-5)
    exact = make_accountant("gdp").compose(GaussianEvent(1e-6)).get_epsilon(1e-5).epsilon
    assert exact <= result.epsilon <= exact * (1 + 1e-9)  # the PLD's own exit rounds outwards once more
    assert any(note.startswith("route: gdp") for note in result.notes)


def test_tightest_uses_finite_pld_at_tiny_delta():
    event = PoissonSampledEvent(GaussianEvent(1.0), 0.01)
    best = TightestAccountant().compose(event, 300).get_epsilon(1e-100)
    rdp = make_accountant("rdp").compose(event, 300).get_epsilon(1e-100).epsilon
    assert best.accountant == "pld" and best.epsilon <= rdp
