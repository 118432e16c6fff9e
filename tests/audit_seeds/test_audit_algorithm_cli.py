"""``dpkit audit --algorithm NAME`` (dpkit/commands/audit/algorithm.py), through the real ``dpkit`` entry point."""

from __future__ import annotations

import argparse
import json

import pytest

from dpkit.algorithms.audit_instances import SCENARIOS, make_scenario
from dpkit.cli.main import main
from dpkit.commands.audit import algorithm as AA
from dpkit.commands.errors import EXIT_OK, EXIT_REFUTED, EXIT_USAGE
from dpkit.commands.runner import CommandError, run_json


def test_a_ddp_paper_claim_is_refuted_json():
    out = run_json(["audit", "--algorithm", "a-ddp", "--samples", "400000"])
    assert out["violation"] is True and out["as_predicted"] is True and out["algorithm"] == "a-ddp"
    assert out["scenario"]["paper"] == "Cheng et al. 2020" and out["scenario"]["corrected"] is False
    assert out["claimed_epsilon"] == 1.0 < out["epsilon_lower_bound"] <= out["scenario"]["true_epsilon"]


def test_refuted_claim_exits_3_and_valid_claim_exits_0(capsys):
    assert main(["audit", "--algorithm", "pp-admm", "--samples", "200000"]) == EXIT_REFUTED
    assert "VIOLATION: claim refuted" in capsys.readouterr().out
    assert main(["audit", "--algorithm", "pp-admm", "--variant", "corrected", "--samples", "200000"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "no violation found" in text and "true epsilon" in text and "pp-admm-minimizer-corrected" in text


def test_default_samples_is_the_scenarios_budget():
    out = run_json(["audit", "--algorithm", "ipp-admm"])
    assert out["scenario"]["samples"] == make_scenario("ipp-admm").samples
    # the confirmation draws Poisson sizes capped at each input's share, about 8.2·sqrt(share) below it
    assert 0 <= out["scenario"]["samples"] - out["samples"] <= 0.02 * out["scenario"]["samples"]
    assert out["violation"] is False and out["as_predicted"] is True


def test_iterations_reach_the_scenario():
    out = run_json(["audit", "--algorithm", "dp-admm", "--variant", "corrected", "--iterations", "3",
                    "--samples", "100000"])
    assert out["violation"] is False and out["as_predicted"] is True
    assert out["scenario"]["parameters"]["iterations"] == 3 and out["scenario"]["paper"] == "Huang et al. 2019"


def test_dp_logreg_audits_its_corrected_variant():
    out = run_json(["audit", "--algorithm", "dp-logreg", "--variant", "corrected", "--iterations", "2",
                    "--samples", "100000"])
    assert out["scenario"]["corrected"] is True and out["scenario"]["paper"] == "dpkit"
    assert out["violation"] is False and out["epsilon_lower_bound"] <= out["scenario"]["true_epsilon"]


def test_dp_logreg_defaults_to_its_corrected_variant():
    assert main(["audit", "--algorithm", "dp-logreg", "--iterations", "2", "--samples", "100000"]) == EXIT_OK


@pytest.mark.parametrize("argv, message", [
    (["--algorithm", "a-ddp", "--iterations", "5"], "--iterations applies to"),
    (["--algorithm", "ipp-admm", "--iterations", "5"], "--iterations applies to"),
    (["--algorithm", "dp-logreg", "--variant", "paper"], "--variant paper does not apply"),
    (["--algorithm", "a-ddp", "--mechanism", "laplace"], "--mechanism does not apply"),
    (["--algorithm", "a-ddp", "--claimed-epsilon", "1"], "--claimed-epsilon does not apply"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--variant", "paper"], "--algorithm NAME only"),
    (["--claimed-epsilon", "1"], "--algorithm"),
])
def test_bad_combinations_are_usage_errors(argv, message, capsys):
    assert main(["audit", *argv, "--samples", "1000"]) == EXIT_USAGE
    assert message in capsys.readouterr().err
    with pytest.raises(CommandError, match="failed with exit 2") as error:
        run_json(["audit", *argv, "--samples", "1000"])
    assert error.value.status == EXIT_USAGE


def test_unknown_algorithm_and_old_scenario_names_are_rejected(capsys):
    for name in ("nope", "seed002-sensitivity", "a-ddp-upload"):
        assert main(["audit", "--algorithm", name]) == EXIT_USAGE
        assert "invalid choice" in capsys.readouterr().err


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    AA.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_build_maps_names_and_variants():
    for name in SCENARIOS:
        variant = "corrected" if name == "dp-logreg" else "paper"
        scenario = AA.build(_parse("--algorithm", name, "--variant", variant))
        assert scenario.name == make_scenario(name, corrected=variant == "corrected").name
        assert scenario.corrected is (variant == "corrected")
    assert AA.build(_parse("--algorithm", "dvp-admm", "--iterations", "5")).parameters["iterations"] == 5
    assert AA.build(_parse("--algorithm", "hetero-admm")).corrected is False  # --variant defaults to paper


def test_choices_and_iteration_scenarios_agree_with_the_registry():
    parser = argparse.ArgumentParser()
    AA.add_arguments(parser)
    (algorithm,) = [a for a in parser._actions if a.dest == "algorithm"]
    assert tuple(algorithm.choices) == tuple(SCENARIOS)
    assert set(AA.ITERATION_SCENARIOS) <= set(SCENARIOS)
    for name in AA.ITERATION_SCENARIOS:  # every transcript scenario takes iterations=T
        assert make_scenario(name, corrected=True, iterations=2).parameters["iterations"] == 2


def test_json_output_is_one_object_with_the_scenario(capsys):
    assert main(["audit", "--algorithm", "a-ddp", "--variant", "corrected", "--samples", "100000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scenario"]["name"].startswith("a-ddp-upload") and out["scenario"]["corrected"] is True
    assert out["violation"] is False and out["as_predicted"] is True
