"""Strict JSON: no command prints ``Infinity``, ``-Infinity`` or ``NaN``, not with ``--json``,
not in a file written with ``--out``, not in a report; infinities are the strings ``"inf"``/``"-inf"``.
``dpkit report`` still reads documents written before, with ``Infinity`` tokens."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from dpkit.cli.main import main
from dpkit.commands import strict_json
from dpkit.report import load_document

INFINITE_EPSILON = ["epsilon", "--mechanism", "gaussian", "--sigma", "1e-300", "--delta", "1e-5"]
INFINITE_DPSGD = ["dpsgd", "--examples", "10000", "--batch", "100", "--epochs", "2", "--delta", "1e-5",
                  "--noise-multiplier", "1e-300"]

COMMANDS = {
    "epsilon-infinite": INFINITE_EPSILON,
    "epsilon-compare-infinite": [*INFINITE_EPSILON, "--compare"],
    "epsilon-laplace-compare-infinite": ["epsilon", "--mechanism", "laplace", "--scale", "1e-300", "--delta", "1e-5",
                                         "--compare"],
    "epsilon-finite": ["epsilon", "--mechanism", "gaussian", "--sigma", "1.1", "--sampling", "poisson", "--rate",
                       "0.01", "--count", "100", "--delta", "1e-5"],
    "calibrate": ["calibrate", "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5"],
    "calibrate-huge-target": ["calibrate", "--mechanism", "gaussian", "--epsilon", "1e300", "--delta", "1e-5"],
    "dpsgd-infinite": INFINITE_DPSGD,
    "dpsgd-user-level-infinite": [*INFINITE_DPSGD, "--max-examples-per-user", "3"],
    "dpsgd-calibrate": ["dpsgd", "--examples", "10000", "--batch", "100", "--epochs", "2", "--delta", "1e-5",
                        "--epsilon", "1", "--rtol", "1e-3"],
    "audit-mechanism": ["audit", "--mechanism", "laplace", "--claimed-epsilon", "1", "--samples", "20000", "--seed",
                        "0", "--quiet"],
    "audit-float-events": ["audit", "--mechanism", "laplace", "--continuous-noise", "--claimed-epsilon", "1",
                           "--samples", "20000", "--float-events", "--quiet"],
    "audit-algorithm": ["audit", "--algorithm", "dvp-admm", "--iterations", "2", "--samples", "2000", "--quiet"],
    "train": ["train", "--algorithm", "dp-admm", "--data", "synthetic", "--epsilon", "1", "--delta", "1e-5",
              "--agents", "3", "--iterations", "8", "--seed", "0", "--quiet"],
}


def _refuse(token: str) -> Any:
    raise ValueError(f"non-standard JSON token {token}")


def strict_loads(text: str) -> Any:
    """Parse ``text`` as standard JSON: ``Infinity``, ``-Infinity`` and ``NaN`` are refused."""
    return json.loads(text, parse_constant=_refuse)


def run_text(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """What ``dpkit ARGV --json`` prints on stdout (exit 0, or 3 for a refuted audit)."""
    status = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert status in (0, 3), captured.err
    return captured.out


def leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


def test_the_encoding_round_trips_and_refuses_what_it_cannot_encode():
    value = {"epsilon": math.inf, "lower": -math.inf, "rows": [(1.0, math.inf)], "note": "inf is a word"}
    text = strict_json.dumps(value)
    assert strict_loads(text) == {"epsilon": "inf", "lower": "-inf", "rows": [[1.0, "inf"]], "note": "inf is a word"}
    assert strict_json.decode(strict_loads(text)) == {"epsilon": math.inf, "lower": -math.inf,
                                                      "rows": [[1.0, math.inf]], "note": "inf is a word"}
    assert strict_loads(strict_json.dumps(math.nan)) == "nan" and math.isnan(strict_json.decode("nan"))
    with pytest.raises(ValueError):  # a non-finite number that escapes the encoding fails loudly
        strict_json.dumps(object(), default=lambda _: math.inf)


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_every_command_prints_strict_json(argv, capsys, tmp_path):
    if argv[0] == "train":
        argv = [*argv, "--out", str(tmp_path / "full.json")]
    document = strict_loads(run_text(argv, capsys))
    assert document["dpkit"]["command"] == argv[0]
    assert not any(isinstance(leaf, float) and not math.isfinite(leaf) for leaf in leaves(document))
    if argv[0] == "train":
        strict_loads((tmp_path / "full.json").read_text(encoding="utf-8"))


def test_an_infinite_epsilon_is_the_string_inf(capsys):
    document = strict_loads(run_text(INFINITE_EPSILON, capsys))
    assert document["epsilon"] == "inf" and document["is_upper_bound"] is True
    statement = strict_loads(run_text(INFINITE_DPSGD, capsys))
    assert statement["poisson"]["epsilon_rdp"] == statement["poisson"]["epsilon_pld"] == "inf"


def _old_format(document: dict[str, Any]) -> str:
    """``document`` as dpkit wrote it before strict JSON: infinities as ``Infinity`` tokens."""
    text = json.dumps({key: value if key == "dpkit" else strict_json.decode(value) for key, value in document.items()})
    assert "Infinity" in text
    return text


def test_report_reads_old_and_new_documents_and_writes_strict_json(capsys, tmp_path):
    new = run_text(INFINITE_EPSILON, capsys)
    (tmp_path / "new.json").write_text(new, encoding="utf-8")
    (tmp_path / "old.json").write_text(_old_format(strict_loads(new)), encoding="utf-8")
    (tmp_path / "dpsgd.json").write_text(run_text(INFINITE_DPSGD, capsys), encoding="utf-8")
    for name in ("new.json", "old.json"):
        document = load_document(tmp_path / name)
        assert document.payload["epsilon"] == math.inf  # read back as a number, either way
        assert document.argv == INFINITE_EPSILON + ["--json"] and document.config_hash_valid
    out = tmp_path / "report"
    summary = strict_loads(run_text(["report", *(str(tmp_path / n) for n in ("new.json", "old.json", "dpsgd.json")),
                                     "--out", str(out), "--no-plots"], capsys))
    assert summary["rerun_matched"] is True  # a rerun of ε = ∞ reproduces it, whichever way the document wrote it
    written = sorted(out.glob("*.json"))
    assert [path.name for path in written] == ["report.json"]
    for path in written:
        report = strict_loads(path.read_text(encoding="utf-8"))
        assert report["rerun_matched"] is True
        epsilon_rows = [row for section in report["documents"] for row in section["rerun"]["fields"]
                        if row["field"] == "epsilon"]
        assert len(epsilon_rows) == 2 and all(row["original"] == row["rerun"] == "inf" and row["matched"]
                                              for row in epsilon_rows)
