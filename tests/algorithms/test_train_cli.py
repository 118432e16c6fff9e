"""``train()`` and ``dpkit train``: one call, one result type, provenance, clear errors, safe --out."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from dpkit.algorithms.data import make_synthetic, train_test_split
from dpkit.algorithms.evaluation import majority_accuracy
from dpkit.algorithms.registry import ALGORITHMS, get_algorithm
from dpkit.algorithms.result import TrainingResult
from dpkit.algorithms import train
from dpkit.cli.main import main

DATA = make_synthetic(1200, 5, rng=0)


def _run(capsys, *argv):
    code = main(["train", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_registry_is_a_table_of_specs():
    assert all(spec.name == name for name, spec in ALGORITHMS.items())
    with pytest.raises(ValueError, match="algorithm"):
        get_algorithm("nope")


def test_train_records_provenance_and_uses_the_seed_scheme():
    result = train("dp-logreg", DATA, epsilon=1.0, seed=4, n_train=900)
    assert isinstance(result, TrainingResult)
    seeds = np.random.SeedSequence(4).spawn(4)
    _, test = train_test_split(DATA, 900, np.random.default_rng(seeds[0]))
    config = result.config
    assert (config["seed"], config["n_train"], config["n_test"], config["dimension"]) == (4, 900, 300, 5)
    assert config["majority_accuracy"] == majority_accuracy(test)
    assert (config["epsilon_target"], config["delta_target"], config["data"]) == (1.0, 1e-5, DATA.name)
    again = train("dp-logreg", DATA, epsilon=1.0, seed=4, n_train=900)
    assert np.array_equal(result.model, again.model)
    assert not np.array_equal(result.model, train("dp-logreg", DATA, epsilon=1.0, seed=5, n_train=900).model)


def test_nonprivate_admm_through_train():
    result = train("admm", DATA, agents=3, iterations=5, n_train=900)
    assert result.guarantee is None and result.models.shape == (3, 5)
    assert result.config["graph"]["n"] == 3 and result.config["epsilon_target"] is None


@pytest.mark.parametrize("kwargs,error,match", [
    ({"name": "nope"}, ValueError, "algorithm"),
    ({}, ValueError, "epsilon"),
    ({"epsilon": -1.0}, ValueError, "epsilon"),
    ({"epsilon": 1.0, "delta": 2.0}, ValueError, "delta"),
    ({"epsilon": 1.0, "variant": "paper"}, ValueError, "variant"),
    ({"epsilon": 1.0, "agents": 3}, ValueError, "agents"),
    ({"epsilon": 1.0, "seed": -1}, ValueError, "seed"),
    ({"epsilon": 1.0, "iterations": 0}, ValueError, "iterations"),
    ({"epsilon": 1.0, "n_train": 5000}, ValueError, "n_train"),
    ({"epsilon": 1.0, "edges": 4}, ValueError, "edges"),
    ({"epsilon": 1.0, "solver": "x"}, ValueError, "solver"),
    ({"epsilon": 1.0, "progress": 3}, TypeError, "progress"),
    ({"name": "admm", "epsilon": 1.0}, ValueError, "not private"),
    ({"name": "admm", "delta": 1e-5}, ValueError, "delta"),
    ({"name": "admm", "graph": "torus"}, ValueError, "graph"),
    ({"epsilon": 1.0, "data": [1, 2]}, TypeError, "data"),
    ({"epsilon": 1.0, "iterations": 10**7}, ValueError, r"iterations must be an integer in \[1, 1000000\]"),
    ({"name": "dp-admm", "epsilon": 1.0, "rho": 1e308}, ValueError, "rho=1e[+]308 is too large"),
    ({"name": "dvp-admm", "epsilon": 1.0, "agents": 1}, ValueError, "agents must be an integer >= 2"),
    ({"name": "dvp-admm", "epsilon": 1.0, "agents": 4, "edges": 7}, ValueError, r"edges must be an integer in \[3, 6\]"),
    ({"name": "dp-admm", "epsilon": 1.0, "graph": "ring"}, ValueError, "graph applies to graph-topology"),
    ({"name": "dp-admm", "epsilon": 1.0, "agents": 50, "n_train": 40}, ValueError, "n_train=40 is fewer"),
    ({"name": "dp-admm", "epsilon": 1.0, "agents": 50, "data": make_synthetic(40, 3, rng=0)}, ValueError,
     "has 40 rows"),
])
def test_train_validation_names_the_parameter(kwargs, error, match):
    kwargs = dict(kwargs)
    name = kwargs.pop("name", "dp-logreg")
    data = kwargs.pop("data", DATA)
    with pytest.raises(error, match=match):
        train(name, data, **kwargs)


def test_cli_json_and_text(capsys, tmp_path):
    code, out, _ = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "2", "--json", "--quiet")
    assert code == 0
    payload = json.loads(out)
    assert payload["epsilon_corrected"] <= 2.0 and payload["paper_claim"] is None
    assert "model" not in payload and payload["config"]["majority_accuracy"] > 0.5
    code, out, _ = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "2", "--quiet",
                        "--option", "step_size=2")
    assert code == 0 and "majority class" in out and "certified" in out
    assert f"{payload['config']['majority_accuracy']:.4f}" in out


def test_cli_out_is_written_atomically_and_never_overwritten(capsys, tmp_path, monkeypatch):
    target = tmp_path / "run.json"
    code, _, _ = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "1", "--quiet",
                      "--out", str(target))
    assert code == 0 and json.loads(target.read_text())["model"]
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary left behind
    target.write_text("mine")

    def no_training(*args, **kwargs):
        raise AssertionError("trained before checking --out")

    monkeypatch.setattr("dpkit.commands.train.train", no_training)
    code, _, err = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "1", "--out", str(target))
    assert code == 2 and "--force" in err and target.read_text() == "mine"
    code, _, err = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "1",
                        "--out", str(tmp_path / "missing" / "run.json"))
    assert code == 2 and "does not exist" in err
    if os.path.isdir("/proc"):  # a folder nobody can create files in, not even root
        code, _, err = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "1",
                            "--out", "/proc/run.json")
        assert code == 1 and "cannot write in folder /proc" in err  # a write that fails: run-time failure
    monkeypatch.undo()
    code, _, _ = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "1", "--quiet",
                      "--out", str(target), "--force")
    assert code == 0 and json.loads(target.read_text())["algorithm"] == "dp-logreg"


def test_cli_errors_name_the_option_the_user_typed(capsys):
    cases = [(("--n-train", "3"), "--n-train=3 is fewer"), (("--iterations", "100000000000000"), "--iterations must"),
             (("--graph", "ring"), "--graph applies"), (("--delta", "2"), "--delta must be in (0, 1)")]
    for extra, fragment in cases:
        code, _, err = _run(capsys, "--algorithm", "dp-admm", "--data", "synthetic", "--epsilon", "1", *extra)
        assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, (extra, err)


def test_cli_errors(capsys, tmp_path):
    code, _, err = _run(capsys, "--algorithm", "dp-logreg", "--data", str(tmp_path / "missing"), "--epsilon", "1")
    assert code == 2 and "missing" in err
    code, _, err = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "-1")
    assert code == 2 and "epsilon" in err
    code, _, err = _run(capsys, "--algorithm", "nope", "--data", "synthetic", "--epsilon", "1")
    assert code == 2 and "algorithm" in err
    code, _, err = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "1", "--agents", "3")
    assert code == 2 and "agents" in err
    code, _, err = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "1", "--option", "lam")
    assert code == 2 and "KEY=VALUE" in err

