"""``dpkit train``: JSON keys, labelled epsilons, clear errors."""

from __future__ import annotations

import json

import pytest

from dpkit.cli.main import main


def _run(capsys, *argv):
    code = main(["train", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.filterwarnings("ignore::dpkit.accounting.base.PaperRuleWarning")
@pytest.mark.parametrize("algorithm,extra", [
    ("admm", ["--eta", "0.5", "--lam", "0.01"]),
    ("pp-admm", []),
    ("ipp-admm", ["--cap", "2"]),
    ("dp-admm", ["--agents", "10"]),
    ("admm-pvp", ["--agents", "5"]),
])
def test_train_json(capsys, tmp_path, algorithm, extra):
    out_file = tmp_path / "r.json"
    code, out, _ = _run(capsys, "--algorithm", algorithm, "--data", "builtin", "--epsilon", "2", "--iterations", "4",
                        "--seed", "1", "--json", "--quiet", "--out", str(out_file), *extra)
    assert code == 0
    payload = json.loads(out)
    for key in ("accuracy", "epsilon_paper", "epsilon_corrected", "delta", "iterations", "seconds", "ledger"):
        assert key in payload
    assert payload["iterations"] == 4 and 0.0 <= payload["accuracy"] <= 1.0
    if algorithm in ("dp-admm", "admm-pvp"):
        assert payload["epsilon_paper"] is None and payload["epsilon_corrected"] <= 2.0
    elif algorithm != "admm":
        assert payload["epsilon_paper"] is not None and payload["guarantees"]["paper"]["is_upper_bound"] is False
    assert json.loads(out_file.read_text())["algorithm"] == algorithm


def test_train_errors(capsys, tmp_path):
    code, _, err = _run(capsys, "--algorithm", "pp-admm", "--data", str(tmp_path / "missing"), "--epsilon", "1")
    assert code == 2 and "missing" in err
    code, _, err = _run(capsys, "--algorithm", "pp-admm", "--data", "builtin", "--epsilon", "-1", "--iterations", "2")
    assert code == 2 and "epsilon" in err
    code, _, err = _run(capsys, "--algorithm", "nope", "--data", "builtin", "--epsilon", "1")
    assert code == 2 and "algorithm" in err
    code, _, err = _run(capsys, "--algorithm", "pp-admm", "--data", "builtin", "--epsilon", "1", "--agents", "0")
    assert code == 2 and "agents" in err
