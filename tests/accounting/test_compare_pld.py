"""Side-by-side checks of dpkit's PLD accountant against dp_accounting and prv_accountant."""

from __future__ import annotations

import math

import pytest

from dpkit.accounting.events import (
    GaussianEvent,
    PoissonSampledEvent,
    RandomizedResponseEvent,
)
from dpkit.accounting.pld import PLDAccountant

pytestmark = pytest.mark.compare


def test_dpsgd_dp_accounting_inside_certified_interval():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    theirs = pld_privacy_accountant.PLDAccountant()
    theirs.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1)), 10_000)
    their_eps = theirs.get_epsilon(1e-5)
    ours = PLDAccountant()
    ours.compose(PoissonSampledEvent(GaussianEvent(1.1), 0.01), 10_000)
    result = ours.get_epsilon(1e-5)
    # dp_accounting's pessimistic estimate is an upper bound: never below our certified lower end.
    assert result.epsilon_lower <= their_eps
    assert abs(their_eps - result.epsilon) <= 1e-3
    assert result.epsilon - result.epsilon_lower <= 1e-3


def test_repeated_randomized_response_count_bug_class():
    """dp_accounting 0.6.0 accounts compose(RR, 50) like a single use; one-by-one it is right.
    dpkit gives the same certified interval both ways."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    relation = dp_accounting.NeighboringRelation.REPLACE_ONE
    event = dp_accounting.RandomizedResponseDpEvent(0.5, 2)  # keep w.p. 3/4: ε = log 3
    one_by_one = pld_privacy_accountant.PLDAccountant(neighboring_relation=relation)
    for _ in range(50):
        one_by_one.compose(event)
    reference = one_by_one.get_epsilon(1e-5)
    ours = PLDAccountant(neighbouring="replace-one")
    ours.compose(RandomizedResponseEvent(math.log(3.0), 2), 50)
    result = ours.get_epsilon(1e-5)
    assert result.epsilon_lower <= reference <= result.epsilon + 1e-2
    single = [PLDAccountant(neighbouring="replace-one") for _ in range(2)]
    single[0].compose(RandomizedResponseEvent(math.log(3.0), 2), 50)
    for _ in range(50):
        single[1].compose(RandomizedResponseEvent(math.log(3.0), 2))
    assert single[0].get_epsilon(1e-5).epsilon == single[1].get_epsilon(1e-5).epsilon


def test_prv_accountant_interval_overlaps():
    pytest.importorskip("prv_accountant")
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import (
        PoissonSubsampledGaussianMechanism,
    )

    theirs = PRVAccountant(
        prvs=[PoissonSubsampledGaussianMechanism(sampling_probability=0.01, noise_multiplier=1.1)],
        max_self_compositions=[1000],
        eps_error=1e-2,
        delta_error=1e-9,
    )
    low, estimate, high = theirs.compute_epsilon(delta=1e-5, num_self_compositions=[1000])
    ours = PLDAccountant()
    ours.compose(PoissonSampledEvent(GaussianEvent(1.1), 0.01), 1000)
    result = ours.get_epsilon(1e-5)
    assert low <= result.epsilon and result.epsilon_lower <= high
    assert abs(estimate - result.epsilon) <= 1e-2


@pytest.mark.slow
def test_million_steps_width_below_one_hundredth():
    """10⁶ DP-SGD steps (σ = 1, q = 0.01, δ = 1e-5) certified to width ≤ 1e-2; the
    peer's pessimistic estimate (an upper bound) is never below our lower end, and our upper end is
    never above RDP. (Timing against the peer: benchmarks/pld.py.)"""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    event = PoissonSampledEvent(GaussianEvent(1.0), 0.01)
    result = PLDAccountant(target_width=1e-2).compose(event, 10**6).get_epsilon(1e-5)
    theirs = pld_privacy_accountant.PLDAccountant()
    theirs.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)), 10**6)
    their_eps = theirs.get_epsilon(1e-5)
    assert result.epsilon - result.epsilon_lower <= 1e-2
    assert result.epsilon_lower <= their_eps
    assert abs(their_eps - result.epsilon) <= 1e-2
    from dpkit.accounting.registry import make_accountant

    assert result.epsilon <= make_accountant("rdp").compose(event, 10**6).get_epsilon(1e-5).epsilon
