"""``train()`` and ``dpkit train``: one call, one result type, provenance, clear errors, safe --out."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from dpkit.algorithms.substrate.data import make_synthetic, train_test_split
from dpkit.algorithms.substrate.evaluation import majority_accuracy
from dpkit.algorithms.registry import ALGORITHMS, get_algorithm
from dpkit.algorithms.substrate.result import TrainingResult
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


def test_cli_text_reports_the_gate_and_where_the_paper_claim_is(capsys):
    """ipp-admm's text output counts the gate's chances, skips and broadcasts as its JSON does, and a
    corrected run of an algorithm with a paper variant points to it."""
    argv = ("--algorithm", "ipp-admm", "--data", "synthetic", "--epsilon", "1", "--agents", "3", "--quiet",
            "--option", "cap=2", "--iterations", "6")
    _, out, _ = _run(capsys, *argv, "--json")
    config = json.loads(out)["config"]
    _, text, _ = _run(capsys, *argv)
    queries = sum(config["gate_queries"])
    skipped = queries - sum(config["broadcasts"]) + sum(config["forced_broadcasts"])
    assert (f"skipped {skipped} of {queries} chances" in text
            and f"{sum(config['broadcasts'])} broadcasts ({sum(config['forced_broadcasts'])} by the deadline)" in text
            and f"{config['broadcasts_saved']} of 18 saved" in text)
    low, high = config["gate_skip_probability"]
    expected = sorted(config["gate_expected_skip_share"])
    assert (f"runs of this gate skip {expected[0]:.0%}-{expected[1]:.0%} on average at constant scores "
            f"+-{config['clip']:g}, a query alone {low:.2f}-{high:.2f} at any score" in text) and 0.0 < low <= high < 1.0
    assert "--variant paper runs the paper's" in text
    _, text, _ = _run(capsys, "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "1", "--quiet")
    assert "none (no paper variant)" in text and "gate " not in text


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
    cases = [(("--n-train", "3", "--agents", "5"), "--n-train=3 is fewer"), (("--iterations", "100000000000000"), "--iterations must"),
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



def test_cli_out_writes_diagnostics_only_when_asked(capsys, tmp_path):
    """The private-data numbers (training risk, solver gradient norm) reach --out only with
    --diagnostics, and then only inside the part labelled as not covered by epsilon."""
    plain, asked = tmp_path / "plain.json", tmp_path / "asked.json"
    argv = ("--algorithm", "pp-admm", "--data", "synthetic", "--epsilon", "1", "--agents", "3", "--iterations", "3",
            "--n-train", "900", "--quiet")
    code, out, _ = _run(capsys, *argv, "--out", str(plain))
    assert code == 0 and "diagnostics" not in out
    document = json.loads(plain.read_text())
    assert "diagnostics" not in document and "empirical_risk" not in json.dumps(document)
    assert "max_grad_norm" not in document["config"]
    code, out, _ = _run(capsys, *argv, "--out", str(asked), "--diagnostics")
    full = json.loads(asked.read_text())
    assert code == 0 and "not covered by epsilon" in out and "empirical_risk (last)" in out
    assert full["diagnostics"]["label"].startswith("not covered by epsilon")
    assert len(full["diagnostics"]["history"]["empirical_risk"]) == len(full["history"]["iteration"])
    for doc in (full, document):
        del doc["seconds"], doc["config"]["seconds_loop"]
    assert {k: v for k, v in full.items() if k != "diagnostics"} == document


def test_seconds_include_the_noise_calibration(monkeypatch):
    """``seconds`` is the whole call: a calibration that takes (at least) 0.3 s shows in it, not in the loop's time."""
    import time

    from dpkit.algorithms.baselines import dp_logreg

    calibrate = dp_logreg.calibrate_gradient_noise

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return calibrate(*args, **kwargs)

    monkeypatch.setattr(dp_logreg, "calibrate_gradient_noise", slow)
    result = train("dp-logreg", DATA, epsilon=1.0, n_train=900, iterations=5)
    assert result.seconds >= 0.3 + result.config["seconds_loop"]


def test_cli_label_and_format_choose_how_a_file_is_read(capsys, tmp_path):
    """The label column is the one named, not the last one; a .txt file is read only as the format given."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (600, 3))
    label = (x @ [2.0, -1.0, 0.5] > 0).astype(int)
    flag = rng.integers(0, 2, 600)  # a 0/1 column that is not the label, last as a careless export puts it
    table = tmp_path / "table.txt"
    table.write_text("y,a,b,c,flag\n" + "".join(f"{l},{r[0]},{r[1]},{r[2]},{f}\n" for l, r, f in zip(label, x, flag)))
    argv = ("--algorithm", "dp-logreg", "--data", str(table), "--epsilon", "5", "--quiet", "--json")
    code, _, err = _run(capsys, *argv)
    assert code == 2 and "--format" in err and len(err.strip().splitlines()) == 1
    code, out, _ = _run(capsys, *argv, "--format", "csv", "--label", "y")
    payload = json.loads(out)
    assert code == 0 and payload["config"]["dimension"] == 5  # a, b, c, flag and the bias column
    assert payload["config"]["data_read_as"].startswith("CSV (--format; label: column 'y'; scaling: column ranges "
                                                        "estimated from the training rows with noise, charged to epsilon")
    code, out, _ = _run(capsys, *argv, "--format", "csv", "--label", "0")
    assert code == 0 and json.loads(out)["accuracy"] == payload["accuracy"]
    code, _, err = _run(capsys, *argv, "--format", "csv", "--label", "income")
    assert code == 2 and "'income' is not in the header" in err


def test_few_rows_per_agent_are_warned_in_the_result_and_the_text(capsys):
    from dpkit.algorithms.training import MIN_ROWS_PER_AGENT

    result = train("pp-admm", DATA, epsilon=1.0, agents=3, iterations=2, n_train=900)
    assert any(note.startswith("warning: agents hold as few as 300 rows") for note in result.notes)
    assert not any(n.startswith("warning") for n in train("admm", DATA, agents=3, iterations=2, n_train=900).notes)
    assert 300 < MIN_ROWS_PER_AGENT
    code, out, _ = _run(capsys, "--algorithm", "pp-admm", "--data", "synthetic", "--epsilon", "1", "--agents", "3",
                        "--iterations", "2", "--n-train", "900", "--quiet")
    assert code == 0 and "warning            agents hold as few as 300 rows" in out


def test_cli_scales_a_file_privately_by_default(capsys, tmp_path):
    """Without public bounds, a file's ranges come from its training rows, charged to ε (the read-as line
    says so); --no-scaling uses the columns as given, where one huge column swamps every row."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=3000), rng.normal(size=3000)
    label = (a + b > 0).astype(int)
    table = tmp_path / "raw.csv"
    table.write_text("age,small,huge,y\n" + "".join(f"{50 + 10 * p},{0.01 * q},{h},{l}\n" for p, q, h, l in zip(
        a, b, rng.uniform(1e5, 2e5, 3000), label)))
    argv = ("--algorithm", "dp-logreg", "--data", str(table), "--epsilon", "1", "--quiet", "--json")
    scaled = json.loads(_run(capsys, *argv)[1])
    assert "column ranges estimated from the training rows with noise, charged to epsilon" in scaled["config"]["data_read_as"]
    assert scaled["guarantee"]["epsilon"] <= 1.0 and scaled["accuracy"] >= scaled["config"]["majority_accuracy"] + 0.2
    assert scaled["config"]["fallback"]["chosen"] == "trained model"
    text = _run(capsys, *argv[:-1])[1]  # the text output names the returned model
    assert "\nmodel              trained model (the most noisy correct training answers of" in text
    as_given = json.loads(_run(capsys, *argv, "--no-scaling")[1])
    assert "none (--no-scaling)" in as_given["config"]["data_read_as"]
    assert as_given["accuracy"] <= as_given["config"]["majority_accuracy"] + 0.1
    for extra, message in ((("--no-scaling", "--public-scaling"), "at most one of"),
                           (("--bounds", "1,1,1", "--no-scaling"), "at most one of")):
        code, _, err = _run(capsys, *argv, *extra)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    code, _, err = _run(capsys, "--algorithm", "dp-logreg", "--epsilon", "1", "--no-scaling", "--quiet")
    assert code == 2 and "--no-scaling applies to data files only" in err
