"""dpkit's Opacus-interface accountant without Opacus: the interface, state dicts, calibration,
and agreement with dpkit's own DP-SGD accounting (Poisson-subsampled Gaussian, Mironov, Talwar &
Zhang 2019; PLD of Koskela et al. 2020)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting import dpsgd_epsilon, gaussian_epsilon
from dpkit.interop.opacus import DpkitAccountant, get_noise_multiplier


def test_history_merges_consecutive_equal_steps_like_opacus():
    acc = DpkitAccountant()
    for sigma in (1.0, 1.0, 2.0, 1.0, 1.0, 1.0):
        acc.step(noise_multiplier=sigma, sample_rate=0.1)
    assert acc.history == [(1.0, 0.1, 2), (2.0, 0.1, 1), (1.0, 0.1, 3)]
    assert len(acc) == 6


def test_no_steps_spend_nothing_and_one_full_batch_step_spends_a_gaussian():
    assert DpkitAccountant().get_epsilon(1e-5) == 0.0 and len(DpkitAccountant()) == 0
    # one step at sample rate 1 is one Gaussian of sigma = 2: at least its exact epsilon (Balle & Wang 2018, Thm 8)
    acc = DpkitAccountant()
    acc.step(noise_multiplier=2.0, sample_rate=1.0)
    assert len(acc) == 1 and acc.get_epsilon(1e-5) >= gaussian_epsilon(2.0, 1e-5) > 1.0


@pytest.mark.parametrize("name", ["rdp", "pld"])
def test_epsilon_is_dpkits_dpsgd_epsilon(name):
    acc = DpkitAccountant(name)
    acc.history = [(1.1, 0.02, 300)]
    assert acc.get_epsilon(1e-5) == dpsgd_epsilon(0.02, 1.1, 300, 1e-5, accountant=name).epsilon


def test_pld_is_within_its_certified_interval_and_not_above_rdp():
    pld, rdp = DpkitAccountant("pld"), DpkitAccountant("rdp")
    pld.history = rdp.history = [(0.9, 0.01, 500), (1.5, 0.02, 200)]
    result = pld.get_result(1e-6)
    assert result.epsilon_lower <= result.epsilon <= rdp.get_epsilon(1e-6)


def test_state_dict_round_trip_and_refusals():
    acc = DpkitAccountant("rdp")
    acc.history = [(1.0, 0.1, 5)]
    state = acc.state_dict()
    assert state["mechanism"] == "dpkit"
    other = DpkitAccountant()
    other.load_state_dict(state)
    assert other.history == acc.history and other.accountant == "rdp"
    assert other.get_epsilon(1e-5) == acc.get_epsilon(1e-5)
    with pytest.raises(ValueError, match="mechanism"):
        other.load_state_dict({"history": [], "mechanism": "rdp"})
    with pytest.raises(ValueError, match="history"):
        other.load_state_dict({})
    with pytest.raises(ValueError, match="sample_rate"):
        other.load_state_dict({"history": [(1.0, 1.5, 3)], "mechanism": "dpkit"})


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="accountant"):
        DpkitAccountant("prv")
    with pytest.raises(ValueError, match="noise_multiplier"):
        DpkitAccountant().step(noise_multiplier=0.0, sample_rate=0.1)
    with pytest.raises(TypeError, match="unexpected"):
        DpkitAccountant().get_epsilon(1e-5, bogus=1)
    with pytest.raises(ValueError, match="steps and epochs"):
        get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.1)


def test_optimizer_hook_steps_with_accumulated_rate():
    class FakeOptimizer:
        noise_multiplier, accumulated_iterations = 1.3, 2

    acc = DpkitAccountant()
    acc.get_optimizer_hook_fn(sample_rate=0.01)(FakeOptimizer())
    assert acc.history == [(1.3, 0.02, 1)]


def _meets_target_and_is_tight(epsilon, rate, steps, name):
    sigma = get_noise_multiplier(target_epsilon=epsilon, target_delta=1e-5, sample_rate=rate, steps=steps,
                                 accountant=name, rtol=1e-3)
    acc = DpkitAccountant(name)
    acc.history = [(sigma, rate, steps)]
    assert acc.get_epsilon(1e-5) <= epsilon
    acc.history = [(sigma * (1 - 2e-3), rate, steps)]  # the bracket's other end misses the target
    assert acc.get_epsilon(1e-5) > epsilon


@settings(max_examples=10, deadline=None)
@given(epsilon=st.floats(0.5, 8.0), rate=st.floats(0.001, 0.1), steps=st.integers(10, 2000))
def test_rdp_noise_multiplier_meets_the_target_and_is_tight(epsilon, rate, steps):
    _meets_target_and_is_tight(epsilon, rate, steps, "rdp")


def test_pld_noise_multiplier_meets_the_target_and_is_tight():
    _meets_target_and_is_tight(2.0, 0.02, 200, "pld")


def test_epochs_round_the_step_count_up():
    # 1/0.3 = 3.33 epochs-worth of steps: Opacus's int() would account 3, the run takes 4.
    by_epochs = get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.3, epochs=1.0,
                                     accountant="rdp")
    by_steps = get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.3, steps=math.ceil(1 / 0.3),
                                    accountant="rdp")
    assert by_epochs == by_steps
