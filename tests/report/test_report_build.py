"""dpkit report: numbers equal the API's, hashes, reruns, plots, Markdown, BibTeX selection, CLI."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import re
from pathlib import Path

import mpmath
import pytest

from dpkit.accounting.events import event_from_dict
from dpkit.accounting.registry import make_accountant
from dpkit.cli.main import main
from dpkit.report import build_report, load_document, write_report
from dpkit.report.document import document_from_dict

from test_report_bibliography import parse_bibtex

EPSILON_ARGV = ["epsilon", "--mechanism", "gaussian", "--sigma", "2.0", "--count", "10", "--delta", "1e-5",
                "--accountant", "rdp", "--json"]
CALIBRATE_ARGV = ["calibrate", "--epsilon", "1", "--delta", "1e-5", "--mechanism", "gaussian", "--count", "50",
                  "--accountant", "pld", "--json"]
TRAIN_ARGV = ["train", "--algorithm", "dp-admm", "--data", "builtin", "--epsilon", "1", "--delta", "1e-5",
              "--agents", "3", "--iterations", "8", "--seed", "0", "--json", "--quiet"]
NONPRIVATE_ARGV = ["train", "--algorithm", "admm", "--data", "builtin", "--agents", "3", "--iterations", "8",
                   "--seed", "0", "--json", "--quiet"]
AUDIT_ARGV = ["audit", "--mechanism", "laplace", "--claimed-epsilon", "1", "--samples", "40000", "--seed", "0",
              "--quiet", "--json"]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def cli_json(argv: list[str]) -> dict:
    status, out, err = run_cli(argv)
    assert status == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("docs")
    paths = {}
    for name, argv in (("epsilon", EPSILON_ARGV), ("calibrate", CALIBRATE_ARGV), ("train", TRAIN_ARGV),
                       ("audit", AUDIT_ARGV), ("nonprivate", NONPRIVATE_ARGV)):
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps(cli_json(argv)))
    return paths


@pytest.fixture(scope="module")
def written(docs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "rep"
    return write_report([docs["epsilon"], docs["train"], docs["audit"], docs["nonprivate"]], out, rerun=True)


# ----------------------------------------------------------------------------- numbers


def _gaussian_delta_mp(mu: float, eps: float) -> mpmath.mpf:
    """Exact δ(ε) of μ-GDP (Balle & Wang 2018, Thm 8) at 50 digits."""
    with mpmath.workdps(50):
        mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
        return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


def test_report_numbers_equal_api_numbers(docs):
    report = build_report([docs["epsilon"]], rerun=False)
    section = report["documents"][0]
    event = event_from_dict(json.loads(docs["epsilon"].read_text())["event"])
    rows = {r["accountant"]: r for r in section["accounting"]["at_delta"]}
    assert {"rdp", "zcdp", "pld", "gdp", "analytic"} <= set(rows)
    for name, row in rows.items():
        api = make_accountant(name, neighbouring="add-remove").compose(event).get_epsilon(1e-5)
        assert row["epsilon"] == api.epsilon, name
        assert row["epsilon_lower"] == api.epsilon_lower, name
    # the document's own number (rdp) equals the report's recomputation
    assert section["consistency"] == [{"accountant": "rdp", "document": rows["rdp"]["epsilon"],
                                       "report": rows["rdp"]["epsilon"], "matched": True}]


def test_profile_is_an_upper_bound_close_to_the_exact_gaussian_profile(docs):
    section = build_report([docs["epsilon"]], rerun=False)["documents"][0]
    profile = section["accounting"]["profile"]
    mu = math.sqrt(10) / 2.0  # ten Gaussians of sigma 2: mu = sqrt(10)/2 (Dong, Roth & Su 2022, Cor. 3.3)
    for eps, gdp, pld_up, pld_low in zip(profile["epsilons"], profile["deltas"]["gdp"], profile["deltas"]["pld"],
                                         profile["pld_lower"]):
        exact = float(_gaussian_delta_mp(mu, eps))
        assert gdp >= exact * (1 - 1e-12) and gdp <= exact * (1 + 1e-8) + 1e-300
        assert pld_low <= exact * (1 + 1e-12) <= pld_up * (1 + 1e-12) + 1e-300
        for name in ("rdp", "zcdp"):
            assert profile["deltas"][name][profile["epsilons"].index(eps)] >= exact * (1 - 1e-12)


def test_calibrate_document_rebuilds_the_calibrated_event(docs):
    payload = json.loads(docs["calibrate"].read_text())
    section = build_report([docs["calibrate"]], rerun=False)["documents"][0]
    pld = [r for r in section["accounting"]["at_delta"] if r["accountant"] == "pld"][0]
    assert pld["epsilon"] == payload["epsilon"] <= 1.0
    assert section["consistency"][0]["matched"]


def test_train_report_numbers_and_paper_vs_corrected(written, docs):
    payload = json.loads(docs["train"].read_text())
    section = written.report["documents"][1]
    assert section["neighbouring"] == "replace-one"
    roles = {a["analysis"]: a["role"] for a in section["analyses"]}
    assert roles["paper"] == "paper" and roles["corrected"] == "corrected"
    gdp = [r for r in section["accounting"]["at_delta"] if r["accountant"] == "gdp"][0]
    assert math.isclose(gdp["epsilon"], payload["epsilon_corrected"], rel_tol=1e-9)
    assert section["result"]["test accuracy"] == payload["accuracy"]


def test_audit_section(written, docs):
    payload = json.loads(docs["audit"].read_text())
    audit = written.report["documents"][2]["audit"]
    for key in ("epsilon_lower_bound", "confidence", "samples", "violation", "claimed_epsilon"):
        assert audit[key] == payload[key]
    assert audit["verdict"].startswith("VIOLATION" if payload["violation"] else "no violation")


# ----------------------------------------------------------------------------- provenance and reruns


def test_config_hash_stable_and_sensitive_to_every_parameter():
    base = cli_json(EPSILON_ARGV)["dpkit"]["config_hash"]
    assert cli_json(EPSILON_ARGV)["dpkit"]["config_hash"] == base
    changes = {"--sigma": "2.5", "--count": "11", "--delta": "2e-5", "--accountant": "pld"}
    hashes = set()
    for option, value in changes.items():
        argv = list(EPSILON_ARGV)
        argv[argv.index(option) + 1] = value
        hashes.add(cli_json(argv)["dpkit"]["config_hash"])
    hashes.add(cli_json(EPSILON_ARGV[:-1] + ["--sensitivity", "0.5", "--json"])["dpkit"]["config_hash"])
    assert base not in hashes and len(hashes) == len(changes) + 1


def test_rerun_reproduces_every_document(written):
    assert written.rerun_matched is True
    for section in written.report["documents"]:
        rerun = section["rerun"]
        assert rerun["matched"] and rerun["config_hash_matched"] and rerun["fields"]
        assert all(f["identical"] for f in rerun["fields"]), section["command"]


def test_rerun_from_report_json_gives_same_epsilon_and_accuracy(written, docs):
    report = json.loads(written.json.read_text())
    train = report["documents"][1]
    again = cli_json(train["argv"])
    payload = json.loads(docs["train"].read_text())
    assert again["accuracy"] == payload["accuracy"]
    assert again["epsilon_corrected"] == payload["epsilon_corrected"]
    assert again["dpkit"]["config_hash"] == train["config_hash"]


def test_tampered_document_is_detected(docs):
    payload = json.loads(docs["epsilon"].read_text())
    forged = copy.deepcopy(payload)
    forged["epsilon"] = payload["epsilon"] * 0.5
    forged["dpkit"]["config"]["sigma"] = 3.0
    section = build_report([document_from_dict(forged)], rerun=True)["documents"][0]
    assert section["config_hash_valid"] is False
    assert section["rerun"]["matched"] is False
    assert section["consistency"][0]["matched"] is False


# ----------------------------------------------------------------------------- files, plots, Markdown


def test_files_and_plots_written(written):
    names = {p.name for p in written.out_dir.iterdir()}
    assert {"report.md", "report.json", "references.bib"} <= names
    expected = {"doc1_epsilon_vs_steps.png", "doc1_privacy_profile.png", "doc2_epsilon_vs_steps.png",
                "doc2_privacy_profile.png", "doc2_training.png", "tradeoff.png", "audit_roc.png"}
    assert expected <= names
    for path in written.plots.values():
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, path


def _lines(figure, axes_index=0):
    return {line.get_label(): line for line in figure.axes[axes_index].get_lines()}


def test_plotted_data_are_the_reports_numbers(written, tmp_path):
    from dpkit.report import plots

    report = written.report
    steps = report["documents"][0]["accounting"]["steps"]
    figure = plots.plot_epsilon_vs_steps(steps, tmp_path / "s.png")
    lines = _lines(figure)
    assert set(lines) == set(steps["epsilon"])
    for name, line in lines.items():
        assert list(line.get_xdata()) == steps["steps"] and list(line.get_ydata()) == steps["epsilon"][name]
    assert figure.axes[0].get_xlabel() and figure.axes[0].get_ylabel() and figure.axes[0].get_title()

    training = report["documents"][1]["training"]
    figure = plots.plot_training(training, tmp_path / "t.png")
    accuracy = _lines(figure, 0)
    assert list(accuracy["private"].get_ydata()) == training["history"]["test_accuracy"]
    assert list(accuracy["non-private (admm)"].get_ydata()) == training["nonprivate"]["history"]["test_accuracy"]
    assert list(_lines(figure, 1)["private"].get_ydata()) == training["history"]["empirical_risk"]

    audit = report["documents"][2]["audit"]
    figure = plots.plot_tradeoff(report, tmp_path / "f.png")
    point = _lines(figure)["doc 3: attack (estimate)"]
    w = audit["witness"]
    assert list(point.get_xdata()) == [w["p_denominator_estimate"]]
    assert list(point.get_ydata()) == [1.0 - w["p_numerator_estimate"]]
    # the certified trade-off curve of the epsilon document lies below the exact Gaussian curve G_mu
    from dpkit.accounting.gdp import gaussian_tradeoff

    curve = _lines(figure)["doc 1 (epsilon): certified trade-off"]
    exact = gaussian_tradeoff(math.sqrt(10) / 2, curve.get_xdata())
    assert all(curve.get_ydata() <= exact + 1e-9)
    assert max(exact - curve.get_ydata()) < 0.02


def test_markdown_renders_cleanly(written):
    text = written.markdown.read_text()
    assert not re.search(r"\bnan\b", text.lower())
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            counts = {len(re.findall(r"(?<!\\)\|", row)) for row in block}
            assert len(counts) == 1, block
            assert re.fullmatch(r"\|(---\|)+", block[1]), block[1]
            assert i == len(lines) or lines[i] == "", "a table must end with a blank line"
        else:
            i += 1
    for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (written.out_dir / target).is_file(), target
    assert text.count("```") % 2 == 0


def test_bibtex_has_exactly_the_keys_of_the_documents(written):
    parsed = parse_bibtex(written.bibtex.read_text())
    gaussian_accountants = {"mironov2017renyi", "balle2020hypothesis", "canonne2020discrete",  # rdp
                            "bun2016concentrated",  # zcdp
                            "koskela2020computing", "doroshenko2022connect",  # pld
                            "dong2022gaussian", "balle2018improving",  # gdp, analytic
                            "dwork2006our"}  # the Gaussian mechanism
    audit = {"clopper1934use", "ding2018detecting", "dwork2006calibrating"}  # the audited Laplace mechanism
    witness = written.report["documents"][2]["audit"]["witness"]["event"]
    if "learned" in str(witness.get("feature", "")):
        audit.add("bichsel2021dpsniper")
    assert set(parsed) == gaussian_accountants | {"huang2019dpadmm", "ding2020towards"} | audit
    assert written.report["documents"][3]["references"] == ["ding2020towards"]  # admm: seed 000 eqs. 3-4
    assert set(written.report["documents"][0]["references"]) == gaussian_accountants


# ----------------------------------------------------------------------------- inputs and CLI


def test_document_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_document(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_document(bad)
    bad.write_text(json.dumps({"epsilon": 1.0}))
    with pytest.raises(ValueError, match="not a dpkit JSON document"):
        load_document(bad)
    envelope = {"command": "demo", "argv": [], "config": {}, "config_hash": "", "environment": {}}
    with pytest.raises(ValueError, match="command must be one of"):
        document_from_dict({"dpkit": envelope})
    envelope["command"] = "train"
    with pytest.raises(ValueError, match="needs the fields"):
        document_from_dict({"dpkit": envelope, "accuracy": 0.5})
    with pytest.raises(TypeError, match="documents must be"):
        build_report([42], rerun=False)
    with pytest.raises(ValueError, match="at least one"):
        write_report([], tmp_path / "x")


def test_cli_refuses_non_empty_directory_and_prints_paths(docs, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / "mine.txt").write_text("user data")
    status, _, err = run_cli(["report", str(docs["calibrate"]), "--out", str(out), "--no-rerun"])
    assert status == 2 and "not empty" in err
    assert (out / "mine.txt").read_text() == "user data" and len(list(out.iterdir())) == 1
    status, stdout, _ = run_cli(["report", str(docs["calibrate"]), "--out", str(out), "--no-rerun", "--force",
                                 "--no-plots", "--json"])
    assert status == 0
    result = json.loads(stdout)
    assert Path(result["markdown"]).is_file() and result["rerun_matched"] is None
    assert result["dpkit"]["command"] == "report"
    status, stdout, _ = run_cli(["report", str(docs["calibrate"]), "--out", str(tmp_path / "new"), "--no-rerun"])
    assert status == 0 and "report.md" in stdout and "rerun:      numbers not checked" in stdout


def test_nonprivate_document_is_the_private_runs_baseline(written, docs):
    private, nonprivate = written.report["documents"][1], written.report["documents"][3]
    assert nonprivate["privacy_unit"].startswith("none") and nonprivate["neighbouring"] is None
    assert nonprivate["accounting"]["at_delta"] == []
    baseline = private["training"]["nonprivate"]
    assert baseline["argv"] == NONPRIVATE_ARGV
    assert baseline["accuracy"] == json.loads(docs["nonprivate"].read_text())["accuracy"]
    assert baseline["history"] == nonprivate["training"]["history"]
