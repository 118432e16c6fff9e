"""``train()`` and ``dpkit train``: one call, one result type, provenance, clear errors, safe --out."""

from __future__ import annotations

import json

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
    monkeypatch.undo()
    code, _, _ = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "1", "--quiet",
                      "--out", str(target), "--force")
    assert code == 0 and json.loads(target.read_text())["algorithm"] == "dp-logreg"


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

