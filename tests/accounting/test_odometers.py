"""Tests of privacy odometers: the report never decreases, equals basic composition exactly on a fixed
sequence (reference: exact rational sums, independent of the code's rounding), and bad input raises."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import ApproxDPEvent, GaussianEvent, LaplaceEvent, PureDPEvent
from dpkit.accounting.odometers import BasicOdometer, OdometerGuarantee

eps_values = st.floats(0.0, 3.0, allow_nan=False)
delta_values = st.floats(0.0, 1e-3, allow_nan=False)
steps = st.lists(st.tuples(eps_values, delta_values), max_size=40)


@given(steps, st.floats(0.0, 0.01))
def test_report_never_decreases(sequence, delta_g):
    odo = BasicOdometer(delta_g)
    previous = odo.guarantee().epsilon
    assert previous == 0.0
    for eps, delta in sequence:
        odo.spend_parameters(eps, delta)
        current = odo.guarantee().epsilon
        assert current >= previous
        previous = current


@given(st.lists(st.floats(1e-6, 3.0), max_size=40))
def test_pure_steps_equal_basic_composition_exactly(sequence):
    odo = BasicOdometer()
    for eps in sequence:
        odo.spend(PureDPEvent(eps))
    exact = sum((Fraction(e) for e in sequence), Fraction(0))
    result = odo.guarantee()
    # the smallest float >= the exact sum Σεᵢ (non-adaptive basic composition): never below it, at most one ulp above
    assert Fraction(result.epsilon) >= exact
    assert result.epsilon == 0.0 or Fraction(math.nextafter(result.epsilon, -math.inf)) < exact
    assert result.delta == 0.0 and result.steps == len(sequence)


@given(steps, st.floats(1e-6, 0.05))
def test_matches_basic_composition_with_delta_budget(sequence, delta_g):
    odo = BasicOdometer(delta_g)
    for eps, delta in sequence:
        odo.spend_parameters(eps, delta)
    exact_eps = sum((Fraction(e) for e, _ in sequence), Fraction(0))
    exact_delta = sum((Fraction(d) for _, d in sequence), Fraction(0))
    result = odo.guarantee()
    if exact_delta <= Fraction(delta_g):
        assert Fraction(result.epsilon) >= exact_eps
        assert result.epsilon <= math.nextafter(float(exact_eps), math.inf)
    else:
        assert math.isinf(result.epsilon)
    assert Fraction(result.spent_delta) >= exact_delta
    assert result.delta == delta_g


def test_delta_boundary_decided_exactly():
    # 0.1 + 0.2 > 0.3 in exact arithmetic on the floats given, though fsum rounds it to 0.30000000000000004
    odo = BasicOdometer(0.3)
    odo.spend_parameters(0.0, 0.1)
    odo.spend_parameters(0.0, 0.2)
    assert math.isinf(odo.guarantee().epsilon)
    odo = BasicOdometer(0.5)
    odo.spend_parameters(1.0, 0.25)
    odo.spend_parameters(1.0, 0.25)  # exactly 0.5: allowed
    assert odo.guarantee().epsilon == 2.0


def test_events_and_notes():
    odo = BasicOdometer(1e-5)
    odo.spend(LaplaceEvent(scale=2.0))
    assert odo.guarantee().epsilon == 0.5 and odo.guarantee().notes == ()
    odo.spend(ApproxDPEvent(0.5, 4e-6))
    g = odo.guarantee()
    assert isinstance(g, OdometerGuarantee) and g.epsilon == 1.0 and g.spent_delta == 4e-6
    assert len(g.notes) == 1 and "theorem number" in g.notes[0]
    d = g.to_dict()
    assert d["epsilon"] == 1.0 and d["steps"] == 2 and isinstance(d["notes"], list)
    odo.spend(ApproxDPEvent(0.5, 7e-6))
    g = odo.guarantee()
    assert math.isinf(g.epsilon) and len(g.notes) == 2


def test_zero_delta_odometer_with_approx_step_is_infinite():
    odo = BasicOdometer()
    odo.spend_parameters(0.1, 1e-9)
    assert math.isinf(odo.guarantee().epsilon)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, float("nan"), float("inf")])
def test_invalid_delta_budget(bad):
    with pytest.raises(ValueError, match="delta"):
        BasicOdometer(bad)


@pytest.mark.parametrize(("eps", "delta"), [(-1.0, 0.0), (float("inf"), 0.0), (float("nan"), 0.0), (0.1, -1e-9),
                                            (0.1, 1.5), (0.1, float("nan"))])
def test_invalid_step(eps, delta):
    odo = BasicOdometer(0.1)
    with pytest.raises(ValueError):
        odo.spend_parameters(eps, delta)
    assert odo.steps == 0 and odo.spent == (0.0, 0.0)


def test_wrong_types():
    with pytest.raises(TypeError, match="delta"):
        BasicOdometer("0.1")
    odo = BasicOdometer()
    with pytest.raises(TypeError, match="epsilon"):
        odo.spend_parameters(None)
    with pytest.raises(TypeError, match="event"):
        odo.spend((1.0, 0.0))
    with pytest.raises(UnsupportedEventError):
        odo.spend(GaussianEvent(sigma=1.0))
    assert odo.steps == 0
