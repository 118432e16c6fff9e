"""Analytic Gaussian mechanism against 60-digit mpmath references (scripts/precompute/analytic_gaussian_references.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import mpmath as mp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpkit.accounting.analytic_gaussian import (
    AnalyticGaussianAccountant,
    classic_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_log_delta,
    gaussian_sigma,
)
from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import GaussianEvent, LaplaceEvent, PoissonSampledEvent, compose, repeat

REFS = json.loads((Path(__file__).resolve().parents[1] / "data" / "analytic_gaussian_references.json").read_text())


def mp_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> mp.mpf:
    """Balle & Wang 2018, Thm 8 at 50 digits (independent of dpkit)."""
    with mp.workdps(50):
        s, e, d = mp.mpf(sigma), mp.mpf(epsilon), mp.mpf(sensitivity)
        return mp.ncdf(d / (2 * s) - e * s / d) - mp.exp(e) * mp.ncdf(-d / (2 * s) - e * s / d)


@pytest.mark.parametrize("row", REFS["sigma"], ids=lambda r: f"eps={r['epsilon']:.3g},delta={r['delta']:.3g}")
def test_sigma_matches_reference_and_is_never_below(row):
    sigma = gaussian_sigma(row["epsilon"], row["delta"], row["sensitivity"])
    reference = mp.mpf(row["sigma"])
    relative = float((mp.mpf(sigma) - reference) / reference)
    assert 0.0 <= relative <= 1e-9


@pytest.mark.parametrize("row", REFS["delta"], ids=lambda r: f"sigma={r['sigma']},eps={r['epsilon']}")
def test_delta_matches_reference(row):
    reference = mp.mpf(row["delta"])
    got = gaussian_delta(row["sigma"], row["epsilon"])
    assert got >= reference  # rounded up, never understated
    assert float((got - reference) / reference) <= 1e-10
    log_got = gaussian_log_delta(row["sigma"], row["epsilon"])
    assert log_got >= mp.mpf(row["log_delta"])
    assert float(log_got - mp.mpf(row["log_delta"])) <= 1e-10


@pytest.mark.parametrize("row", REFS["epsilon"], ids=lambda r: f"sigma={r['sigma']},delta={r['delta']:.3g}")
def test_epsilon_matches_reference_and_is_never_below(row):
    got = gaussian_epsilon(row["sigma"], row["delta"])
    reference = mp.mpf(row["epsilon"])
    assert got >= reference
    assert float((got - reference) / reference) <= 1e-10


def test_tiny_delta_where_the_naive_formula_underflows():
    # δ = 1e-300 at ε = 1e-3 and 1e3: the naive Φ(a) − e^ε Φ(b) is exactly 0 here.
    for epsilon in (1e-3, 1e3):
        sigma = gaussian_sigma(epsilon, 1e-300)
        assert mp_delta(sigma, epsilon) <= mp.mpf(1e-300)
        assert mp_delta(sigma * (1 - 1e-9), epsilon) > mp.mpf(1e-300)


@given(
    log_eps=st.floats(math.log(1e-2), math.log(1e3)),
    log_delta=st.floats(math.log(1e-30), math.log(1e-2)),
)
def test_sigma_is_one_sided_and_tight_hypothesis(log_eps, log_delta):
    epsilon, delta = math.exp(log_eps), math.exp(log_delta)
    sigma = gaussian_sigma(epsilon, delta)
    assert mp_delta(sigma, epsilon) <= mp.mpf(delta)
    assert mp_delta(sigma * (1 - 1e-9), epsilon) > mp.mpf(delta)


@given(
    log_sigma=st.floats(math.log(0.05), math.log(500.0)),
    log_delta=st.floats(math.log(1e-30), math.log(1e-2)),
)
def test_epsilon_is_one_sided_and_tight_hypothesis(log_sigma, log_delta):
    sigma, delta = math.exp(log_sigma), math.exp(log_delta)
    epsilon = gaussian_epsilon(sigma, delta)
    assert mp_delta(sigma, epsilon) <= mp.mpf(delta)
    if epsilon > math.ulp(0.0):  # the smallest float is the certified stand-in for an exact 0
        assert mp_delta(sigma, epsilon * (1 - 1e-9)) > mp.mpf(delta)


@given(
    sigma=st.floats(0.1, 100.0),
    epsilon=st.floats(0.0, 50.0),
    factor=st.floats(1.001, 3.0),
)
def test_delta_decreases_in_sigma_and_epsilon(sigma, epsilon, factor):
    assert gaussian_log_delta(sigma * factor, epsilon) <= gaussian_log_delta(sigma, epsilon)
    assert gaussian_log_delta(sigma, epsilon * factor + 0.01) <= gaussian_log_delta(sigma, epsilon)


def test_sensitivity_scales_sigma():
    # σ/Δ is all that matters: σ(ε, δ, Δ) = Δ σ(ε, δ, 1) up to rounding.
    assert gaussian_sigma(0.7, 1e-6, 3.0) == pytest.approx(3.0 * gaussian_sigma(0.7, 1e-6), rel=1e-13)


def test_classic_formula_value_and_refusal():
    assert classic_gaussian_sigma(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-15)
    assert classic_gaussian_sigma(0.5, 1e-5) >= math.sqrt(2 * math.log(1.25e5)) / 0.5
    # The classic σ is a valid (ε, δ) calibration for ε < 1, so it is at least the exact σ.
    assert classic_gaussian_sigma(0.5, 1e-5) > gaussian_sigma(0.5, 1e-5)
    with pytest.raises(ValueError, match="not a valid bound for epsilon >= 1.*use gaussian_sigma"):
        classic_gaussian_sigma(1.0, 1e-5)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: gaussian_sigma(-1.0, 1e-5), "epsilon must be in"),
        (lambda: gaussian_sigma(float("nan"), 1e-5), "epsilon must be a number"),
        (lambda: gaussian_sigma(1.0, 1.5), r"delta must be in \(0, 1\), got delta=1.5"),
        (lambda: gaussian_sigma(1.0, 0.0), "delta must be in"),
        (lambda: gaussian_sigma(1.0, 1e-5, 0.0), "sensitivity must be in"),
        (lambda: gaussian_epsilon(0.0, 1e-5), "sigma must be in"),
        (lambda: gaussian_epsilon(1.0, 1.0), "delta must be in"),
        (lambda: gaussian_delta(1.0, -0.1), "epsilon must be in"),
        (lambda: gaussian_delta(float("inf"), 1.0), "sigma must be in"),
        (lambda: classic_gaussian_sigma(0.5, -1e-5), "delta must be in"),
    ],
)
def test_invalid_input_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_type_errors():
    with pytest.raises(TypeError, match="sigma must be a real number"):
        gaussian_delta("1", 1.0)


def test_accountant_composition_is_exact():
    # k Gaussians with σ compose to one Gaussian with σ/√k (Dong, Roth & Su 2022, Cor. 3.3).
    acc = AnalyticGaussianAccountant().compose(GaussianEvent(10.0), 100)
    result = acc.get_epsilon(1e-5)
    # μ is rounded up and the result rounded outwards: a few ulps above the single-Gaussian value.
    assert gaussian_epsilon(1.0, 1e-5) <= result.epsilon <= gaussian_epsilon(1.0, 1e-5) * (1 + 1e-14)
    assert result.accountant == "analytic"
    mixed = AnalyticGaussianAccountant().compose(compose(GaussianEvent(3.0), repeat(GaussianEvent(8.0, 2.0), 4)))
    mu = math.sqrt(1 / 9 + 4 * 4 / 64)
    assert mixed.get_epsilon(1e-6).epsilon == pytest.approx(gaussian_epsilon(1 / mu, 1e-6), rel=1e-12)
    assert mixed.get_delta(1.0).delta == pytest.approx(gaussian_delta(1 / mu, 1.0), rel=1e-12)


def test_accountant_rejects_other_events():
    acc = AnalyticGaussianAccountant()
    with pytest.raises(UnsupportedEventError):
        acc.compose(compose(GaussianEvent(1.0), LaplaceEvent(1.0)))
    assert not acc.supports(PoissonSampledEvent(GaussianEvent(1.0), 0.1))
    assert acc.ledger == ()


@pytest.mark.compare
@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-6), (1.0, 1e-5), (10.0, 1e-10)])
def test_sigma_agrees_with_dp_accounting(epsilon, delta):
    dp_accounting = pytest.importorskip("dp_accounting")
    theirs = dp_accounting.get_sigma_gaussian(epsilon, delta)
    ours = gaussian_sigma(epsilon, delta)
    assert ours == pytest.approx(theirs, rel=1e-8)
    assert mp_delta(ours, epsilon) <= mp.mpf(delta)  # ours is certified; theirs is two-sided
    assert gaussian_epsilon(2.0, delta) == pytest.approx(dp_accounting.get_epsilon_gaussian(2.0, delta), rel=1e-8)
