"""Tests of the PLD accountant: certified intervals against exact references, consistency of
composition paths, ordering against RDP/zCDP, validation and unsupported events.

Reference values: tests/data/pld_references.json, written by scripts/precompute/pld_references.py
(mpmath, 50 digits, from the closed-form / finite loss distributions; independent of dpkit).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special

from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.calibration import calibrate
from dpkit.accounting.events import (
    ApproxDPEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PoissonSampledEvent,
    PureDPEvent,
    RandomizedResponseEvent,
    SampledWithoutReplacementEvent,
    SparseVectorEvent,
    ZCDPEvent,
    compose,
    repeat,
)
from dpkit.accounting.pld import (
    GaussianLoss,
    LaplaceLoss,
    PLDAccountant,
    SubsampledLoss,
    discretise,
    self_compose,
)
from dpkit.accounting.registry import make_accountant

REFS = json.loads((Path(__file__).resolve().parents[1] / "data" / "pld_references.json").read_text())
TAIL, MAX = 1e-30, 2**23


def gaussian_delta(mu: float, eps: float) -> float:
    """Balle & Wang 2018, Thm 8 (float closed form; accurate to ~1e-16 absolute here)."""
    return float(special.ndtr(-eps / mu + mu / 2) - math.exp(eps) * special.ndtr(-eps / mu - mu / 2))


def interval(accountant: PLDAccountant, delta: float) -> tuple[float, float]:
    result = accountant.get_epsilon(delta)
    return result.epsilon_lower, result.epsilon


# ------------------------------------------------------------------ exact references


@pytest.mark.parametrize("case", REFS["gaussian"], ids=lambda c: f"s{c['sigma']}-k{c['count']}-d{c['delta']}")
def test_gaussian_composition_interval_contains_exact(case):
    acc = PLDAccountant()
    acc.compose(GaussianEvent(case["sigma"]), case["count"])
    lower, upper = interval(acc, case["delta"])
    assert lower <= case["epsilon"] <= upper
    assert upper - lower <= 1e-3


@pytest.mark.parametrize("sigma,count", [(2.0, 10), (5.0, 100), (0.8, 3)])
def test_gaussian_fft_self_composition_contains_exact(sigma, count):
    """Same references through the FFT path (no exact merging of Gaussians)."""
    case = next(c for c in REFS["gaussian"] if c["sigma"] == sigma and c["count"] == count and c["delta"] == 1e-5)
    pes, opt = discretise(GaussianLoss(1.0 / sigma), 2e-3, TAIL, MAX)
    upper = self_compose(pes, count, TAIL, MAX).epsilon(1e-5)
    lower = self_compose(opt, count, TAIL, MAX).epsilon(1e-5)
    assert lower <= case["epsilon"] <= upper
    assert upper - lower <= 1e-3


@pytest.mark.parametrize("case", [c for c in REFS["laplace"] if "delta" in c],
                         ids=lambda c: f"b{c['scale']}-k{c['count']}-d{c['delta']}")
def test_laplace_composition_matches_exact(case):
    default = PLDAccountant()
    default.compose(LaplaceEvent(case["scale"]), case["count"])
    lower, upper = interval(default, case["delta"])
    assert lower <= case["epsilon"] <= upper and upper - lower <= 1e-3
    fine = PLDAccountant(target_width=1e-6)
    fine.compose(LaplaceEvent(case["scale"]), case["count"])
    lower, upper = interval(fine, case["delta"])
    assert lower <= case["epsilon"] <= upper
    assert upper - case["epsilon"] <= 1e-6


@pytest.mark.parametrize("case", [c for c in REFS["laplace"] if "delta_exact" in c],
                         ids=lambda c: f"b{c['scale']}-k{c['count']}")
def test_laplace_delta_is_certified(case):
    acc = PLDAccountant()
    acc.compose(LaplaceEvent(case["scale"]), case["count"])
    result = acc.get_delta(case["epsilon_query"])
    assert result.delta_lower <= case["delta_exact"] <= result.delta
    assert result.delta - case["delta_exact"] <= 1e-3 * case["delta_exact"]


@pytest.mark.parametrize("case", REFS["randomized_response"],
                         ids=lambda c: f"e{c['epsilon0']}-k{c['k']}-n{c['count']}-d{c['delta']}")
def test_randomized_response_composition_matches_exact(case):
    acc = PLDAccountant()
    acc.compose(RandomizedResponseEvent(case["epsilon0"], case["k"]), case["count"])
    lower, upper = interval(acc, case["delta"])
    assert lower <= case["epsilon"] <= upper
    assert upper - case["epsilon"] <= 1e-6


@pytest.mark.parametrize("case", REFS["discrete_laplace"],
                         ids=lambda c: f"b{c['scale']}-s{c['sensitivity']}-n{c['count']}-d{c['delta']}")
def test_discrete_laplace_composition_matches_exact(case):
    acc = PLDAccountant()
    acc.compose(DiscreteLaplaceEvent(case["scale"], case["sensitivity"]), case["count"])
    lower, upper = interval(acc, case["delta"])
    assert lower <= case["epsilon"] <= upper
    assert upper - case["epsilon"] <= 1e-6


def test_pure_dp_is_binary_randomized_response():
    """The worst ε-DP pair is binary randomized response (Kairouz, Oh & Viswanath 2015)."""
    case = next(c for c in REFS["randomized_response"] if c["k"] == 2 and c["count"] == 10)
    acc = PLDAccountant()
    acc.compose(PureDPEvent(case["epsilon0"]), case["count"])
    lower, upper = interval(acc, case["delta"])
    assert lower <= case["epsilon"] <= upper <= case["epsilon"] + 1e-6


def test_approx_dp_single_event_is_exact():
    # One (ε, δ)-DP event: δ(ε) = δ exactly, and ε(δ) = ε.
    acc = PLDAccountant()
    acc.compose(ApproxDPEvent(1.0, 1e-6))
    assert acc.get_delta(1.0).delta == pytest.approx(1e-6, rel=1e-9)
    # Just above δ₀ the curve is δ₀ + p(1 − e^{ε−1}) with p = (1 − δ₀)/(1 + e^{−1}).
    target = 1.5e-6
    exact = 1.0 + math.log1p(-(target - 1e-6) * (1 + math.exp(-1.0)) / (1 - 1e-6))
    lower, upper = interval(acc, target)
    assert lower <= exact <= upper and upper - exact <= 1e-9
    assert math.isinf(acc.get_epsilon(5e-7).epsilon)


def test_discrete_gaussian_close_to_continuous_for_large_sigma():
    acc = PLDAccountant()
    acc.compose(DiscreteGaussianEvent(20.0, 1), 10)
    lower, upper = interval(acc, 1e-5)
    exact_continuous = next(c for c in REFS["gaussian"] if c["sigma"] == 1.0 and c["delta"] == 1e-5)["epsilon"]
    # μ = √10/20 ≠ 1: compare with the analytic continuous value for μ = √10/20 instead.
    mu = math.sqrt(10) / 20
    from scipy import optimize

    cont = optimize.brentq(lambda e: gaussian_delta(mu, e) - 1e-5, 0, 10, xtol=1e-14)
    assert upper - lower <= 1e-3
    assert abs(upper - cont) < 1e-2  # discrete and continuous Gaussians agree closely at σ = 20
    assert exact_continuous > 0


def _irwin_hall_scaled(c: int, t):
    """2^c × density of the sum of c Uniform(−1, 1) at t (Irwin–Hall, from the nearer end)."""
    u = (t + c) / 2
    u = min(u, c - u)
    if u <= 0:
        return mpmath.mpf(0)
    total = sum((-1) ** j * mpmath.binomial(c, j) * (u - j) ** (c - 1) for j in range(int(mpmath.floor(u)) + 1))
    return 2 ** (c - 1) * total / mpmath.factorial(c - 1)


def laplace_composition_delta(k: int, eps) -> mpmath.mpf:
    """Exact δ(ε) of k Laplace(b = 1, Δ = 1) steps. Under P one loss is +1 w.p. 1/2, −1 w.p. e⁻¹/2 and
    has density e^{(l−1)/2}/4 on (−1, 1); a sum with a (+1)-atoms, b (−1)-atoms and c continuous
    parts has density (1/4)^c e^{−c/2} e^{t/2} g_c(t − a + b), g_c the scaled Irwin–Hall density,
    so δ(ε) = Σ multinomial · (1/2)^a (e⁻¹/2)^b ∫_{t>θ} (1 − e^{θ−t}) f_c(t) dt with θ = ε − a + b."""
    eps = mpmath.mpf(eps)
    total = mpmath.mpf(0)
    for a in range(k + 1):
        for b in range(k + 1 - a):
            c, theta = k - a - b, eps - a + b
            if c == 0:
                part = max(mpmath.mpf(0), -mpmath.expm1(theta))
            elif theta >= c:
                continue
            else:
                lo = max(theta, mpmath.mpf(-c))
                points = [lo] + [mpmath.mpf(-c + 2 * j) for j in range(c + 1) if -c + 2 * j > lo]
                integrand = lambda t: (mpmath.exp(t / 2) - mpmath.exp(theta - t / 2)) * _irwin_hall_scaled(c, t)  # noqa: B023
                part = mpmath.quad(integrand, points, method="gauss-legendre") / 4**c * mpmath.exp(-mpmath.mpf(c) / 2)
            weight = mpmath.factorial(k) / (mpmath.factorial(a) * mpmath.factorial(b) * mpmath.factorial(c))
            total += weight * mpmath.mpf(0.5) ** a * (mpmath.exp(-1) / 2) ** b * part
    return total


@pytest.mark.parametrize("count", [10, 20])
def test_laplace_last_digits(count):
    """Laplace(b = 1) composed 10 and 20 times at δ = 1e-6, certified to 1e-6
    against the exact value (mpmath, independent derivation above; cross-checked with the
    committed references at count 1 and 4)."""
    with mpmath.workdps(20):
        exact = optimize.brentq(lambda e: float(laplace_composition_delta(count, e) - mpmath.mpf("1e-6")),
                                count - 0.5, count - 1e-6, xtol=1e-13)
    result = PLDAccountant(target_width=1e-6).compose(LaplaceEvent(1.0), count).get_epsilon(1e-6)
    assert result.epsilon_lower <= exact <= result.epsilon
    assert result.epsilon - exact <= 1e-6


def test_laplace_reference_matches_committed_values():
    with mpmath.workdps(20):
        for case in (c for c in REFS["laplace"] if c["scale"] == 1.0 and "delta_exact" in c):
            value = laplace_composition_delta(case["count"], case["epsilon_query"])
            assert float(value) == pytest.approx(case["delta_exact"], rel=1e-12)


@settings(max_examples=12, deadline=None)
@given(sigma=st.floats(0.5, 20.0), count=st.integers(1, 200), exponent=st.floats(2.0, 11.0))
def test_gaussian_interval_contains_analytic(sigma, count, exponent):
    """PLD interval ∋ exact ε of the Gaussian composition (Balle & Wang 2018, Thm 8), through the FFT
    path (rate-1 Poisson sampling is not merged analytically)."""
    from scipy import optimize as opt

    delta = 10.0**-exponent
    mu = math.sqrt(count) / sigma
    exact = opt.brentq(lambda e: gaussian_delta(mu, e) - delta, 0.0, mu * mu / 2 + 10 * mu + 1, xtol=1e-14)
    result = PLDAccountant().compose(PoissonSampledEvent(GaussianEvent(sigma), 1.0), count).get_epsilon(delta)
    assert result.epsilon_lower <= exact + 1e-9 and exact <= result.epsilon + 1e-9


@settings(max_examples=10, deadline=None)
@given(sigma=st.floats(0.6, 5.0), q=st.floats(0.001, 0.2), count=st.integers(1, 2000))
def test_rdp_above_pld_upper_above_lower(sigma, q, count):
    event = PoissonSampledEvent(GaussianEvent(sigma), q)
    pld = PLDAccountant().compose(event, count).get_epsilon(1e-5)
    rdp = make_accountant("rdp").compose(event, count).get_epsilon(1e-5).epsilon
    assert pld.epsilon_lower <= pld.epsilon <= rdp


# ------------------------------------------------------------------ single-step properties


@settings(max_examples=30)
@given(mu=st.floats(0.05, 5.0), h=st.floats(1e-3, 5e-2), eps=st.floats(0.0, 6.0))
def test_single_gaussian_two_sided(mu, h, eps):
    pes, opt = discretise(GaussianLoss(mu), h, TAIL, MAX)
    exact = gaussian_delta(mu, eps)
    assert opt.delta(eps) <= exact + 1e-14
    assert pes.delta(eps) >= exact - 1e-14


@given(eps0=st.floats(0.05, 3.0), h=st.floats(1e-3, 5e-2), eps=st.floats(0.0, 3.0))
def test_single_laplace_two_sided(eps0, h, eps):
    pes, opt = discretise(LaplaceLoss(eps0), h, TAIL, MAX)
    exact = -math.expm1((eps - eps0) / 2) if eps < eps0 else 0.0  # Laplace δ(ε) = 1 − e^{(ε−ε₀)/2}
    assert opt.delta(eps) <= exact + 1e-14
    assert pes.delta(eps) >= exact - 1e-14


@settings(max_examples=20)
@given(q=st.floats(0.001, 1.0), sigma=st.floats(0.5, 5.0), direction=st.sampled_from(["remove", "add"]))
def test_subsampled_discretisations_are_valid_pairs(q, sigma, direction):
    """Both pmfs are pairs of probability distributions, up to the optimistic deficit (clipped
    negative mass, which the optimistic δ subtracts)."""
    pes, opt = discretise(SubsampledLoss(GaussianLoss(1 / sigma), q, direction), 5e-3, TAIL, MAX)
    for pmf in (pes, opt):
        assert np.all(pmf.probs >= 0)
        assert abs(pmf.probs.sum() + pmf.infinity_mass - 1.0) < 1e-9 + pmf.deficit
        if pmf.order == 2:  # the first-order fallback is a coupling bound, not a pair
            q_mass = float(np.sum(pmf.probs * np.exp(-pmf.losses)))
            assert q_mass <= 1.0 + 1e-9 + pmf.deficit
    grid = np.linspace(0.0, 2.0, 21)
    assert all(opt.delta(e) <= pes.delta(e) + 1e-15 for e in grid)


# ------------------------------------------------------------------ DP-SGD


def test_dpsgd_ten_thousand_steps_width_and_ordering():
    event = PoissonSampledEvent(GaussianEvent(1.1), 0.01)
    acc = PLDAccountant()
    acc.compose(event, 10_000)
    result = acc.get_epsilon(1e-5)
    assert result.epsilon - result.epsilon_lower <= 1e-3
    # Known value ≈ 5.19 (dp_accounting 0.6.0 pessimistic PLD gives 5.1926).
    assert 5.18 < result.epsilon_lower <= result.epsilon < 5.20
    rdp = make_accountant("rdp")
    rdp.compose(event, 10_000)
    assert result.epsilon <= rdp.get_epsilon(1e-5).epsilon
    assert any("h=" in note for note in result.notes)


def test_both_directions_reported_as_the_worse():
    event = PoissonSampledEvent(GaussianEvent(1.0), 0.05)
    acc = PLDAccountant(value_discretization_interval=2e-3)
    acc.compose(event, 100)
    eps = acc.get_epsilon(1e-5).epsilon
    per_direction = []
    for direction in ("remove", "add"):
        pes, _ = discretise(SubsampledLoss(GaussianLoss(1.0), 0.05, direction), 2e-3, TAIL, MAX)
        per_direction.append(self_compose(pes, 100, TAIL, MAX).epsilon(1e-5))
    assert per_direction[0] != per_direction[1]
    assert eps == pytest.approx(max(per_direction), rel=1e-12)


def test_pld_below_rdp_below_zcdp():
    event = GaussianEvent(3.0)
    values = []
    for name in ("pld", "rdp", "zcdp"):
        acc = make_accountant(name)
        acc.compose(event, 50)
        values.append(acc.get_epsilon(1e-6).epsilon)
    assert values[0] <= values[1] <= values[2]
    laplace = []
    for name in ("pld", "rdp"):
        acc = make_accountant(name)
        acc.compose(LaplaceEvent(5.0), 30)
        laplace.append(acc.get_epsilon(1e-6).epsilon)
    assert laplace[0] <= laplace[1]


# ------------------------------------------------------------------ composition paths


EVENTS = [
    GaussianEvent(2.0),
    LaplaceEvent(3.0),
    RandomizedResponseEvent(0.7, 3),
    DiscreteLaplaceEvent(2.0, 2),
    DiscreteGaussianEvent(3.0, 1),
    PureDPEvent(0.4),
    ApproxDPEvent(0.4, 1e-7),
    PoissonSampledEvent(GaussianEvent(1.5), 0.1),
    PoissonSampledEvent(LaplaceEvent(1.0), 0.2),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__ + getattr(type(getattr(e, "event", None)), "__name__", ""))
def test_count_equals_one_by_one(event):
    """compose(e, n) == n × compose(e) == repeat(e, n) == compose(e, ..., e): the bug class of
    dp_accounting 0.6.0 (repeated randomized response)."""
    n = 7
    results = []
    for build in (
        lambda a: a.compose(event, n),
        lambda a: [a.compose(event) for _ in range(n)],
        lambda a: a.compose(repeat(event, n)),
        lambda a: a.compose(compose(*([event] * n))),
        lambda a: a.compose(repeat(event, 1), n),
    ):
        acc = PLDAccountant(value_discretization_interval=5e-3)
        build(acc)
        results.append(acc.get_epsilon(1e-6))
    assert len({(r.epsilon, r.epsilon_lower) for r in results}) == 1


def test_heterogeneous_fft_matches_self_composition():
    """Two Laplace events with the same ε but different (scale, sensitivity) go through the FFT
    composition of two different leaves; the result must agree with the repeated one."""
    joint = PLDAccountant(value_discretization_interval=1e-3)
    joint.compose(LaplaceEvent(2.0, 1.0)).compose(LaplaceEvent(4.0, 2.0))
    repeated = PLDAccountant(value_discretization_interval=1e-3)
    repeated.compose(LaplaceEvent(2.0), 2)
    a, b = joint.get_epsilon(1e-5), repeated.get_epsilon(1e-5)
    assert a.epsilon == pytest.approx(b.epsilon, abs=1e-9)
    assert a.epsilon_lower == pytest.approx(b.epsilon_lower, abs=1e-9)


def test_mixed_ledger_interval_and_monotone_in_count():
    acc = PLDAccountant()
    acc.compose(GaussianEvent(4.0), 10).compose(LaplaceEvent(10.0), 5).compose(RandomizedResponseEvent(0.2), 3)
    first = acc.get_epsilon(1e-6)
    assert first.epsilon - first.epsilon_lower <= 1e-3
    acc.compose(LaplaceEvent(10.0))
    assert acc.get_epsilon(1e-6).epsilon_lower >= first.epsilon_lower - 1e-12


def test_parallel_composition_takes_dominant_part():
    parallel = PLDAccountant()
    parallel.compose(ParallelComposedEvent((GaussianEvent(3.0), GaussianEvent(1.5, 0.5), GaussianEvent(2.0))), 4)
    single = PLDAccountant()
    single.compose(GaussianEvent(2.0), 4)
    assert parallel.get_epsilon(1e-5).epsilon == single.get_epsilon(1e-5).epsilon
    same = PLDAccountant()
    same.compose(ParallelComposedEvent((repeat(LaplaceEvent(1.0), 2), repeat(LaplaceEvent(1.0), 2))))
    twice = PLDAccountant()
    twice.compose(LaplaceEvent(1.0), 2)
    assert same.get_epsilon(1e-5).epsilon == twice.get_epsilon(1e-5).epsilon
    with pytest.raises(UnsupportedEventError):
        PLDAccountant().compose(ParallelComposedEvent((GaussianEvent(1.0), LaplaceEvent(1.0))))


# ------------------------------------------------------------------ API, validation, errors


def test_construct_with_defaults_and_registry():
    assert isinstance(make_accountant("pld"), PLDAccountant)
    assert PLDAccountant(neighbouring="replace-one").neighbouring.value == "replace-one"
    empty = PLDAccountant().get_epsilon(1e-5)
    assert empty.epsilon == 0.0 and empty.epsilon_lower == 0.0


@pytest.mark.parametrize(
    "event",
    [
        ZCDPEvent(0.1),
        SampledWithoutReplacementEvent(GaussianEvent(1.0), 10, 100),  # add-remove: needs replace-one
        PoissonSampledEvent(RandomizedResponseEvent(1.0), 0.1),
        compose(GaussianEvent(1.0), ZCDPEvent(0.1)),
    ],
    ids=lambda e: type(e).__name__,
)
def test_unsupported_events_record_nothing(event):
    acc = PLDAccountant()
    acc.compose(GaussianEvent(1.0))
    assert not acc.supports(event)
    with pytest.raises(UnsupportedEventError):
        acc.compose(event)
    assert len(acc.ledger) == 1


def test_poisson_under_replace_one_is_unsupported():
    acc = PLDAccountant(neighbouring="replace-one")
    with pytest.raises(UnsupportedEventError, match="add-remove"):
        acc.compose(PoissonSampledEvent(GaussianEvent(1.0), 0.1))


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-3, 1.5, float("nan")])
def test_bad_delta_raises(bad):
    acc = PLDAccountant()
    acc.compose(GaussianEvent(1.0))
    with pytest.raises(ValueError, match="delta"):
        acc.get_epsilon(bad)


@pytest.mark.parametrize(
    "kwargs,name",
    [({"value_discretization_interval": 0.0}, "value_discretization_interval"),
     ({"target_width": -1.0}, "target_width"),
     ({"tail_mass": 2.0}, "tail_mass")],
)
def test_bad_constructor_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        PLDAccountant(**kwargs)


def test_bad_epsilon_raises():
    acc = PLDAccountant()
    acc.compose(GaussianEvent(1.0))
    with pytest.raises(ValueError, match="epsilon"):
        acc.get_delta(-1.0)


def test_result_to_dict_carries_both_ends():
    acc = PLDAccountant()
    acc.compose(LaplaceEvent(1.0), 3)
    d = acc.get_epsilon(1e-5).to_dict()
    assert d["accountant"] == "pld" and d["epsilon"] >= d["epsilon_lower"] > 0
    assert d["references"] == ["koskela2020computing", "doroshenko2022connect"]
    json.dumps(d)


def test_delta_curve_is_monotone_and_bracketed():
    acc = PLDAccountant()
    acc.compose(PoissonSampledEvent(GaussianEvent(1.0), 0.1), 50)
    grid = np.linspace(-1.0, 4.0, 51)
    upper = acc.delta_curve(grid)
    lower = acc.delta_curve(grid, pessimistic=False)
    assert np.all(np.diff(upper) <= 1e-15) and np.all(lower <= upper + 1e-15)
    pmfs = acc._profile_pmfs(True)
    one_by_one = np.array([max(p.delta(float(e)) for p in pmfs) for e in grid])
    assert np.allclose(upper, one_by_one, rtol=1e-12, atol=1e-15)


@pytest.mark.slow
def test_calibration_with_pld_is_one_sided_and_tight():
    result = calibrate(
        lambda s: repeat(PoissonSampledEvent(GaussianEvent(s), 0.01), 1000),
        "pld",
        target_epsilon=2.0,
        target_delta=1e-5,
        lower=0.6,
        upper=10.0,
        rtol=1e-5,
    )
    sigma = result.parameter

    def upper_eps(s: float) -> float:
        acc = PLDAccountant()
        acc.compose(PoissonSampledEvent(GaussianEvent(s), 0.01), 1000)
        return acc.get_epsilon(1e-5).epsilon

    assert upper_eps(sigma) <= 2.0
    assert upper_eps(sigma * (1 - 1e-4)) > 2.0


def test_first_order_fallback_is_still_a_lower_bound():
    """A coarse grid for a tiny sampling rate (loss concentrated inside one cell) makes the
    tangent construction fall back to the first-order coupling bound: still below the truth."""
    event = PoissonSampledEvent(GaussianEvent(1.0), 0.0039)
    coarse = PLDAccountant(value_discretization_interval=5e-3)
    coarse.compose(event, 1000)
    result = coarse.get_epsilon(1e-5)
    assert any("first-order fallback" in note for note in result.notes)
    fine = PLDAccountant(target_width=1e-4)
    fine.compose(event, 1000)
    reference = fine.get_epsilon(1e-5)
    assert result.epsilon_lower <= reference.epsilon_lower
    assert result.epsilon >= reference.epsilon


@pytest.mark.parametrize("sigma", [0.05, 0.025])
def test_large_epsilon_no_overflow(sigma):
    """Losses beyond ±709 (e^l overflows): the interval must still contain the exact value. (The target
    width is given explicitly, so that the grid is built even where exact GDP alone would answer.)"""
    from dpkit.accounting.gdp import gdp_mu_to_epsilon

    acc = PLDAccountant(target_width=1e-3)
    acc.compose(GaussianEvent(sigma))
    result = acc.get_epsilon(1e-5)
    exact = gdp_mu_to_epsilon(1.0 / sigma, 1e-5)  # one Gaussian is exactly (1/σ)-GDP
    assert result.epsilon_lower <= exact * (1 + 1e-12) and exact <= result.epsilon
    assert result.epsilon - result.epsilon_lower <= 2e-2


def test_sparse_vector_is_accounted_as_its_pure_epsilon():
    """Lyu, Su & Li 2017, Thm 1: the sparse vector is (ε₁ + ε₂)-DP, whose tight PLD is binary randomized
    response at ε₁ + ε₂ (Kairouz, Oh & Viswanath 2015): the PLD interval of k runs equals that of k RR steps.
    The reported ε may be lower still when another route (the RDP accountant's sparse-vector curve) is."""
    svt = PLDAccountant().compose(SparseVectorEvent(0.3, 0.2), 4).get_epsilon(1e-6)
    rr = PLDAccountant().compose(RandomizedResponseEvent(0.5), 4).get_epsilon(1e-6)
    interval = [note for note in rr.notes if note.startswith("certified interval")]
    assert interval and interval == [note for note in svt.notes if note.startswith("certified interval")]
    assert svt.epsilon <= rr.epsilon
    assert svt.epsilon <= 4 * 0.5  # never worse than basic composition
