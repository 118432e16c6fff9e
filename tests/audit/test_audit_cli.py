"""``dpkit audit`` command line."""

from __future__ import annotations

import json

import pytest

from dpkit.cli.main import main


def test_builtin_mechanism_json(capsys):
    code = main(["audit", "--mechanism", "laplace", "--claimed-epsilon", "1.0", "--samples", "100000", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["violation"] is False and out["pairs"] == "statdp-one"
    assert out["epsilon_lower_bound"] <= 1.0 and out["samples"] <= 100_000


def test_builtin_miscalibrated_is_flagged(capsys):
    # a Laplace mechanism calibrated to ε = 2 audited against a claim of 1
    code = main(["audit", "--mechanism", "laplace", "--mechanism-epsilon", "2", "--claimed-epsilon", "1",
                 "--samples", "200000", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["violation"] is True and out["p_value"] <= 0.05  # 3: claim refuted


def test_user_function_and_text_output(capsys):
    code = main(["audit", "--mechanism", "catalogue:leaky_sum", "--pairs", "statdp-one", "--claimed-epsilon", "1",
                 "--samples", "100000", "--quiet"])
    text = capsys.readouterr().out
    assert code == 3 and "VIOLATION" in text and "epsilon lower bound" in text


@pytest.mark.parametrize("argv,message", [
    (["--mechanism", "nosuch", "--claimed-epsilon", "1"], "must be one of"),
    (["--mechanism", "nosuchmodule:f", "--claimed-epsilon", "1"], "cannot load"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--confidence", "2"], "confidence"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--workers", "0"], "workers"),
    (["--mechanism", "laplace", "--claimed-epsilon", "-1"], "claimed_epsilon must be in [0, inf), got claimed_epsilon=-1.0"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--claimed-delta", "1.5"], "claimed_delta must be in [0, 1)"),
])
def test_errors_are_one_line(capsys, argv, message):
    assert main(["audit", *argv, "--samples", "50000"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
