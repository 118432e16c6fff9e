"""Tests of privacy filters: whatever the adaptive policy, an accepted run never exceeds its budget,
refusals record nothing, and the guarantee converts as documented."""

from __future__ import annotations

from fractions import Fraction

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import (
    ApproxDPEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    PureDPEvent,
    ZCDPEvent,
    repeat,
)
from dpkit.accounting.filters import ApproxDPFilter, GaussianDPFilter, RenyiFilter, ZCDPFilter
from dpkit.accounting.gdp import gdp_mu_to_epsilon
from dpkit.accounting.rdp import RDPAccountant, rdp_curve, rdp_to_epsilon

step = st.tuples(st.floats(0.5, 5.0), st.floats(0.001, 0.2), st.booleans())


def run(policy_steps, filter_, make_event):
    """Drive ``filter_`` with an adaptive policy: each step's parameters come from the list, but
    the policy may also decide to stop early ('stop' flag) based on what it has seen."""
    accepted = []
    for sigma, rate, stop_here in policy_steps:
        if stop_here and len(accepted) % 3 == 2:  # a data-dependent-looking stopping rule
            break
        event = make_event(sigma, rate)
        if not filter_.try_spend(event):
            break
        accepted.append(event)
    return accepted


@settings(max_examples=40)
@given(steps=st.lists(step, min_size=1, max_size=60), budget=st.floats(0.05, 3.0), order=st.floats(1.5, 64.0))
def test_renyi_filter_never_exceeds_budget(steps, budget, order):
    filt = RenyiFilter(order, budget)
    accepted = run(steps, filt, lambda s, q: PoissonSampledEvent(GaussianEvent(s), q))
    total = sum(rdp_curve(e)(order) for e in accepted)
    assert total <= budget * (1 + 1e-12)
    assert filt.spent[0] == pytest.approx(total, rel=1e-12, abs=1e-300)
    assert filt.remaining[0] >= 0.0
    assert filt.steps == len(accepted)


@settings(max_examples=40)
@given(steps=st.lists(step, min_size=1, max_size=60), rho=st.floats(0.01, 2.0), mu=st.floats(0.1, 3.0))
def test_zcdp_and_gdp_filters_never_exceed_budget(steps, rho, mu):
    zf = ZCDPFilter(rho)
    accepted = run(steps, zf, lambda s, q: GaussianEvent(s))
    assert sum(1 / (2 * e.sigma**2) for e in accepted) <= rho * (1 + 1e-12)
    gf = GaussianDPFilter(mu)
    accepted = run(steps, gf, lambda s, q: GaussianEvent(s))
    assert sum(1 / e.sigma**2 for e in accepted) <= mu * mu * (1 + 1e-12)
    assert gf.remaining >= 0.0 and zf.remaining >= 0.0


@settings(max_examples=40)
@given(
    steps=st.lists(st.tuples(st.floats(0.001, 0.5), st.floats(0.0, 1e-6), st.booleans()), min_size=1, max_size=80),
    method=st.sampled_from(["basic", "advanced"]),
)
def test_approx_filter_never_exceeds_budget(steps, method):
    kwargs = {"delta_steps": 1e-6} if method == "advanced" else {}
    filt = ApproxDPFilter(1.0, 1e-5, method=method, **kwargs)
    eps, dl = [], []
    for e, d, stop_here in steps:
        if stop_here and len(eps) > 3:
            break
        if not filt.try_spend_parameters(e, d):
            break
        eps.append(e)
        dl.append(d)
    if method == "basic":
        assert sum(eps) <= 1.0 + 1e-12 and sum(dl) <= 1e-5
        assert filt.guarantee == (1.0, 1e-5)
    else:
        sq = sum(e * e for e in eps)
        assert math.sqrt(2 * math.log(1e5) * sq) + sq / 2 <= 1.0 + 1e-12
        assert sum(dl) <= 1e-6
        epsilon, delta = filt.guarantee  # δ_g + δ_steps, a float sum, is rounded outward
        assert epsilon == 1.0 and mpmath.mpf(1e-5) + mpmath.mpf(1e-6) <= delta <= (1e-5 + 1e-6) * (1 + 1e-14)


def test_refusal_records_nothing():
    filt = RenyiFilter([2.0, 8.0], [1.0, 1.0])
    assert filt.try_spend(GaussianEvent(2.0))  # RDP α/(2σ²): 0.25 and 1.0
    before = filt.spent
    assert not filt.try_spend(GaussianEvent(2.0))  # order 8 would reach 2.0 > 1.0
    assert filt.spent == before and filt.steps == 1


def test_renyi_from_target_with_plan_accepts_the_plan():
    event = PoissonSampledEvent(GaussianEvent(1.1), 0.01)
    rdp = RDPAccountant()
    rdp.compose(event, 2000)
    target = rdp.get_epsilon(1e-5).epsilon * 1.01
    filt = RenyiFilter.from_target(target, 1e-5, plan=repeat(event, 2000))
    n = 0
    while filt.try_spend(event):
        n += 1
    assert n >= 2000
    assert filt.epsilon(1e-5) <= target
    # The budget converts back to at most the target (one-sided).
    assert rdp_to_epsilon(list(filt.orders), list(filt.budgets), 1e-5)[0] <= target


def test_single_order_from_target():
    filt = RenyiFilter.from_target(2.0, 1e-6, order=16.0)
    assert filt.epsilon(1e-6) <= 2.0
    assert filt.epsilon(1e-6) > 2.0 - 1e-9
    with pytest.raises(ValueError, match="order"):
        RenyiFilter.from_target(0.1, 1e-10, order=1.01)
    with pytest.raises(ValueError, match="plan"):
        RenyiFilter.from_target(1.0, 1e-5)


def test_filter_guarantees_convert():
    # exact ε of 1-GDP at δ = 1e-5 (Balle & Wang 2018, Thm 8; the "exact" field of tests/data/rdp_references.json)
    exact = 4.37717809568122460855398588974
    assert gdp_mu_to_epsilon(1.0, 1e-5) <= GaussianDPFilter(1.0).epsilon(1e-5) <= exact * (1 + 1e-13)
    assert GaussianDPFilter(1.0).epsilon(1e-5) > exact
    zf = ZCDPFilter(0.5)
    assert zf.try_spend(ZCDPEvent(0.2)) and not zf.try_spend(ZCDPEvent(0.4))
    assert zf.epsilon(1e-5) > 0


def test_approx_filter_events_and_errors():
    filt = ApproxDPFilter(1.0, 1e-6)
    assert filt.try_spend(LaplaceEvent(2.0))  # ε = 0.5
    assert filt.try_spend(PureDPEvent(0.5))
    assert not filt.try_spend(ApproxDPEvent(0.01, 0.0))
    assert filt.spent == (1.0, 0.0)
    with pytest.raises(UnsupportedEventError):
        filt.try_spend(GaussianEvent(1.0))
    with pytest.raises(UnsupportedEventError):
        GaussianDPFilter(1.0).try_spend(LaplaceEvent(1.0))
    with pytest.raises(ValueError, match="method"):
        ApproxDPFilter(1.0, 1e-5, method="fancy")
    with pytest.raises(ValueError, match="epsilon"):
        ApproxDPFilter(-1.0, 1e-5)
    with pytest.raises(ValueError, match="rho"):
        ZCDPFilter(0.0)
    with pytest.raises(ValueError, match="orders"):
        RenyiFilter([2.0, 3.0], [1.0])
    with pytest.raises(TypeError):
        ZCDPFilter(1.0).try_spend("gaussian")


def test_advanced_filter_allows_more_small_steps_than_basic():
    basic, advanced = ApproxDPFilter(1.0, 1e-5), ApproxDPFilter(1.0, 1e-5, method="advanced")
    counts = []
    for filt in (basic, advanced):
        n = 0
        while filt.try_spend_parameters(0.01) and n < 100_000:
            n += 1
        counts.append(n)
    assert counts[0] == 100 or counts[0] == 99  # float sums of 0.01
    assert counts[1] > counts[0]
    # closed form of the advanced rule: √(2 log(1/δ) n ε²) + n ε²/2 ≤ 1
    n_max = max(n for n in range(1, 10_000) if math.sqrt(2 * math.log(1e5) * n * 1e-4) + n * 1e-4 / 2 <= 1.0)
    assert counts[1] == n_max


def test_rdp_spent_matches_accountant_for_fixed_run():
    filt = RenyiFilter([4.0, 32.0], [1e6, 1e6])
    event = PoissonSampledEvent(GaussianEvent(1.0), 0.05)
    for _ in range(10):
        assert filt.try_spend(event)
    curve = rdp_curve(event)
    assert np.allclose(filt.spent, [10 * curve(4.0), 10 * curve(32.0)], rtol=1e-12)


def test_exact_fit_is_accepted_and_float_sums_never_undercount():
    """Sums are exact: ten steps of 0.1 fill ε = 1.0 exactly in real arithmetic only if Σ of the
    floats 0.1 is ≤ 1; the float 0.1 is above 1/10, so the tenth step is refused (naive float
    summation would give 0.9999999999999999 and accept it)."""
    filt = ApproxDPFilter(1.0, 1e-6)
    accepted = sum(filt.try_spend_parameters(0.1) for _ in range(10))
    assert accepted == 9 and sum([0.1] * 10) < 1.0
    exact = ApproxDPFilter(1.0, 1e-6)
    assert exact.try_spend_parameters(0.5) and exact.try_spend_parameters(0.5)  # exactly at the budget
    zf = ZCDPFilter(1.0)
    assert sum(zf.try_spend(ZCDPEvent(0.1)) for _ in range(10)) == 9  # same exact sum for ρ
    assert 10 * Fraction(0.1) > 1
