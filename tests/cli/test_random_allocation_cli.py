"""``dpkit epsilon|calibrate --sampling random-allocation``: the event the options describe, and named errors."""

from __future__ import annotations

import pytest

from dpkit.accounting import GaussianEvent, RandomAllocationEvent, SelfComposedEvent
from dpkit.accounting.registry import make_accountant
from dpkit.commands.runner import CommandError, run_json

ALLOCATION = ["--sampling", "random-allocation", "--steps-per-epoch", "20", "--delta", "1e-5"]


def test_epsilon_is_the_accountants_on_the_allocation_event():
    out = run_json(["epsilon", "--mechanism", "gaussian", "--sigma", "1.5", "--count", "3", "--uses-per-epoch", "2",
                    "--accountant", "rdp", *ALLOCATION])
    event = SelfComposedEvent(RandomAllocationEvent(GaussianEvent(1.5), 20, 2), 3)
    assert out["epsilon"] == make_accountant("rdp").compose(event).get_epsilon(1e-5).epsilon


def test_calibrated_sigma_meets_the_target_and_no_less_noise_does():
    out = run_json(["calibrate", "--mechanism", "gaussian", "--epsilon", "1.0", "--accountant", "rdp", *ALLOCATION])
    sigma = out["parameter"]
    spent = make_accountant("rdp").compose(RandomAllocationEvent(GaussianEvent(sigma), 20)).get_epsilon(1e-5)
    less = make_accountant("rdp").compose(RandomAllocationEvent(GaussianEvent(sigma * 0.999), 20)).get_epsilon(1e-5)
    assert spent.epsilon <= 1.0 < less.epsilon


@pytest.mark.parametrize("extra, named", [
    ([], "--steps-per-epoch"),
    (["--steps-per-epoch", "5", "--rate", "0.1"], "--rate"),
    (["--steps-per-epoch", "5", "--uses-per-epoch", "6"], "--uses-per-epoch"),
])
def test_bad_allocation_options_are_named(extra, named):
    with pytest.raises(CommandError, match=named):
        run_json(["epsilon", "--mechanism", "gaussian", "--sigma", "1", "--sampling", "random-allocation",
                  "--delta", "1e-5", *extra])
