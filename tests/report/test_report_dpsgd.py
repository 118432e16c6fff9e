"""A ``dpkit dpsgd --json`` document in a report: its numbers summarised by role, and a rerun that reproduces them."""

from __future__ import annotations

import copy

import pytest

from dpkit.commands.runner import run_json
from dpkit.report import write_report
from dpkit.report.document import document_from_dict

STATEMENT = ["dpsgd", "--examples", "6000", "--batch", "60", "--epochs", "2", "--noise-multiplier", "1.1",
             "--delta", "1e-5", "--max-examples-per-user", "2"]


@pytest.fixture(scope="module")
def statement() -> dict:
    return run_json(STATEMENT)


def test_a_dpsgd_statement_reproduces_and_its_rows_carry_its_numbers(tmp_path, statement):
    result = write_report([statement], tmp_path / "rep", plots=False)
    section = result.report["documents"][0]
    assert result.rerun_matched is True
    fields = {f["field"]: f for f in section["rerun"]["fields"]}
    for name in ("poisson.epsilon_rdp", "poisson.epsilon_pld", "shuffled.epsilon_once_per_epoch",
                 "user_level.epsilon_rdp", "noise_multiplier", "steps"):
        assert fields[name]["matched"], fields[name]
    rows = {a["analysis"]: a for a in section["analyses"]}
    assert rows["Poisson sampling (rdp)"]["epsilon"] == statement["poisson"]["epsilon_rdp"]
    assert rows["Poisson sampling (pld)"]["epsilon"] == statement["poisson"]["epsilon_pld"]
    assert rows["shuffled batches, as papers report"]["role"] == "assumption"
    # The proven any-order bound (no amplification) cannot be below the Poisson-amplified one.
    assert rows["any data order (once per epoch)"]["epsilon"] >= statement["poisson"]["epsilon_pld"]
    markdown = result.markdown.read_text()
    assert "`dpkit dpsgd`" in markdown and "| assumption |" in markdown
    assert "mironov2019sampled" in result.references  # the subsampled-Gaussian RDP the numbers rest on


def test_a_tampered_dpsgd_number_is_caught_by_the_rerun(tmp_path, statement):
    forged = copy.deepcopy(statement)
    forged["poisson"]["epsilon_pld"] = statement["poisson"]["epsilon_pld"] / 2
    result = write_report([forged], tmp_path / "rep", plots=False)
    fields = {f["field"]: f for f in result.report["documents"][0]["rerun"]["fields"]}
    assert result.rerun_matched is False
    assert not fields["poisson.epsilon_pld"]["matched"] and fields["poisson.epsilon_rdp"]["matched"]


def test_a_dpsgd_document_without_its_statement_is_refused(statement):
    broken = {k: v for k, v in statement.items() if k not in ("poisson", "rdp")}
    with pytest.raises(ValueError, match="dpsgd document needs"):
        document_from_dict(broken)
