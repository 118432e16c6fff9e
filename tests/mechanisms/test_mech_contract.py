"""The shared contract of every mechanism: seeded, vectorised, frozen, carries an event, audit adapter."""

from __future__ import annotations

import dataclasses
import pickle
from fractions import Fraction

import numpy as np
import pytest

from dpkit.accounting.events import PrivacyEvent, event_from_dict
from dpkit.mechanisms import (
    AboveThreshold,
    ApproximateMinimizerNoise,
    BinaryRandomizedResponse,
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    L2LaplaceMechanism,
    LaplaceMechanism,
    Mechanism,
    NumericSparse,
    PermuteAndFlip,
    RandomizedResponse,
    ReportNoisyMax,
    SnappingMechanism,
    SparseVector,
    SparseVectorWithGap,
)

CASES = [
    (LaplaceMechanism(1.0), 0.5, ()),
    (LaplaceMechanism(1.0), [0.5, 1.5], (2,)),
    (GaussianMechanism(1.0), 0.5, ()),
    (GaussianMechanism.from_rho(0.1), np.zeros((2, 3)), (2, 3)),
    (SnappingMechanism(1.0, 50.0), 0.5, ()),
    (DiscreteLaplaceMechanism(Fraction(3, 2)), 4, ()),
    (DiscreteGaussianMechanism(Fraction(2)), -4, ()),
    (BinaryRandomizedResponse(1.0), [1, -1, 1], (3,)),
    (RandomizedResponse(1.0, 5), 2, ()),
    (ReportNoisyMax(1.0), [0.0, 1.0, 2.0], ()),
    (ReportNoisyMax(1.0, noise="gumbel"), [0.0, 1.0, 2.0], ()),
    (ExponentialMechanism(1.0), [0.0, 1.0, 2.0], ()),
    (PermuteAndFlip(1.0), [0.0, 1.0, 2.0], ()),
    (SparseVector.from_epsilon(1.0, 0.0, cutoff=2), [0.0, 1.0, -1.0, 3.0], (4,)),
    (AboveThreshold(1.0, 0.0), [0.0, 1.0, -1.0], (3,)),
    (SparseVectorWithGap(0.5, 0.5, 0.0, 2), [0.0, 1.0, -1.0], (3,)),
    (NumericSparse(0.3, 0.3, 0.4, 0.0, 2), [0.0, 1.0, -1.0], (3,)),
    (L2LaplaceMechanism(2.0), [1.0, 2.0, 3.0], (3,)),
    (ApproximateMinimizerNoise(1e-3, 0.5, 0.01), [1.0, 2.0], (2,)),
]
IDS = [f"{type(m).__name__}-{i}" for i, (m, _, _) in enumerate(CASES)]


@pytest.mark.parametrize("mech,value,shape", CASES, ids=IDS)
def test_contract(mech, value, shape):
    assert isinstance(mech, Mechanism)
    assert isinstance(mech.floating_point_safe, bool)
    event = mech.event
    assert isinstance(event, PrivacyEvent)
    assert event_from_dict(event.to_dict()) == event
    # vectorised: first axis = sample
    many = np.asarray(mech.sample(value, size=7, rng=3))
    assert many.shape == (7,) + shape
    one = np.asarray(mech.sample(value, rng=3))
    assert one.shape == shape
    # same seed, same outputs; a Generator is accepted and advanced
    again = np.asarray(mech.sample(value, size=7, rng=3))
    assert np.array_equal(many, again, equal_nan=many.dtype.kind == "f")
    generator = np.random.default_rng(3)
    assert np.array_equal(np.asarray(mech.sample(value, size=7, rng=generator)), many, equal_nan=many.dtype.kind == "f")
    # audit adapter: f(database, n, rng) -> n outputs
    audit = mech.as_audit_callable()
    assert np.array_equal(np.asarray(audit(value, 7, 3)), many, equal_nan=many.dtype.kind == "f")
    # ... and survives pickling, so it runs in a ProcessPoolExecutor
    unpickled = pickle.loads(pickle.dumps(audit))
    assert np.array_equal(np.asarray(unpickled(value, 7, 3)), many, equal_nan=many.dtype.kind == "f")
    # frozen
    field = dataclasses.fields(mech)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(mech, field, 1.0)


def test_mechanisms_are_hashable_values():
    assert LaplaceMechanism(1.0, 2.0) == LaplaceMechanism(1.0, 2.0)
    assert len({GaussianMechanism(1.0), GaussianMechanism(1.0)}) == 1
    # equality is by value: another scale, sensitivity or type is another mechanism
    assert LaplaceMechanism(1.0, 2.0) != LaplaceMechanism(1.0, 3.0) and LaplaceMechanism(1.0) != LaplaceMechanism(2.0)
    assert len({GaussianMechanism(1.0), GaussianMechanism(2.0), LaplaceMechanism(1.0)}) == 3


@pytest.mark.parametrize("mech,value,shape", CASES, ids=IDS)
def test_events_are_accountable(mech, value, shape):
    """Every mechanism's event is accepted by the zCDP and RDP accountants (the views Ding et al. 2020 needs)."""
    from dpkit.accounting.rdp import RDPAccountant
    from dpkit.accounting.zcdp import ZCDPAccountant

    for accountant in (ZCDPAccountant(), RDPAccountant()):
        assert accountant.supports(mech.event), (type(accountant).__name__, mech.event)
        result = accountant.compose(mech.event).get_epsilon(1e-6)
        assert result.epsilon > 0 and np.isfinite(result.epsilon)
