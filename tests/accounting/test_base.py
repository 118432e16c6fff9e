"""The accountant base class: atomic composition, ledger, hashing, relation parsing."""

from __future__ import annotations

import pytest

from dpkit.accounting import events as ev
from dpkit.accounting.base import Accountant, AccountingResult, UnsupportedEventError, flatten
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
    assert accountant.get_epsilon(1e-5).epsilon == 0.5


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
    assert payload["neighbouring"] == "replace-one" and payload["epsilon"] == 0.5
    assert "epsilon_upper" not in payload  # one name per number


def test_unknown_relation_is_refused():
    with pytest.raises(ValueError, match="neighbouring must be one of 'add-remove', 'replace-one'"):
        PureOnlyAccountant(neighbouring="swap")
