"""``dpkit audit`` on the user's own code: a module beside the current directory, its pairs
(``--pairs-file``, ``--pairs module:NAME``), ``--scalar``, exit code 3 and the witness shown.

The mechanisms are Laplace counts ``sum(D) + Lap(b)``; for two inputs whose sums differ by
``s`` their true ε is ``s / b`` (the Laplace log-density ratio is at most ``s / b``), which
is the independent reference every bound is checked against: an audit's lower bound may not
exceed it (it fails with probability ≤ 1 − confidence, and the seeds are fixed). That ε is the
mechanisms' ε in exact arithmetic, so the audits here read the values only (``--no-float-bits``):
as executed, numpy's Laplace plus the sum leaks through its float bits (Mironov 2012).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
import textwrap

import pytest

from dpkit.cli.main import main
from dpkit.commands.audit import progress as audit_progress
from dpkit.commands.errors import EXIT_FAILURE, EXIT_OK, EXIT_REFUTED, EXIT_USAGE

MODULE = """
    import numpy as np

    def count(db, n, rng):                  # 1/1.1-DP when one record in [0, 1] changes: a 1-DP claim holds
        return np.sum(db) + rng.laplace(scale=1.1, size=n)   # with a margin, so no seed is a coin flip at α

    def leaky(db, n, rng):                  # claims 1-DP, is 4-DP for a change of 1
        return np.sum(db) + rng.laplace(scale=0.25, size=n)

    def one(db, rng):                       # the scalar form of count
        return float(np.sum(db) + rng.laplace(scale=1.1))

    def one_leaky(db, rng):
        return float(np.sum(db) + rng.laplace(scale=0.25))

    PAIRS = [([0, 1, 1], [1, 1, 1]), ([2.5], [3.5])]

    def make_pairs():
        return [(np.zeros(3), np.array([0.0, 0.0, 1.0]))]

    def no_pairs():
        raise RuntimeError("no pairs today")

    def chen_svt(q, n, rng, eps=0.5):       # Lyu, Su & Li 2017 Alg. 6: query noise not scaled, no cut-off
        rho = rng.laplace(scale=2 / eps, size=(n, 1))
        return (np.asarray(q) + rng.laplace(scale=2 / eps, size=(n, len(q))) >= 1 + rho).astype(float)
"""

FILE_PAIRS = [[[0, 1, 1], [1, 1, 1]], [[0, 0, 0, 0], [0, 0, 1, 0]]]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture()
def user_module(tmp_path, monkeypatch):
    """A module written beside the current directory (not on sys.path); yields its name."""
    name = "dpkit_user_mech_" + "".join(c for c in tmp_path.name if c.isalnum())
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.chdir(tmp_path)
    yield name
    sys.modules.pop(name, None)


@pytest.fixture()
def pairs_file(tmp_path):
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(FILE_PAIRS))
    return path


def audit_argv(mechanism: str, *options: str, samples: int = 100_000) -> list[str]:
    return ["audit", "--mechanism", mechanism, "--claimed-epsilon", "1", "--samples", str(samples), "--quiet",
            "--no-float-bits", *options]


def test_module_beside_the_user_is_importable_and_sys_path_is_restored(user_module):
    before = list(sys.path)
    status, out, err = run_cli(audit_argv(f"{user_module}:count", "--pairs", "statdp-one"))
    assert status == EXIT_OK, err
    assert sys.path == before
    assert "neighbouring relation: one record changes" in out and "no violation found" in out


def test_worker_processes_import_the_module_beside_the_user(user_module):
    status, out, err = run_cli(audit_argv(f"{user_module}:leaky", "--pairs", "statdp-one", "--workers", "2",
                                          "--json"))
    serial = json.loads(run_cli(audit_argv(f"{user_module}:leaky", "--pairs", "statdp-one", "--json"))[1])
    assert status == EXIT_REFUTED, err
    assert json.loads(out)["epsilon_lower_bound"] == serial["epsilon_lower_bound"]  # results do not depend on workers


def test_a_user_function_must_name_its_pairs(user_module):
    status, out, err = run_cli(audit_argv(f"{user_module}:count"))
    assert status == EXIT_USAGE and "needs its neighbouring inputs" in err and "--pairs-file" in err
    assert err.count("\n") == 1 and out == ""


def test_the_wrong_relation_is_why_pairs_are_required(user_module):
    # componentwise patterns move all 10 answers: the sum moves by 10, so this correct 1-DP count has true eps 10/1.1
    status, out, err = run_cli(audit_argv(f"{user_module}:count", "--pairs", "statdp", "--json"))
    result = json.loads(out)
    assert status == EXIT_REFUTED and 1.0 < result["epsilon_lower_bound"] <= 10.0 / 1.1
    assert "every one of 10 query answers" in result["relation"]


def test_refuted_claim_exits_3_and_shows_relation_and_both_inputs(user_module, pairs_file):
    argv = audit_argv(f"{user_module}:leaky", "--pairs-file", str(pairs_file))
    status, text, err = run_cli(argv)
    assert status == EXIT_REFUTED, err
    status_json, out, err = run_cli([*argv, "--json"])
    assert status_json == EXIT_REFUTED, err
    result = json.loads(out)
    assert result["violation"] is True and 1.0 < result["epsilon_lower_bound"] <= 4.0  # true eps 0.25^-1 = 4
    pair = result["witness"]["pair"]
    index = int(pair["label"].rsplit("[", 1)[1].rstrip("]"))
    assert pair["label"] == f"pairs.json[{index}]" and [pair["first"], pair["second"]] == FILE_PAIRS[index]
    assert all(isinstance(x, (int, float)) for x in pair["first"] + pair["second"])
    assert result["pairs"] == str(pairs_file) and "2 pairs of --pairs-file" in result["relation"]
    canonical = json.dumps(FILE_PAIRS, separators=(",", ":")).encode()
    assert result["pairs_sha256"] == hashlib.sha256(canonical).hexdigest()  # which inputs the document tested
    assert result["witness_change"] == f"1 of {len(pair['first'])} entries differs, by at most 1"
    assert result["p_value_floor"] is (result["p_value"] <= 1e-15)
    lines = text.splitlines()
    assert "VIOLATION: claim refuted" in text and lines[1].startswith("neighbouring relation: the 2 pairs")
    assert f"  D  = [{', '.join(map(str, pair['first']))}]" in lines
    assert f"  D' = [{', '.join(map(str, pair['second']))}]" in lines
    assert f"witness pair {pair['label']}: {result['witness_change']}" in lines


def test_a_strong_refutation_shows_the_p_value_floor(user_module):
    status, text, err = run_cli(audit_argv(f"{user_module}:leaky", "--pairs", "statdp-one", "--seed", "3"))
    assert status == EXIT_REFUTED and "(p < 1e-15)" in text and "4.44e-16" not in text


@pytest.mark.parametrize("content, fragment", [
    ("[[0, 1", "not valid JSON"),
    ('{"D": [0]}', "expected a list of [D, D'] pairs, got an object (dict)"),
    ("[]", "at least one"),
    ("[[[0, 1]]]", "pairs[0] must be a list [D, D'] of two inputs, got a list of 1 item"),
    ("[[[0, 1], [1, 1]], [[0, [1, 2]], [1, 1]]]", "pairs[1][0] (D) is ragged"),
    ("[[[0, 1, 2], [1]]]", "pairs[0]: D has shape (3,) and D' has shape (1,)"),
    ('[[[0, 1], [1, "a"]]]', "pairs[0][1] (D'): entry [1] is \"a\", not a number"),
    ("[[[0, true], [1, 1]]]", "pairs[0][0] (D): entry [1] is true, not a number"),
    ("[[[0, NaN], [1, 1]]]", "pairs[0][0] (D): entry [1] is nan, not a finite number"),
    ("[[3, [1]]]", "pairs[0][0] (D) is 3, not a list of numbers"),
    ("[[[0, 1], [0, 1]]]", "pairs[0]: D and D' are identical"),
])
def test_bad_pairs_files_are_one_line_errors_naming_path_and_index(user_module, tmp_path, content, fragment):
    path = tmp_path / "bad.json"
    path.write_text(content)
    status, out, err = run_cli(audit_argv(f"{user_module}:count", "--pairs-file", str(path)))
    assert status == EXIT_USAGE and err.count("\n") == 1 and out == ""
    assert f"--pairs-file {str(path)!r}" in err and fragment in err, err


def test_missing_pairs_file_names_the_path(user_module, tmp_path):
    status, out, err = run_cli(audit_argv(f"{user_module}:count", "--pairs-file", str(tmp_path / "nope.json")))
    assert status == EXIT_USAGE and "nope.json" in err and "No such file" in err and err.count("\n") == 1


def test_add_remove_pairs_are_accepted_and_named(user_module, tmp_path):
    path = tmp_path / "addremove.json"
    path.write_text("[[[0, 1, 1], [0, 1]]]")
    status, out, err = run_cli(audit_argv(f"{user_module}:count", "--pairs-file", str(path), "--json"))
    result = json.loads(out)
    assert status == EXIT_OK and result["witness_change"] == "D' has one record fewer than D (add/remove neighbours)"


def test_pairs_from_a_module_list_or_function(user_module):
    status, out, err = run_cli(audit_argv(f"{user_module}:count", "--pairs", f"{user_module}:PAIRS", "--json"))
    result = json.loads(out)
    assert status == EXIT_OK and result["witness"]["pair"]["label"].startswith(f"{user_module}:PAIRS[")
    status, out, err = run_cli(audit_argv(f"{user_module}:leaky", "--pairs", f"{user_module}:make_pairs", "--json"))
    result = json.loads(out)
    assert status == EXIT_REFUTED and result["witness"]["pair"]["second"] == [0.0, 0.0, 1.0]
    status, out, err = run_cli(audit_argv(f"{user_module}:count", "--pairs", f"{user_module}:no_pairs"))
    assert status == EXIT_FAILURE and "no pairs today" in err
    status, out, err = run_cli(audit_argv(f"{user_module}:count", "--pairs", f"{user_module}:NOPE"))
    assert status == EXIT_USAGE and "has no attribute 'NOPE'" in err


@pytest.mark.parametrize("options, fragment", [
    (["--pairs-file", "p.json", "--length", "3"], "--length sets the StatDP patterns"),
    (["--pairs-file", "p.json", "--sensitivity", "2"], "--sensitivity sets the StatDP patterns"),
    (["--pairs-file", "p.json", "--pairs", "statdp"], "not both"),
    (["--pairs", "bogus"], "--pairs must be one of statdp, statdp-one, statdp-monotone or module:NAME"),
])
def test_pair_options_that_conflict_are_named(user_module, options, fragment):
    status, out, err = run_cli(audit_argv(f"{user_module}:count", *options))
    assert status == EXIT_USAGE and fragment in err and err.count("\n") == 1


def test_scalar_functions_and_the_run_time_estimate(user_module, monkeypatch):
    monkeypatch.setattr(audit_progress, "ESTIMATE_NOTICE_SECONDS", 0.0)  # print it even for a short run
    status, out, err = run_cli(audit_argv(f"{user_module}:one", "--scalar", "--pairs", "statdp-one",
                                          samples=40_000))
    assert status == EXIT_OK, err
    assert "through dpkit.audit.from_scalar" in out
    estimate = [line for line in err.splitlines() if "at this rate" in line]  # a revision may follow the first
    assert estimate and "at this rate for 40,000 samples; use --samples to lower it" in estimate[0]
    status, out, err = run_cli(audit_argv(f"{user_module}:one_leaky", "--scalar", "--pairs", "statdp-one",
                                          "--json", samples=40_000))
    assert status == EXIT_REFUTED and 1.0 < json.loads(out)["epsilon_lower_bound"] <= 4.0


def test_scalar_is_for_user_functions_only():
    status, out, err = run_cli(audit_argv("laplace", "--scalar"))
    assert status == EXIT_USAGE and "--scalar applies to --mechanism module:function only" in err


def test_import_failures_say_the_import_failed(user_module, tmp_path):
    status, out, err = run_cli(audit_argv("dpkit_no_such_user_module:f", "--pairs", "statdp-one"))
    assert status == EXIT_USAGE and "import of module 'dpkit_no_such_user_module' failed" in err
    assert repr(str(tmp_path)) in err and err.count("\n") == 1
    (tmp_path / "dpkit_user_raises_on_import.py").write_text("import numpy\nraise RuntimeError('broken at import')\n")
    try:
        status, out, err = run_cli(audit_argv("dpkit_user_raises_on_import:f", "--pairs", "statdp-one"))
    finally:
        sys.modules.pop("dpkit_user_raises_on_import", None)
    assert status == EXIT_FAILURE and "broken at import" in err and "dpkit_user_raises_on_import.py\", line 2" in err
    assert "user_code.py" not in err  # only the module's own frames


def test_report_rerun_of_a_user_function(user_module, tmp_path, monkeypatch):
    with open(tmp_path / f"{user_module}.py", "a", encoding="utf-8") as module:  # stderr: stdout is the JSON
        module.write('print("a module that prints while being imported")\n')
    status, out, err = run_cli(audit_argv(f"{user_module}:count", "--pairs", "statdp-one", "--json", samples=40_000))
    assert status == EXIT_OK
    (tmp_path / "audit.json").write_text(out)
    # a document is data: its code reruns only when the reader trusts the module by name
    status, out, err = run_cli(["report", str(tmp_path / "audit.json"), "--out", str(tmp_path / "rep0"), "--no-plots"])
    assert status == EXIT_OK and "skipped" in out and f"--trust-module {user_module}" in err
    status, out, err = run_cli(["report", str(tmp_path / "audit.json"), "--out", str(tmp_path / "rep"), "--no-plots",
                                "--trust-module", user_module, "--trust-path", str(tmp_path)])
    assert status == EXIT_OK and "numbers reproduced" in out, err
    # trusted, but not installed and no --trust-path: the rerun does not import it from the current directory
    status, out, err = run_cli(["report", str(tmp_path / "audit.json"), "--out", str(tmp_path / "rep2"), "--no-plots",
                                "--trust-module", user_module])
    assert status == EXIT_FAILURE, (out, err)
    assert f"the trusted module {user_module!r} is not installed" in out


def test_search_confirms_the_pair_it_found(user_module):
    status, out, err = run_cli(audit_argv(f"{user_module}:chen_svt", "--pairs", "statdp", "--search",
                                          "--search-lengths", "10,20", "--json", samples=100_000))
    result = json.loads(out)
    assert status == (EXIT_REFUTED if result["violation"] else EXIT_OK) and result["violation"] is True, err
    search, pair = result["search"], result["witness"]["pair"]
    assert search["screening_estimate_certified"] is False and pair["label"] == search["pair_label"]
    moved = [abs(b - a) for a, b in zip(pair["first"], pair["second"])]
    assert len(pair["first"]) in (10, 20) and max(moved) <= 1.0 and any(moved)  # the componentwise relation
    status, text, err = run_cli(audit_argv(f"{user_module}:chen_svt", "--pairs", "statdp", "--search",
                                           "--search-lengths", "10,20", samples=100_000))
    assert status == EXIT_REFUTED and "not a certified bound" in text and "neighbouring relation: searched" in text


def test_search_passes_a_correct_mechanism_and_needs_a_relation(user_module):
    # the built-in Laplace mechanism releases every answer with Lap(1/eps): one answer moving by 1 costs eps = 1
    status, out, err = run_cli(["audit", "--mechanism", "laplace", "--claimed-epsilon", "1", "--search",
                                "--pairs", "statdp-one", "--search-lengths", "1,3", "--samples", "60000", "--json",
                                "--no-float-bits"])
    result = json.loads(out)
    assert status == EXIT_OK and result["epsilon_lower_bound"] <= 1.0, err
    assert sum(a != b for a, b in zip(result["witness"]["pair"]["first"], result["witness"]["pair"]["second"])) == 1
    status, out, err = run_cli(audit_argv(f"{user_module}:chen_svt", "--search"))
    assert status == EXIT_USAGE and "needs its neighbouring inputs" in err
    status, out, err = run_cli(audit_argv(f"{user_module}:chen_svt", "--search", "--pairs-file", "p.json"))
    assert status == EXIT_USAGE and "--pairs-file does not combine with --search" in err


def test_a_module_shadowed_by_one_already_imported_is_named(user_module, tmp_path):
    (tmp_path / "json.py").write_text("def count(db, n, rng):\n    return db\n")  # json is imported already
    status, out, err = run_cli(audit_argv("json:count", "--pairs", "statdp-one"))
    assert status == EXIT_USAGE and "was not read: rename yours" in err and str(tmp_path / "json.py") in err
