"""``dpkit epsilon``, ``calibrate``, ``dpsgd`` and ``train`` on subnormal, zero, infinite, NaN and huge
numbers: a usage error names the option (exit 2, one line), a valid extreme gives an answer, and
no raw numpy RuntimeWarning reaches the user either way."""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import pytest

from dpkit.cli.main import main

EPSILON = ["epsilon", "--mechanism", "laplace", "--scale", "1", "--delta", "1e-5"]
REPEAT = ["epsilon", "--mechanism", "repeat-and-select", "--sigma", "2", "--delta", "1e-5", "--repeat-mean", "3",
          "--repeat-distribution", "negative-binomial", "--repeat-shape", "1"]
CALIBRATE = ["calibrate", "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5"]
DPSGD = ["dpsgd", "--examples", "1000", "--batch", "10", "--epochs", "1", "--noise-multiplier", "1", "--delta", "1e-5"]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def with_option(argv: list[str], option: str, value: str) -> list[str]:
    argv = list(argv)
    if option in argv:
        argv[argv.index(option) + 1] = value
        return argv
    return argv + [option, value]


@pytest.mark.parametrize("value", ["5e-324", "1e-320", "inf", "-inf", "nan"])
@pytest.mark.parametrize("base, option", [
    (EPSILON, "--sensitivity"), (EPSILON, "--scale"), (EPSILON, "--delta"),
    (REPEAT, "--repeat-shape"), (REPEAT, "--repeat-mean"),
    (CALIBRATE, "--epsilon"), (CALIBRATE, "--rtol"), (CALIBRATE, "--sensitivity"),
    (DPSGD, "--noise-multiplier"), (DPSGD, "--epochs"), (DPSGD, "--delta"),
])
def test_non_finite_and_subnormal_values_name_the_option(base, option, value):
    status, out, err = run_cli(with_option(base, option, value))
    lines = err.strip().splitlines()
    assert status == 2 and out == "" and len(lines) == 1, err
    assert option in lines[0] and "failure inside dpkit" not in lines[0]


@pytest.mark.parametrize("argv, option", [
    (EPSILON + ["--count", "1e300"], "--count"),
    (with_option(DPSGD, "--epochs", "1e300"), "--epochs"),
    (["calibrate", "--mechanism", "laplace", "--epsilon", "1e308", "--delta", "1e-5"], "--epsilon"),
    (["train", "--algorithm", "dp-logreg", "--epsilon", "1e-320", "--data", "synthetic"], "--epsilon"),
])
def test_values_past_what_can_be_computed_name_the_option(argv, option):
    status, out, err = run_cli(argv)
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and option in lines[0], err


def test_a_huge_sensitivity_gives_its_pure_dp_bound_without_warnings():
    # Laplace at sensitivity/scale = 1e308 is 1e308-DP; at delta 1e-5 its epsilon is 1e308 - 2e-5 in exact arithmetic
    status, out, err = run_cli(with_option(EPSILON, "--sensitivity", "1e308") + ["--json"])
    assert status == 0 and err == ""
    assert json.loads(out)["epsilon"] >= 1e308


def test_extreme_negative_binomial_shapes_are_accounted():
    epsilons = {}
    for shape in ("0", "1e-300", "1e300"):
        status, out, err = run_cli(with_option(REPEAT, "--repeat-shape", shape) + ["--json"])
        assert status == 0 and err == ""
        epsilons[shape] = json.loads(out)["epsilon"]
    # the bound of Papernot & Steinke 2022 (Thm 2) is continuous in the shape at 0 (the logarithmic law)
    assert epsilons["1e-300"] == pytest.approx(epsilons["0"], rel=1e-9)
    assert epsilons["1e300"] > 0


def test_a_huge_noise_multiplier_gives_a_tiny_epsilon_without_warnings():
    status, out, err = run_cli(with_option(DPSGD, "--noise-multiplier", "1e308") + ["--json"])
    assert status == 0 and err == ""
    assert 0 <= json.loads(out)["poisson"]["epsilon_rdp"] < 1e-100
