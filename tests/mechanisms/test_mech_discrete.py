"""Exact discrete samplers (Canonne, Kamath & Steinke 2020): laws vs exact pmfs, events, errors."""

from __future__ import annotations

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from _mech_stats import ALPHA, chisquare_pvalue
from scipy import stats

from dpkit.accounting.zcdp import event_rho
from dpkit.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    bernoulli_exp,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from dpkit.mechanisms.discrete import uniform_int


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_binomial(gamma):
    rng = np.random.default_rng(int(gamma * 6))
    n = 20_000
    hits = sum(bernoulli_exp(rng, gamma) for _ in range(n))
    p = float(mp.exp(-mp.mpf(gamma.numerator) / gamma.denominator))
    if gamma == 0:
        assert hits == n
    else:
        assert stats.binomtest(hits, n, p).pvalue > ALPHA


def test_uniform_int_big_range():
    rng = np.random.default_rng(4)
    n = 2**100 + 3
    draws = [uniform_int(rng, n) for _ in range(8_000)]
    assert all(0 <= d < n for d in draws)
    bins = np.bincount([d * 16 // n for d in draws], minlength=16)
    assert chisquare_pvalue(bins, np.full(16, 1 / 16)) > ALPHA
    assert uniform_int(rng, 1) == 0


def discrete_laplace_pmf(t: Fraction, support: np.ndarray) -> np.ndarray:
    with mp.workdps(50):
        q = mp.exp(-1 / mp.mpf(t.numerator) * t.denominator)
        norm = (1 - q) / (1 + q)
        return np.array([float(norm * q ** abs(int(x))) for x in support])


def discrete_gaussian_pmf(sigma2: Fraction, support: np.ndarray) -> np.ndarray:
    with mp.workdps(50):
        s2 = mp.mpf(sigma2.numerator) / sigma2.denominator
        half = int(60 * mp.sqrt(s2)) + 10
        norm = mp.fsum(mp.exp(-mp.mpf(k) ** 2 / (2 * s2)) for k in range(-half, half + 1))
        return np.array([float(mp.exp(-mp.mpf(int(x)) ** 2 / (2 * s2)) / norm) for x in support])


@pytest.mark.parametrize("scale", [Fraction(3, 2), Fraction(1, 3), Fraction(7)])
def test_discrete_laplace_chisquare(scale):
    rng = np.random.default_rng(int(scale * 6))
    draws = np.array([sample_discrete_laplace(rng, scale) for _ in range(10_000)])
    width = int(12 * scale) + 3
    support = np.arange(-width, width + 1)
    probs = discrete_laplace_pmf(scale, support)
    observed = np.array([(draws == x).sum() for x in support])
    # tails beyond the support fold into the end cells
    observed[0] += (draws < -width).sum()
    observed[-1] += (draws > width).sum()
    tail = (1 - probs.sum()) / 2
    probs[0] += tail
    probs[-1] += tail
    assert chisquare_pvalue(observed, probs) > ALPHA


@pytest.mark.parametrize("sigma2", [Fraction(5, 2), Fraction(1, 10), Fraction(81)])
def test_discrete_gaussian_chisquare(sigma2):
    rng = np.random.default_rng(int(sigma2 * 10))
    draws = np.array([sample_discrete_gaussian(rng, sigma2) for _ in range(5_000)])
    width = int(8 * float(sigma2) ** 0.5) + 2
    support = np.arange(-width, width + 1)
    probs = discrete_gaussian_pmf(sigma2, support)
    assert np.all(np.abs(draws) <= width)
    observed = np.array([(draws == x).sum() for x in support])
    assert chisquare_pvalue(observed, probs / probs.sum()) > ALPHA


def test_discrete_mechanisms_shift_value_and_seed():
    mech = DiscreteLaplaceMechanism(scale=Fraction(2), sensitivity=1)
    a = mech.sample(1000, size=50, rng=9)
    b = mech.sample(1000, size=50, rng=9)
    assert a.dtype == np.int64 and np.array_equal(a, b)
    assert abs(np.median(a) - 1000) < 10
    assert isinstance(mech.sample(5, rng=1), int)
    g = DiscreteGaussianMechanism(sigma2=Fraction(9, 4), sensitivity=2)
    assert np.array_equal(g.sample(-7, size=20, rng=3), g.sample(-7, size=20, rng=3))


def test_discrete_events_never_understate():
    mech = DiscreteLaplaceMechanism(scale=0.1, sensitivity=3)  # 0.1 is taken as its exact binary value
    assert mech.scale == Fraction(0.1)
    assert Fraction(mech.event.scale) <= mech.scale
    assert mech.epsilon >= 3 / mech.scale
    g = DiscreteGaussianMechanism(sigma2=Fraction(1, 3), sensitivity=2)
    assert Fraction(g.event.sigma) ** 2 <= Fraction(1, 3)
    assert event_rho(g.event) >= 6.0  # Δ²/(2σ²) = 4/(2/3) = 6
    assert event_rho(g.event) == pytest.approx(6.0, rel=1e-14)
    assert g.rho == pytest.approx(6.0, rel=1e-15) and g.rho >= 6.0


@pytest.mark.parametrize(
    "build,error",
    [
        (lambda: DiscreteLaplaceMechanism(scale=0), ValueError),
        (lambda: DiscreteLaplaceMechanism(scale=-Fraction(1, 2)), ValueError),
        (lambda: DiscreteLaplaceMechanism(scale=1, sensitivity=1.5), TypeError),
        (lambda: DiscreteLaplaceMechanism(scale=1, sensitivity=0), ValueError),
        (lambda: DiscreteGaussianMechanism(sigma2=float("nan")), ValueError),
        (lambda: DiscreteGaussianMechanism(sigma2=1, sensitivity=-1), ValueError),
        (lambda: DiscreteLaplaceMechanism(scale=1).sample(1.5), TypeError),
        (lambda: DiscreteGaussianMechanism(sigma2=1).sample(True), TypeError),
        (lambda: DiscreteGaussianMechanism(sigma2=1).sample(1, size=0), ValueError),
        (lambda: bernoulli_exp(np.random.default_rng(0), Fraction(-1)), ValueError),
    ],
)
def test_discrete_bad_inputs(build, error):
    with pytest.raises(error):
        build()
