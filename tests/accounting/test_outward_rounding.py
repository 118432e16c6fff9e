"""Every reported ε, δ and σ is on the safe side of the exact value, to the last bit.

References are independent of dpkit: the analytic Gaussian curve (Balle & Wang 2018, Thm 8) and
the hockey-stick divergence of k-fold binary randomized response (the exact privacy-loss
distribution: the loss is ε₀(2j − n) with j ~ Binomial(n, e^ε₀/(1 + e^ε₀)); Kairouz, Oh &
Viswanath 2015, Thm 3.3), both evaluated with mpmath at 50 digits, and the stored reference sets
of tests/data (written by scripts/precompute/*).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting.analytic_gaussian import AnalyticGaussianAccountant, gaussian_delta, gaussian_epsilon, gaussian_sigma
from dpkit.accounting.approx_dp import ApproxDPAccountant, optimal_homogeneous_delta
from dpkit.accounting.calibration import calibrate_gaussian_sigma
from dpkit.accounting.events import GaussianEvent, PureDPEvent, RandomizedResponseEvent, compose, repeat
from dpkit.accounting.gdp import GDPAccountant
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.rdp import RDPAccountant
from dpkit.accounting.zcdp import ZCDPAccountant, zcdp_to_delta, zcdp_to_epsilon

DATA = Path(__file__).resolve().parents[1] / "data"
AG = json.loads((DATA / "analytic_gaussian_references.json").read_text())
PLD = json.loads((DATA / "pld_references.json").read_text())
RDP = json.loads((DATA / "rdp_references.json").read_text())


def mp_gaussian_delta(mu, epsilon) -> mp.mpf:
    """δ of μ-GDP at ε: Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle & Wang 2018, Thm 8), 50 digits."""
    with mp.workdps(50):
        mu, epsilon = mp.mpf(mu), mp.mpf(epsilon)
        return mp.ncdf(mu / 2 - epsilon / mu) - mp.exp(epsilon) * mp.ncdf(-mu / 2 - epsilon / mu)


def mp_rr_delta(epsilon0: float, count: int, epsilon) -> mp.mpf:
    """Exact δ(ε) of ``count``-fold binary randomized response: E_P[(1 − e^{ε − L})₊], 50 digits."""
    with mp.workdps(50):
        e0, eps = mp.mpf(epsilon0), mp.mpf(epsilon)
        p = mp.exp(e0) / (1 + mp.exp(e0))
        total = mp.mpf(0)
        for j in range(count + 1):
            loss = e0 * (2 * j - count)
            if loss > eps:
                total += mp.binomial(count, j) * p**j * (1 - p) ** (count - j) * (1 - mp.exp(eps - loss))
        return total


# --------------------------------------------------------------------------- stored reference sets


@pytest.mark.parametrize("row", AG["epsilon"], ids=lambda r: f"sigma={r['sigma']},delta={r['delta']:.3g}")
def test_analytic_epsilon_never_below_reference(row):
    reference = mp.mpf(row["epsilon"])
    assert gaussian_epsilon(row["sigma"], row["delta"]) >= reference
    accountant = AnalyticGaussianAccountant().compose(GaussianEvent(row["sigma"]))
    assert accountant.get_epsilon(row["delta"]).epsilon >= reference
    assert GDPAccountant().compose(GaussianEvent(row["sigma"])).get_epsilon(row["delta"]).epsilon >= reference


@pytest.mark.parametrize("row", AG["sigma"][::4], ids=lambda r: f"eps={r['epsilon']:.3g},delta={r['delta']:.3g}")
def test_calibrated_sigma_never_below_reference(row):
    reference = mp.mpf(row["sigma"])
    assert gaussian_sigma(row["epsilon"], row["delta"], row["sensitivity"]) >= reference
    calibrated = calibrate_gaussian_sigma(row["epsilon"], row["delta"], sensitivity=row["sensitivity"], accountant="analytic")
    assert calibrated.parameter >= reference and calibrated.epsilon <= row["epsilon"]


@pytest.mark.parametrize("row", AG["delta"], ids=lambda r: f"sigma={r['sigma']},eps={r['epsilon']}")
def test_analytic_delta_never_below_reference(row):
    reference = mp.mpf(row["delta"])
    assert gaussian_delta(row["sigma"], row["epsilon"]) >= reference
    accountant = AnalyticGaussianAccountant().compose(GaussianEvent(row["sigma"]))
    assert accountant.get_delta(row["epsilon"]).delta >= reference


@pytest.mark.parametrize("row", [r for r in PLD["randomized_response"] if "delta" in r],
                         ids=lambda r: f"eps0={r['epsilon0']},k={r['k']},n={r['count']},delta={r['delta']}")
def test_pld_randomized_response_never_below_reference(row):
    accountant = PLDAccountant().compose(RandomizedResponseEvent(row["epsilon0"], row["k"]), row["count"])
    assert accountant.get_epsilon(row["delta"]).epsilon >= row["epsilon"]


@pytest.mark.parametrize("row", [r for r in PLD["gaussian"] if "delta" in r], ids=lambda r: f"sigma={r['sigma']},n={r['count']}")
def test_composed_gaussian_never_below_reference(row):
    event = repeat(GaussianEvent(row["sigma"]), row["count"])
    for accountant in (AnalyticGaussianAccountant(), GDPAccountant()):
        assert accountant.compose(event).get_epsilon(row["delta"]).epsilon >= row["epsilon"]


@pytest.mark.parametrize("row", RDP["zcdp"], ids=lambda r: f"rho={r['rho']}")
def test_zcdp_conversions_never_below_reference(row):
    assert zcdp_to_epsilon(row["rho"], row["delta"]) >= mp.mpf(row["epsilon_at_delta"])
    assert zcdp_to_delta(row["rho"], row["epsilon"]) >= mp.mpf(row["delta_at_epsilon"])


@pytest.mark.parametrize("row", RDP["gaussian_improved_epsilon"], ids=lambda r: f"sigma={r['sigma']},n={r['count']}")
def test_rdp_and_zcdp_of_gaussians_never_below_reference(row):
    event = repeat(GaussianEvent(row["sigma"]), row["count"])
    rdp = RDPAccountant().compose(event).get_epsilon(row["delta"]).epsilon
    zcdp = ZCDPAccountant().compose(event).get_epsilon(row["delta"]).epsilon
    assert rdp >= mp.mpf(row["epsilon"]) and zcdp >= mp.mpf(row["epsilon"])  # the optimum over orders
    assert RDPAccountant(conversion="classic").compose(event).get_epsilon(row["delta"]).epsilon >= mp.mpf(row["classic"])


@pytest.mark.parametrize("row", RDP["kov"], ids=lambda r: f"eps={r['epsilon']},k={r['k']}")
def test_optimal_composition_delta_never_below_reference(row):
    got = optimal_homogeneous_delta(row["epsilon"], row["delta"], row["k"], row["epsilon_total"])
    assert got >= mp.mpf(row["delta_total"])


# --------------------------------------------------------------------------- randomized parameters


def test_composed_gaussian_regression_cases():
    """Compositions whose μ = √Σ(Δ/σ)² was rounded down before μ was rounded up (ε ≈ 4641 and
    1.6e6 came out an ulp or two below the exact value)."""
    for sigma, sensitivity, count, delta in [
        (0.03973957854055712, 0.3837952402179342, 91, 7.6087706811496205e-06),
        (0.29156532017449227, 15.863481306058354, 1064, 3.326824525300176e-27),
    ]:
        epsilon = AnalyticGaussianAccountant().compose(GaussianEvent(sigma, sensitivity), count).get_epsilon(delta).epsilon
        mu = mp.sqrt(count) * mp.mpf(sensitivity) / mp.mpf(sigma)
        assert mp_gaussian_delta(mu, epsilon) <= delta


@settings(max_examples=40, deadline=None)
@given(
    log_sigma=st.floats(math.log(0.02), math.log(50.0)),
    log_sensitivity=st.floats(-3.0, 3.0),
    count=st.integers(1, 2000),
    log_delta=st.floats(math.log(1e-30), math.log(0.3)),
)
def test_analytic_accountant_is_exact_and_never_below(log_sigma, log_sensitivity, count, log_delta):
    """exact ≤ dpkit ≤ exact·(1 + 1e-12), decided by δ at dpkit's ε and just below it (δ(ε) decreases)."""
    sigma, sensitivity, delta = math.exp(log_sigma), math.exp(log_sensitivity), math.exp(log_delta)
    event = GaussianEvent(sigma, sensitivity)
    mu = mp.sqrt(count) * mp.mpf(sensitivity) / mp.mpf(sigma)
    for accountant in (AnalyticGaussianAccountant(), GDPAccountant()):
        epsilon = accountant.compose(event, count).get_epsilon(delta).epsilon
        if epsilon == 0.0:
            assert mp_gaussian_delta(mu, 0) <= delta
            continue
        assert mp_gaussian_delta(mu, epsilon) <= delta  # dpkit ≥ exact
        assert mp_gaussian_delta(mu, mp.mpf(epsilon) / (1 + mp.mpf("1e-12"))) > delta  # dpkit ≤ exact(1 + 1e-12)
        got_delta = accountant.get_delta(epsilon).delta
        assert got_delta >= mp_gaussian_delta(mu, epsilon)


@settings(max_examples=30, deadline=None)
@given(
    log_epsilon0=st.floats(math.log(0.02), math.log(3.0)),
    count=st.integers(1, 200),
    log_delta=st.floats(math.log(1e-12), math.log(0.3)),
)
def test_randomized_response_composition_never_below_exact(log_epsilon0, count, log_delta):
    """PLD (k = 2 randomized response) and the optimal composition of pure DP (exact) are never below
    the exact ε; the optimal composition is also within 1e-10 of it (its δ is rounded up by 2⁻⁴⁰
    relative, which moves ε by 2⁻⁴⁰·δ/|δ′(ε)|: 2.5e-12 relative at ε₀ = e⁻¹, δ = e⁻², one use)."""
    epsilon0, delta = math.exp(log_epsilon0), math.exp(log_delta)
    pld = PLDAccountant().compose(RandomizedResponseEvent(epsilon0), count).get_epsilon(delta).epsilon
    assert mp_rr_delta(epsilon0, count, pld) <= delta
    optimal = ApproxDPAccountant().compose(PureDPEvent(epsilon0), count).get_epsilon(delta).epsilon
    assert mp_rr_delta(epsilon0, count, optimal) <= delta
    if mp_rr_delta(epsilon0, count, 0) > delta:  # exact ε > 0 (at ε = 0 the certified exit reports the least float)
        assert mp_rr_delta(epsilon0, count, mp.mpf(optimal) / (1 + mp.mpf("1e-10"))) > delta


def test_pld_regression_case_single_randomized_response():
    """One RR step at ε₀ = 0.131377, δ ≈ 2e-6: the PLD's closed-form crossing came out 8e-16 relative
    below the exact log((p − δ)/(1 − p)) before results were rounded outwards."""
    epsilon0, delta = 0.13137700148173004, 1.9936424818355477e-06
    epsilon = PLDAccountant().compose(RandomizedResponseEvent(epsilon0)).get_epsilon(delta).epsilon
    assert mp_rr_delta(epsilon0, 1, epsilon) <= delta


def test_mixed_gaussian_ledger_uses_rounded_up_mu():
    acc = AnalyticGaussianAccountant().compose(compose(GaussianEvent(0.3), repeat(GaussianEvent(0.7, 2.0), 9)))
    mu = mp.sqrt(1 / mp.mpf(0.3) ** 2 + 9 * (2 / mp.mpf(0.7)) ** 2)
    result = acc.get_epsilon(1e-9)
    assert mp_gaussian_delta(mu, result.epsilon) <= mp.mpf(1e-9)
