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
import numpy as np
import pytest

from dpkit.accounting.events import event_from_dict
from dpkit.accounting.registry import make_accountant
from dpkit.cli.main import main
from dpkit.report import build_report, load_document, rerun, write_report
from dpkit.report.document import document_from_dict

from test_report_bibliography import parse_bibtex

EPSILON_ARGV = ["epsilon", "--mechanism", "gaussian", "--sigma", "2.0", "--count", "10", "--delta", "1e-5",
                "--accountant", "rdp", "--json"]
CALIBRATE_ARGV = ["calibrate", "--epsilon", "1", "--delta", "1e-5", "--mechanism", "gaussian", "--count", "50",
                  "--accountant", "pld", "--json"]
TRAIN_ARGV = ["train", "--algorithm", "dp-admm", "--data", "synthetic", "--epsilon", "1", "--delta", "1e-5",
              "--agents", "3", "--iterations", "8", "--seed", "0", "--json", "--quiet"]
NONPRIVATE_ARGV = ["train", "--algorithm", "admm", "--data", "synthetic", "--agents", "3", "--iterations", "8",
                   "--seed", "0", "--json", "--quiet"]
HETERO_ARGV = ["train", "--algorithm", "hetero-admm", "--data", "synthetic", "--epsilon", "1", "--agents", "3",
               "--iterations", "5", "--seed", "0", "--json", "--quiet"]
# a passing audit document: the built-in (float-safe) Laplace, audited as executed (float bits on)
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
                       ("audit", AUDIT_ARGV), ("nonprivate", NONPRIVATE_ARGV), ("hetero", HETERO_ARGV)):
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
    # the document's own number (rdp) equals the report's recomputation under the same accountant
    (row,) = section["consistency"]
    assert row["accountant"] == "rdp" and row["document"] == row["report"] == rows["rdp"]["epsilon"]
    assert row["identical"] is True and row["matched"] is True and row["difference"] == 0.0
    assert row["rtol"] == rerun.RERUN_RTOL


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


def _ledger_of(payload: dict):
    """An independent rebuild of a train document's ledger with the mechanisms layer's own ledger type."""
    from dpkit.mechanisms.ledger import PrivacyLedger

    groups = payload["ledger"]["groups"]
    ledger = PrivacyLedger(sum(len(g["agents"]) for g in groups), neighbouring=payload["ledger"]["neighbouring"])
    for group in groups:
        for agent in group["agents"]:
            for event, count in group["events"]:
                ledger.record(agent, event_from_dict(event), count)
    return ledger


def _independent_table(payload: dict, delta: float) -> dict[str, float]:
    """ε at ``delta`` under every single accountant that supports each group's ledger: the worst group."""
    ledger = _ledger_of(payload)
    parts = list(dict.fromkeys(e for e in map(ledger.agent_event, range(ledger.agents)) if e is not None))
    out = {}
    for name in ("rdp", "zcdp", "pld", "gdp", "analytic", "approx"):
        accountants = [make_accountant(name, neighbouring=ledger.neighbouring) for _ in parts]
        if not all(a.supports(p) for a, p in zip(accountants, parts)):
            continue
        out[name] = max(a.compose(p).get_epsilon(delta).epsilon for a, p in zip(accountants, parts))
    return out


def _check_train_section(section: dict, payload: dict) -> None:
    """The report's train section against the document and against independent recomputations."""
    from dpkit.algorithms.substrate.result import account as tightest_over_ledger

    guarantee = payload["guarantee"]
    relation = payload["ledger"]["neighbouring"]
    assert section["neighbouring"] == relation == guarantee["neighbouring"]
    train = section["train"]
    assert train["variant"] == payload["variant"] and train["algorithm"] == payload["algorithm"]
    assert train["accuracy"] == payload["accuracy"]
    assert train["majority_accuracy"] == payload["config"]["majority_accuracy"]
    assert train["certified"] == guarantee and train["paper_claim"] == payload["paper_claim"]
    # the certified number: recomputed by the report, and independently from a rebuilt PrivacyLedger
    independent = tightest_over_ledger(_ledger_of(payload), guarantee["delta"]).to_dict()
    assert section["certified"]["report"] == independent
    assert independent["epsilon"] == guarantee["epsilon"] and independent["accountant"] == guarantee["accountant"]
    (row, *rest) = section["consistency"]
    assert row["scope"].startswith("tightest") and row["accountant"] == row["report_accountant"] == guarantee["accountant"]
    assert row["document"] == guarantee["epsilon"] == row["report"]
    assert row["identical"] is True and row["matched"] is True and row["ledger_hash_identical"] is True
    assert row["difference"] == 0.0 and row["rtol"] == rerun.RERUN_RTOL
    # the accountant table: every single accountant, recomputed independently (worst group of agents)
    table = {r["accountant"]: r["epsilon"] for r in section["accounting"]["at_delta"]}
    assert table == _independent_table(payload, guarantee["delta"])
    assert guarantee["accountant"] in table
    # the certified ε is the tightest certified bound: no accountant's certified row is below it
    assert all(eps >= guarantee["epsilon"] * (1 - 1e-12) for name, eps in table.items() if name != "analytic")
    for extra in rest:
        assert extra["scope"] == "accountant table" and extra["report"] == table[extra["accountant"]]
        assert extra["matched"] is True
    # the ledger summary: per group of agents, its events and counts
    summary = [(g["agents"], [(e["event"], e["count"]) for e in g["events"]]) for g in train["ledger"]]
    assert summary == [(g["agents"], [(e, c) for e, c in g["events"]]) for g in payload["ledger"]["groups"]]


def test_train_report_certified_paper_claim_and_consistency(written, docs):
    payload = json.loads(docs["train"].read_text())
    section = written.report["documents"][1]
    assert section["neighbouring"] == "replace-one"
    _check_train_section(section, payload)
    roles = {a["analysis"]: a["role"] for a in section["analyses"]}
    assert roles == {"guarantee": "certified", "paper_claim": "paper claim"}
    claim = [a for a in section["analyses"] if a["role"] == "paper claim"][0]
    assert claim["epsilon"] == payload["paper_claim"]["epsilon"] and claim["valid"] == payload["paper_claim"]["valid"]
    assert claim["accountant"] is None and claim["method"] == payload["paper_claim"]["rule"]
    assert section["result"]["test accuracy"] == payload["accuracy"]
    assert section["result"]["certified epsilon (record-level)"] == payload["guarantee"]["epsilon"]
    assert section["result"]["majority-class accuracy"] == payload["config"]["majority_accuracy"]
    # a Gaussian ledger: every accountant answers, and the single group makes the table row a second check
    assert [r["scope"] for r in section["consistency"]] == ["tightest accountant over the rebuilt ledger",
                                                            "accountant table"]


def test_train_markdown_states_variant_certificate_claim_and_ledger(written, docs):
    payload = json.loads(docs["train"].read_text())
    text = written.markdown.read_text()
    part = text.split("## 2. ")[1].split("## 3. ")[0]
    g, claim = payload["guarantee"], payload["paper_claim"]
    assert f"variant `{payload['variant']}`" in part
    assert f"certified by the `{g['accountant']}` accountant" in part and f"record-level, {g['neighbouring']}" in part
    assert f"**The paper's claim** ({claim['rule']})" in part
    assert ("a valid bound for this run" if claim["valid"] else "NOT a valid bound") in part
    assert f"{payload['accuracy']!r} (majority class: {payload['config']['majority_accuracy']!r})" in part
    (group,) = payload["ledger"]["groups"]
    (event, count), = group["events"]
    agents = ", ".join(map(str, group["agents"]))
    assert re.search(rf"\| {agents} \| Gaussian\(sigma={event['sigma']:.6g}, sensitivity=[^|]*\) \| {count} \|", part)
    assert "(tightest accountant over the rebuilt ledger)" in part and "(identical)" in part
    assert "- **As executed:** private as executed (every release drew float-safe noise)" in part


def test_a_run_with_continuous_noise_is_reported_as_not_private_as_executed(tmp_path):
    # the opt-out's notes reach the report: the run's label and the mechanism's own note, in the train section
    path = tmp_path / "continuous.json"
    path.write_text(json.dumps(cli_json([*TRAIN_ARGV, "--continuous-noise"])))
    text = write_report([path], tmp_path / "rep").markdown.read_text()
    line = next(line for line in text.splitlines() if line.startswith("- **As executed:**"))
    assert "**NOT private as executed**" in line and "GaussianMechanism draws continuous floating-point noise" in line


def test_extra_guarantees_are_labelled_and_cited(docs):
    payload = json.loads(docs["hetero"].read_text())
    assert payload["extra_guarantees"], "hetero-admm reports a label-only guarantee"
    report = build_report([docs["hetero"]], rerun=False)
    section = report["documents"][0]
    _check_train_section(section, payload)
    extras = {a["analysis"]: a for a in section["analyses"] if a["role"] == "extra guarantee"}
    assert set(extras) == set(payload["extra_guarantees"])
    cited = set(section["references"])
    for name, extra in payload["extra_guarantees"].items():
        assert extras[name]["epsilon"] == extra["epsilon"] and set(extra["references"]) <= cited
    # the ledger's randomized response and Gaussian releases, the accountants shown, the algorithm's paper
    expected = {"wang2020privacy", "warner1965randomized", "dwork2006our", *payload["guarantee"]["references"]}
    for row in section["accounting"]["at_delta"]:
        expected |= set(row["references"])
    for extra in payload["extra_guarantees"].values():
        expected |= set(extra["references"])
    assert cited == expected
    assert "becker1996adult" not in cited  # synthetic data


def test_parallel_composition_over_groups_of_agents(docs):
    """Two groups of agents with different noise: the report certifies the worst group, as the run's accountant does."""
    from dpkit.accounting.events import GaussianEvent
    from dpkit.algorithms.substrate.result import account as tightest_over_ledger
    from dpkit.mechanisms.ledger import PrivacyLedger

    payload = json.loads(docs["train"].read_text())
    ledger = PrivacyLedger(3, neighbouring="replace-one")
    for agent, sigma in ((0, 4.0), (1, 4.0), (2, 3.0)):
        ledger.record(agent, GaussianEvent(sigma, 1.0), 5)
        ledger.record(agent, GaussianEvent(2 * sigma, 1.0), 2)
    guarantee = tightest_over_ledger(ledger, 1e-5)
    forged = copy.deepcopy(payload)
    forged.update(ledger=ledger.to_dict(), guarantee=guarantee.to_dict(), epsilon_corrected=guarantee.epsilon)
    assert [g["agents"] for g in forged["ledger"]["groups"]] == [[0, 1], [2]]
    section = build_report([document_from_dict(forged)], rerun=False)["documents"][0]
    _check_train_section(section, forged)
    worst = make_accountant("gdp", neighbouring="replace-one").compose(ledger.agent_event(2)).get_epsilon(1e-5)
    assert section["certified"]["report"]["epsilon"] == worst.epsilon == guarantee.epsilon
    assert all(r["unit"] == "agents [2]" for r in section["accounting"]["at_delta"])
    assert [r["scope"] for r in section["consistency"]] == ["tightest accountant over the rebuilt ledger"]
    # a document whose guarantee does not match its ledger is flagged
    forged["guarantee"] = {**forged["guarantee"], "epsilon": guarantee.epsilon * 0.9}
    row = build_report([document_from_dict(forged)], rerun=False)["documents"][0]["consistency"][0]
    assert row["matched"] is False and row["identical"] is False
    assert math.isclose(row["difference"], guarantee.epsilon * 0.1, rel_tol=1e-9)


def test_adult_data_is_cited_with_the_algorithm_papers():
    payload = cli_json(["train", "--algorithm", "dp-logreg", "--data", "adult", "--n-train", "2000", "--epsilon", "1",
                        "--seed", "0", "--json", "--quiet"])
    assert payload["config"]["data"].startswith("adult")
    section = build_report([payload], rerun=False)["documents"][0]
    _check_train_section(section, payload)
    keys = set(section["references"])
    assert {"becker1996adult", "song2013stochastic", "bassily2014private", "dong2022gaussian"} <= keys
    assert "dwork2006our" in keys and "ding2020towards" not in keys and "huang2019dpadmm" not in keys


def test_train_document_in_the_old_format_is_refused(docs):
    payload = json.loads(docs["train"].read_text())
    old = {k: v for k, v in payload.items() if k != "guarantee"}
    old["guarantees"] = {"corrected": payload["guarantee"]}
    old["ledger"] = payload["ledger"]["groups"]
    with pytest.raises(ValueError, match="old format"):
        document_from_dict(old)
    broken = {**payload, "ledger": payload["ledger"]["groups"]}
    with pytest.raises(ValueError, match="ledger"):
        document_from_dict(broken)


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


def test_rerun_of_a_train_document_reproduces_and_detects_a_forged_number(docs):
    payload = json.loads(docs["train"].read_text())
    section = build_report([docs["train"]], rerun=True)["documents"][0]
    fields = {f["field"]: f for f in section["rerun"]["fields"]}
    assert {"accuracy", "epsilon_corrected", "guarantee.accountant", "guarantee.ledger_hash", "epsilon_paper"} <= set(fields)
    for name, field in fields.items():
        assert field["identical"] and field["matched"], name
    assert fields["guarantee.ledger_hash"]["original"] == payload["guarantee"]["ledger_hash"]
    forged = copy.deepcopy(payload)
    forged["accuracy"] = payload["accuracy"] + 0.01
    forged["guarantee"]["epsilon"] = payload["guarantee"]["epsilon"] * (1 + 1e-6)
    section = build_report([document_from_dict(forged)], rerun=True)["documents"][0]
    fields = {f["field"]: f for f in section["rerun"]["fields"]}
    assert section["rerun"]["matched"] is False and fields["accuracy"]["matched"] is False
    assert fields["epsilon_corrected"]["matched"] is True  # untouched
    row = section["consistency"][0]
    assert row["matched"] is False and row["identical"] is False and row["difference"] < 0


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
    assert list(_lines(figure, 1)["private"].get_ydata()) == training["history"]["test_risk"]

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
    audit = {"clopper1934use", "przyborowski1940homogeneity", "ding2018detecting",  # the confirmation's tests
             "dwork2006calibrating"}  # the audited Laplace mechanism
    witness = written.report["documents"][2]["audit"]["witness"]["event"]
    if "learned" in str(witness.get("feature", "")):
        audit.add("bichsel2021dpsniper")
    assert set(parsed) == gaussian_accountants | {"huang2019dpadmm", "ding2020towards"} | audit
    assert written.report["documents"][3]["references"] == ["ding2020towards"]  # admm: Ding et al. 2020, eqs. 3-4
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
    status, _, err = run_cli(["report", str(docs["calibrate"]), "--out", str(out), "--no-rerun", "--force"])
    assert status == 2 and "mine.txt" in err  # --force replaces the whole folder: only a report's own
    assert (out / "mine.txt").read_text() == "user data" and len(list(out.iterdir())) == 1
    (out / "mine.txt").unlink()
    (out / "report.md").write_text("an older report")
    (out / "doc1_training.png").write_bytes(b"an older plot")
    status, stdout, _ = run_cli(["report", str(docs["calibrate"]), "--out", str(out), "--no-rerun", "--force",
                                 "--no-plots", "--json"])
    assert status == 0
    assert sorted(p.name for p in out.iterdir()) == ["references.bib", "report.json", "report.md"]
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


def test_train_report_says_how_a_file_was_scaled_and_which_model_was_returned(tmp_path, monkeypatch):
    """A run on a user's CSV (private ranges, class-prior fallback): the report's data table carries the
    read-as line, the scaling and the returned model, as the run's config states them."""
    gen = np.random.default_rng(0)
    x = gen.normal(size=(1500, 2))
    rows = "".join(f"{40 + 10 * a},{b},{int(a + b > 0)}\n" for a, b in x)
    (tmp_path / "table.csv").write_text("age,score,y\n" + rows)
    monkeypatch.chdir(tmp_path)
    payload = cli_json(["train", "--algorithm", "dp-logreg", "--data", "table.csv", "--epsilon", "1", "--json",
                        "--quiet"])
    (tmp_path / "run.json").write_text(json.dumps(payload))
    text = write_report([tmp_path / "run.json"], tmp_path / "rep", rerun=False).markdown.read_text()
    assert f"| scaling | {payload['config']['scaling']} |" in text
    assert f"| returned model | {payload['config']['fallback']['chosen']} |" in text
    assert "| data_read_as | CSV (from the extension .csv; label: the last column; scaling: column ranges" in text
