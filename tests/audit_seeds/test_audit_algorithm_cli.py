"""``dpkit audit --algorithm NAME`` helper (dpkit/cli/audit_algorithm.py), tested through its own parser."""

from __future__ import annotations

import argparse
import json

import pytest

from dpkit.cli import audit_algorithm as AA


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    AA.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_a_ddp_paper_claim_is_refuted_json(capsys):
    assert AA.run_algorithm(_parse("--algorithm", "a-ddp", "--samples", "400000", "--json")) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["violation"] is True and out["as_predicted"] is True
    assert out["scenario"]["name"] == "seed002-sensitivity"


def test_pp_admm_corrected_text(capsys):
    assert AA.run_algorithm(_parse("--algorithm", "pp-admm", "--variant", "corrected", "--samples", "200000")) == 0
    text = capsys.readouterr().out
    assert "no violation found" in text and "true epsilon" in text


def test_iterations_only_for_dvp():
    with pytest.raises(ValueError, match="--iterations applies to dvp-admm"):
        AA.build(_parse("--algorithm", "a-ddp", "--iterations", "5"))
    assert AA.build(_parse("--algorithm", "dvp-admm", "--iterations", "5")).parameters["iterations"] == 5


def test_unknown_algorithm_is_rejected():
    with pytest.raises(SystemExit):
        _parse("--algorithm", "nope")


def test_scenario_names_agree_with_the_registry():
    from dpkit.algorithms.audit_scenarios import SCENARIOS

    assert set(AA.SCENARIO_NAMES) == set(SCENARIOS)
    assert {scenario for scenario, _ in AA.ALGORITHMS.values()} == set(SCENARIOS)


def test_wired_into_dpkit_audit(capsys):
    from dpkit.cli.main import main

    code = main(["audit", "--algorithm", "dp-admm", "--variant", "corrected", "--iterations", "3",
                 "--samples", "100000", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["violation"] is False and out["as_predicted"] is True
    assert out["scenario"]["parameters"]["iterations"] == 3


def test_mechanism_still_required_without_algorithm(capsys):
    from dpkit.cli.main import main

    assert main(["audit", "--claimed-epsilon", "1"]) == 2
    assert "--algorithm" in capsys.readouterr().err
