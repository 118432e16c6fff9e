"""Bad input, faults and hostile documents: no traceback, no user file touched, exit codes 0/1/2/3/130."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from dpkit.audit import audit
from dpkit.audit.runner import AuditTimeoutError, MechanismError
from dpkit.cli.main import main
from dpkit.commands.audit import progress as audit_progress
from dpkit.commands.errors import EXIT_CODES
from dpkit.commands.runner import run_json
from dpkit.report import builder, rerun, write_report

EPSILON_ARGV = ["epsilon", "--mechanism", "gaussian", "--sigma", "2", "--count", "10", "--delta", "1e-5"]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture()
def document(tmp_path) -> dict:
    return run_json(EPSILON_ARGV)


def _hostile(document: dict, argv: list[str]) -> dict:
    hostile = json.loads(json.dumps(document))
    hostile["dpkit"]["argv"] = argv
    return hostile


# ------------------------------------------------------------------ 1. hostile documents


@pytest.mark.parametrize("argv", [
    ["report", "x.json", "--ou", "VICTIM", "--force"],           # another command, abbreviated --out
    ["demo", "--out", "VICTIM"],                                  # demo is never rerun
    ["train", "--algorithm", "admm", "--out", "VICTIM"],          # argv[0] differs from the recorded command
    [*EPSILON_ARGV, "--ou", "VICTIM"],                            # abbreviations are refused by the parser
    [*EPSILON_ARGV, "--js"],
    [],
])
def test_hostile_argv_is_refused_and_writes_nothing(tmp_path, document, argv, monkeypatch):
    victim = tmp_path / "VICTIM"
    victim.mkdir()
    (victim / "report.md").write_text("the user's own file")
    monkeypatch.chdir(tmp_path)
    result = write_report([_hostile(document, argv)], tmp_path / "out", plots=False)
    section = result.report["documents"][0]
    assert result.rerun_matched is False and section["rerun"]["error"]
    assert (victim / "report.md").read_text() == "the user's own file"
    assert sorted(p.name for p in victim.iterdir()) == ["report.md"]


def test_recorded_out_is_removed_and_cannot_sneak_back(document):
    assert rerun.checked_argv([*EPSILON_ARGV, "--out", "x"], "epsilon")[0] == EPSILON_ARGV
    assert rerun.checked_argv([*EPSILON_ARGV, "--out=x"], "epsilon")[0] == EPSILON_ARGV
    with pytest.raises(ValueError, match="its command is 'epsilon'"):
        rerun.checked_argv(["calibrate", "--epsilon", "1", "--delta", "1e-5"], "epsilon")


def test_every_parser_refuses_abbreviations():
    for argv in (["epsilon", "--sig", "1", "--delta", "1e-5"], ["report", "x.json", "--ou", "d"],
                 ["audit", "--mech", "laplace", "--claimed-epsilon", "1"]):
        status, out, err = run_cli(argv)
        assert status == 2 and ("unrecognized arguments" in err or "required: --out" in err) and err.count("\n") == 1


def test_code_a_document_names_reruns_only_when_trusted(tmp_path, monkeypatch):
    module = tmp_path / "dpkit_test_shown_mech.py"
    module.write_text(textwrap.dedent("""
        import numpy as np
        RAN = []
        def mech(db, n, rng):
            return np.sum(db) + rng.laplace(scale=2.0, size=n)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["audit", "--mechanism", "dpkit_test_shown_mech:mech", "--pairs", "statdp-one", "--claimed-epsilon", "1",
            "--samples", "20000", "--quiet"]
    doc = tmp_path / "audit.json"
    doc.write_text(json.dumps(run_json(argv)))
    assert rerun.code_to_import(argv) == ["dpkit_test_shown_mech"]
    status, out, err = run_cli(["report", str(doc), "--out", str(tmp_path / "rep"), "--no-plots"])
    assert status == 0 and "to allow it: --trust-module dpkit_test_shown_mech" in err, err
    status, out, err = run_cli(["report", str(doc), "--out", str(tmp_path / "rep2"), "--no-plots",
                                "--trust-module", "dpkit_test_shown_mech", "--trust-path", str(tmp_path)])
    assert status == 0 and "numbers reproduced" in out, (out, err)
    status, out, err = run_cli(["report", "--help"])
    assert status == 0 and "--trust-module NAME" in " ".join(out.split())


# ------------------------------------------------------------------ 2. atomic report directory


def test_second_writer_fails_and_nothing_is_half_written(tmp_path, document, monkeypatch):
    out = tmp_path / "rep"
    real_build = builder.build_report

    def racing_build(docs, rerun=True, **options):  # another writer finishes while this one reruns
        report = real_build(docs, rerun, **options)
        out.mkdir()
        (out / "report.md").write_text("the other writer's report")
        return report

    monkeypatch.setattr("dpkit.report.writer._build", racing_build)
    with pytest.raises(FileExistsError) as caught:
        write_report([document], out, plots=False)
    assert str(out) in str(caught.value)
    assert (out / "report.md").read_text() == "the other writer's report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no temporary directory left behind
    monkeypatch.undo()
    status, _, err = run_cli(["report", "-h"])
    assert status == 0


def test_report_is_written_whole_and_refuses_non_empty(tmp_path, document):
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(document))
    status, out, err = run_cli(["report", str(doc), "--out", str(tmp_path / "a" / "b"), "--no-plots"])
    assert status == 0, err
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["references.bib", "report.json", "report.md"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b"]
    status, out, err = run_cli(["report", str(doc), "--out", str(tmp_path / "a" / "b"), "--no-plots"])
    assert status == 2 and "not empty" in err and err.count("\n") == 1


# ------------------------------------------------------------------ 4, 7. exit codes of report, no SystemExit


def test_report_json_exits_1_when_the_rerun_does_not_reproduce(tmp_path, document):
    tampered = json.loads(json.dumps(document))
    tampered["epsilon"] = tampered["epsilon"] / 2
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(tampered))
    status, out, err = run_cli(["report", str(doc), "--out", str(tmp_path / "rep"), "--no-plots", "--json"])
    assert status == 1 and json.loads(out)["rerun_matched"] is False


def test_unparsable_argv_is_a_recorded_failure_not_system_exit(tmp_path, document):
    hostile = _hostile(document, ["epsilon", "--no-such-option"])
    result = write_report([hostile], tmp_path / "rep", plots=False)  # must not raise SystemExit
    assert result.rerun_matched is False
    assert "unrecognized arguments" in result.report["documents"][0]["rerun"]["error"] or \
        "required" in result.report["documents"][0]["rerun"]["error"]
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(hostile))
    status, out, err = run_cli(["report", str(doc), "--out", str(tmp_path / "rep2"), "--no-plots"])
    assert status == 1 and "rerun of" in out and "failed" in out
    # a command that could not run is not reported as numbers that failed to reproduce
    assert "NOT checked: 1 rerun(s) failed to run" in out and "NOT reproduced" not in out
    assert "1 rerun(s) FAILED to run" in Path(result.markdown).read_text()


def test_run_json_raises_value_error_never_system_exit():
    with pytest.raises(ValueError, match="unrecognized"):
        run_json(["epsilon", "--sigma", "1", "--delta", "1e-5", "--bogus"])
    with pytest.raises(ValueError):
        run_json(["nosuchcommand"])


# ------------------------------------------------------------------ 5. OSError: one line naming the path


def test_paths_to_nothing_files_and_directories_give_one_line(tmp_path, document):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(document))
    cases = [
        (["report", str(tmp_path / "missing.json"), "--out", str(tmp_path / "r1")], "missing.json"),
        (["report", str(tmp_path), "--out", str(tmp_path / "r2")], str(tmp_path)),
        (["report", str(doc), "--out", str(a_file)], "file.txt"),
        (["report", str(doc), "--out", str(a_file / "sub")], "file.txt"),
    ]
    for argv, path in cases:
        status, out, err = run_cli(argv)
        assert status in (1, 2) and path in err and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
    assert a_file.read_text() == "x"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores permissions")
def test_unwritable_directory_is_named(tmp_path, document):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(document))
    try:
        status, out, err = run_cli(["report", str(doc), "--out", str(locked / "rep"), "--no-plots"])
    finally:
        locked.chmod(0o700)
    assert status == 1 and "locked" in err and err.count("\n") == 1


# ------------------------------------------------------------------ 8, 9. hangs and Ctrl-C


def _hangs(db, n, rng):
    time.sleep(30)
    return np.zeros(n)


def test_hanging_mechanism_times_out():
    start = time.monotonic()
    with pytest.raises(AuditTimeoutError, match="batch_timeout=0.3"):
        audit(_hangs, [([0.0], [1.0])], 1.0, samples=20_000, batch_timeout=0.3)
    assert time.monotonic() - start < 5
    with pytest.raises(ValueError, match="batch_timeout"):
        audit(_hangs, [([0.0], [1.0])], 1.0, samples=20_000, batch_timeout=0)


def test_cli_timeout_and_heartbeat(tmp_path, monkeypatch):
    (tmp_path / "dpkit_test_slow_mech.py").write_text(textwrap.dedent("""
        import time
        import numpy as np
        def slow(db, n, rng):
            time.sleep(0.3)
            return np.sum(db) + rng.laplace(size=n)
        def hang(db, n, rng):
            time.sleep(30)
            return np.zeros(n)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(audit_progress, "HEARTBEAT_SECONDS", 0.1)
    status, out, err = run_cli(["audit", "--mechanism", "dpkit_test_slow_mech:hang", "--claimed-epsilon", "1",
                                "--pairs", "statdp-one", "--length", "1", "--samples", "20000", "--batch-timeout", "0.2",
                                "--quiet"])
    assert status == 1 and "batch-timeout" in err and "Traceback" not in err
    status, out, err = run_cli(["audit", "--mechanism", "dpkit_test_slow_mech:slow", "--pairs", "statdp-one",
                                "--length", "1", "--claimed-epsilon", "1", "--samples", "20000", "--quiet"])
    assert status in (0, 3) and "still running" in err


def test_ctrl_c_is_one_line_and_exit_130(tmp_path, document, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("dpkit.commands._accounting_args.accountant_maker", interrupted)
    status, out, err = run_cli(EPSILON_ARGV)
    assert status == 130 and err.count("\n") == 1 and "interrupted" in err
    monkeypatch.undo()
    monkeypatch.setattr("dpkit.report.writer._build", interrupted)
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(document))
    status, out, err = run_cli(["report", str(doc), "--out", str(tmp_path / "rep")])
    assert status == 130 and "nothing was written" in err and err.count("\n") == 1
    assert not (tmp_path / "rep").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["doc.json"]


# ------------------------------------------------------------------ 10-12. audit inputs, options, messages


def test_pair_of_unequal_lengths_is_named_and_stored_as_numbers():
    r = audit(lambda db, n, rng: np.sum(db) + rng.laplace(size=n), [([0, 1], [1])], 1.0, samples=20_000)
    assert any("add/remove" in note and "(2,)" in note for note in r.notes)
    with pytest.raises(ValueError, match="same shape"):
        audit(lambda db, n, rng: rng.laplace(size=n), [([0, 1, 2], [1])], 1.0, samples=20_000)
    r = audit(lambda db, n, rng: np.sum(db) + rng.laplace(scale=0.3, size=n), [([0.0], [1.0])], 1.0, samples=40_000)
    assert r.witness["pair"]["first"] == [0.0] and r.witness["pair"]["second"] == [1.0]


@pytest.mark.parametrize("argv,fragment", [
    (["--algorithm", "a-ddp", "--mechanism", "laplace"], "--mechanism does not apply to --algorithm"),
    (["--algorithm", "a-ddp", "--claimed-epsilon", "1"], "--claimed-epsilon does not apply"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--variant", "corrected"], "--variant applies to --algorithm"),
    (["--mechanism", "gaussian", "--claimed-epsilon", "1", "--claimed-delta", "1e-5", "--noise", "gumbel"],
     "--noise applies to --mechanism rnm only"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--cutoff", "2"], "--cutoff applies to --mechanism svt"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--sensitivity", "0"], "--sensitivity must be in (0, inf)"),
    (["--mechanism", "laplace", "--claimed-epsilon", "0"], "--claimed-epsilon"),
    (["--mechanism", "gaussian", "--claimed-epsilon", "1"], "add --claimed-delta"),
    (["--mechanism", "laplace", "--claimed-epsilon", "1", "--batch-timeout", "-1"], "--batch-timeout"),
])
def test_audit_options_that_do_not_apply_are_named(argv, fragment):
    status, out, err = run_cli(["audit", *argv, "--samples", "20000"])
    assert status == 2 and fragment in err and err.count("\n") == 1, err


def test_inapplicable_audit_options_are_not_recorded():
    document = run_json(["audit", "--mechanism", "laplace", "--claimed-epsilon", "1", "--samples", "20000", "--quiet"])
    config = document["dpkit"]["config"]
    assert not {"noise", "threshold", "cutoff", "variant", "iterations"} & set(config)
    assert config["claimed_delta"] == 0.0 and config["sensitivity"] == 1.0


def test_user_exception_shows_their_traceback_and_ragged_outputs_are_explained(tmp_path, monkeypatch):
    (tmp_path / "dpkit_test_broken_mech.py").write_text(textwrap.dedent("""
        import numpy as np
        def broken(db, n, rng):
            values = rng.laplace(size=n)
            return values[n + 5]            # the user's bug, on line 5
        def ragged(db, n, rng):
            return [[1.0] * (i % 2 + 1) for i in range(n)]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    status, out, err = run_cli(["audit", "--mechanism", "dpkit_test_broken_mech:broken", "--claimed-epsilon", "1",
                                "--pairs", "statdp-one", "--length", "1", "--samples", "20000", "--quiet"])
    assert status == 1 and "IndexError" in err and "dpkit_test_broken_mech.py" in err and "line 5" in err
    status, out, err = run_cli(["audit", "--mechanism", "dpkit_test_broken_mech:ragged", "--claimed-epsilon", "1",
                                "--pairs", "statdp-one", "--length", "1", "--samples", "20000", "--quiet"])
    assert status == 2 and "same length" in err and "inhomogeneous" not in err
    with pytest.raises(MechanismError, match="IndexError"):
        audit(lambda db, n, rng: [][1], [([0.0], [1.0])], 1.0, samples=20_000)


# ------------------------------------------------------------------ 14-16. plots, --compare, PLD advice


def test_report_without_matplotlib_has_no_plots_and_says_why(tmp_path, document, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(document))
    status, out, err = run_cli(["report", str(doc), "--out", str(tmp_path / "rep")])
    assert status == 0, err
    assert "dpkit[plot]" in err and err.count("\n") == 1
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == ["references.bib", "report.json", "report.md"]


def test_compare_names_every_accountant_that_does_not_apply():
    status, out, err = run_cli(["epsilon", "--sigma", "1", "--delta", "1e-5", "--compare"])
    assert status == 0 and "approx: not applicable:" in out


def test_pld_beyond_its_grid_answers_by_a_named_route():
    """10^12 Gaussian steps need a grid no machine holds; the PLD answers by exact GDP and says so."""
    status, out, err = run_cli(["epsilon", "--sigma", "1", "--count", "1000000000000", "--delta", "1e-5",
                                "--accountant", "pld"])
    assert status == 0 and "route: gdp" in out and not err


def test_exit_code_table_is_documented_once():
    index = (Path(__file__).resolve().parents[2] / "docs" / "index.md").read_text(encoding="utf-8")
    for code in EXIT_CODES:
        assert f"| {code} |" in index
