"""The PLD of random allocation (dpkit.accounting.pld.random_allocation) against independent references.

References: for t = 2 steps, δ(ε) of both dominating pairs is a one-dimensional integral of closed-form
log-normal partial expectations (the Black–Scholes call and put formulas), integrated by scipy's adaptive
quadrature; for t = 1 the allocation is the Gaussian mechanism, whose exact ε is the analytic Gaussian's.
The sum-rounding step is checked against brute-force enumeration of exact sums.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from dpkit.accounting.analytic_gaussian import gaussian_epsilon
from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import (
    GaussianEvent,
    LaplaceEvent,
    RandomAllocationEvent,
    RandomizedResponseEvent,
    SelfComposedEvent,
    event_from_dict,
)
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.pld.random_allocation import SumPmf, add, allocation_parts


def _lognormal_call(scale: float, strike: float, m: float, s: float) -> float:
    """E[(scale·X − strike)_+] for log X ~ N(m, s²)."""
    mean = scale * math.exp(m + s * s / 2)
    if strike <= 0:
        return mean - strike
    d1 = (m + s * s - math.log(strike / scale)) / s
    return mean * special.ndtr(d1) - strike * special.ndtr(d1 - s)


def _lognormal_put(scale: float, strike: float, m: float, s: float) -> float:
    """E[(strike − scale·X)_+] for log X ~ N(m, s²)."""
    if strike <= 0:
        return 0.0
    d1 = (m + s * s - math.log(strike / scale)) / s
    return strike * special.ndtr(s - d1) - scale * math.exp(m + s * s / 2) * special.ndtr(-d1)


def _two_step_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of random allocation over t = 2 Gaussian steps: the worse of E_Q[(S/2 − e^ε)_+] (remove) and
    E_Q[(1 − e^ε S/2)_+] (add), S = e^{ℓ₁} + e^{ℓ₂}, ℓᵢ ~ N(−μ²/2, μ²), by quadrature over ℓ₁."""
    m, s, c = -mu * mu / 2, mu, math.exp(epsilon)

    def remove(l1):
        return stats.norm.pdf(l1, m, s) * _lognormal_call(0.5, c - math.exp(l1) / 2, m, s)

    def add_(l1):
        return stats.norm.pdf(l1, m, s) * _lognormal_put(c / 2, 1 - c * math.exp(l1) / 2, m, s)

    return max(integrate.quad(f, m - 40 * s, m + 40 * s, epsabs=1e-15, epsrel=1e-12, limit=500)[0]
               for f in (remove, add_))


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_two_steps_interval_contains_the_quadrature_reference(mu):
    accountant = PLDAccountant(value_discretization_interval=2e-3).compose(
        RandomAllocationEvent(GaussianEvent(sigma=1.0 / mu), 2))
    for epsilon in (0.0, 0.5, 1.0, 2.0):
        exact = _two_step_delta(mu, epsilon)
        result = accountant.get_delta(epsilon)
        assert result.delta_lower <= exact <= result.delta


@pytest.mark.parametrize("sigma", [0.7, 1.0, 3.0])
def test_one_step_is_the_gaussian_mechanism(sigma):
    result = PLDAccountant().compose(RandomAllocationEvent(GaussianEvent(sigma=sigma), 1)).get_epsilon(1e-5)
    assert result.epsilon_lower <= gaussian_epsilon(sigma, 1e-5) <= result.epsilon


def test_one_step_of_laplace_is_the_laplace_mechanism():
    """Laplace at ε₀ = 1: δ(ε) = 1 − e^{(ε − ε₀)/2} exactly for ε ≤ ε₀ (one step, no amplification)."""
    result = PLDAccountant(value_discretization_interval=2e-3).compose(
        RandomAllocationEvent(LaplaceEvent(scale=1.0), 1)).get_delta(0.5)
    assert result.delta_lower <= -math.expm1(-0.25) <= result.delta


def test_more_steps_amplify_more():
    """One record in 1 of t steps: a larger t hides it better (t = 1 is the plain Gaussian)."""
    intervals = []
    for steps in (1, 10, 100):
        r = PLDAccountant(value_discretization_interval=2e-3).compose(
            RandomAllocationEvent(GaussianEvent(sigma=1.0), steps)).get_epsilon(1e-5)
        intervals.append((r.epsilon_lower, r.epsilon))
    assert intervals[2][1] < intervals[1][0] and intervals[1][1] < intervals[0][0]


@settings(max_examples=8, deadline=None)
@given(sigma=st.floats(0.6, 4.0), ratio=st.floats(1.3, 3.0))
def test_more_noise_is_more_private(sigma, ratio):
    def interval(s):
        r = PLDAccountant(value_discretization_interval=5e-3).compose(
            SelfComposedEvent(RandomAllocationEvent(GaussianEvent(sigma=s), 20), 2)).get_epsilon(1e-5)
        return r.epsilon_lower, r.epsilon

    assert interval(sigma * ratio)[1] <= interval(sigma)[0]


def test_k_of_t_is_below_k_gaussian_releases():
    k_of_t = PLDAccountant(value_discretization_interval=2e-3).compose(
        RandomAllocationEvent(GaussianEvent(sigma=1.0), 30, selected=3)).get_epsilon(1e-5)
    three = PLDAccountant().compose(SelfComposedEvent(GaussianEvent(sigma=1.0), 3)).get_epsilon(1e-5)
    assert k_of_t.epsilon < three.epsilon_lower


@given(steps=st.integers(1, 10_000), selected=st.integers(1, 50))
def test_allocation_parts_cover_every_step_and_use(steps, selected):
    if selected > steps:
        return
    parts = allocation_parts(steps, selected)
    assert sum(count for _, count in parts) == selected
    assert sum(size * count for size, count in parts) == steps
    assert all(size >= 1 for size, _ in parts)


def test_tiny_delta_is_finite_and_monotone():
    accountant = PLDAccountant(value_discretization_interval=3e-3).compose(
        RandomAllocationEvent(GaussianEvent(sigma=1.0), 50))
    values = [accountant.get_epsilon(d) for d in (1e-6, 1e-10, 1e-14)]
    assert all(math.isfinite(v.epsilon) for v in values)
    assert values[0].epsilon < values[1].epsilon_lower and values[1].epsilon < values[2].epsilon_lower


def _exact_sum_law(a: SumPmf, b: SumPmf, h: float) -> tuple[np.ndarray, np.ndarray]:
    values, masses = [], []
    for i, p in enumerate(a.probs):
        for j, q in enumerate(b.probs):
            values.append(math.exp((a.offset + i) * h) + math.exp((b.offset + j) * h))
            masses.append(p * q)
    for i, p in enumerate(a.probs):
        values.append(math.exp((a.offset + i) * h))
        masses.append(p * b.zero)
    for j, q in enumerate(b.probs):
        values.append(math.exp((b.offset + j) * h))
        masses.append(q * a.zero)
    return np.array(values), np.array(masses)


@settings(max_examples=30, deadline=None)
@given(h=st.sampled_from([0.013, 0.1, 0.45]), same=st.booleans(),
       first=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=25),
       second=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=25),
       offsets=st.tuples(st.integers(-40, 40), st.integers(-40, 40)), zeros=st.tuples(st.floats(0, 0.3), st.floats(0, 0.3)))
def test_rounded_sums_dominate_and_are_dominated_by_the_exact_sum(h, same, first, second, offsets, zeros):
    """Brute force: the rounded-up law's CDF lies below the exact sum's at every value, the rounded-down one's above."""
    a = SumPmf(offsets[0], np.array(first), zero=zeros[0], infinity=0.0)
    b = a if same else SumPmf(offsets[1], np.array(second), zero=zeros[1], infinity=0.0)
    values, masses = _exact_sum_law(a, b, h)
    for up in (True, False):
        law = add(a, b, h, up=up, pessimistic=up, tail=0.0)
        grid = np.exp((law.offset + np.arange(law.size)) * h)
        for x, cdf_rounded in zip(grid, np.cumsum(law.probs) + law.zero):
            exact = float(np.sum(masses[values <= x * (1 + 1e-12)] if up else masses[values < x * (1 - 1e-12)]))
            exact += a.zero * b.zero
            if up:
                assert cdf_rounded <= exact * (1 + 1e-9) + 1e-15
            else:
                assert cdf_rounded >= exact * (1 - 1e-9) - 1e-15
        total = float(np.sum(masses)) + a.zero * b.zero
        assert math.isclose(float(np.sum(law.probs)) + law.zero, total, rel_tol=1e-9, abs_tol=1e-15)


def test_event_validates_and_round_trips():
    event = RandomAllocationEvent(GaussianEvent(sigma=2.0), 100, selected=3)
    assert event_from_dict(event.to_dict()) == event
    with pytest.raises(ValueError, match="steps"):
        RandomAllocationEvent(GaussianEvent(sigma=1.0), 0)
    with pytest.raises(ValueError, match="selected"):
        RandomAllocationEvent(GaussianEvent(sigma=1.0), 5, selected=6)
    with pytest.raises(TypeError, match="event"):
        RandomAllocationEvent("gaussian", 5)


def test_unsupported_settings_are_named():
    with pytest.raises(UnsupportedEventError, match="add-remove"):
        PLDAccountant("replace-one").compose(RandomAllocationEvent(GaussianEvent(sigma=1.0), 10)).get_epsilon(1e-5)
    with pytest.raises(UnsupportedEventError, match="Gaussian and Laplace"):
        PLDAccountant().compose(RandomAllocationEvent(RandomizedResponseEvent(1.0), 10)).get_epsilon(1e-5)
