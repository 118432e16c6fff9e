"""Tests of μ-GDP accounting and trade-off curves (references from mpmath at 50 digits)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting.base import ApproximationWarning, UnsupportedEventError
from dpkit.accounting.events import (
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PoissonSampledEvent,
    RandomizedResponseEvent,
    compose,
)
from dpkit.accounting.gdp import (
    GDPAccountant,
    gaussian_tradeoff,
    gdp_mu_for,
    gdp_mu_to_delta,
    gdp_mu_to_epsilon,
    tradeoff_curve,
)
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.registry import make_accountant

mp.mp.dps = 50


def mp_delta(mu, eps):
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("mu,eps", [(0.1, 0.0), (0.5, 1.0), (1.0, 1.0), (1.0, 8.0), (3.0, 2.0), (0.3, 4.0), (10.0, 30.0)])
def test_mu_to_delta_matches_mpmath(mu, eps):
    exact = float(mp_delta(mu, eps))
    assert gdp_mu_to_delta(mu, eps) == pytest.approx(exact, rel=1e-10)


@settings(max_examples=40)
@given(mu=st.floats(0.05, 8.0), log_delta=st.floats(-25.0, -1.0))
def test_mu_to_epsilon_is_one_sided_and_tight(mu, log_delta):
    delta = 10.0**log_delta
    eps = gdp_mu_to_epsilon(mu, delta)
    assert mp_delta(mu, eps) <= delta * (1 + 1e-12)
    if eps > math.ulp(0.0):  # the smallest float is the certified stand-in for an exact 0
        assert mp_delta(mu, eps * (1 - 1e-9)) > delta


@settings(max_examples=40)
@given(eps=st.floats(0.01, 20.0), log_delta=st.floats(-20.0, -1.0))
def test_mu_for_is_largest_safe(eps, log_delta):
    delta = 10.0**log_delta
    mu = gdp_mu_for(eps, delta)
    assert mp_delta(mu, eps) <= delta * (1 + 1e-12)
    assert mp_delta(mu * (1 + 1e-9), eps) > delta


def test_round_trip():
    mu = gdp_mu_for(2.0, 1e-6)
    assert gdp_mu_to_epsilon(mu, 1e-6) == pytest.approx(2.0, rel=1e-9)


@pytest.mark.parametrize(
    "call,name",
    [(lambda: gdp_mu_to_delta(-1.0, 1.0), "mu"), (lambda: gdp_mu_to_delta(1.0, -1.0), "epsilon"),
     (lambda: gdp_mu_to_epsilon(1.0, 0.0), "delta"), (lambda: gdp_mu_for(1.0, 1.5), "delta"),
     (lambda: gaussian_tradeoff(1.0, [1.5]), "alphas"), (lambda: gdp_mu_to_delta(float("nan"), 1.0), "mu")],
)
def test_validation(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_accountant_is_exact_for_gaussian_compositions():
    acc = GDPAccountant()
    acc.compose(GaussianEvent(2.0), 10).compose(GaussianEvent(3.0, sensitivity=2.0), 5)
    mu = math.sqrt(10 / 4 + 5 * 4 / 9)
    assert acc.mu == pytest.approx(mu, rel=1e-15)
    result = acc.get_epsilon(1e-5)
    assert result.is_upper_bound and gdp_mu_to_epsilon(mu, 1e-5) <= result.epsilon <= gdp_mu_to_epsilon(mu, 1e-5) * (1 + 1e-14)
    # The exact value lies in the PLD accountant's certified interval.
    pld = PLDAccountant()
    pld.compose(GaussianEvent(2.0), 10).compose(GaussianEvent(3.0, sensitivity=2.0), 5)
    interval = pld.get_epsilon(1e-5)
    assert interval.epsilon_lower <= result.epsilon <= interval.epsilon
    assert acc.get_delta(result.epsilon).delta <= 1e-5 * (1 + 1e-12)


def test_parallel_takes_worst_part_and_registry():
    acc = make_accountant("gdp")
    acc.compose(ParallelComposedEvent((GaussianEvent(1.0), compose(GaussianEvent(2.0), GaussianEvent(2.0)))))
    assert acc.mu == pytest.approx(1.0)
    assert GDPAccountant(neighbouring="replace-one").neighbouring.value == "replace-one"


@pytest.mark.parametrize("event", [LaplaceEvent(1.0), RandomizedResponseEvent(1.0), PoissonSampledEvent(GaussianEvent(1.0), 0.1)])
def test_unsupported_without_approximation(event):
    acc = GDPAccountant()
    with pytest.raises(UnsupportedEventError):
        acc.compose(event)
    assert acc.ledger == ()


def test_clt_approximation_is_labelled():
    acc = GDPAccountant(allow_approximation=True)
    acc.compose(PoissonSampledEvent(GaussianEvent(1.1), 0.01), 10_000)
    mu = 0.01 * math.sqrt(10_000 * math.expm1(1 / 1.1**2))
    assert acc.mu == pytest.approx(mu, rel=1e-12)
    with pytest.warns(ApproximationWarning):
        result = acc.get_epsilon(1e-5)
    assert result.is_upper_bound is False
    assert any("not a bound" in n for n in result.notes)
    with pytest.raises(ValueError):
        tradeoff_curve(acc, [0.1])
    with pytest.raises(TypeError):
        GDPAccountant(allow_approximation="yes")


def test_gaussian_tradeoff_matches_mpmath():
    alphas = [0.0, 1e-6, 0.01, 0.3, 0.9, 1.0]
    got = gaussian_tradeoff(1.5, alphas)
    for a, b in zip(alphas, got):
        exact = mp.ncdf(-mp.sqrt(2) * mp.erfinv(2 * mp.mpf(a) - 1) - mp.mpf(1.5)) if 0 < a < 1 else (1 - a)
        assert b == pytest.approx(float(exact), abs=1e-14)


def test_tradeoff_curve_from_pld_is_a_certified_lower_bound():
    alphas = np.linspace(0.0, 1.0, 41)
    curve = tradeoff_curve(GaussianEvent(1.0), alphas)
    exact = gaussian_tradeoff(1.0, alphas)
    assert np.all(curve <= exact + 1e-12)
    assert np.max(exact - curve) < 5e-3
    # exact path for an (exact) GDP accountant
    acc = GDPAccountant()
    acc.compose(GaussianEvent(1.0))
    assert np.array_equal(tradeoff_curve(acc, alphas), exact)


def test_tradeoff_curve_laplace_properties():
    alphas = np.linspace(0.0, 1.0, 51)
    curve = tradeoff_curve(LaplaceEvent(1.0), alphas)
    assert np.all(np.diff(curve) <= 1e-12)  # non-increasing
    assert np.all(curve <= 1 - alphas + 1e-12)  # never above the perfect-privacy line
    # Laplace ε₀ = 1 is 1-DP, so f(α) ≥ max(0, 1 − e α, e^{-1}(1 − α)) (Dong et al. 2022, eq. 2.5).
    pure = np.maximum.reduce([np.zeros_like(alphas), 1 - math.e * alphas, (1 - alphas) / math.e])
    assert np.all(curve >= pure - 1e-9)
    with pytest.raises(TypeError):
        tradeoff_curve("gaussian", alphas)
