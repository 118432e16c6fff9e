"""Every valid event, at any parameter, gets a certified value or ε = ∞ with a reason.

A query on a valid ledger may end in only four ways:

* a finite certified number (ε ≥ 0, or δ in [0, 1]);
* ε = ∞ with a note that gives the reason (``notes`` of the result);
* :class:`~dpkit.accounting.base.UnsupportedEventError` (the accountant does not handle the event);
* the PLD's :class:`~dpkit.accounting.pld.mechanisms.GridTooLargeError`, a refusal in one line that
  names the faster route (the RDP accountant), as the contract suite allows.

Never a ZeroDivisionError, an OverflowError, a MemoryError, a solver message or a hang. The closed
forms of :mod:`dpkit.accounting` answer with a number or ``inf`` (a ValueError only where no float
can hold the answer, and then naming the parameter). Parameters reach the ends of floating point:
noise, scale and ε₀ from 5e-324 to 1e300, counts up to 1e12, δ from 1e-300 to 0.5, ε from 0 to 1e300.
The explicit cases are the failures a sweep over every event class and accountant found.
"""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from time_limit import time_limit
from dpkit.accounting import (
    ApproxDPEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    GaussianSparseVectorEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PoissonSampledEvent,
    PureDPEvent,
    RandomizedResponseEvent,
    RepeatAndSelectEvent,
    SampledWithoutReplacementEvent,
    ShuffledEvent,
    SparseVectorEvent,
    TreeAggregationEvent,
    UnsupportedEventError,
    ZCDPEvent,
    compose,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_sigma,
    shuffle_delta,
    shuffle_epsilon,
)
from dpkit.accounting.analytic_gaussian import gaussian_log_delta
from dpkit.accounting.events import ObjectivePerturbationEvent
from dpkit.accounting.gdp import gdp_mu_for, gdp_mu_to_epsilon
from dpkit.accounting.gdp_curve import gdp_log_delta
from dpkit.accounting.pld.bounded_range import bounded_range_composition_delta, bounded_range_composition_epsilon
from dpkit.accounting.pld.mechanisms import GridTooLargeError
from dpkit.accounting.rdp_mechanisms import amplified_pure_epsilon
from dpkit.accounting.registry import make_accountant
from dpkit.accounting.zcdp import rho_for, zcdp_to_delta, zcdp_to_epsilon
from dpkit.mechanisms import laplace_scale

CALL_SECONDS = 30
"""A hang guard per call (the sweep behind this file saw every call here answer within a few seconds)."""

TINY = 5e-324


def limited(what: str):
    return time_limit(CALL_SECONDS, what)


def answer(name: str, event, count: int, query: str, value: float, relation: str = "add-remove"):
    """The outcome of one query: the result, ``"unsupported"`` or ``"refused"``; anything else fails."""
    what = f"{name}({relation}).{query}({value!r}) of {count} x {event!r}"
    with limited(what):
        try:
            accountant = make_accountant(name, neighbouring=relation).compose(event, count)
            result = accountant.get_epsilon(value) if query == "epsilon" else accountant.get_delta(value)
        except UnsupportedEventError:
            return "unsupported"
        except GridTooLargeError as error:
            message = str(error)
            assert "\n" not in message and "rdp" in message.lower(), f"{what}: a refusal must name a faster route"
            return "refused"
    if query == "epsilon":
        assert result.epsilon >= 0.0, f"{what}: epsilon={result.epsilon}"  # (False for NaN)
        if math.isinf(result.epsilon):
            assert any("inf" in note or "no finite" in note for note in result.notes), f"{what}: inf without reason"
    else:
        assert 0.0 <= result.delta <= 1.0, f"{what}: delta={result.delta}"
    return result


# --------------------------------------------------------------------------- the failures the sweep found


@pytest.mark.parametrize("name", ["rdp", "pld", "tightest", "zcdp", "approx"])
@pytest.mark.parametrize("sigma", [1e-300, TINY])
def test_noiseless_discrete_gaussian_is_infinite_with_its_reason(name, sigma):
    # the extreme-input guard once checked float sensitivities only: ZeroDivisionError in rdp, pld and tightest
    result = answer(name, DiscreteGaussianEvent(sigma), 1, "epsilon", 1e-5)
    if result == "unsupported":
        assert name == "approx"
        return
    assert result.epsilon == math.inf
    assert any("DiscreteGaussianEvent" in note for note in result.notes)
    assert answer(name, DiscreteGaussianEvent(sigma), 1, "delta", 1.0).delta == 1.0


@pytest.mark.parametrize("name", ["zcdp", "approx", "rdp", "pld"])
@pytest.mark.parametrize("event", [DiscreteLaplaceEvent(TINY), LaplaceEvent(TINY),
                                   DiscreteLaplaceEvent(1e-300, 10**12)], ids=repr)
def test_noiseless_laplace_is_infinite_with_its_reason(name, event):
    # ρ of a pure ε = Δ/b that overflows once raised "epsilon must be in [0, inf)" from compose (zcdp) and
    # from the approx accountant's composition
    result = answer(name, event, 3, "epsilon", 1e-10)
    if result == "unsupported":  # the PLD enumerates at most 10⁶ shifts
        assert name == "pld" and event.sensitivity > 10**6
        return
    assert result.epsilon == math.inf


def test_zcdp_of_a_huge_rho_is_a_number():
    # ρ·log(1/δ) overflowed and the optimal conversion's solver met NaN ("The function value at x=128.0 is NaN")
    result = answer("zcdp", DiscreteLaplaceEvent(1e-300), 10**6, "epsilon", 1e-300)
    assert 1e306 * (1 - 1e-9) <= result.epsilon < math.inf  # 10⁶ releases of a 1e300-DP pair: about 1e306
    for rho in (1e300, 2.7e305, 1e306, 1.7e308):
        for delta in (1e-300, 1e-10, 0.5):
            assert rho <= zcdp_to_epsilon(rho, delta) < math.inf
    assert zcdp_to_epsilon(1e300, 1e-300) == zcdp_to_epsilon(1e300, 1e-300, "classic")  # both ρ + 2√(ρ log 1/δ)
    assert answer("zcdp", ZCDPEvent(1e300), 10**6, "epsilon", 1e-300).epsilon < math.inf
    assert zcdp_to_delta(1e306, 1e300) == 1.0


def test_approx_below_the_delta_the_steps_spend_is_infinite_with_its_reason():
    for delta in (1e-300, 1e-10):
        result = answer("approx", ApproxDPEvent(1.0, 0.5), 1, "epsilon", delta)
        assert result.epsilon == math.inf and any("below the delta" in note for note in result.notes)
    assert answer("approx", ApproxDPEvent(TINY, 1e-300), 10**6, "epsilon", 1e-300).epsilon == math.inf
    assert math.isfinite(answer("approx", ApproxDPEvent(1.0, 1e-300), 10**6, "epsilon", 1e-10).epsilon)


@pytest.mark.parametrize("name", ["rdp", "zcdp"])
@pytest.mark.parametrize("event", [ExponentialMechanismEvent(TINY), SparseVectorEvent(TINY, TINY),
                                   SparseVectorEvent(TINY, TINY, 10**6, 10**12)], ids=repr)
def test_almost_no_privacy_loss_is_a_tiny_epsilon(name, event):
    # a log of an underflowed product ("math domain error") and a Laplace scale 1/ε₁ = ∞ ("scale must be in
    # (0, inf)"): ε is the conversion term alone
    for count in (1, 10**12):
        result = answer(name, event, count, "epsilon", 1e-10)
        assert 0.0 < result.epsilon < 1e-100
        assert answer(name, event, count, "delta", 0.0).delta < 1e-6  # (the RDP conversion's largest order limits it)


def test_subsampled_pure_dp_with_a_huge_epsilon_does_not_overflow():
    # log1p(q·expm1(ε)) overflowed from ε ≈ 710 (OverflowError), in compose for randomized response
    for event in (PoissonSampledEvent(LaplaceEvent(1e-10), 0.01),
                  PoissonSampledEvent(RandomizedResponseEvent(1e10), 0.01)):
        result = answer("rdp", event, 1, "epsilon", 1e-300)
        assert 1e10 - 5.0 <= result.epsilon < math.inf  # each release is (1e10 − log 100)-DP and no better
    mp = mpmath.mp.clone()
    mp.dps = 60
    for epsilon in (700.5, 800.0, 1e5, 1e10, 1e300):
        for q in (TINY, 1e-300, 0.01, 0.5, 1.0):
            exact = mp.log1p(mp.mpf(q) * mp.expm1(mp.mpf(epsilon)))
            value = amplified_pure_epsilon(epsilon, q)
            assert exact <= value <= exact * (1 + 1e-12)


def test_discrete_laplace_with_a_huge_sensitivity_does_not_enumerate_it():
    # the exact Rényi curve enumerates every shift 1..Δ: Δ = 1e12 asked for 7 TiB (MemoryError); it is Δ/b-DP
    result = answer("rdp", DiscreteLaplaceEvent(1.0, 10**12), 3, "epsilon", 1e-10)
    assert 3e12 * (1 - 1e-9) <= result.epsilon <= 3e12 * (1 + 1e-9)
    # the PLD refuses the discrete Gaussian's enumeration at once, as it already did for the discrete Laplace
    assert answer("pld", DiscreteGaussianEvent(1.0, 10**12), 1, "epsilon", 1e-10) == "unsupported"


@pytest.mark.parametrize("event, relation, query, value", [
    (PureDPEvent(TINY), "add-remove", "epsilon", 1e-300),  # ZeroDivisionError: a grid spacing below every float
    (ExponentialMechanismEvent(TINY), "add-remove", "epsilon", 1e-10),
    (PoissonSampledEvent(GaussianEvent(1.0), TINY), "add-remove", "epsilon", 1e-10),
    (ShuffledEvent(TINY, 2), "replace-one", "delta", 0.0),
    (ApproxDPEvent(1e10, 1e-300), "add-remove", "epsilon", 1e-300),  # OverflowError: 1/(1 + e^ε)
    (SampledWithoutReplacementEvent(GaussianEvent(1e150), 10, 10**12), "replace-one", "delta", 0.0),  # IndexError
], ids=repr)
def test_pld_at_the_ends_of_floating_point_answers_or_names_the_rdp_route(event, relation, query, value):
    assert answer("pld", event, 1, query, value, relation) is not None


def test_pld_whose_finite_part_vanishes_is_delta_one():
    # 0.5¹⁰¹² of the mass is finite: the FFT window's offset overflowed ("Python int too large to convert")
    assert answer("pld", ApproxDPEvent(1e-300, 0.5), 10**12, "delta", 0.0).delta == 1.0


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("sigma", [TINY, 1e-300, 1e-160])
def test_gaussian_epsilon_without_noise_is_infinite(sigma):
    # RuntimeError "Failed to converge after 500 iterations": the bracket μ² overflowed to ∞
    for delta in (1e-300, 1e-10, 0.5, 0.999999):
        assert gaussian_epsilon(sigma, delta) == math.inf
    assert gaussian_delta(sigma, 1e300) == 1.0
    assert gdp_mu_to_epsilon(1.0 / sigma if sigma > TINY else 1e300, 1e-10) == math.inf


@st.composite
def gaussian_queries(draw):
    sigma = draw(st.one_of(st.sampled_from([TINY, 1e-320, 1e-300, 7.4e-155, 1e300]),
                           st.floats(-323.0, 300.0).map(lambda u: 10.0**u)))
    sensitivity = draw(st.sampled_from([1.0, TINY, 1e300]))
    delta = draw(st.floats(-300.0, math.log10(0.999)).map(lambda u: 10.0**u))
    return sigma, sensitivity, delta


@given(gaussian_queries())
@settings(max_examples=150)
def test_gaussian_closed_forms_at_any_parameter(query):
    sigma, sensitivity, delta = query
    epsilon = gaussian_epsilon(sigma, delta, sensitivity)
    assert epsilon >= 0.0
    if math.isfinite(epsilon):  # one-sided: the curve, with its error bound, is at most δ there
        assert gaussian_log_delta(sigma, epsilon, sensitivity) <= math.log(delta) + 1e-12
    else:
        assert sensitivity / sigma > 1e154
    for target in (0.0, 1e-300, 1.0, 1e300):
        assert 0.0 <= gaussian_delta(sigma, target, sensitivity) <= 1.0
    try:
        noise = gaussian_sigma(max(min(1.0 / sigma, 1e300), 1e-300), delta, sensitivity)
    except ValueError as error:  # only a noise scale beyond the largest float, and the message says so
        assert "exceeds the largest float" in str(error)
    else:
        assert 0.0 < noise < math.inf


@given(st.floats(0.0, 308.0).map(lambda u: 10.0**u - 1.0), st.floats(-300.0, math.log10(0.5)).map(lambda u: 10.0**u))
@settings(max_examples=60)
def test_calibration_closed_forms_at_any_target(epsilon, delta):
    # gaussian_sigma: "math domain error", ZeroDivisionError, "no Gaussian noise scale ... representable";
    # gdp_mu_for: RuntimeError and "no finite mu" for ε ≥ 1e150; rho_for: an endless loop for ε ≪ log(1/δ)
    with limited(f"calibration at epsilon={epsilon}, delta={delta}"):
        if epsilon > 0.0:
            sigma = gaussian_sigma(epsilon, delta)
            assert gaussian_log_delta(sigma, epsilon) <= math.log(delta)
        mu = gdp_mu_for(epsilon, delta)
        assert mu > 0.0 and gdp_log_delta(mu, epsilon) <= math.log(delta)
        rho = rho_for(epsilon, delta)
        assert rho >= 0.0 and (rho == 0.0 or zcdp_to_epsilon(rho, delta) <= max(epsilon, 0.0))


@pytest.mark.parametrize("epsilon", [TINY, 1e-320, 1e-300, 1e-200, 1e-150])
def test_tiny_calibration_targets_end(epsilon):
    with limited(f"tiny targets {epsilon}"):
        assert gaussian_sigma(epsilon, 0.5) == pytest.approx(0.741301109252, rel=1e-9)  # δ(σ, 0) = 0.5
        assert gdp_mu_for(epsilon, 1e-300) == pytest.approx(2.5066282746e-300, rel=1e-9)  # 2Φ(μ/2) − 1 = δ
        assert rho_for(epsilon, 1e-10) == pytest.approx(1.3591409142e-20, rel=1e-9)  # δ(ρ, 0) = 1e-10
        assert rho_for(epsilon, 1e-300) >= 0.0


def test_laplace_scale_names_epsilon_where_no_float_holds_the_scale():
    with pytest.raises(ValueError, match="epsilon"):
        laplace_scale(TINY)
    assert laplace_scale(1e300, TINY) == TINY  # a quotient that underflows: the smallest float, still Δ/b ≤ ε
    assert laplace_scale(1e-300) == 1e300


@pytest.mark.parametrize("epsilon0", [701.0, 1e10, 1e300])
def test_shuffling_of_reports_that_reveal_themselves(epsilon0):
    # e^{ε₀} overflowed (OverflowError): with clones of probability e^{−ε₀} ≈ 0 the pair is randomized response
    for n_users in (2, 1000):
        assert shuffle_delta(0.0, epsilon0, n_users) == 1.0
        assert shuffle_delta(epsilon0, epsilon0, n_users) == TINY  # (0, certified as the smallest float)
        assert epsilon0 - 1.0 <= shuffle_epsilon(0.5, epsilon0, n_users) <= epsilon0 * (1 + 2e-9)


def test_bounded_range_composition_beyond_its_grid():
    # the dynamic programme's spacing ε/M underflowed (ZeroDivisionError) or e^ε overflowed (OverflowError):
    # then (count·ε)-DP, dominated by randomized response
    assert bounded_range_composition_delta(TINY, 3, 0.0)[0] <= 2e-323
    assert bounded_range_composition_delta(TINY, 3, 1.0) == (0.0, 0.0)
    assert bounded_range_composition_delta(1e300, 1, 1.0)[0] == 1.0
    assert bounded_range_composition_epsilon(TINY, 1, 1e-300) <= TINY
    assert bounded_range_composition_epsilon(1e300, 2, 1e-10) == 2e300


# --------------------------------------------------------------------------- a property sweep


NOISES = st.one_of(st.sampled_from([TINY, 1e-320, 1e-300, 1e-150, 1.0, 1e150, 1e300]),
                   st.floats(-323.0, 300.0).map(lambda u: 10.0**u))
COUNTS = st.one_of(st.sampled_from([1, 10**6, 10**12]), st.integers(1, 10**12))
DELTAS = st.floats(-300.0, math.log10(0.5)).map(lambda u: 10.0**u)
EPSILONS = st.one_of(st.just(0.0), st.floats(-300.0, 300.0).map(lambda u: 10.0**u))

EVENTS = {  # x is a noise parameter (σ, scale) or, for parameters that are privacy losses, their inverse
    "gaussian": lambda x: GaussianEvent(x),
    "laplace": lambda x: LaplaceEvent(x),
    "discrete_laplace": lambda x: DiscreteLaplaceEvent(x),
    "discrete_gaussian": lambda x: DiscreteGaussianEvent(x),
    "discrete_gaussian_big_sensitivity": lambda x: DiscreteGaussianEvent(x, 10**12),
    "randomized_response": lambda x: RandomizedResponseEvent(min(1.0 / x, 1e300), 10**12),
    "pure_dp": lambda x: PureDPEvent(min(1.0 / x, 1e300)),
    "approx_dp": lambda x: ApproxDPEvent(min(1.0 / x, 1e300), 1e-300),
    "zcdp": lambda x: ZCDPEvent(min(1.0 / x, 1e300)),
    "exponential": lambda x: ExponentialMechanismEvent(min(1.0 / x, 1e300)),
    "sparse_vector": lambda x: SparseVectorEvent(min(1.0 / x, 1e300), min(1.0 / x, 1e300), 10**6, 10**12),
    "gaussian_sparse_vector": lambda x: GaussianSparseVectorEvent(x, x, 10**12),
    "tree_aggregation": lambda x: TreeAggregationEvent(x, (10**12,)),
    "objective_perturbation": lambda x: ObjectivePerturbationEvent(x, 1.0, 1e300),
    "repeat_and_select": lambda x: RepeatAndSelectEvent(GaussianEvent(x), 1e300, 0.0),
    "poisson_gaussian": lambda x: PoissonSampledEvent(GaussianEvent(x), 0.01),
    "poisson_laplace": lambda x: PoissonSampledEvent(LaplaceEvent(x), TINY),
    "poisson_randomized_response": lambda x: PoissonSampledEvent(RandomizedResponseEvent(min(1.0 / x, 1e300)), 0.5),
    "parallel": lambda x: ParallelComposedEvent((GaussianEvent(x), DiscreteLaplaceEvent(x))),
    "composed": lambda x: compose(DiscreteGaussianEvent(x), LaplaceEvent(1.0)),
}
FAST_ACCOUNTANTS = ["rdp", "zcdp", "gdp", "analytic", "approx"]


@given(st.sampled_from(sorted(EVENTS)), NOISES, st.sampled_from(FAST_ACCOUNTANTS), COUNTS, DELTAS, EPSILONS)
@settings(max_examples=300)
def test_every_event_at_any_parameter_gets_a_certified_answer(kind, x, name, count, delta, epsilon):
    event = EVENTS[kind](x)
    answer(name, event, count, "epsilon", delta)
    answer(name, event, count, "delta", epsilon)


@given(NOISES, st.sampled_from([1, 3]), DELTAS)
@settings(max_examples=25)
def test_shuffled_and_sampled_events_at_any_parameter(x, count, delta):
    answer("rdp", ShuffledEvent(min(1.0 / x, 1e300), 100), count, "epsilon", delta, "replace-one")
    answer("rdp", SampledWithoutReplacementEvent(GaussianEvent(x), 10, 10**12), count, "epsilon", delta, "replace-one")
