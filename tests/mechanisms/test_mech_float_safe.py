"""``float_safe=True``: the Laplace mechanism as Mironov's snapping mechanism (Mironov 2012, Thm 1) and
the Gaussian mechanism as the discrete Gaussian on a power-of-two grid (Canonne, Kamath & Steinke 2020,
Alg. 3 and Thm 4). The accounting is checked against the papers' closed forms in exact or 50-digit
arithmetic; the audits check that the float-safe forms pass the default (float-bit) audit and the
continuous forms are refuted by it from the outputs alone.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting import RDPAccountant
from dpkit.accounting.events import DiscreteGaussianEvent, PureDPEvent
from dpkit.accounting.zcdp import rho_for
from dpkit.audit import audit
from dpkit.mechanisms import GaussianMechanism, LaplaceMechanism, PrivacyLedger
from dpkit.mechanisms.float_safe import gaussian_grid, grid_sensitivity


def _power_of_two_at_least(x: float) -> Fraction:
    p = Fraction(1)
    while p < Fraction(x):
        p *= 2
    while p / 2 >= Fraction(x):
        p /= 2
    return p


# ---------------------------------------------------------------- Laplace → snapping


@settings(max_examples=40, deadline=None)
@given(epsilon=st.floats(0.05, 5.0), sensitivity=st.floats(0.1, 8.0))
def test_float_safe_laplace_epsilon_is_mironovs_bound_and_within_the_target(epsilon, sensitivity):
    mech = LaplaceMechanism.from_epsilon(epsilon, sensitivity, float_safe=True)
    # Mironov 2012, Thm 1 at sensitivity Δ' = the power of two >= Δ: ε = (Δ' + 2^-49 B)/λ, exactly
    exact = (_power_of_two_at_least(sensitivity) + Fraction(2) ** -49 * Fraction(mech.bound)) / Fraction(mech.scale)
    assert Fraction(mech.epsilon) >= exact and Fraction(math.nextafter(mech.epsilon, 0.0)) < exact
    assert mech.epsilon <= epsilon and mech.event == PureDPEvent(mech.epsilon)
    assert mech.floating_point_safe and not LaplaceMechanism.from_epsilon(epsilon, sensitivity).floating_point_safe


def test_float_safe_laplace_releases_on_the_snapping_lattice_and_records_its_event():
    mech = LaplaceMechanism(scale=1.5, float_safe=True, bound=1000.0)
    ledger = PrivacyLedger()
    out = mech.release(0.3, rng=0, ledger=ledger)
    assert ledger.entries(0) == ((PureDPEvent(mech.epsilon), 1),)
    assert out % mech.snapping.lattice == 0.0 and mech.snapping.lattice == 2.0
    assert mech.epsilon > 1.0 / 1.5  # the snapping slack 2^-49 B / λ is accounted


def test_float_safe_arguments():
    with pytest.raises(ValueError, match="value must be a scalar"):
        LaplaceMechanism.from_epsilon(1.0, float_safe=True).sample([0.0, 1.0], size=3, rng=0)
    with pytest.raises(ValueError, match="bound applies to float_safe=True only"):
        LaplaceMechanism(scale=1.0, bound=10.0)
    with pytest.raises(ValueError, match="bound must be in"):
        LaplaceMechanism(scale=1.0, float_safe=True, bound=0.5)
    with pytest.raises(ValueError, match="calibration must be 'analytic'"):
        GaussianMechanism.from_epsilon_delta(0.5, 1e-5, calibration="classic", float_safe=True)
    with pytest.raises(ValueError, match="value must be a scalar"):
        GaussianMechanism(sigma=2.0, float_safe=True).sample(np.zeros(2), rng=0)
    with pytest.raises(TypeError, match="float_safe"):
        GaussianMechanism(sigma=2.0, float_safe="yes")


# ---------------------------------------------------------------- Gaussian → discrete Gaussian on a grid


@settings(max_examples=60, deadline=None)
@given(sigma=st.floats(1e-3, 1e3), sensitivity=st.floats(1e-3, 1e2))
def test_float_safe_gaussian_event_and_rho_against_the_closed_form(sigma, sensitivity):
    mech = GaussianMechanism(sigma=sigma, sensitivity=sensitivity, float_safe=True)
    grid = mech.grid
    assert math.frexp(grid)[0] == 0.5 and 2**16 <= sigma / grid < 2**17  # a power of two, σ/Λ in [2^16, 2^17)
    event = mech.event
    shift = math.floor(Fraction(sensitivity) / Fraction(grid)) + 1
    assert event == DiscreteGaussianEvent(sigma=sigma / grid, sensitivity=shift)
    with mpmath.workdps(50):  # CKS 2020, Thm 4: Δ_Z²/(2σ_Z²)-zCDP, in 50 digits
        reference = mpmath.mpf(shift) ** 2 / (2 * (mpmath.mpf(sigma) / mpmath.mpf(grid)) ** 2)
        assert mech.rho >= reference and math.nextafter(mech.rho, 0.0) < reference
        # never less than the continuous ρ, at most (Δ + Λ)²/(2σ²)
        assert sensitivity**2 / (2 * mpmath.mpf(sigma) ** 2) <= reference
        assert reference <= (mpmath.mpf(sensitivity) + grid) ** 2 / (2 * mpmath.mpf(sigma) ** 2)


@settings(max_examples=60, deadline=None)
@given(sensitivity=st.floats(0.01, 10.0), start=st.floats(-50.0, 50.0), step=st.floats(0.0, 1.0))
def test_rounded_answers_move_by_at_most_the_grid_sensitivity(sensitivity, start, step):
    grid = gaussian_grid(0.37)
    bound = grid_sensitivity(sensitivity, grid)
    x, y = Fraction(start), Fraction(start) + Fraction(step) * Fraction(sensitivity)
    assert abs(round(x / Fraction(grid)) - round(y / Fraction(grid))) <= bound


def test_the_grid_sensitivity_is_attained():
    # x/Λ = 1/2 rounds (half to even) to 0, x/Λ + Δ/Λ to ⌊Δ/Λ⌋ + 1 when Δ/Λ is not an integer
    grid = gaussian_grid(0.37)
    sensitivity = 0.3
    x = Fraction(grid) / 2
    y = x + Fraction(sensitivity)
    assert round(y / Fraction(grid)) - round(x / Fraction(grid)) == grid_sensitivity(sensitivity, grid)


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-5), (0.3, 1e-6)])
def test_float_safe_gaussian_calibration_meets_the_target(epsilon, delta):
    mech = GaussianMechanism.from_epsilon_delta(epsilon, delta, float_safe=True)
    assert mech.epsilon(delta) <= epsilon and mech.calibration == "zcdp"
    assert RDPAccountant().compose(mech.event).get_epsilon(delta).epsilon <= epsilon * (1 + 1e-9)
    # no more noise than needed: one ulp less σ gives a ρ above the largest ρ the conversion allows
    smaller = GaussianMechanism(sigma=math.nextafter(mech.sigma, 0.0), float_safe=True)
    assert mech.rho <= rho_for(epsilon, delta) < smaller.rho


def test_float_safe_gaussian_releases_on_its_grid_and_records_the_discrete_event():
    mech = GaussianMechanism.from_rho(0.125, float_safe=True)
    ledger = PrivacyLedger()
    mech.release(0.3, rng=0, ledger=ledger)
    assert ledger.entries(0) == ((mech.event, 1),) and isinstance(mech.event, DiscreteGaussianEvent)
    n = 4000
    out = mech.sample(0.3, size=n, rng=1)
    assert np.all(out / mech.grid == np.round(out / mech.grid))
    # mean of N_Z(round(0.3/Λ), σ_Z²)·Λ: within 5 standard errors (two-sided p < 1e-6)
    centre = round(Fraction(0.3) / Fraction(mech.grid)) * mech.grid
    assert abs(out.mean() - centre) <= 5 * mech.sigma / math.sqrt(n)


# ---------------------------------------------------------------- the default audit, outputs alone

PAIRS = [([0.0], [1.0])]


@pytest.mark.parametrize("make,delta", [
    (lambda: LaplaceMechanism.from_epsilon(1.0, float_safe=True), 0.0),
    (lambda: GaussianMechanism.from_epsilon_delta(1.0, 1e-5, float_safe=True), 1e-5),
])
def test_float_safe_mechanisms_pass_the_default_audit(make, delta):
    mech = make()
    claimed = mech.epsilon if delta == 0 else 1.0
    r = audit(mech.as_audit_callable(), PAIRS, claimed, delta, samples=60_000, rng=0)
    assert not r.violation, r.witness


@pytest.mark.parametrize("make,delta", [
    (lambda: LaplaceMechanism.from_epsilon(1.0), 0.0),
    (lambda: GaussianMechanism.from_epsilon_delta(1.0, 1e-5), 1e-5),
])
def test_continuous_mechanisms_are_refuted_from_their_outputs(make, delta):
    r = audit(make().as_audit_callable(), PAIRS, 1.0, delta, samples=60_000, rng=0)
    assert r.violation and r.witness["event"]["family"].startswith("float")
    assert r.assumption is None and r.float_check is None  # no replay, no assumption: the outputs' bits


@pytest.mark.slow
def test_float_safe_gaussian_pld_matches_the_continuous_gaussian_of_the_grid_parameters():
    # at σ_Z ≈ 6.6·10⁴ the discrete Gaussian N_Z(0, σ_Z²) and the continuous N(0, σ_Z²) have the same privacy
    # curve for an integer shift up to a relative error of order exp(−2π²σ_Z²) (Poisson summation; CKS 2020,
    # §2.1), so the continuous curve at Δ_Z/σ_Z (Balle & Wang 2018, Thm 8) must lie inside the PLD accountant's
    # certified [epsilon_lower, epsilon], and that ε below the zCDP conversion the mechanism reports
    from dpkit.accounting import PLDAccountant
    from dpkit.accounting.analytic_gaussian import gaussian_epsilon

    mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5, float_safe=True)
    event = mech.event
    pld = PLDAccountant().compose(event).get_epsilon(1e-5)
    continuous = gaussian_epsilon(event.sigma, 1e-5, event.sensitivity)
    assert pld.epsilon_lower - 1e-12 <= continuous <= pld.epsilon + 1e-12 and pld.epsilon <= mech.epsilon(1e-5)
