"""Parameters at the edge of floating point get a sound answer (ε = ∞ with a note), never a crash."""

from __future__ import annotations

import math

import pytest

from dpkit.accounting.events import GaussianEvent, LaplaceEvent, PoissonSampledEvent
from dpkit.accounting.registry import make_accountant


@pytest.mark.parametrize("sigma", [1e-200, 1e-300, 5e-324])
@pytest.mark.parametrize("name", ["rdp", "zcdp", "pld", "gdp", "analytic"])
def test_tiny_sigma_gives_infinite_epsilon_with_a_note(name, sigma):
    accountant = make_accountant(name).compose(GaussianEvent(sigma), 10)
    result = accountant.get_epsilon(1e-5)
    assert result.epsilon == math.inf and result.is_upper_bound
    assert any("no finite epsilon" in note or "overflow" in note for note in result.notes) or name in ("analytic",)
    assert accountant.get_delta(1.0).delta <= 1.0


@pytest.mark.parametrize("name", ["rdp", "pld"])
def test_tiny_sigma_subsampled(name):
    result = make_accountant(name).compose(PoissonSampledEvent(GaussianEvent(1e-200), 0.1)).get_epsilon(1e-5)
    assert result.epsilon == math.inf  # δ < q: the sampled record is revealed


def test_tiny_laplace_scale_pld():
    assert make_accountant("pld").compose(LaplaceEvent(1e-300)).get_epsilon(1e-5).epsilon >= 1e299


def test_ordinary_parameters_are_unchanged():
    # 10 Gaussians of σ = 1 are exactly √10-GDP (Dong, Roth & Su 2022, Cor. 3.3); the RDP answer must lie between
    # the exact ε (Cor. 2.13, mpmath root) and Mironov's conversion of the RDP curve 5α (Mironov 2017, Prop. 3),
    # minimised over α in mpmath: the guard against extreme parameters leaves ordinary ones untouched
    import mpmath

    result = make_accountant("rdp").compose(GaussianEvent(1.0), 10).get_epsilon(1e-5)
    assert math.isfinite(result.epsilon) and not any("no finite" in n for n in result.notes)
    with mpmath.workdps(40):
        mu = mpmath.sqrt(10)

        def delta(eps):
            return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)

        exact = mpmath.findroot(lambda e: delta(e) - mpmath.mpf("1e-5"), 15)
        alpha = 1 + mpmath.sqrt(mpmath.log(1e5) / 5)  # the minimiser of 5α + log(1/δ)/(α − 1)
        mironov = 5 * alpha + mpmath.log(1e5) / (alpha - 1)
    assert exact <= result.epsilon <= mironov


def test_gaussian_whose_square_underflows_still_gets_a_sound_epsilon():
    # σ = 1e200: (Δ/σ)² underflows to 0, which once certified ε = 0. At δ = 1e-300 the true ε is positive; the
    # accountants must stay above the exact value of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13), found here by mpmath.
    import mpmath

    from dpkit.accounting import AnalyticGaussianAccountant, GaussianEvent, GDPAccountant

    mp = mpmath.mp.clone()
    mp.dps = 450
    mu, target = mp.mpf("1e-200"), mp.mpf("1e-300")

    def delta(eps):
        return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)

    low, high = mp.mpf(0), 100 * mu  # δ decreases in ε: bisect on [0, 100μ]
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if delta(mid) > target else (low, mid)
    exact = float(high)
    assert exact > 0.0
    for accountant in (GDPAccountant(), AnalyticGaussianAccountant()):
        assert accountant.compose(GaussianEvent(1e200)).get_epsilon(1e-300).epsilon >= exact


@pytest.mark.parametrize("sigma, delta", [(1e16, 1e-30), (1e16, 1e-60), (1e100, 1e-300), (1.0, 1e-30)])
def test_pld_at_tiny_delta_never_below_the_analytic_gaussian(sigma, delta):
    # losses far below the round-off of the PLD's unit-scale log-sums once gave ε = 1e-323 here
    from dpkit.accounting import GaussianEvent, PLDAccountant, gaussian_epsilon

    assert PLDAccountant().compose(GaussianEvent(sigma)).get_epsilon(delta).epsilon >= gaussian_epsilon(sigma, delta)


def test_tiny_pure_dp_is_never_under_reported_and_never_crashes():
    # a pure 1e-20-DP step (binary randomized response): at δ = 1e-30 its exact ε is 1e-20·(1 − 2e-10)
    from dpkit.accounting import PLDAccountant, PureDPEvent, RDPAccountant, ZCDPAccountant
    from dpkit.accounting.tightest import TightestAccountant

    exact = 1e-20 * (1 - 2e-10)
    for accountant in (PLDAccountant(), RDPAccountant(), TightestAccountant()):
        assert accountant.compose(PureDPEvent(1e-20)).get_epsilon(1e-30).epsilon >= exact
    for accountant in (RDPAccountant(), ZCDPAccountant()):  # log1p(−e^−ε) once hit log(0) below ε ≈ 1e-16
        assert accountant.compose(PureDPEvent(1e-17)).get_epsilon(1e-5).epsilon >= 0.0
