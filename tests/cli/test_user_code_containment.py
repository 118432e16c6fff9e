"""The user's code run by ``dpkit audit`` is contained: its prints go to stderr, from Python and on file
descriptor 1 (``--json`` stays one object with its provenance), ``sys.exit`` and ``KeyboardInterrupt``
inside it end in one line naming the function with exit code 1, and ``path/to/file.py:NAME`` works as
``module:NAME`` does."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import sys
import textwrap

import pytest

from dpkit.cli.main import main
from dpkit.commands.errors import EXIT_FAILURE, EXIT_OK, EXIT_REFUTED, EXIT_USAGE
from dpkit.commands.user_code import stdout_to_stderr

SOURCE = """
    import sys
    import numpy as np

    def noisy(db, rng):
        print("user says hello")
        return float(np.sum(db) + rng.laplace(scale=1.0))

    def quits(db, rng):
        sys.exit(0)

    def interrupts(db, rng):
        raise KeyboardInterrupt

    def divides(db, rng):
        return 1 / 0

    def pairs_that_quit():
        sys.exit(3)
"""

_names = itertools.count()
AUDIT = ["--pairs", "statdp-one", "--claimed-epsilon", "1", "--samples", "8000", "--seed", "1", "--scalar"]


@pytest.fixture
def module(tmp_path, monkeypatch):
    name = f"dpkit_contained_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(SOURCE))
    monkeypatch.chdir(tmp_path)
    yield name
    sys.modules.pop(name, None)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def test_a_printing_function_keeps_json_parseable_with_its_provenance(module):
    status, out, err = run_cli(["audit", "--mechanism", f"{module}:noisy", *AUDIT, "--json"])
    assert status in (EXIT_OK, EXIT_REFUTED), err
    payload = json.loads(out)
    assert payload["dpkit"]["command"] == "audit" and "user says hello" in err


@pytest.mark.parametrize("function, said", [("quits", "sys.exit(0)"), ("interrupts", "KeyboardInterrupt")])
def test_exit_and_interrupt_inside_user_code_are_one_line_failures_naming_the_function(module, function, said):
    status, out, err = run_cli(["audit", "--mechanism", f"{module}:{function}", *AUDIT])
    assert status == EXIT_FAILURE and out == ""
    assert err.count("\n") == 1 and f"{module}:{function}" in err and said in err


def test_exit_inside_user_pairs_is_a_one_line_failure(module):
    status, _, err = run_cli(["audit", "--mechanism", f"{module}:noisy", "--scalar", "--pairs",
                              f"{module}:pairs_that_quit", "--claimed-epsilon", "1"])
    assert status == EXIT_FAILURE and err.count("\n") == 1 and "pairs_that_quit" in err and "sys.exit(3)" in err


def test_a_file_path_works_like_a_module_and_tracebacks_show_the_users_frames(module, tmp_path):
    status, out, err = run_cli(["audit", "--mechanism", f"./{module}.py:noisy", *AUDIT, "--json"])
    assert status in (EXIT_OK, EXIT_REFUTED), err
    assert json.loads(out)["dpkit"]["argv"][2] == f"./{module}.py:noisy"
    status, _, err = run_cli(["audit", "--mechanism", str(tmp_path / f"{module}.py") + ":divides", *AUDIT])
    assert status == EXIT_FAILURE and "ZeroDivisionError" in err and "return 1 / 0" in err
    assert "importlib" not in err and "dpkit/" not in err
    status, _, err = run_cli(["audit", "--mechanism", "./missing.py:fn", *AUDIT])
    assert status == EXIT_USAGE and "missing.py" in err and err.count("\n") == 1


def test_a_positional_function_gets_a_hint_to_use_mechanism(module):
    status, _, err = run_cli(["audit", f"{module}:noisy", "--claimed-epsilon", "1"])
    assert status == EXIT_USAGE and f"--mechanism {module}:noisy" in err and err.count("\n") == 1


def test_stdout_goes_to_stderr_at_both_levels_while_user_code_runs_and_is_restored(capfd):
    before = sys.stdout
    with stdout_to_stderr():
        print("from print")
        sys.stdout.flush()
        os.write(1, b"from descriptor 1\n")
    print("the command's own output")
    sys.stdout.flush()
    out, err = capfd.readouterr()
    assert sys.stdout is before
    assert out == "the command's own output\n" and err == "from print\nfrom descriptor 1\n"
