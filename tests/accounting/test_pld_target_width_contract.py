"""An explicit ``target_width`` is a contract of PLDAccountant.get_epsilon: the certified interval
[epsilon_lower, epsilon] contains the exact ε and is at most that wide, or the call raises
TargetWidthError with a one-line message.

Exact ε of k-ary randomized response composed n times: tests/data/randomized_response_references.json,
written by scripts/precompute/randomized_response_references.py (60-digit mpmath enumeration of the
multinomial privacy-loss distribution, independent of dpkit).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import pytest

from dpkit.accounting import PLDAccountant, UnsupportedEventError
from dpkit.accounting.events import (
    ApproxDPEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PoissonSampledEvent,
    PureDPEvent,
    RandomAllocationEvent,
    RandomizedResponseEvent,
    SampledWithoutReplacementEvent,
    SparseVectorEvent,
    compose,
    repeat,
)
from dpkit.accounting.pld import TargetWidthError
from dpkit.cli.main import main
from dpkit.commands.errors import EXIT_USAGE

RR = json.loads((Path(__file__).resolve().parents[1] / "data" / "randomized_response_references.json").read_text())


def answer_or_refusal(accountant: PLDAccountant, delta: float):
    """The (lower, upper) interval, or None after checking that the refusal is one line."""
    try:
        result = accountant.get_epsilon(delta)
    except TargetWidthError as error:
        assert "\n" not in str(error) and "target_width" in str(error)
        return None
    assert result.epsilon_lower is not None
    assert result.epsilon - result.epsilon_lower <= accountant.target_width
    return result.epsilon_lower, result.epsilon


@pytest.mark.parametrize("delta", sorted({c["delta"] for c in RR["cases"]}))
def test_randomized_response_interval_holds_the_exact_epsilon_at_the_width_asked(delta):
    answered = 0
    for case in (c for c in RR["cases"] if c["delta"] == delta):
        exact = float(case["epsilon"])
        accountant = PLDAccountant(target_width=1e-6 * exact)
        accountant.compose(RandomizedResponseEvent(case["epsilon0"], case["k"]), case["count"])
        interval = answer_or_refusal(accountant, delta)
        if interval is not None:
            answered += 1
            lower, upper = interval
            assert lower <= exact * (1 + 1e-15) and exact <= upper, case  # (the reference has 30 digits)
    assert answered > 0


@pytest.mark.parametrize("event, relation", [
    (GaussianEvent(2.0), "add-remove"),
    (LaplaceEvent(1.0), "add-remove"),
    (DiscreteLaplaceEvent(2.0, 2), "add-remove"),
    (DiscreteGaussianEvent(3.0), "add-remove"),
    (RandomizedResponseEvent(0.5, 4), "add-remove"),
    (PureDPEvent(0.3), "add-remove"),
    (ApproxDPEvent(0.5, 1e-7), "add-remove"),
    (ExponentialMechanismEvent(0.7), "add-remove"),
    (SparseVectorEvent(0.5, 0.5), "add-remove"),
    (PoissonSampledEvent(GaussianEvent(1.0), 0.01), "add-remove"),
    (RandomAllocationEvent(GaussianEvent(1.0), 10), "add-remove"),
    (SampledWithoutReplacementEvent(LaplaceEvent(1.0), 10, 100), "replace-one"),
    (ParallelComposedEvent((LaplaceEvent(1.0), LaplaceEvent(2.0))), "add-remove"),
    (compose(GaussianEvent(3.0), RandomizedResponseEvent(1.0)), "add-remove"),
], ids=lambda x: x.kind if hasattr(x, "kind") else str(x))
def test_every_event_kind_meets_the_width_or_refuses_in_one_line(event, relation):
    accountant = PLDAccountant(relation, target_width=1e-3)
    try:
        accountant.compose(repeat(event, 5))
    except UnsupportedEventError:
        pytest.skip("not supported by the PLD accountant")
    answer_or_refusal(accountant, 1e-5)


def test_a_width_below_round_off_is_refused_in_one_line_by_the_library_and_the_cli():
    accountant = PLDAccountant(target_width=1e-300).compose(RandomizedResponseEvent(1.0, 3), 10)
    with pytest.raises(TargetWidthError, match="target_width=1e-300 not reached") as caught:
        accountant.get_epsilon(1e-5)
    assert "\n" not in str(caught.value)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["epsilon", "--mechanism", "randomized-response", "--epsilon0", "1", "--k", "3", "--count", "10",
                       "--delta", "1e-5", "--accountant", "pld", "--target-width", "1e-300"])
    assert status == EXIT_USAGE and err.getvalue().count("\n") == 1 and "target_width" in err.getvalue()


def test_the_default_width_is_best_effort():
    # no target_width given: a wider interval is returned with a note, not refused
    accountant = PLDAccountant().compose(RandomizedResponseEvent(1.0, 3), 1000)
    assert not accountant.width_asked
    assert math.isfinite(accountant.get_epsilon(1e-13).epsilon)


def test_get_delta_meets_the_width_asked_or_refuses_in_one_line():
    ledger = [(LaplaceEvent(1.0), 10)]
    met = PLDAccountant(target_width=1e-3)
    for event, count in ledger:
        met.compose(event, count)
    answer = met.get_delta(2.0)
    assert answer.delta_lower is not None and answer.delta - answer.delta_lower <= 1e-3 * answer.delta
    refused = PLDAccountant(target_width=1e-300)
    for event, count in ledger:
        refused.compose(event, count)
    with pytest.raises(TargetWidthError, match="target_width=1e-300 not reached at epsilon=2") as caught:
        refused.get_delta(2.0)
    assert "\n" not in str(caught.value)
    # without an explicit width the same query is best effort: an interval, not a refusal
    best_effort = PLDAccountant()
    for event, count in ledger:
        best_effort.compose(event, count)
    assert best_effort.get_delta(2.0).delta <= answer.delta * (1 + 1e-3) + 1e-15
