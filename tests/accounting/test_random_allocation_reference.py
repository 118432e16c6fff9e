"""dpkit's certified random-allocation interval against reference values from an independent implementation.

The reference values in ``benchmarks/random_allocation_reference.json`` were computed by dp_accounting's
random-allocation PLD (Feldman & Shenfeld, arXiv 2602.17284), an implementation that shares no code with
dpkit and is in no release of dp_accounting: ``gaussian_allocation_pld`` at commit
125d46c8cb4253115c545dd4d574a2d5e52ef4bd of google/differential-privacy (python/dp_accounting/), once with
``BoundType.IS_DOMINATED`` (their lower end) and once with ``BoundType.DOMINATES`` (their upper end), at the
value discretisation h of each entry; the JSON's ``provenance`` says how and when
(``python benchmarks/random_allocation.py --record`` reruns it). The peer is not needed here: the test reads
the recorded numbers only, and fails (never skips) when dpkit's PLD accountant cannot account the event.

For each cheap entry, dpkit's ``PLDAccountant(neighbouring="add-remove", value_discretization_interval=h)``
on ``SelfComposedEvent(RandomAllocationEvent(GaussianEvent(σ), steps=t, selected=k), E)`` must give an
interval that

* is consistent with theirs: the two intervals intersect (both claim to contain the true ε);
* is no looser at the same discretisation: dpkit's upper end ≤ theirs and dpkit's lower end ≥ theirs.

Against each case's finest reference entry (their narrowest interval), dpkit's automatic mode
(``target_width`` = their width; dpkit may stop at a coarser grid) must still intersect theirs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpkit.accounting.events import GaussianEvent, RandomAllocationEvent, SelfComposedEvent
from dpkit.accounting.pld import PLDAccountant

REFERENCE = Path(__file__).resolve().parents[2] / "benchmarks" / "random_allocation_reference.json"
PAYLOAD = json.loads(REFERENCE.read_text(encoding="utf-8"))

CHEAP = {  # (case, value discretisation h): the entries checked here (the rest cost dpkit too much for a test)
    ("sigma=1 t=100 k=1 E=1", 1e-3),
    ("sigma=1 t=100 k=1 E=10", 1e-3),
    ("sigma=2 t=1000 k=1 E=1", 1e-3),
    ("sigma=1 t=100 k=2 E=1", 1e-3),
}
ENTRIES = [entry for entry in PAYLOAD["entries"] if (entry["case"], entry["value_discretization_interval"]) in CHEAP]
FINEST = list({entry["case"]: entry for entry in sorted(
    PAYLOAD["entries"], key=lambda e: -e["value_discretization_interval"])}.values())


def _event(entry):
    return SelfComposedEvent(RandomAllocationEvent(GaussianEvent(entry["sigma"]), steps=entry["steps"],
                                                   selected=entry["selected"]), entry["epochs"])


def _ids(entries):
    return [f"{e['case']} h={e['value_discretization_interval']:g}" for e in entries]


def test_the_reference_names_its_independent_source():
    source = PAYLOAD["provenance"]
    assert source["repository"] == "google/differential-privacy"
    assert source["commit"] == "125d46c8cb4253115c545dd4d574a2d5e52ef4bd"
    assert source["function"] == "dp_accounting.pld.random_allocation.api.gaussian_allocation_pld"
    assert source["date"] and source["machine"]
    assert len(ENTRIES) == len(CHEAP)  # every cheap entry is recorded


def test_the_reference_intervals_are_ordered_and_shrink_with_h():
    by_case: dict[str, list[dict]] = {}
    for entry in PAYLOAD["entries"]:
        assert 0 < entry["epsilon_lower"] <= entry["epsilon_upper"]
        by_case.setdefault(entry["case"], []).append(entry)
    for entries in by_case.values():
        entries.sort(key=lambda e: -e["value_discretization_interval"])  # coarse to fine
        for coarse, fine in zip(entries, entries[1:]):
            assert fine["width"] < coarse["width"]
            assert fine["epsilon_lower"] <= coarse["epsilon_upper"] and coarse["epsilon_lower"] <= fine["epsilon_upper"]


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_dpkit_interval_is_consistent_with_and_no_looser_than_dp_accounting(entry):
    h = entry["value_discretization_interval"]
    accountant = PLDAccountant(neighbouring="add-remove", value_discretization_interval=h)
    result = accountant.compose(_event(entry)).get_epsilon(entry["delta"])
    ours = (result.epsilon_lower, result.epsilon)
    theirs = (entry["epsilon_lower"], entry["epsilon_upper"])
    assert result.epsilon_lower is not None, result
    # consistent: both intervals claim to hold the true ε, so they must intersect
    assert ours[0] <= theirs[1] and theirs[0] <= ours[1], (ours, theirs)
    # no looser than the independent implementation at the same value discretisation
    assert ours[1] <= theirs[1], (ours, theirs)
    assert ours[0] >= theirs[0], (ours, theirs)


@pytest.mark.parametrize("entry", FINEST, ids=_ids(FINEST))
def test_dpkit_automatic_interval_intersects_the_finest_reference(entry):
    accountant = PLDAccountant(neighbouring="add-remove")
    accountant.target_width = entry["width"]  # best effort: an explicit target_width refuses a wider interval
    result = accountant.compose(_event(entry)).get_epsilon(entry["delta"])
    assert result.epsilon_lower is not None, result
    assert result.epsilon_lower <= entry["epsilon_upper"] and entry["epsilon_lower"] <= result.epsilon, (
        (result.epsilon_lower, result.epsilon), (entry["epsilon_lower"], entry["epsilon_upper"]))
