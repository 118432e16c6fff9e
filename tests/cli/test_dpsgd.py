"""``dpkit dpsgd``: the DP-SGD statement against closed forms, dpkit's own accountants and
dp_accounting (the ``compare`` tests), and its calibration direction."""

from __future__ import annotations

import math

import pytest

from dpkit.accounting import AnalyticGaussianAccountant, GaussianEvent, dpsgd_epsilon
from dpkit.commands.dpsgd import group_epsilon
from dpkit.commands.runner import CommandError, run_json

BASE = ["dpsgd", "--examples", "10000", "--batch", "100", "--epochs", "2", "--delta", "1e-5"]


def test_statement_json_has_poisson_shuffled_and_provenance():
    out = run_json([*BASE, "--noise-multiplier", "1.0"])
    assert out["steps"] == 200 and out["sampling_rate"] == 0.01
    assert out["dpkit"]["argv"][0] == "dpsgd"
    p = out["poisson"]
    assert p["epsilon_pld_lower"] <= p["epsilon_pld"] <= p["epsilon_rdp"]
    assert p["epsilon_rdp"] == dpsgd_epsilon(0.01, 1.0, 200, 1e-5).epsilon
    assert "not a proven bound" in out["shuffled"]["assumption"]
    # Once per epoch: two Gaussian releases at z = 1 are one Gaussian at z/√2 (exact accountant).
    exact = AnalyticGaussianAccountant().compose(GaussianEvent(1 / math.sqrt(2))).get_epsilon(1e-5).epsilon
    assert out["shuffled"]["epsilon_once_per_epoch"] == pytest.approx(exact, rel=1e-9)


def test_microbatching_halves_the_accounted_noise_multiplier():
    plain = run_json([*BASE, "--noise-multiplier", "1.0"])
    micro = run_json([*BASE, "--noise-multiplier", "2.0", "--microbatching"])
    assert micro["accounted_noise_multiplier"] == 1.0
    assert micro["poisson"]["epsilon_rdp"] == plain["poisson"]["epsilon_rdp"]


def test_user_level_is_group_privacy_with_a_certified_delta():
    out = run_json([*BASE, "--noise-multiplier", "1.0", "--max-examples-per-user", "3"])
    user = out["user_level"]
    assert user["delta_rdp"] <= 1e-5 and user["epsilon_rdp"] > 3 * out["poisson"]["epsilon_rdp"]
    one = run_json([*BASE, "--noise-multiplier", "1.0", "--max-examples-per-user", "1"])
    assert one["user_level"]["epsilon_rdp"] == one["poisson"]["epsilon_rdp"]


def test_group_privacy_on_pure_dp_is_k_epsilon():
    # A pure ε-DP mechanism (ε constant in δ): K examples give Kε with δ scaled by (e^{Kε}−1)/(e^ε−1)
    # (Vadhan 2017, Lemma 2.2), so a 0 example-level δ stays feasible and the result is exactly Kε.
    eps, delta = group_epsilon(lambda d: 0.5, 1e-5, 4)
    assert eps == 2.0 and delta <= 1e-5
    assert delta == pytest.approx(math.exp(math.log(delta)), rel=1e-12)


def test_calibration_meets_the_target_and_is_tight():
    out = run_json([*BASE, "--epsilon", "1.0", "--rtol", "1e-3"])
    for name in ("rdp", "pld"):
        z = out[name]["noise_multiplier"]
        assert out[name]["epsilon"] <= 1.0
        assert dpsgd_epsilon(0.01, z, 200, 1e-5, accountant=name).epsilon <= 1.0
        assert dpsgd_epsilon(0.01, z * (1 - 2e-3), 200, 1e-5, accountant=name).epsilon > 1.0
    assert out["noise_multiplier"] == out["pld"]["noise_multiplier"] <= out["rdp"]["noise_multiplier"]


@pytest.mark.parametrize("argv, option", [
    (["--noise-multiplier", "0"], "--noise-multiplier"),
    (["--noise-multiplier", "1", "--batch", "20000"], "--batch"),
    (["--epsilon", "1", "--max-examples-per-user", "2"], "--max-examples-per-user"),
    (["--noise-multiplier", "1", "--max-examples-per-user", "0"], "--max-examples-per-user"),
])
def test_bad_options_are_named(argv, option):
    with pytest.raises(CommandError, match=option):
        run_json([*BASE, *argv])


# --------------------------------------------------------------------------- against dp_accounting

SETTINGS = [(60000, 256, 60, 1.1), (10000, 100, 2, 1.0), (50000, 500, 10, 0.8)]


def _dpa_epsilons(q, z, steps, delta):
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)
    rdp = rdp_privacy_accountant.RdpAccountant().compose(event).get_epsilon(delta)
    pld = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4).compose(event).get_epsilon(delta)
    return rdp, pld


@pytest.mark.compare
@pytest.mark.parametrize("n, batch, epochs, z", SETTINGS)
def test_statement_lies_between_dp_accountings_pld_and_rdp(n, batch, epochs, z):
    out = run_json(["dpsgd", "--examples", str(n), "--batch", str(batch), "--epochs", str(epochs),
                    "--noise-multiplier", str(z), "--delta", "1e-5"])
    rdp, pld = _dpa_epsilons(out["sampling_rate"], z, out["steps"], 1e-5)
    for ours in (out["poisson"]["epsilon_rdp"], out["poisson"]["epsilon_pld"]):
        assert pld - 1e-3 <= ours <= rdp


@pytest.mark.compare
@pytest.mark.parametrize("n, batch, epochs, z", SETTINGS[2:])
def test_calibrated_noise_meets_the_target_under_dp_accounting_too(n, batch, epochs, z):
    out = run_json(["dpsgd", "--examples", str(n), "--batch", str(batch), "--epochs", str(epochs),
                    "--epsilon", "2.0", "--delta", "1e-5"])
    for name in ("rdp", "pld"):
        rdp, pld = _dpa_epsilons(out["sampling_rate"], out[name]["noise_multiplier"], out["steps"], 1e-5)
        assert pld - 1e-3 <= out[name]["epsilon"] <= 2.0
        assert pld <= 2.0 + 1e-3


# --------------------------------------------------------------------------- --batching

SMALL = ["dpsgd", "--examples", "2000", "--batch", "100", "--epochs", "1", "--delta", "1e-5"]


def test_random_allocation_statement_matches_the_accountants_and_beats_poisson():
    from dpkit.accounting import RandomAllocationEvent, SelfComposedEvent
    from dpkit.accounting.registry import make_accountant

    out = run_json([*SMALL, "--noise-multiplier", "1.0", "--batching", "random-allocation"])
    allocation = out["random_allocation"]
    assert allocation["steps_per_epoch"] == 20 and allocation["epochs_accounted"] == 1
    event = SelfComposedEvent(RandomAllocationEvent(GaussianEvent(1.0), 20), 1)
    assert allocation["epsilon_pld"] == make_accountant("pld").compose(event).get_epsilon(1e-5).epsilon
    assert allocation["epsilon_pld_lower"] <= allocation["epsilon_pld"] <= allocation["epsilon_rdp"]
    # each example in exactly one of the 20 steps hides it better than Poisson's rate 1/20 does here
    assert allocation["epsilon_pld"] < out["poisson"]["epsilon_pld_lower"]


def test_fractional_epochs_are_accounted_as_whole_ones():
    out = run_json(["dpsgd", "--examples", "2000", "--batch", "100", "--epochs", "1.5", "--delta", "1e-5",
                    "--noise-multiplier", "2.0", "--batching", "random-allocation"])
    assert out["random_allocation"]["epochs_accounted"] == 2


def test_shuffle_shows_the_certified_range_around_the_paper_number():
    out = run_json([*SMALL, "--noise-multiplier", "1.0", "--batching", "shuffle"])
    shuffled = out["shuffled"]
    assert shuffled["epsilon_lower"] <= shuffled["epsilon_once_per_epoch"]
    # at σ = 1 the adversarial datasets of Chua et al. (2024) already refute the Poisson number
    assert shuffled["epsilon_lower"] > shuffled["epsilon_reported_in_papers"]


@pytest.mark.parametrize("batching,accountants", [("random-allocation", ["rdp", "pld"]), ("shuffle", ["analytic"])])
def test_calibration_per_batching_meets_the_target(batching, accountants):
    from dpkit.accounting import RandomAllocationEvent, SelfComposedEvent
    from dpkit.accounting.registry import make_accountant

    out = run_json([*SMALL, "--epsilon", "1.5", "--rtol", "1e-3", "--batching", batching])
    assert out["accountants"] == accountants
    for name in accountants:
        z = out[name]["noise_multiplier"]
        event = (SelfComposedEvent(RandomAllocationEvent(GaussianEvent(z), 20), 1) if batching != "shuffle"
                 else GaussianEvent(z))
        assert make_accountant(name).compose(event).get_epsilon(1e-5).epsilon <= 1.5
    assert out["noise_multiplier"] == min(out[name]["noise_multiplier"] for name in accountants)
