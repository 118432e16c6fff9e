"""``dpkit demo``: the README's main job, at a reduced size."""

from __future__ import annotations

import json

import pytest

from dpkit.accounting.calibration import calibrate_gaussian_sigma
from dpkit.cli.demo import calibration_table
from dpkit.cli.main import main


def test_demo_writes_a_report_whose_numbers_trace_to_the_documents(tmp_path, capsys):
    out = tmp_path / "demo"
    status = main(["demo", "--out", str(out), "--iterations", "5", "--audit-samples", "100000", "--quiet"])
    stdout = capsys.readouterr().out
    assert status == 0
    assert f"report written to {out / 'report' / 'report.md'}" in stdout
    documents = {name: json.loads((out / name).read_text()) for name in
                 ("calibration.json", "train.json", "train-nonprivate.json", "audit.json")}
    report = json.loads((out / "report" / "report.json").read_text())
    markdown = (out / "report" / "report.md").read_text()
    private = documents["train.json"]
    # the private run spends at most its budget, and the report quotes the run's own numbers
    assert private["epsilon_corrected"] <= 1.0
    assert f"{private['accuracy']}" in markdown
    assert documents["audit.json"]["violation"] is False
    assert report["rerun_matched"] is True
    assert (out / "report" / "references.bib").read_text().count("@") >= 3
    assert any(p.suffix == ".png" and p.stat().st_size > 1000 for p in (out / "report").iterdir())


def test_demo_refuses_a_non_empty_folder_and_keeps_its_files(tmp_path, capsys):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["demo", "--out", str(out), "--quiet"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_calibration_table_rows_match_the_calibrator(epsilon):
    (row,) = calibration_table(budgets=(epsilon,), count=20)
    for accountant in ("analytic", "rdp", "zcdp"):
        assert row[accountant] == calibrate_gaussian_sigma(epsilon, 1e-5, count=20, accountant=accountant).parameter
    # the exact analysis needs the least noise; RDP and zCDP are upper bounds on ε, so they need at least as much
    assert row["analytic"] <= row["rdp"] <= row["zcdp"] * (1 + 1e-6)
