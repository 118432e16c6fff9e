"""Events: validation at construction, immutability, serialisation round trips, flattening."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpkit.accounting import events as ev
from dpkit.accounting.base import flatten

LEAVES = [
    ev.GaussianEvent(1.5, 2.0),
    ev.LaplaceEvent(3.0),
    ev.DiscreteLaplaceEvent(2.0, 3),
    ev.DiscreteGaussianEvent(4.0),
    ev.RandomizedResponseEvent(1.0, k=5),
    ev.PureDPEvent(0.3),
    ev.ApproxDPEvent(0.5, 1e-6),
    ev.ZCDPEvent(0.1),
    ev.ExponentialMechanismEvent(0.7),
    ev.SparseVectorEvent(0.2, 0.5, cutoff=3),
]


@pytest.mark.parametrize("event", LEAVES + [
    ev.compose(*LEAVES),
    ev.repeat(ev.GaussianEvent(1.0), 7),
    ev.ParallelComposedEvent((ev.LaplaceEvent(1.0), ev.LaplaceEvent(2.0))),
    ev.PoissonSampledEvent(ev.GaussianEvent(1.1), 0.01),
    ev.SampledWithoutReplacementEvent(ev.GaussianEvent(1.1), 10, 1000),
], ids=lambda e: type(e).__name__)
def test_round_trip_through_json(event):
    payload = json.loads(json.dumps(event.to_dict()))
    assert ev.event_from_dict(payload) == event


def test_events_are_immutable():
    event = ev.GaussianEvent(1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.sigma = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "factory, message",
    [
        (lambda: ev.GaussianEvent(0.0), "sigma must be in (0, inf)"),
        (lambda: ev.GaussianEvent(-1.0), "sigma must be in (0, inf)"),
        (lambda: ev.GaussianEvent(math.nan), "sigma must be a number"),
        (lambda: ev.GaussianEvent(math.inf), "sigma must be in (0, inf)"),
        (lambda: ev.GaussianEvent("1"), "sigma must be a real number"),
        (lambda: ev.GaussianEvent(1.0, sensitivity=0), "sensitivity must be in (0, inf)"),
        (lambda: ev.LaplaceEvent(-2.0), "scale must be in (0, inf)"),
        (lambda: ev.DiscreteLaplaceEvent(1.0, sensitivity=1.5), "sensitivity must be an integer"),
        (lambda: ev.RandomizedResponseEvent(1.0, k=1), "k must be an integer >= 2"),
        (lambda: ev.RandomizedResponseEvent(-1.0), "epsilon must be in (0, inf)"),
        (lambda: ev.PureDPEvent(-0.1), "epsilon must be in [0, inf)"),
        (lambda: ev.ApproxDPEvent(1.0, 1.0), "delta must be in [0, 1)"),
        (lambda: ev.ApproxDPEvent(1.0, -1e-9), "delta must be in [0, 1)"),
        (lambda: ev.ZCDPEvent(-1.0), "rho must be in [0, inf)"),
        (lambda: ev.SparseVectorEvent(0.1, 0.1, cutoff=0), "cutoff must be an integer >= 1"),
        (lambda: ev.SelfComposedEvent(ev.GaussianEvent(1.0), 0), "count must be an integer >= 1"),
        (lambda: ev.PoissonSampledEvent(ev.GaussianEvent(1.0), 0.0), "rate must be in (0, 1]"),
        (lambda: ev.PoissonSampledEvent(ev.GaussianEvent(1.0), 1.5), "rate must be in (0, 1]"),
        (lambda: ev.SampledWithoutReplacementEvent(ev.GaussianEvent(1.0), 11, 10), "sample_size must be in [1, population_size=10]"),
        (lambda: ev.ParallelComposedEvent(()), "non-empty sequence"),
    ],
)
def test_invalid_fields_are_rejected_with_the_parameter_named(factory, message):
    with pytest.raises((ValueError, TypeError)) as info:
        factory()
    assert message in str(info.value)


def test_wrapper_rejects_non_event():
    with pytest.raises(TypeError, match="event must be a PrivacyEvent"):
        ev.PoissonSampledEvent(1.0, 0.5)  # type: ignore[arg-type]


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown event kind"):
        ev.event_from_dict({"kind": "os.system", "command": "rm -rf /"})


def test_randomized_response_keep_probability_matches_definition():
    # e^ε/(e^ε + k − 1), evaluated directly at a moderate ε where no overflow can occur.
    event = ev.RandomizedResponseEvent(1.3, k=4)
    assert event.keep_probability == pytest.approx(math.exp(1.3) / (math.exp(1.3) + 3), rel=1e-15)
    # and stays a probability without overflow at huge ε
    assert ev.RandomizedResponseEvent(1e4, k=3).keep_probability == 1.0


@given(
    st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=4),
    st.integers(min_value=1, max_value=50),
)
def test_flatten_multiplies_nested_counts(counts, outer):
    event: ev.PrivacyEvent = ev.GaussianEvent(1.0)
    for count in counts:
        event = ev.repeat(event, count)
    ((leaf, multiplicity),) = list(flatten(event, outer))
    assert leaf == ev.GaussianEvent(1.0)
    assert multiplicity == outer * math.prod(counts)
