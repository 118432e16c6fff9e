"""Every command's failure modes end in the exit code that the one table
(:data:`dpkit.commands.errors.EXIT_CODES`) gives them, with one line on stderr; the table in
``docs/index.md`` is the one rendered from the code; Ctrl-C at any moment exits 130 in one line."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from dpkit.cli.main import main
from dpkit.commands.errors import (
    EXIT_CODES, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUTED, EXIT_USAGE, exit_code_table,
)

ROOT = Path(__file__).resolve().parents[2]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def test_the_documented_table_is_the_one_in_the_code():
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert exit_code_table() in index
    assert set(EXIT_CODES) == {EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_REFUTED, EXIT_INTERRUPTED}


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text('{"a": 1')
    (tmp_path / "plain.json").write_text("{}")
    (tmp_path / "taken.json").write_text("mine")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    (tmp_path / "quits.py").write_text("import sys\ndef fn(db, rng):\n    sys.exit(0)\n")
    return tmp_path


TRAIN = ["train", "--algorithm", "dp-logreg", "--data", "synthetic", "--epsilon", "1", "--iterations", "2", "--quiet"]
AUDIT = ["audit", "--pairs", "statdp-one", "--claimed-epsilon", "1", "--samples", "8000", "--scalar"]

CASES = [  # (argv, the table's row for it)
    (["epsilon", "--sigma", "-1", "--delta", "1e-5"], EXIT_USAGE),  # a bad value
    (["epsilon", "--sigma", "1"], EXIT_USAGE),  # a missing option
    (["epsilon", "--sigma", "1", "--delta", "1e-5", "--bogus"], EXIT_USAGE),  # an unknown option
    (["epsilon", "--sigma", "1", "--delta", "2"], EXIT_USAGE),
    (["epsilon", "--sigma", "1", "--delta", "1e-5", "--count", "1.5"], EXIT_USAGE),
    (["nonsense"], EXIT_USAGE),
    (["calibrate", "--epsilon", "0", "--delta", "1e-5"], EXIT_USAGE),
    (["calibrate", "--epsilon", "1", "--delta", "1e-5", "--count", "0"], EXIT_USAGE),
    ([*TRAIN, "--data", "missing.csv"], EXIT_USAGE),  # an input path that does not exist
    ([*TRAIN, "--out", "taken.json"], EXIT_USAGE),  # an --out that exists, without --force
    ([*TRAIN, "--out", "no/such/folder/run.json"], EXIT_USAGE),
    ([*TRAIN, "--epsilon", "-1"], EXIT_USAGE),
    (["audit", "--mechanism", "nosuchmodule_x:fn", *AUDIT[1:]], EXIT_USAGE),
    (["audit", "quits:fn", "--claimed-epsilon", "1"], EXIT_USAGE),  # a positional function
    (["audit", "--mechanism", "quits:fn", *AUDIT[1:]], EXIT_FAILURE),  # user code exited
    (["report", "missing.json", "--out", "r1"], EXIT_USAGE),
    (["report", "bad.json", "--out", "r2"], EXIT_USAGE),  # not JSON: not what the option needs
    (["report", "plain.json", "--out", "r3"], EXIT_USAGE),  # not a dpkit document
    (["demo", "--out", "full"], EXIT_USAGE),
    (["demo", "--out", "no/such/folder"], EXIT_USAGE),
]


@pytest.mark.parametrize("argv, code", CASES, ids=[" ".join(a[:3]) + f"->{c}" for a, c in CASES])
def test_each_failure_mode_exits_with_its_code_from_the_table_in_one_line(files, argv, code):
    status, _, err = run_cli(argv)
    assert status == code, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "failure inside dpkit" not in err, err
    assert (files / "taken.json").read_text() == "mine"


def test_a_failed_write_is_a_run_time_failure(tmp_path):
    if not os.path.isdir("/proc"):
        pytest.skip("needs a folder nobody can create files in")
    status, _, err = run_cli([*TRAIN, "--out", "/proc/run.json"])
    assert status == EXIT_FAILURE and "/proc" in err and err.count("\n") == 1


def test_refuted_claim_and_success():
    assert run_cli(["epsilon", "--sigma", "1", "--delta", "1e-5"])[0] == EXIT_OK
    status, _, _ = run_cli(["audit", "--mechanism", "laplace", "--mechanism-epsilon", "3", "--claimed-epsilon", "1",
                            "--samples", "200000", "--quiet"])
    assert status == EXIT_REFUTED


def test_approx_composition_of_a_billion_steps_answers_at_once_with_a_bound_that_holds():
    # k-fold composition of ε₀-DP is kε₀-DP (basic composition, Dwork & Roth 2014 Thm 3.16)
    status, out, err = run_cli(["epsilon", "--accountant", "approx", "--mechanism", "laplace", "--scale", "1000",
                                "--count", "1e9", "--delta", "1e-5", "--json"])
    assert status == EXIT_OK, err
    epsilon = json.loads(out)["epsilon"]
    assert 0 < epsilon <= 1e9 / 1000


@pytest.mark.parametrize("argv", [
    ["epsilon", "--mechanism", "laplace", "--scale", "1e-10", "--delta", "1e-5", "--accountant", "zcdp"],
    ["epsilon", "--mechanism", "randomized-response", "--epsilon0", "1e200", "--delta", "1e-5", "--accountant", "zcdp"],
    ["calibrate", "--mechanism", "laplace", "--epsilon", "700", "--delta", "1e-5", "--accountant", "zcdp"],
])
def test_extreme_numbers_leak_no_runtime_warning(argv):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        status, _, err = run_cli(argv)
    assert status == EXIT_OK and "Warning" not in err, err


_INTERRUPT_DURING_IMPORT = """
import sys
from importlib.abc import MetaPathFinder


class CtrlC(MetaPathFinder):  # a Ctrl-C that arrives while the command's modules are being imported
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            raise KeyboardInterrupt
        return None


sys.meta_path.insert(0, CtrlC())
from dpkit.cli.main import main
sys.exit(main({argv!r}))
"""


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


@pytest.mark.parametrize("module, argv", [
    ("dpkit.commands.runner", ["--help"]),
    ("dpkit.accounting.rdp", ["epsilon", "--sigma", "1", "--delta", "1e-5"]),
    ("scipy.optimize", ["calibrate", "--epsilon", "1", "--delta", "1e-5"]),
])
def test_ctrl_c_during_start_up_imports_prints_one_line_and_exits_130(module, argv):
    done = subprocess.run([sys.executable, "-c", _INTERRUPT_DURING_IMPORT.format(module=module, argv=argv)],
                          capture_output=True, text=True, env=_child_env(), timeout=120)
    assert done.returncode == EXIT_INTERRUPTED, done.stderr
    assert done.stderr.count("\n") == 1 and "interrupted" in done.stderr and done.stdout == ""


def _default_sigint() -> None:
    # A shell running the suite as a background job ignores SIGINT, and a child inherits an ignored signal
    # (then Python installs no handler and the Ctrl-C is lost); a terminal's dpkit has the default action.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_while_computing_prints_one_line_and_exits_130():
    child = subprocess.Popen([sys.executable, "-m", "dpkit.cli.main", "audit", "--mechanism", "laplace",
                              "--claimed-epsilon", "1", "--samples", "100000000", "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_child_env(),
                             preexec_fn=_default_sigint)
    time.sleep(3.0)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=120)
    assert child.returncode == EXIT_INTERRUPTED, err
    lines = [line for line in err.splitlines() if "at this rate" not in line]  # the run-time estimate came first
    assert len(lines) == 1 and "interrupted" in lines[0] and "Traceback" not in err, err
