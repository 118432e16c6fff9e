"""dpkit events ⇄ dp_accounting DpEvents against the real package (extra ``compare``).

Both directions on every kind; the converted event gives the same ε under RDP (dpkit's
RDPAccountant vs dp_accounting's RdpAccountant, 1e-6 relative) and dp_accounting's PLD ε lies
in dpkit's certified PLD interval widened by the two discretisations.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting import PLDAccountant, RDPAccountant
from dpkit.accounting import events as ev
from dpkit.interop import UnconvertibleEventError, from_dp_accounting, to_dp_accounting

pytestmark = pytest.mark.compare
dpa = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as dpe  # noqa: E402

GAUSS = dpa.GaussianDpEvent(1.3)
EXACT_ROUND_TRIPS = [
    dpe.NoOpDpEvent(),
    dpa.NonPrivateDpEvent(),
    dpa.ComposedDpEvent([GAUSS, dpa.NonPrivateDpEvent()]),
    GAUSS,
    dpa.LaplaceDpEvent(2.5),
    dpa.ZCDpEvent(0.3),
    dpa.SingleEpochTreeAggregationDpEvent(2.0, 7),
    dpa.SingleEpochTreeAggregationDpEvent(2.0, [3, 9]),
    dpa.PoissonSampledDpEvent(0.01, GAUSS),
    dpa.SampledWithoutReplacementDpEvent(1000, 10, GAUSS),
    dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, GAUSS), 1000),
    dpa.ComposedDpEvent([GAUSS, dpa.LaplaceDpEvent(3.0)]),
    dpe.RepeatAndSelectDpEvent(GAUSS, 4.0, math.inf),
    dpe.RepeatAndSelectDpEvent(GAUSS, 4.0, 1.0),
]


@pytest.mark.parametrize("event", EXACT_ROUND_TRIPS, ids=lambda e: type(e).__name__)
def test_round_trip_from_dp_accounting_is_exact(event):
    assert to_dp_accounting(from_dp_accounting(event)) == event


@pytest.mark.parametrize("event", EXACT_ROUND_TRIPS, ids=lambda e: type(e).__name__)
def test_round_trip_from_dpkit_is_exact(event):
    dpkit_event = from_dp_accounting(event)
    assert from_dp_accounting(to_dp_accounting(dpkit_event)) == dpkit_event


def test_fields_carry_over():
    e = from_dp_accounting(dpa.SampledWithoutReplacementDpEvent(1000, 10, dpe.RepeatAndSelectDpEvent(GAUSS, 3.0, 0.5)))
    assert e == ev.SampledWithoutReplacementEvent(ev.RepeatAndSelectEvent(ev.GaussianEvent(1.3), 3.0, 0.5), 10, 1000)
    assert from_dp_accounting(dpe.RepeatAndSelectDpEvent(GAUSS, 3.0, math.inf)).shape is None
    assert from_dp_accounting(dpa.SingleEpochTreeAggregationDpEvent(2.0, [3, 9])).step_counts == (3, 9)


@settings(max_examples=50, deadline=None)
@given(p=st.floats(1e-6, 1 - 1e-6), k=st.integers(2, 1000))
def test_randomized_response_round_trip_within_ulps_and_never_noisier(p, k):
    # ε = log(1 + k(1 − p)/p): P(keep) = 1 − p + p/k against P(other) = p/k.
    event = dpa.RandomizedResponseDpEvent(p, k)
    dpkit_event = from_dp_accounting(event)
    assert dpkit_event.epsilon >= math.log1p(k * (1 - p) / p)
    back = to_dp_accounting(dpkit_event)
    assert back.num_buckets == k and back.noise_parameter <= p
    assert back.noise_parameter == pytest.approx(p, rel=1e-12)


@settings(max_examples=50, deadline=None)
@given(a=st.floats(1e-3, 1e3), sensitivity=st.integers(1, 10))
def test_discrete_laplace_round_trip_never_claims_more_privacy(a, sensitivity):
    dpkit_event = from_dp_accounting(dpe.DiscreteLaplaceDpEvent(a, sensitivity))
    assert dpkit_event.sensitivity == sensitivity and 1.0 / dpkit_event.scale >= a
    back = to_dp_accounting(dpkit_event)
    assert back.sensitivity == sensitivity and a <= back.noise_parameter <= math.nextafter(math.nextafter(a, 9e9), 9e9)


def test_sensitivity_is_folded_into_the_noise_multiplier_rounded_down():
    back = to_dp_accounting(ev.GaussianEvent(sigma=1.0, sensitivity=3.0))
    assert back.noise_multiplier <= 1.0 / 3.0 and back.noise_multiplier == pytest.approx(1 / 3, rel=1e-15)


def test_degenerate_dp_accounting_events_become_the_no_op():
    no_op = ev.ComposedEvent(())
    assert from_dp_accounting(dpa.ComposedDpEvent([])) == no_op
    assert from_dp_accounting(dpa.SelfComposedDpEvent(GAUSS, 0)) == no_op
    assert from_dp_accounting(dpa.RandomizedResponseDpEvent(1.0, 4)) == no_op


@pytest.mark.parametrize("event, name", [
    (dpa.UnsupportedDpEvent(), "UnsupportedDpEvent"),
    (dpa.SampledWithReplacementDpEvent(100, 10, GAUSS), "SampledWithReplacementDpEvent"),
    (dpe.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0], [0.5, 0.5]), "MixtureOfGaussiansDpEvent"),
    (dpa.TruncatedSubsampledGaussianDpEvent(100, 0.1, 20, 1.0), "TruncatedSubsampledGaussianDpEvent"),
    (dpa.ZCDpEvent(0.1, 0.2), "ZCDpEvent"),
    (dpa.RandomizedResponseDpEvent(0.0, 2), "RandomizedResponseDpEvent"),
    (dpa.SelfComposedDpEvent(dpa.UnsupportedDpEvent(), 3), "UnsupportedDpEvent"),
])
def test_events_without_a_dpkit_counterpart_are_refused_by_name(event, name):
    with pytest.raises(UnconvertibleEventError, match=name) as caught:
        from_dp_accounting(event)
    assert caught.value.kind == name


@pytest.mark.parametrize("event", [
    ev.PureDPEvent(1.0), ev.ApproxDPEvent(1.0, 1e-6), ev.DiscreteGaussianEvent(2.0), ev.ExponentialMechanismEvent(1.0),
    ev.SparseVectorEvent(1.0, 1.0), ev.ShuffledEvent(1.0, 100), ev.ParallelComposedEvent((ev.GaussianEvent(1.0),)),
    ev.SelfComposedEvent(ev.PureDPEvent(1.0), 2),
], ids=lambda e: type(e).__name__)
def test_dpkit_events_without_a_dp_accounting_counterpart_are_refused_by_name(event):
    leaf = event.event if isinstance(event, ev.SelfComposedEvent) else event
    with pytest.raises(UnconvertibleEventError, match=type(leaf).__name__):
        to_dp_accounting(event)


def test_wrong_types_are_refused():
    with pytest.raises(TypeError, match="event"):
        from_dp_accounting(ev.GaussianEvent(1.0))
    with pytest.raises(TypeError, match="event"):
        to_dp_accounting(GAUSS)


# --------------------------------------------------------------------------- same ε after conversion

RDP_CASES = [
    dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)), 1000),
    dpa.ComposedDpEvent([dpa.GaussianDpEvent(5.0), dpa.LaplaceDpEvent(20.0), dpa.ZCDpEvent(0.01)]),
    dpe.RepeatAndSelectDpEvent(dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(4.0), 5), 3.0, math.inf),
]
REPLACE_ONE_CASES = [dpa.SelfComposedDpEvent(dpa.RandomizedResponseDpEvent(0.5, 4), 20)]
RELATIONS = {"add-remove": "ADD_OR_REMOVE_ONE", "replace-one": "REPLACE_ONE"}


@pytest.mark.parametrize("event, relation", [(e, "add-remove") for e in RDP_CASES]
                         + [(e, "replace-one") for e in REPLACE_ONE_CASES], ids=lambda e: type(e).__name__)
def test_rdp_epsilon_agrees_with_dp_accounting(event, relation):
    from dp_accounting.rdp import rdp_privacy_accountant

    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 257))
    theirs = rdp_privacy_accountant.RdpAccountant(orders, getattr(dpa.NeighboringRelation, RELATIONS[relation]))
    ours = RDPAccountant(orders=orders, neighbouring=relation).compose(from_dp_accounting(event))
    assert ours.get_epsilon(1e-5).epsilon == pytest.approx(theirs.compose(event).get_epsilon(1e-5), rel=1e-6)


def test_rdp_epsilon_agrees_for_tree_aggregation():
    # dp_accounting accounts trees under its REPLACE_SPECIAL relation only: one record's
    # contribution changes, each node by at most 1 (Kairouz et al. 2021, App. D) — dpkit's
    # TreeAggregationEvent with sensitivity 1.
    from dp_accounting.rdp import rdp_privacy_accountant

    event = dpa.SelfComposedDpEvent(dpa.SingleEpochTreeAggregationDpEvent(3.0, [100, 50]), 4)
    orders = list(range(2, 129))
    relation = dpa.NeighboringRelation.REPLACE_SPECIAL
    theirs = rdp_privacy_accountant.RdpAccountant(orders, relation).compose(event).get_epsilon(1e-5)
    ours = RDPAccountant(orders=orders).compose(from_dp_accounting(event)).get_epsilon(1e-5).epsilon
    assert ours == pytest.approx(theirs, rel=1e-6)


PLD_CASES = [
    dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)), 1000),
    dpa.ComposedDpEvent([dpa.GaussianDpEvent(5.0), dpa.LaplaceDpEvent(20.0)]),
]
# dp_accounting 0.6's PLD accountant drops the count of a self-composed randomized response
# (SelfComposed(RR, 20) gives the ε of one RR), so the composition is written out here.
PLD_REPLACE_ONE_CASES = [dpa.ComposedDpEvent([dpa.RandomizedResponseDpEvent(0.5, 4)] * 5)]


@pytest.mark.parametrize("event, relation", [(e, "add-remove") for e in PLD_CASES]
                         + [(e, "replace-one") for e in PLD_REPLACE_ONE_CASES], ids=lambda e: type(e).__name__)
def test_dp_accounting_pld_lies_in_dpkits_certified_interval(event, relation):
    from dp_accounting.pld import pld_privacy_accountant

    theirs = pld_privacy_accountant.PLDAccountant(getattr(dpa.NeighboringRelation, RELATIONS[relation]),
                                                  value_discretization_interval=1e-4).compose(event)
    ours = PLDAccountant(neighbouring=relation).compose(from_dp_accounting(event)).get_epsilon(1e-5)
    # dp_accounting's pessimistic PLD overshoots the true ε by at most its grid over the composition.
    assert ours.epsilon_lower - 1e-3 <= theirs.get_epsilon(1e-5) <= ours.epsilon + 1e-3


def test_importing_every_dpkit_module_does_not_import_dp_accounting():
    package = Path(__file__).resolve().parents[2] / "dpkit"
    names = sorted(".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
                   for p in package.rglob("*.py"))
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n"
            "    try: importlib.import_module(name)\n"
            "    except ImportError: pass\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('dp_accounting', 'opacus', 'torch'))\n"
            "print(bad); sys.exit(bool(bad))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=package.parent)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_non_private_step_is_infinite_in_both_libraries():
    """dp_accounting answers ε = ∞ for a ledger with a ``NonPrivateDpEvent``; so does every dpkit accountant."""
    from dpkit.accounting.registry import ACCOUNTANTS

    event = dpa.ComposedDpEvent([GAUSS, dpa.NonPrivateDpEvent()])
    assert dpa.rdp.RdpAccountant().compose(event).get_epsilon(1e-5) == math.inf
    converted = from_dp_accounting(event)
    for name, accountant in ACCOUNTANTS.items():
        result = accountant().compose(converted).get_epsilon(1e-5)
        assert result.epsilon == math.inf and any("NonPrivateEvent" in note for note in result.notes), name
        assert accountant().compose(converted).get_delta(10.0).delta == 1.0, name
