"""Rényi DP of random allocation of the Gaussian mechanism (Feldman & Shenfeld 2025, NeurIPS;
arXiv:2502.08202), :mod:`dpkit.accounting.rdp_random_allocation`.

Independent references, none of which uses the module's series arithmetic:

* remove direction, k = 1, integer α: (a) the multinomial sum over every composition
  i_1 + … + i_t = α, and (b) Thm 4.4's sum over the integer partitions of α with ≤ t parts, both in
  mpmath at 50 digits; (c) for t = 2, the definition E_Q[((X_1 + X_2)/2)^α] integrated over the
  plane by tensor Gauss–Hermite quadrature;
* add direction: the true divergence E_Q[((1/t) Σ X_i)^{1−α}] (by the quadrature for t = 2, and
  for larger t through x^{−s} = Γ(s)^{−1} ∫_0^∞ u^{s−1} e^{−ux} du and the lognormal Laplace
  transform), which the bound must not undercut; and the right-hand side of Lemma F.3 built
  from its definition P_{1/t} ∝ P^{1/t} Q^{1−1/t} by 1-D quadrature, which it must equal;
* the accountant: Google dp_accounting's random-allocation PLD bracket at σ = 1, t = 100, one
  epoch, δ = 1e-5 is ε ∈ [0.6174, 0.6247]; no valid upper bound may be below 0.6174.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special

from dpkit.accounting import rdp_random_allocation as ra
from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import (
    DiscreteGaussianEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    RandomAllocationEvent,
    SelfComposedEvent,
)
from dpkit.accounting.rdp import RDPAccountant, event_rdp
from dpkit.accounting.rdp_random_allocation import (
    max_exact_order,
    rdp_random_allocation_add,
    rdp_random_allocation_gaussian,
    rdp_random_allocation_remove,
)
from dpkit.accounting.zcdp import ZCDPAccountant



@pytest.fixture(autouse=True)
def _fifty_digits():
    """mpmath at 50 digits inside each test only (the global context is shared with every other test)."""
    with mpmath.workdps(50):
        yield

# --------------------------------------------------------------------------- references


def _log_moment_mp(p: int, z) -> mpmath.mpf:
    """log E_Q[X^p] = p(p−1)/(2z²) for X = dP/dQ, P = N(1, z²), Q = N(0, z²)."""
    return mpmath.mpf(p * (p - 1)) / (2 * z * z)


def remove_by_compositions(alpha: int, z: float, t: int) -> mpmath.mpf:
    """(1/(α−1)) log t^{−α} Σ_{i_1+…+i_t=α} α!/Π i_j! Π E[X^{i_j}], every composition listed."""
    z = mpmath.mpf(z)
    total = mpmath.mpf(0)
    for parts in itertools.product(range(alpha + 1), repeat=t):
        if sum(parts) == alpha:
            term = mpmath.factorial(alpha)
            for i in parts:
                term *= mpmath.exp(_log_moment_mp(i, z)) / mpmath.factorial(i)
            total += term
    return mpmath.log(total / mpmath.mpf(t) ** alpha) / (alpha - 1)


def _partitions(n: int, largest: int | None = None):
    largest = n if largest is None else largest
    if n == 0:
        yield ()
        return
    for part in range(min(n, largest), 0, -1):
        for rest in _partitions(n - part, part):
            yield (part,) + rest


def remove_by_partitions(alpha: int, z: float, t: int) -> mpmath.mpf:
    """Thm 4.4 (k = 1): Σ over partitions Π of α with ≤ t parts of (t choose C(Π)) (α choose Π)
    Π_p e^{(p−1) R_p}, with e^{(p−1) R_p} = E[X^p] for the Gaussian pair; then log(·/t^α)/(α−1)."""
    z = mpmath.mpf(z)
    total = mpmath.mpf(0)
    for partition in _partitions(alpha):
        if len(partition) > t:
            continue
        choose_steps = mpmath.factorial(t) / mpmath.factorial(t - len(partition))
        for count in Counter(partition).values():
            choose_steps /= mpmath.factorial(count)
        multinomial = mpmath.factorial(alpha)
        for p in partition:
            multinomial /= mpmath.factorial(p)
        total += choose_steps * multinomial * mpmath.exp(sum(_log_moment_mp(p, z) for p in partition))
    return mpmath.log(total / mpmath.mpf(t) ** alpha) / (alpha - 1)


_NODES, _WEIGHTS = special.roots_hermitenorm(120)  # ∫ f(u) φ(u) du ≈ Σ w f(u)
_WEIGHTS = _WEIGHTS / math.sqrt(2.0 * math.pi)


def _likelihood_ratios(z: float) -> np.ndarray:
    """dP/dQ at the quadrature nodes, Y = z·u ~ Q = N(0, z²): exp(u/z − 1/(2z²))."""
    return np.exp(_NODES / z - 1.0 / (2.0 * z * z))


def mean_power_t2(z: float, power: float) -> float:
    """E_Q[((X_1 + X_2)/2)^power] by tensor Gauss–Hermite quadrature of the definition."""
    x = _likelihood_ratios(z)
    mean = (x[:, None] + x[None, :]) / 2.0
    return float(np.sum(_WEIGHTS[:, None] * _WEIGHTS[None, :] * mean**power))


def true_add(alpha: float, z: float, t: int) -> float:
    """D_α(Q^t ‖ P̄) = (1/(α−1)) log E_Q[(mean X)^{−s}], s = α − 1, through
    E[S^{−s}] = Γ(s)^{−1} ∫_0^∞ u^{s−1} E[e^{−uS}] du and E[e^{−u mean X}] = L(u/t)^t."""
    s = alpha - 1.0
    x = _likelihood_ratios(z)

    def log_laplace(v: float) -> float:
        return math.log(float(np.sum(_WEIGHTS * np.exp(-v * x))))

    def integrand(u: float) -> float:
        return math.exp((s - 1.0) * math.log(u) + t * log_laplace(u / t) - special.gammaln(s)) if u > 0 else 0.0

    value, _ = integrate.quad(integrand, 0.0, np.inf, limit=500, epsabs=0.0, epsrel=1e-12)
    return math.log(value) / s


def lemma_f3_rhs(alpha: float, z: float, t: int) -> float:
    """D_α(Q^t ‖ P_{1/t}^{⊗t}) − t log Z_{1/t} with P_λ = P^λ Q^{1−λ}/Z_λ, all by quadrature."""
    lam = 1.0 / t

    def log_p(y: float) -> float:
        return -((y - 1.0) ** 2) / (2 * z * z) - math.log(z * math.sqrt(2 * math.pi))

    def log_q(y: float) -> float:
        return -(y**2) / (2 * z * z) - math.log(z * math.sqrt(2 * math.pi))

    def log_tilted(y: float) -> float:  # log of the unnormalised P^λ Q^{1−λ}
        return lam * log_p(y) + (1 - lam) * log_q(y)

    bounds = (-40.0 * z - 10.0, 40.0 * z + 10.0)  # the integrands are below e^-700 outside
    norm, _ = integrate.quad(lambda y: math.exp(log_tilted(y)), *bounds, epsabs=0, epsrel=1e-13, limit=200)
    moment, _ = integrate.quad(
        lambda y: math.exp(alpha * log_q(y) + (1 - alpha) * (log_tilted(y) - math.log(norm))),
        *bounds, epsabs=0, epsrel=1e-13, limit=200,
    )
    return t * math.log(moment) / (alpha - 1.0) - t * math.log(norm)


def gaussian(alpha: float, z: float) -> float:
    return alpha / (2.0 * z * z)


def _upper(value: float, reference: float, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    """``value`` is an upper bound on ``reference`` and within the tolerance of it."""
    assert reference <= value <= reference + rtol * abs(reference) + atol, (value, reference)


# --------------------------------------------------------------------------- remove direction, exact


@pytest.mark.parametrize("alpha,z,t", [(2, 1.0, 3), (5, 0.7, 3), (8, 2.0, 4), (6, 0.3, 2), (7, 1.3, 4), (3, 10.0, 4)])
def test_remove_equals_multinomial_sum(alpha, z, t):
    _upper(rdp_random_allocation_remove(alpha, z, t), float(remove_by_compositions(alpha, z, t)))


@pytest.mark.parametrize(
    "alpha,z,t",
    [
        (20, 1.0, 10),  # α > t + 1: repeated squaring
        (22, 0.8, 5),
        (25, 0.5, 100),  # α ≤ t + 1: Miller's recurrence
        (30, 1.0, 64),
        (20, 3.0, 1000),
        (12, 0.3, 10_000),
        (15, 20.0, 10_000),
    ],
)
def test_remove_equals_theorem_4_4_partition_sum(alpha, z, t):
    reference = float(remove_by_partitions(alpha, z, t))
    _upper(rdp_random_allocation_remove(alpha, z, t), reference, rtol=1e-8, atol=1e-11)


@pytest.mark.parametrize("alpha,z", [(2, 1.0), (4, 1.0), (5, 2.0), (3, 0.7), (6, 0.5)])
def test_remove_equals_integral_of_definition_t2(alpha, z):
    reference = math.log(mean_power_t2(z, alpha)) / (alpha - 1)
    value = rdp_random_allocation_remove(alpha, z, 2)
    assert value == pytest.approx(reference, rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(z=st.floats(0.3, 20.0), t=st.integers(1, 10**6))
def test_remove_order_two_closed_form(z, t):
    """α = 2 in Thm 4.4 has two partitions, [2] and [1, 1]: E = (t e^{1/z²} + t(t − 1))/t²."""
    reference = math.log1p(math.expm1(1.0 / (z * z)) / t)
    _upper(rdp_random_allocation_remove(2, z, t), reference, rtol=1e-9, atol=1e-10)


def test_remove_above_the_exact_range_is_the_unamplified_gaussian():
    for t in (5, 700, 10_000):
        top = max_exact_order(t)
        assert rdp_random_allocation_remove(top + 1, 1.0, t) == gaussian(top + 1, 1.0)
        assert rdp_random_allocation_remove(top, 1.0, t) < gaussian(top, 1.0)


# --------------------------------------------------------------------------- add direction


@pytest.mark.parametrize("alpha,z,t", [(2.0, 1.0, 2), (4.0, 1.0, 10), (1.5, 0.7, 7), (8.0, 3.0, 1000), (3.3, 0.5, 50)])
def test_add_bound_equals_lemma_f3_right_hand_side(alpha, z, t):
    assert rdp_random_allocation_add(alpha, z, t) == pytest.approx(lemma_f3_rhs(alpha, z, t), rel=1e-8)


@pytest.mark.parametrize(
    "alpha,z,t",
    [(2.0, 1.0, 2), (4.0, 1.0, 2), (1.5, 1.0, 2), (4.0, 1.0, 10), (3.0, 1.0, 100), (5.0, 0.5, 50), (8.0, 3.0, 1000)],
)
def test_add_bound_is_above_the_true_add_divergence(alpha, z, t):
    truth = true_add(alpha, z, t)
    if t == 2:  # the two quadratures agree
        assert truth == pytest.approx(math.log(mean_power_t2(z, 1.0 - alpha)) / (alpha - 1.0), rel=1e-9)
    assert rdp_random_allocation_add(alpha, z, t) >= truth


# --------------------------------------------------------------------------- the combined curve


@pytest.mark.parametrize("alpha", [1.01, 1.5, 2.0, 3.7, 10.0, 250.0])
@pytest.mark.parametrize("z", [0.4, 1.0, 6.0])
def test_one_step_is_the_gaussian(alpha, z):
    assert rdp_random_allocation_gaussian(alpha, z, 1) == gaussian(alpha, z)
    assert event_rdp(RandomAllocationEvent(GaussianEvent(z), 1), alpha) == gaussian(alpha, z)


@pytest.mark.parametrize("z,t", [(1.0, 100), (0.5, 20), (4.0, 5_000), (20.0, 10_000)])
def test_curve_covers_both_directions(z, t):
    for alpha in (2, 3, 10, 64, 500):
        value = rdp_random_allocation_gaussian(alpha, z, t)
        assert value >= rdp_random_allocation_remove(alpha, z, t)
        assert value >= rdp_random_allocation_add(alpha, z, t)


@pytest.mark.parametrize("t", [2, 7, 40])
def test_every_step_selected_is_the_composition_of_gaussians(t):
    """k = t: the record is in every run, the t-fold composition of the Gaussian (exactly)."""
    for alpha in (1.5, 2.0, 9.0):
        value = rdp_random_allocation_gaussian(alpha, 1.3, t, t)
        _upper(value, t * gaussian(alpha, 1.3), rtol=1e-15, atol=0.0)


@settings(max_examples=50, deadline=None)
@given(z=st.floats(0.3, 20.0), t=st.integers(1, 10_000), k=st.integers(1, 50), alpha=st.floats(1.01, 300.0))
def test_never_above_the_unamplified_composition(z, t, k, alpha):
    k = min(k, t)
    value = rdp_random_allocation_gaussian(alpha, z, t, k)
    assert 0.0 < value <= k * gaussian(alpha, z) * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(z=st.floats(0.3, 20.0), t=st.integers(1, 10_000), k=st.integers(1, 20),
       a=st.floats(1.01, 400.0), b=st.floats(1.01, 400.0))
def test_nondecreasing_in_alpha(z, t, k, a, b):
    k = min(k, t)
    low, high = sorted((a, b))
    assert rdp_random_allocation_gaussian(low, z, t, k) <= rdp_random_allocation_gaussian(high, z, t, k)


@settings(max_examples=40, deadline=None)
@given(z1=st.floats(0.3, 20.0), z2=st.floats(0.3, 20.0), t=st.integers(1, 10_000), alpha=st.floats(1.01, 300.0))
def test_nonincreasing_in_sigma(z1, z2, t, alpha):
    small, large = sorted((z1, z2))
    assert rdp_random_allocation_gaussian(alpha, large, t) <= rdp_random_allocation_gaussian(alpha, small, t)


@settings(max_examples=40, deadline=None)
@given(z=st.floats(0.3, 20.0), t=st.integers(1, 5_000), extra=st.integers(1, 5_000), alpha=st.integers(2, 200))
def test_remove_nonincreasing_in_steps(z, t, extra, alpha):
    """E φ(mean of t + 1 i.i.d.) ≤ E φ(mean of t) for convex φ: what makes ⌊t/k⌋ valid for k ∤ t."""
    more = rdp_random_allocation_remove(alpha, z, t + extra)
    assert more <= rdp_random_allocation_remove(alpha, z, t) * (1 + 1e-12) + 1e-15


@settings(max_examples=40, deadline=None)
@given(z=st.floats(0.3, 20.0), t=st.integers(2, 10_000), k=st.integers(2, 30), alpha=st.integers(2, 200))
def test_more_selected_steps_never_below_one(z, t, k, alpha):
    """Lemma E.1: k-out-of-t allocation is no more private than 1-out-of-t, so the bound for k must
    stay above the exact k = 1 remove value (and above the whole k = 1 bound)."""
    k = min(k, t)
    bound = rdp_random_allocation_gaussian(alpha, z, t, k)
    assert bound >= rdp_random_allocation_remove(alpha, z, t)
    assert bound >= rdp_random_allocation_gaussian(alpha, z, t, 1)


@pytest.mark.parametrize("alpha,z", [(2, 1.0), (3, 1.0), (5, 2.0), (10, 1.5)])
def test_remove_first_order_in_one_over_t(alpha, z):
    """From Thm 4.4's sum, only the partitions 1^α and [2, 1^{α−2}] are of order ≥ 1/t, so
    t·D_α → α(e^{1/z²} − 1)/2 as t → ∞ (the RDP of the Poisson scheme at rate 1/t has the same
    first order; the paper proves no ordering between the two, so none is asserted)."""
    limit = alpha * math.expm1(1.0 / (z * z)) / 2.0
    gaps = [abs(t * rdp_random_allocation_remove(alpha, z, t) / limit - 1.0) for t in (10**4, 10**5, 10**7)]
    assert gaps[2] < 1e-3
    assert gaps[1] < gaps[0] / 5  # the gap shrinks like 1/t


@pytest.mark.parametrize("z,t", [(1.0, 100), (0.5, 20), (4.0, 5_000)])
def test_fractional_orders_between_their_integer_neighbours(z, t):
    for alpha in (2.25, 2.5, 7.9, 33.3):
        low, high = math.floor(alpha), math.ceil(alpha)
        value = rdp_random_allocation_gaussian(alpha, z, t)
        assert rdp_random_allocation_gaussian(low, z, t) <= value <= rdp_random_allocation_gaussian(high, z, t)
    # 1 < α < 2: at most the value at 2 (the chord from (1, 0) to (2, D_2) divided by α − 1)
    value = rdp_random_allocation_gaussian(1.5, z, t)
    assert rdp_random_allocation_add(1.5, z, t) <= value <= rdp_random_allocation_gaussian(2, z, t)


# --------------------------------------------------------------------------- accountant


def _epsilon(event, delta: float = 1e-5) -> float:
    return RDPAccountant(neighbouring="add-remove").compose(event).get_epsilon(delta).epsilon


def test_accountant_one_epoch_sigma_1_t_100_is_sound_against_the_pld_bracket():
    allocation = _epsilon(SelfComposedEvent(RandomAllocationEvent(GaussianEvent(1.0), 100), 1))
    poisson = _epsilon(SelfComposedEvent(PoissonSampledEvent(GaussianEvent(1.0), 0.01), 100))
    unamplified = _epsilon(GaussianEvent(1.0))
    assert math.isfinite(allocation) and math.isfinite(poisson)
    assert allocation >= 0.6174  # dp_accounting's random-allocation PLD lower end: below it is unsound
    assert allocation <= unamplified


def test_accountant_ten_epochs_is_finite_and_below_ten_gaussians():
    allocation = _epsilon(SelfComposedEvent(RandomAllocationEvent(GaussianEvent(1.0), 100), 10))
    assert 0.6174 <= allocation <= _epsilon(SelfComposedEvent(GaussianEvent(1.0), 10))


def test_accountant_k_of_t_and_sensitivity():
    """σ/Δ is what counts, and k = 2 out of 100 costs at least 1 out of 100."""
    one = _epsilon(RandomAllocationEvent(GaussianEvent(2.0, sensitivity=2.0), 100))
    assert one == _epsilon(RandomAllocationEvent(GaussianEvent(1.0), 100))
    assert _epsilon(RandomAllocationEvent(GaussianEvent(1.0), 100, selected=2)) >= one


@pytest.mark.parametrize("sigma,steps", [(20.0, 10_000), (20.0, 300), (0.3, 10_000), (5.0, 100)])
def test_accountant_is_fast(sigma, steps):
    ra._cache.clear()
    start = time.perf_counter()
    epsilon = _epsilon(RandomAllocationEvent(GaussianEvent(sigma), steps))
    assert math.isfinite(epsilon)
    assert time.perf_counter() - start < 3.0  # target < 0.5 s; generous against a loaded machine


# --------------------------------------------------------------------------- refusals and arguments


def test_replace_one_is_unsupported():
    with pytest.raises(UnsupportedEventError, match="add/remove"):
        RDPAccountant(neighbouring="replace-one").compose(RandomAllocationEvent(GaussianEvent(1.0), 10))


@pytest.mark.parametrize("inner", [LaplaceEvent(1.0), DiscreteGaussianEvent(1.0),
                                   SelfComposedEvent(GaussianEvent(1.0), 2)])
def test_non_gaussian_inner_event_is_unsupported(inner):
    with pytest.raises(UnsupportedEventError, match="GaussianEvent"):
        RDPAccountant().compose(RandomAllocationEvent(inner, 10))


def test_zcdp_refuses_random_allocation():
    with pytest.raises(UnsupportedEventError, match="random allocation"):
        ZCDPAccountant().compose(RandomAllocationEvent(GaussianEvent(1.0), 10))


def test_argument_errors_name_the_parameter():
    with pytest.raises(ValueError, match="alpha"):
        rdp_random_allocation_remove(2.5, 1.0, 10)
    with pytest.raises(ValueError, match="alpha"):
        rdp_random_allocation_gaussian(1.0, 1.0, 10)
    with pytest.raises(ValueError, match="noise_multiplier"):
        rdp_random_allocation_gaussian(2.0, 0.0, 10)
    with pytest.raises(ValueError, match="selected"):
        rdp_random_allocation_gaussian(2.0, 1.0, 10, 11)
    with pytest.raises(TypeError, match="steps"):
        rdp_random_allocation_gaussian(2.0, 1.0, 2.5)
    with pytest.raises(ValueError, match="steps"):
        rdp_random_allocation_add(2.0, 1.0, 0)
