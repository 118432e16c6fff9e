"""δ(ε) of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13; Balle & Wang 2018, Thm 8), its one implementation.

The reference is the closed form evaluated in mpmath at 60 digits; the float evaluation must bracket
it (upper end for accounting, lower end for audits), and every caller must agree with it.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest
from hypothesis import given, strategies as st

from dpkit.accounting.analytic_gaussian import gaussian_delta, gaussian_log_delta
from dpkit.accounting.certify import certify
from dpkit.accounting.gdp import gdp_mu_to_delta
from dpkit.accounting.gdp_curve import gdp_delta, gdp_log_delta
from dpkit.audit.scores import gdp_epsilon


def _log_delta_mp(mu: float, epsilon: float) -> mp.mpf:
    with mp.workdps(60):
        mu, epsilon = mp.mpf(mu), mp.mpf(epsilon)
        delta = mp.ncdf(-epsilon / mu + mu / 2) - mp.exp(epsilon) * mp.ncdf(-epsilon / mu - mu / 2)
        return mp.log(delta)


@given(mu=st.floats(1e-3, 30.0), epsilon=st.floats(0.0, 200.0))
def test_bracketed_by_the_closed_form(mu, epsilon):
    exact = _log_delta_mp(mu, epsilon)
    lower, upper = gdp_log_delta(mu, epsilon, upper=False), gdp_log_delta(mu, epsilon)
    assert lower <= exact <= upper
    assert upper - lower <= 1e-9 * max(1.0, abs(float(exact)))


@pytest.mark.parametrize("mu, epsilon", [(1.0, 1.0), (0.01, 0.001), (5.0, 30.0), (0.3, 3.0)])
def test_every_caller_uses_the_one_curve(mu, epsilon):
    assert gdp_mu_to_delta(mu, epsilon) == certify(gdp_delta(mu, epsilon), kind="delta")  # the curve, certified
    # the analytic Gaussian's δ, certified too (margin 8·2⁻⁵² and an ulp), from the same curve
    assert gaussian_delta(1.0 / mu, epsilon) == pytest.approx(certify(gdp_delta(mu, epsilon), kind="delta"), rel=1e-15)
    assert gaussian_log_delta(1.0, epsilon, sensitivity=mu) == gdp_log_delta(mu, epsilon)


def test_audit_epsilon_is_below_the_exact_one():
    # ε(δ) of μ = 1 at δ = 1e-5 (mpmath root of Cor. 2.13): 4.3771782...
    with mp.workdps(40):
        exact = mp.findroot(lambda e: _log_delta_mp(1.0, e) - mp.log(mp.mpf("1e-5")), 4.4)
    found = gdp_epsilon(1.0, 1e-5)
    assert found <= exact and found == pytest.approx(float(exact), rel=1e-12)


def test_edges_and_errors():
    assert gdp_log_delta(math.inf, 1.0) == 0.0  # μ = ∞: no privacy, δ = 1
    assert gdp_delta(1.0, 0.0) == pytest.approx(2 * float(mp.ncdf(0.5)) - 1, rel=1e-12)  # δ(0) = 2Φ(μ/2) − 1
    with pytest.raises(ValueError, match="mu"):
        gdp_log_delta(-1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        gdp_delta(1.0, -1.0)
