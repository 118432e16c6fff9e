"""The accountant base class: atomic composition, ledger, hashing, relation parsing."""

from __future__ import annotations

import pytest

from dpkit.accounting import events as ev
from dpkit.accounting.base import Accountant, AccountingResult, UnsupportedEventError, flatten
from dpkit.accounting.certify import round_outward
from dpkit.accounting.neighbouring import NeighbouringRelation


class PureOnlyAccountant(Accountant):
    """A minimal accountant for the contract: basic composition of pure-DP events."""

    name = "pure-test"

    def _check(self, event):
        for leaf, _ in flatten(event):
            if not isinstance(leaf, ev.PureDPEvent):
                raise UnsupportedEventError(leaf, "only PureDPEvent")

    def get_epsilon(self, delta):
        return self._result(sum(e.epsilon * c for e, c in self.leaves()), delta, "basic composition")

    def get_delta(self, epsilon):
        return self._result(epsilon, 0.0, "basic composition")


def test_rejected_event_leaves_no_trace():
    accountant = PureOnlyAccountant()
    accountant.compose(ev.PureDPEvent(0.5))
    mixed = ev.compose(ev.PureDPEvent(1.0), ev.GaussianEvent(1.0))
    assert not accountant.supports(mixed)
    with pytest.raises(UnsupportedEventError, match="GaussianEvent is not supported: only PureDPEvent"):
        accountant.compose(mixed)
    assert accountant.ledger == ((ev.PureDPEvent(0.5), 1),)
    assert accountant.get_epsilon(1e-5).epsilon == round_outward(0.5)


def test_count_is_validated_before_recording():
    accountant = PureOnlyAccountant()
    for bad in (0, -3, 1.5, "2"):
        with pytest.raises((ValueError, TypeError), match="count"):
            accountant.compose(ev.PureDPEvent(0.5), bad)
    assert accountant.ledger == ()


def test_ledger_hash_is_stable_and_sensitive():
    first = PureOnlyAccountant().compose(ev.PureDPEvent(0.5), 3)
    second = PureOnlyAccountant().compose(ev.PureDPEvent(0.5), 3)
    assert first.ledger_hash() == second.ledger_hash()
    assert first.ledger_hash() != PureOnlyAccountant().compose(ev.PureDPEvent(0.5), 4).ledger_hash()
    replace = PureOnlyAccountant(neighbouring="replace-one").compose(ev.PureDPEvent(0.5), 3)
    assert first.ledger_hash() != replace.ledger_hash()


def test_result_records_relation_and_hash():
    accountant = PureOnlyAccountant(neighbouring="replace_one").compose(ev.PureDPEvent(0.25), 2)
    result = accountant.get_epsilon(1e-6)
    assert isinstance(result, AccountingResult)
    assert result.neighbouring is NeighbouringRelation.REPLACE_ONE
    assert result.ledger_hash == accountant.ledger_hash()
    payload = result.to_dict()
    assert payload["neighbouring"] == "replace-one" and payload["epsilon"] == round_outward(0.5)
    assert "epsilon_upper" not in payload  # one name per number


def test_unknown_relation_is_refused():
    with pytest.raises(ValueError, match="neighbouring must be one of 'add-remove', 'replace-one'"):
        PureOnlyAccountant(neighbouring="swap")


def test_results_are_rounded_outwards_once():
    """The outermost query moves ε (or δ) up by OUTWARD_MARGIN and an ulp; a query made inside
    another accountant's query is not rounded again (so delegation does not compound margins)."""

    class Delegating(PureOnlyAccountant):
        name = "delegating"

        def get_epsilon(self, delta):
            inner = PureOnlyAccountant().compose(ev.PureDPEvent(0.5))
            return self._result(inner.get_epsilon(delta).epsilon, delta, "delegated")

        def get_delta(self, epsilon):
            return self._result(epsilon, 0.25, "fixed")

    plain = PureOnlyAccountant().compose(ev.PureDPEvent(0.5)).get_epsilon(1e-5).epsilon
    assert 0.5 < plain <= 0.5 * (1 + 1e-14)
    assert Delegating().compose(ev.PureDPEvent(0.5)).get_epsilon(1e-5).epsilon == plain
    result = Delegating().get_delta(2.0)
    assert result.epsilon == 2.0 and 0.25 < result.delta <= 0.25 * (1 + 1e-14)  # the target ε is kept


def test_round_outward_bounds_and_edges():
    import math

    for value in (1e-300, 0.3, 1.0, 6640.607808562279, 1e300):
        up, down = round_outward(value), round_outward(value, upper=False)
        assert down < value < up
        assert (up - value) / value <= 4e-15 and (value - down) / value <= 4e-15
    assert round_outward(0.0) == 0.0 and round_outward(math.inf) == math.inf
    assert round_outward(5e-324, upper=False) == 0.0
