"""from_dp_accounting on zero, infinite, NaN, subnormal and deeply nested events: a ValueError naming
the event kind and field (or the depth limit), never ZeroDivisionError, OverflowError or RecursionError."""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting import RDPAccountant
from dpkit.accounting import events as ev
from dpkit.interop import UnconvertibleEventError, from_dp_accounting, to_dp_accounting
from dpkit.interop.dp_accounting_events import MAX_DEPTH

pytestmark = pytest.mark.compare
dpa = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as dpe  # noqa: E402

SUBNORMAL = 5e-324
GAUSS = dpa.GaussianDpEvent(1.0)

BAD_FIELDS = [
    *((dpa.GaussianDpEvent(v), "GaussianDpEvent.noise_multiplier") for v in (0.0, math.inf, math.nan, SUBNORMAL, -1.0)),
    *((dpa.LaplaceDpEvent(v), "LaplaceDpEvent.noise_multiplier") for v in (0.0, math.inf, SUBNORMAL)),
    *((dpe.DiscreteLaplaceDpEvent(v, 1), "DiscreteLaplaceDpEvent.noise_parameter")
      for v in (0.0, math.inf, math.nan, SUBNORMAL)),
    *((dpa.RandomizedResponseDpEvent(v, 2), "RandomizedResponseDpEvent.noise_parameter")
      for v in (math.inf, math.nan, SUBNORMAL, -0.5, 1.5)),
    (dpa.RandomizedResponseDpEvent(0.5, 1), "RandomizedResponseDpEvent.num_buckets"),
    *((dpa.ZCDpEvent(v), "ZCDpEvent.rho") for v in (math.inf, math.nan, SUBNORMAL, -1.0)),
    (dpa.ZCDpEvent(0.1, math.nan), "ZCDpEvent.xi"),
    (dpa.SingleEpochTreeAggregationDpEvent(0.0, 3), "SingleEpochTreeAggregationDpEvent.noise_multiplier"),
    *((dpa.PoissonSampledDpEvent(v, GAUSS), "PoissonSampledDpEvent.sampling_probability")
      for v in (0.0, math.inf, math.nan, SUBNORMAL, 1.5)),
    (dpa.SampledWithoutReplacementDpEvent(10, 0, GAUSS), "SampledWithoutReplacementDpEvent.sample_size"),
    (dpa.SampledWithoutReplacementDpEvent(5, 10, GAUSS), "SampledWithoutReplacementDpEvent.source_dataset_size"),
    *((dpa.SelfComposedDpEvent(GAUSS, v), "SelfComposedDpEvent.count") for v in (math.inf, -1, 10**400)),
    *((dpe.RepeatAndSelectDpEvent(GAUSS, v, 1.0), "RepeatAndSelectDpEvent.mean") for v in (0.0, math.inf, SUBNORMAL)),
    *((dpe.RepeatAndSelectDpEvent(GAUSS, 4.0, v), "RepeatAndSelectDpEvent.shape")
      for v in (-math.inf, math.nan, SUBNORMAL, -1.0)),
]


@pytest.mark.parametrize("event, field", BAD_FIELDS, ids=lambda x: x if isinstance(x, str) else None)
def test_a_bad_field_raises_value_error_naming_it(event, field):
    with pytest.raises(ValueError) as raised:
        from_dp_accounting(event)
    assert str(raised.value).startswith(field) and len(str(raised.value).splitlines()) == 1


def test_minus_infinity_is_never_read_as_poisson():
    assert from_dp_accounting(dpe.RepeatAndSelectDpEvent(GAUSS, 4.0, math.inf)).shape is None
    with pytest.raises(ValueError, match="RepeatAndSelectDpEvent.shape"):
        from_dp_accounting(dpe.RepeatAndSelectDpEvent(GAUSS, 4.0, -math.inf))


def test_a_tiny_normal_shape_is_accounted():
    event = from_dp_accounting(dpe.RepeatAndSelectDpEvent(GAUSS, 3.0, 1e-300))
    assert event.shape == 1e-300
    tiny = RDPAccountant().compose(event).get_epsilon(1e-5).epsilon
    logarithmic = RDPAccountant().compose(ev.RepeatAndSelectEvent(ev.GaussianEvent(1.0), 3.0, 0.0)).get_epsilon(1e-5)
    assert math.isfinite(tiny) and tiny == pytest.approx(logarithmic.epsilon, rel=1e-6)  # η → 0 is the logarithmic law


def test_inner_fields_are_checked_through_wrappers():
    nested = dpa.ComposedDpEvent([GAUSS, dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.1, dpa.LaplaceDpEvent(0.0)), 3)])
    with pytest.raises(ValueError, match="^LaplaceDpEvent.noise_multiplier"):
        from_dp_accounting(nested)


def _nested(depth: int):
    event = GAUSS
    for _ in range(depth):
        event = dpa.PoissonSampledDpEvent(0.5, event)
    return event


def test_nesting_up_to_the_limit_converts_and_deeper_raises_naming_it():
    converted = from_dp_accounting(_nested(MAX_DEPTH))
    assert to_dp_accounting(converted) == _nested(MAX_DEPTH)
    for depth in (MAX_DEPTH + 1, 20 * MAX_DEPTH):
        with pytest.raises(ValueError, match=f"MAX_DEPTH = {MAX_DEPTH}"):
            from_dp_accounting(_nested(depth))
    deep = ev.GaussianEvent(1.0)
    for _ in range(MAX_DEPTH + 1):
        deep = ev.ComposedEvent((deep,))
    with pytest.raises(ValueError, match=f"MAX_DEPTH = {MAX_DEPTH}"):
        to_dp_accounting(deep)


def test_a_composition_that_contains_itself_raises_value_error():
    loop = dpa.ComposedDpEvent([GAUSS])
    loop.events.append(loop)
    with pytest.raises(ValueError, match="MAX_DEPTH"):
        from_dp_accounting(loop)


def test_zero_noise_randomized_response_is_refused_by_name():
    with pytest.raises(UnconvertibleEventError, match="noise_parameter = 0"):
        from_dp_accounting(dpa.RandomizedResponseDpEvent(0.0, 2))


@settings(max_examples=60, deadline=None)
@given(log10_p=st.floats(-307.6, -1.0), k=st.integers(2, 2**53))
def test_randomized_response_epsilon_is_an_upper_bound_down_to_the_smallest_normal(log10_p, k):
    # ε = log(1 + k(1 − p)/p), which passes the floats' range as a ratio once p is tiny
    p = 10.0**log10_p
    epsilon = from_dp_accounting(dpa.RandomizedResponseDpEvent(p, k)).epsilon
    with mpmath.workdps(60):
        exact = mpmath.log1p(mpmath.mpf(k) * (1 - mpmath.mpf(p)) / mpmath.mpf(p))
        assert mpmath.mpf(epsilon) >= exact
        assert mpmath.mpf(epsilon) <= exact * (1 + mpmath.mpf(2) ** -45)
