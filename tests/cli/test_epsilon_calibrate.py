"""``dpkit epsilon`` / ``dpkit calibrate``: every documented command line (docs/calibration.md), checked against the library."""

from __future__ import annotations

import json
import math

import pytest

from dpkit.accounting.analytic_gaussian import gaussian_epsilon, gaussian_sigma
from dpkit.accounting.calibration import accountant_factory, calibrate_gaussian_sigma, dpsgd_epsilon
from dpkit.accounting.events import (
    GaussianEvent,
    LaplaceEvent,
    RandomizedResponseEvent,
    SampledWithoutReplacementEvent,
    repeat,
)
from dpkit.cli.main import main


def run_json(capsys, line: str) -> dict:
    code = main(line.split())
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def library_epsilon(accountant: str, event, delta: float, neighbouring: str = "add-remove") -> float:
    return accountant_factory(accountant, neighbouring)().compose(event).get_epsilon(delta).epsilon


def test_epsilon_gaussian_rdp(capsys):
    out = run_json(capsys, "epsilon --mechanism gaussian --sigma 10 --count 100 --delta 1e-5 --accountant rdp --json")
    assert {"epsilon", "delta", "accountant", "method", "order", "neighbouring", "ledger_hash"} <= out.keys()
    assert out["accountant"] == "rdp" and out["delta"] == 1e-5 and out["neighbouring"] == "add-remove"
    assert out["epsilon"] == library_epsilon("rdp", repeat(GaussianEvent(10.0), 100), 1e-5)


def test_epsilon_dpsgd_rdp(capsys):
    line = "epsilon --mechanism gaussian --sigma 1.1 --sampling poisson --rate 0.01 --count 10000 --delta 1e-5 --accountant rdp --json"
    out = run_json(capsys, line)
    assert out["epsilon"] == dpsgd_epsilon(0.01, 1.1, 10_000, 1e-5).epsilon
    assert out["sampling"] == "poisson" and out["count"] == 10_000


def test_epsilon_laplace_rdp(capsys):
    out = run_json(capsys, "epsilon --mechanism laplace --scale 2 --count 20 --delta 1e-5 --accountant rdp --json")
    assert out["epsilon"] == library_epsilon("rdp", repeat(LaplaceEvent(2.0), 20), 1e-5)
    assert out["epsilon"] <= 20 * 0.5  # never worse than basic composition


def test_epsilon_gaussian_zcdp(capsys):
    out = run_json(capsys, "epsilon --mechanism gaussian --sigma 10 --count 100 --delta 1e-5 --accountant zcdp --json")
    assert out["accountant"] == "zcdp"
    assert out["epsilon"] == library_epsilon("zcdp", repeat(GaussianEvent(10.0), 100), 1e-5)


def test_calibrate_gaussian_rdp(capsys):
    out = run_json(capsys, "calibrate --mechanism gaussian --epsilon 1 --delta 1e-5 --count 100 --accountant rdp --json")
    assert {"epsilon", "delta", "accountant", "sigma", "method", "order", "neighbouring", "ledger_hash"} <= out.keys()
    assert out["sigma"] == calibrate_gaussian_sigma(1.0, 1e-5, count=100, accountant="rdp").parameter
    assert out["epsilon"] <= 1.0
    assert library_epsilon("rdp", repeat(GaussianEvent(out["sigma"]), 100), 1e-5) <= 1.0


def test_calibrate_gaussian_analytic(capsys):
    out = run_json(capsys, "calibrate --mechanism gaussian --epsilon 1 --delta 1e-5 --accountant analytic --json")
    assert out["accountant"] == "analytic"
    assert gaussian_sigma(1.0, 1e-5) <= out["sigma"] <= gaussian_sigma(1.0, 1e-5) * (1 + 1e-14)
    assert out["epsilon"] <= 1.0


def test_calibrate_dpsgd_rdp(capsys):
    line = "calibrate --mechanism gaussian --epsilon 2 --delta 1e-5 --sampling poisson --rate 0.01 --count 10000 --accountant rdp --json"
    out = run_json(capsys, line)
    assert dpsgd_epsilon(0.01, out["sigma"], 10_000, 1e-5).epsilon <= 2.0
    assert dpsgd_epsilon(0.01, out["sigma"] * (1 - 2e-6), 10_000, 1e-5).epsilon > 2.0


def test_epsilon_without_replacement_defaults_to_replace_one(capsys):
    line = ("epsilon --mechanism gaussian --sigma 3 --sampling without-replacement --rate 0.01 --population 10000 "
            "--count 100 --delta 1e-5 --json")
    out = run_json(capsys, line)
    assert out["neighbouring"] == "replace-one"
    event = repeat(SampledWithoutReplacementEvent(GaussianEvent(3.0), 100, 10_000), 100)
    assert out["epsilon"] == library_epsilon("rdp", event, 1e-5, "replace-one")


def test_epsilon_randomized_response_and_sensitivity(capsys):
    out = run_json(capsys, "epsilon --mechanism randomized-response --epsilon0 0.5 --k 3 --count 10 --delta 1e-6 --json")
    assert out["epsilon"] == library_epsilon("rdp", repeat(RandomizedResponseEvent(0.5, 3), 10), 1e-6)
    out = run_json(capsys, "epsilon --sigma 4 --sensitivity 2 --delta 1e-6 --accountant analytic --json")
    assert out["epsilon"] == library_epsilon("analytic", GaussianEvent(2.0), 1e-6)


def test_calibrate_laplace_scale_and_rr(capsys):
    out = run_json(capsys, "calibrate --mechanism laplace --epsilon 1 --delta 1e-5 --count 10 --accountant approx --json")
    assert out["scale"] <= 10.0 and out["epsilon"] <= 1.0  # basic composition needs b = 10
    out = run_json(capsys, "calibrate --mechanism randomized-response --epsilon 1 --delta 1e-5 --count 10 --json")
    assert library_epsilon("rdp", repeat(RandomizedResponseEvent(out["epsilon0"]), 10), 1e-5) <= 1.0
    assert library_epsilon("rdp", repeat(RandomizedResponseEvent(out["epsilon0"] * (1 + 2e-6)), 10), 1e-5) > 1.0


def test_compare_lists_applicable_accountants(capsys):
    out = run_json(capsys, "epsilon --mechanism gaussian --sigma 10 --count 100 --delta 1e-5 --compare --json")
    names = [r["accountant"] for r in out["results"]]
    assert {"analytic", "rdp", "zcdp"} <= set(names)
    exact = next(r["epsilon"] for r in out["results"] if r["accountant"] == "analytic")
    for result in out["results"]:  # no sound accountant is below the exact value
        assert result["epsilon"] >= exact * (1 - 1e-12)
    assert "approx" in out["skipped"]


def test_pld_json_has_both_ends(capsys):
    out = run_json(capsys, "epsilon --sigma 2 --count 10 --delta 1e-5 --accountant pld --json")
    assert out["epsilon_lower"] <= out["epsilon"]
    # 10 Gaussians with σ = 2 are one Gaussian with σ = 2/√10 (Dong, Roth & Su 2022, Cor. 3.3)
    exact = gaussian_epsilon(2 / math.sqrt(10), 1e-5)
    assert out["epsilon_lower"] <= exact <= out["epsilon"]


def test_human_readable_output(capsys):
    assert main("epsilon --mechanism gaussian --sigma 10 --count 100 --delta 1e-5".split()) == 0
    text = capsys.readouterr().out
    assert "epsilon <= " in text and "rdp" in text and not text.lstrip().startswith("{")
    # the printed bound is the library's, rounded up (never below it)
    printed = float(text.split("epsilon <= ")[1].split()[0])
    assert printed >= library_epsilon("rdp", repeat(GaussianEvent(10.0), 100), 1e-5) >= printed * (1 - 1e-3)
    assert main("calibrate --epsilon 1 --delta 1e-5 --accountant analytic".split()) == 0
    text = capsys.readouterr().out
    sigma = float(text.split("sigma = ")[1].split()[0])
    assert sigma >= gaussian_sigma(1.0, 1e-5)  # the displayed σ is rounded up


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("epsilon --mechanism gaussian --sigma -1 --delta 1e-5", "sigma must be in"),
        ("epsilon --mechanism gaussian --delta 1e-5", "needs --sigma"),
        ("epsilon --mechanism gaussian --scale 1 --delta 1e-5", "does not apply"),
        ("epsilon --mechanism gaussian --sigma 1 --delta 1.5", "delta must be in (0, 1)"),
        ("epsilon --mechanism gaussian --sigma 1 --delta nan", "delta must be a number"),
        ("epsilon --mechanism gaussian --sigma 1 --count 0 --delta 1e-5", "count must be"),
        ("epsilon --mechanism gaussian --sigma 1 --sampling poisson --delta 1e-5", "needs --rate"),
        ("epsilon --mechanism gaussian --sigma 1 --sampling poisson --rate 1.5 --delta 1e-5", "rate must be in"),
        ("epsilon --mechanism gaussian --sigma 1 --rate 0.1 --delta 1e-5", "--rate needs --sampling"),
        ("epsilon --mechanism gaussian --sigma 1 --sampling without-replacement --rate 0.013 --population 100 --delta 1e-5",
         "whole batch size"),
        ("epsilon --sigma 1 --sampling poisson --rate 0.1 --delta 1e-5 --accountant analytic", "not supported"),
        ("epsilon --mechanism gaussian --sigma 1 --delta 1e-5 --accountant approx", "not supported"),
        ("epsilon --mechanism gaussian --sigma 1 --delta 1e-5 --accountant magic", "invalid choice"),
        ("epsilon --mechanism gaussian --sigma abc --delta 1e-5", "invalid float value"),
        ("epsilon --mechanism gaussian --sigma 1", "required"),
        ("calibrate --mechanism gaussian --epsilon -1 --delta 1e-5", "epsilon must be in"),
        ("calibrate --mechanism gaussian --sigma 2 --epsilon 1 --delta 1e-5", "unrecognized arguments"),
        ("calibrate --mechanism gaussian --epsilon 1 --delta 1e-5 --rtol 2", "rtol must be in"),
        ("calibrate --mechanism randomized-response --epsilon 1 --delta 1e-5 --sensitivity 2", "does not apply"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, line, fragment):
    try:
        code = main(line.split())
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0]
