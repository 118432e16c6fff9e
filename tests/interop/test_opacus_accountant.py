"""dpkit's Opacus-interface accountant without Opacus: the interface, state dicts, calibration,
and agreement with dpkit's own DP-SGD accounting (Poisson-subsampled Gaussian, Mironov, Talwar &
Zhang 2019; PLD of Koskela et al. 2020), for random allocation with dpkit's RandomAllocationEvent
(Feldman & Shenfeld 2025; Chua et al. 2025) and, for shuffling, with the no-amplification bound."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting import dpsgd_epsilon, gaussian_epsilon
from dpkit.accounting.events import GaussianEvent, RandomAllocationEvent, SelfComposedEvent, compose
from dpkit.accounting.registry import make_accountant
from dpkit.interop.batching import RandomAllocationBatchSampler
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


# --- batchings: random allocation (Feldman & Shenfeld 2025; Chua et al. 2025) and shuffling -----------------------

def _ledger_epsilon(name, event, delta=1e-5):
    return make_accountant(name, neighbouring="add-remove").compose(event).get_epsilon(delta).epsilon


def _random_allocation(sigma, steps, epochs, selected=1):
    return SelfComposedEvent(RandomAllocationEvent(GaussianEvent(sigma=sigma), steps, selected), epochs)


@pytest.mark.parametrize("name, selected", [("rdp", 1), ("rdp", 2), ("pld", 1)])
def test_random_allocation_is_dpkits_random_allocation_event_per_epoch(name, selected):
    # what Opacus's make_private passes: sample_rate = 1/len(data_loader) = 1/t, one step per batch
    acc = DpkitAccountant(name, batching="random-allocation", steps_per_epoch=20, selected=selected)
    for _ in range(3 * 20):
        acc.step(noise_multiplier=1.2, sample_rate=1 / 20)
    assert acc.history == [(1.2, 1 / 20, 60)]
    assert acc.get_epsilon(1e-5) == _ledger_epsilon(name, _random_allocation(1.2, 20, 3, selected))
    assert "3 epoch(s) of 20 steps" in acc.get_result(1e-5).notes[-1]


def test_a_partial_epoch_is_accounted_as_a_whole_one():
    acc = DpkitAccountant("rdp", batching="random-allocation")
    acc.history = [(1.0, 0.1, 21)]  # 2 epochs of 10 steps and 1 step of a third
    assert acc.get_epsilon(1e-5) == _ledger_epsilon("rdp", _random_allocation(1.0, 10, 3))
    acc.history = [(1.0, 0.1, 20)]
    assert acc.get_epsilon(1e-5) == _ledger_epsilon("rdp", _random_allocation(1.0, 10, 2))


def test_an_epoch_left_early_and_restarted_counts_through_the_sampler():
    # 20 steps of epochs of 10, but the sampler started 5 epochs (the loop broke off early and
    # restarted): 5 allocations are accounted, not 2. Without the sampler the count is 2.
    sampler = RandomAllocationBatchSampler(num_examples=100, steps_per_epoch=10)
    acc = DpkitAccountant("rdp", batching="random-allocation", sampler=sampler)
    acc.history = [(1.0, 0.1, 20)]
    sampler.allocations_drawn = 2
    assert acc.get_epsilon(1e-5) == _ledger_epsilon("rdp", _random_allocation(1.0, 10, 2))
    sampler.allocations_drawn = 5
    assert acc.get_epsilon(1e-5) == _ledger_epsilon("rdp", _random_allocation(1.0, 10, 5))
    assert "5 epoch(s)" in acc.get_result(1e-5).notes[-1]


def _brute_force_epoch_sigmas(history, per_epoch):
    sigmas = [sigma for sigma, _, steps in history for _ in range(steps)]
    return [min(sigmas[i:i + per_epoch]) for i in range(0, len(sigmas), per_epoch)]


@settings(max_examples=50, deadline=None)
@given(per_epoch=st.integers(1, 7),
       history=st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0]), st.integers(1, 20)), min_size=1, max_size=6))
def test_each_epoch_is_accounted_at_its_smallest_noise_multiplier(per_epoch, history):
    acc = DpkitAccountant(batching="shuffle")
    acc.history = [(sigma, 1 / per_epoch, steps) for sigma, steps in history]
    runs = acc._epoch_sigmas(per_epoch)
    assert [sigma for sigma, count in runs for _ in range(count)] == _brute_force_epoch_sigmas(acc.history, per_epoch)


def test_shuffling_gets_the_no_amplification_bound_never_the_poisson_number():
    acc = DpkitAccountant("rdp", batching="shuffle")
    for sigma, steps in ((2.0, 150), (1.0, 100)):  # epochs of 100 steps: σ = 2, then min(2, 1), then 1
        for _ in range(steps):
            acc.step(noise_multiplier=sigma, sample_rate=0.01)
    once = compose(GaussianEvent(sigma=2.0), SelfComposedEvent(GaussianEvent(sigma=1.0), 2))
    assert acc.get_epsilon(1e-5) == _ledger_epsilon("analytic", once)
    result = acc.get_result(1e-5)
    assert result.accountant == "analytic" and "no-amplification" in result.notes[-1]
    poisson = DpkitAccountant("rdp")
    poisson.history = list(acc.history)
    assert acc.get_epsilon(1e-5) > 3 * poisson.get_epsilon(1e-5)  # the unproven number would be far smaller


def test_epoch_batchings_refuse_rates_that_are_not_one_batch_of_an_epoch():
    acc = DpkitAccountant(batching="random-allocation")
    acc.step(noise_multiplier=1.0, sample_rate=1 / 3)  # 1/3 in floating point: 3 steps per epoch
    with pytest.raises(ValueError, match="sample_rate"):
        acc.step(noise_multiplier=1.0, sample_rate=0.3)  # 3.33 steps per epoch
    with pytest.raises(ValueError, match="steps_per_epoch"):  # gradient accumulation: 2 batches a step
        DpkitAccountant(batching="shuffle", steps_per_epoch=10).step(noise_multiplier=1.0, sample_rate=0.2)
    with pytest.raises(ValueError, match="selected"):
        get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=1 / 3, steps=9,
                             batching="random-allocation", selected=4)
    mixed = DpkitAccountant(batching="random-allocation")
    mixed.history = [(1.0, 0.1, 10), (1.0, 0.05, 20)]
    with pytest.raises(ValueError, match="own DpkitAccountant"):
        mixed.get_epsilon(1e-5)


def test_batching_arguments_are_checked_together():
    with pytest.raises(ValueError, match="batching"):
        DpkitAccountant(batching="balls-and-bins")
    with pytest.raises(ValueError, match="steps_per_epoch"):
        DpkitAccountant(steps_per_epoch=10)
    with pytest.raises(ValueError, match="selected"):
        DpkitAccountant(batching="shuffle", selected=2)
    with pytest.raises(ValueError, match="selected"):
        DpkitAccountant(batching="random-allocation", steps_per_epoch=3, selected=4)
    # selected > 1 needs the epoch length: rate 2/t may be 2 accumulated batches, where an example's
    # 2 batches of an epoch can fall into the same optimizer step
    with pytest.raises(ValueError, match="steps_per_epoch"):
        DpkitAccountant(batching="random-allocation", selected=2)
    sampler = RandomAllocationBatchSampler(num_examples=50, steps_per_epoch=10, selected=2)
    with pytest.raises(ValueError, match="sampler"):
        DpkitAccountant(batching="shuffle", sampler=sampler)
    with pytest.raises(ValueError, match="disagrees"):
        DpkitAccountant(batching="random-allocation", sampler=sampler, steps_per_epoch=5)
    acc = DpkitAccountant(batching="random-allocation", sampler=sampler)
    assert (acc.steps_per_epoch, acc.selected) == (10, 2)


def test_batching_state_dict_round_trip_keeps_the_sampler_count():
    sampler = RandomAllocationBatchSampler(num_examples=100, steps_per_epoch=10)
    acc = DpkitAccountant(batching="random-allocation", sampler=sampler)
    acc.history = [(1.0, 0.1, 20)]
    sampler.allocations_drawn = 4
    state = acc.state_dict()
    assert (state["dpkit_batching"], state["dpkit_steps_per_epoch"], state["dpkit_allocations"]) == (
        "random-allocation", 10, 4)
    # resumed with a fresh sampler: the 4 epochs already started stay counted, new ones add up
    fresh = RandomAllocationBatchSampler(num_examples=100, steps_per_epoch=10)
    resumed = DpkitAccountant(batching="random-allocation", sampler=fresh)
    resumed.load_state_dict(state)
    assert resumed._allocations_drawn() == 4
    fresh.allocations_drawn = 1
    assert resumed._allocations_drawn() == 5
    # the same sampler continuing: its 4 epochs are not counted twice
    acc.load_state_dict(state)
    assert acc._allocations_drawn() == 4
    # a state saved before batchings existed is Poisson's
    old = DpkitAccountant()
    old.load_state_dict({"history": [(1.0, 0.1, 5)], "mechanism": "dpkit"})
    assert old.batching == "poisson"
    with pytest.raises(ValueError, match="sampler"):
        resumed.load_state_dict({"history": [(1.0, 0.1, 5)], "mechanism": "dpkit"})
    with pytest.raises(ValueError, match="sample_rate"):
        DpkitAccountant(batching="shuffle").load_state_dict(
            {"history": [(1.0, 0.3, 5)], "mechanism": "dpkit", "dpkit_batching": "shuffle"})


def test_shuffle_noise_multiplier_meets_the_target_and_is_tight():
    sigma = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, epochs=2.5,
                                 batching="shuffle", rtol=1e-3)
    acc = DpkitAccountant(batching="shuffle")
    acc.history = [(sigma, 0.01, 250)]
    assert acc.get_epsilon(1e-5) <= 2.0
    acc.history = [(sigma * (1 - 2e-3), 0.01, 250)]
    assert acc.get_epsilon(1e-5) > 2.0


@pytest.mark.parametrize("selected", [1, 2])
def test_random_allocation_noise_multiplier_meets_the_target_and_is_tight(selected):
    sigma = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.05, epochs=3,
                                 accountant="rdp", batching="random-allocation", selected=selected, rtol=1e-3)
    acc = DpkitAccountant("rdp", batching="random-allocation", steps_per_epoch=20, selected=selected)
    acc.history = [(sigma, 0.05, 60)]
    assert acc.get_epsilon(1e-5) <= 2.0
    acc.history = [(sigma * (1 - 2e-3), 0.05, 60)]
    assert acc.get_epsilon(1e-5) > 2.0
