"""dpkit report on hostile documents: a document is data, never code.

``hostile/`` holds hand-written documents: code named by module (``os``, a module beside the
document that leaves a marker file when imported), by file path and in a ``train --option``;
``--out`` with ``..`` and absolute paths; data files outside the working directory and
``/dev/stdin``; argv that runs ``report``/``demo``, abbreviates options, asks for ``--help``,
is empty or not strings; huge numbers, NaN/∞ as strings and as JSON literals; wrong types,
unknown citations, forged hash and numbers; truncated, empty, non-UTF-8 and non-object JSON.
The tests add deep nesting and a ~50 MB string, and Hypothesis mutates real documents.

For every input: no traceback and no "failure inside dpkit"; nothing written outside
``--out``; no code imported (the marker file is absent and the module is not in
``sys.modules``); a malformed document exits 2 with one line on stderr and writes nothing; a
rerun refused or failed exits 1 and says why; a rerun of untrusted code is skipped, the report
is written (exit 0) and one line names the ``--trust-module`` flag that would allow it.
In-process runs replace the child process by a stub that records what would have run.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from dpkit.cli.main import main
from dpkit.report import rerun as rerun_module
from dpkit.report.sandbox import RerunPlan

HOSTILE = Path(__file__).parent / "hostile"
MARKER_MODULE = "hostile_marker"

SKIPPED = {"code_os_system.json": "os", "code_pairs_os_fork.json": "os", "code_marker_module.json": MARKER_MODULE,
           "code_marker_equals_form.json": MARKER_MODULE, "code_in_train_option.json": MARKER_MODULE}
"""Documents whose rerun would import code: skipped, the report written, the flag named."""

REFUSED = {"code_file_path.json": "not module:NAME", "data_absolute.json": "not a relative path",
           "data_traversal.json": "not a relative path", "pairs_file_stdin.json": "not a relative path",
           "argv_runs_report.json": "refusing to rerun", "argv_runs_demo.json": "refusing to rerun",
           "argv_abbreviated.json": "unrecognized arguments", "argv_help.json": "asks for help",
           "argv_empty.json": "empty argv"}
"""Documents whose recorded command is refused before anything runs (exit 1, the report says why)."""

RERUN = ("out_traversal.json", "out_absolute_equals.json", "workers_bomb.json", "forged_hash.json",
         "forged_number.json", "huge_numbers.json", "nan_float_literals.json", "negative_delta.json")
"""Documents whose checked command reaches the child process (stubbed here: exit 1, "rerun failed")."""

MALFORMED = ("argv_not_strings.json", "command_report.json", "config_not_object.json", "huge_count.json",
             "nan_strings.json", "references_unknown.json", "results_string.json", "wrong_types.json",
             "not_an_object.json", "no_envelope.json", "truncated.json", "not_utf8.json", "empty.json")
"""Documents a report cannot read: exit 2, one line, nothing written."""


def test_the_corpus_is_classified():
    assert sorted(p.name for p in HOSTILE.glob("*.json")) == sorted([*SKIPPED, *REFUSED, *RERUN, *MALFORMED])


def marker_source(marker: Path) -> str:
    return textwrap.dedent(f"""
        import pathlib
        pathlib.Path({str(marker)!r}).write_text("imported")

        def count(db, n, rng):
            return sum(db) + rng.laplace(scale=1.0, size=n)
    """)


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture()
def arena(tmp_path, monkeypatch):
    """A working directory ``work/`` holding the documents beside the marker module (as a downloaded
    folder would), the marker's path, and a stub child process that records every plan."""
    work = tmp_path / "work"
    work.mkdir()
    for path in HOSTILE.glob("*.json"):
        (work / path.name).write_bytes(path.read_bytes())
    marker = tmp_path / "MARKER"
    (work / f"{MARKER_MODULE}.py").write_text(marker_source(marker))
    monkeypatch.chdir(work)
    plans: list[RerunPlan] = []

    def child(plan, policy, *, full_result=False):
        plans.append(plan)
        raise ValueError("the child process is stubbed in this test")

    monkeypatch.setattr(rerun_module, "run_in_child", child)
    yield work, marker, plans
    sys.modules.pop(MARKER_MODULE, None)


def report(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["report", *argv])
    return status, out.getvalue(), err.getvalue()


def check_contained(root: Path, before: set[str], out: str, marker: Path, err: str) -> None:
    """Nothing but ``out`` appeared, no code was imported, no traceback or internal failure."""
    new = {p for p in tree(root) - before if not (p == out or p.startswith(out + os.sep))}
    assert not new, new
    assert not marker.exists() and MARKER_MODULE not in sys.modules
    assert "Traceback" not in err and "failure inside dpkit" not in err


def check_plans_inert(plans: list[RerunPlan]) -> None:
    for plan in plans:
        assert plan.modules == [] and plan.inputs == []
        assert not any(a == "--out" or a.startswith(("--out=", "--workers")) for a in plan.argv), plan.argv


@pytest.mark.parametrize("name", sorted([*SKIPPED, *REFUSED, *RERUN, *MALFORMED]))
def test_hostile_document(arena, name):
    work, marker, plans = arena
    root = work.parent
    before = tree(root)
    status, out, err = report([name, "--out", "rep", "--no-plots"])
    check_contained(root, before, "work/rep", marker, err)
    check_plans_inert(plans)
    if name in MALFORMED:
        assert status == 2 and err.count("\n") == 1 and err.startswith("dpkit report: error: "), err
        assert not (work / "rep").exists()
        return
    assert (work / "rep" / "report.json").is_file()
    written = (work / "rep" / "report.json").read_text() + (work / "rep" / "report.md").read_text()
    assert str(root) not in written  # no absolute path of this machine in the report
    if name in SKIPPED:
        assert status == 0 and not plans
        assert err == (f"dpkit report: rerun of {name} skipped: it imports and runs code the document names "
                       f"({SKIPPED[name]}); to allow it: --trust-module {SKIPPED[name]}\n")
        assert f"--trust-module {SKIPPED[name]}" in (work / "rep" / "report.md").read_text()
    elif name in REFUSED:
        assert status == 1 and not plans and err == ""
        assert f"rerun of {name} failed" in out and REFUSED[name] in out
    else:
        assert status == 1 and len(plans) == 1 and "the child process is stubbed" in out


def test_deeply_nested_and_huge_documents(arena):
    work, marker, plans = arena
    before = tree(work.parent)
    (work / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    document = json.loads((work / "forged_number.json").read_text())
    document["notes"] = [{"x": document["notes"]}]
    for _ in range(200):
        document["notes"] = [document["notes"]]
    (work / "nested.json").write_text(json.dumps(document))
    document = json.loads((work / "forged_number.json").read_text())
    document["dpkit"]["argv"].append("--count=" + "9" * 50_000_000)
    (work / "huge.json").write_text(json.dumps(document))
    before |= {"work/deep.json", "work/nested.json", "work/huge.json"}
    for name in ("deep.json", "nested.json"):
        status, out, err = report([name, "--out", "rep", "--no-plots"])
        assert status == 2 and err.count("\n") == 1 and "nested deeper than" in err, err
    status, out, err = report(["huge.json", "--out", "rep", "--no-plots"])
    assert status == 1 and "rerun of huge.json failed" in out and not plans  # the parser refuses the value
    assert len(out) < 10_000  # the report's summary does not echo 50 MB
    check_contained(work.parent, before, "work/rep", marker, err)


def test_trusting_the_module_imports_it(arena):
    """The marker is a working detector: with the opt-in, the stubbed child is asked to import the module."""
    work, marker, plans = arena
    status, out, err = report(["code_marker_module.json", "--out", "rep", "--no-plots",
                               "--trust-module", MARKER_MODULE, "--trust-path", "."])
    assert status == 1 and plans and plans[0].modules == [MARKER_MODULE]
    assert not marker.exists()  # the parent never imports it; only the child would


# --------------------------------------------------------------------------------------- fuzz

def _base_documents() -> dict[str, dict]:
    return {name: json.loads((HOSTILE / f"{name}.json").read_text())
            for name in ("forged_number", "forged_hash", "out_absolute_equals", "workers_bomb", "code_os_system")}


BASE = _base_documents()
TRICKS = ["--out=/tmp/dpkit-fuzz-escape", "--out", "../escape", "--pairs", "os:getcwd", "--mechanism", "os:fork",
          "--mechanism=hostile_marker:count", "--pairs-file", "/dev/stdin", "--pairs-file=../../etc/passwd", "--data",
          "/etc/passwd", "--data=../x.csv", "--workers", "64", "--help", "--version", "report", "demo", "--samples",
          "1e99", "--count", "1e9", "--", "-", "", "\x00", "x" * 1000, "--option", "a=b:c", "--data", "sub/../../x",
          "--data", "~/x", "--sigma", "nan", "--sigma=inf", "--epsilon", "-1", "hostile_marker:count", "C:\\x"]
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-10**30, max_value=10**30),
                   st.sampled_from([10**400, -10**400, 2**63]), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from(["NaN", "Infinity", "-inf", "", "hostile_marker:count", "/etc/passwd", "../x",
                                    "gaussian", "rdp", "pld", "audit"]), st.text(max_size=20))
VALUES = st.recursive(LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=8)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value[:4]):
            yield from _paths(inner, (*prefix, index))


@st.composite
def documents(draw):
    """A real document with some fields replaced or deleted and its argv spliced with tricks; sometimes
    the text is truncated."""
    document = copy.deepcopy(BASE[draw(st.sampled_from(sorted(BASE)))])
    for _ in range(draw(st.integers(0, 3))):
        paths = [p for p in _paths(document) if p]
        path = draw(st.sampled_from(paths))
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()):
            parent[path[-1]] = draw(VALUES)
        elif isinstance(parent, dict):
            del parent[path[-1]]
    argv = document.get("dpkit", {}).get("argv") if isinstance(document.get("dpkit"), dict) else None
    if isinstance(argv, list):
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(argv)))
            argv[at:at + draw(st.integers(0, 1))] = [draw(st.sampled_from(TRICKS))]
    text = json.dumps(document)
    if draw(st.integers(0, 9)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


@settings(max_examples=40)
@given(text=documents(), no_rerun=st.booleans())
def test_fuzzed_documents(tmp_path_factory, text, no_rerun):
    root = tmp_path_factory.mktemp("fuzz")
    work = root / "work"
    work.mkdir()
    marker = root / "MARKER"
    (work / f"{MARKER_MODULE}.py").write_text(marker_source(marker))
    (work / "doc.json").write_text(text)
    plans: list[RerunPlan] = []

    def child(plan, policy, *, full_result=False):
        plans.append(plan)
        raise ValueError("the child process is stubbed in this test")

    before = tree(root)
    cwd = os.getcwd()
    original = rerun_module.run_in_child
    rerun_module.run_in_child = child
    os.chdir(work)
    try:
        status, out, err = report(["doc.json", "--out", "rep", "--no-plots", *(["--no-rerun"] if no_rerun else [])])
    finally:
        os.chdir(cwd)
        rerun_module.run_in_child = original
        sys.modules.pop(MARKER_MODULE, None)
    check_contained(root, before, "work/rep", marker, err)
    check_plans_inert(plans)
    event(f"exit {status}, {'rerun reached the child' if plans else 'no rerun'}")
    assert status in (0, 1, 2)
    if status == 2:
        assert err.count("\n") == 1 and err.startswith("dpkit report: error: ") and not (work / "rep").exists()
    else:
        assert (work / "rep" / "report.json").is_file() and str(root) not in (work / "rep" / "report.md").read_text()
        assert status == 1 or not plans  # a rerun reaching the (stubbed) child fails


# --------------------------------------------------------------------------- real child processes

def run_dpkit(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpkit.cli.main", *argv], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


@pytest.fixture()
def downloaded(tmp_path):
    """A downloaded folder: a document naming the marker module, the module beside it; run from that folder."""
    work = tmp_path / "work"
    work.mkdir()
    marker = tmp_path / "MARKER"
    (work / f"{MARKER_MODULE}.py").write_text(marker_source(marker))
    for name in ("code_marker_module.json", "out_traversal.json"):
        (work / name).write_bytes((HOSTILE / name).read_bytes())
    return work, marker


def test_a_document_naming_a_module_beside_it_does_not_import_it(downloaded):
    work, marker = downloaded
    done = run_dpkit(["report", "code_marker_module.json", "--out", "rep", "--no-plots"], work)
    assert done.returncode == 0 and not marker.exists(), done.stderr
    assert done.stderr.strip().endswith(f"to allow it: --trust-module {MARKER_MODULE}")
    # trusted but not installed: the rerun does not look beside the document or in the working directory
    done = run_dpkit(["report", "code_marker_module.json", "--out", "rep2", "--no-plots",
                      "--trust-module", MARKER_MODULE], work)
    assert done.returncode == 1 and not marker.exists() and "is not installed" in done.stdout
    assert str(work) not in (work / "rep2" / "report.md").read_text() + (work / "rep2" / "report.json").read_text()
    # with the opt-in and the directory it comes from, it is imported (by the child process)
    done = run_dpkit(["report", "code_marker_module.json", "--out", "rep3", "--no-plots",
                      "--trust-module", MARKER_MODULE, "--trust-path", "."], work)
    assert marker.exists() and "Traceback" not in done.stderr
    assert {p.split(os.sep)[0] for p in tree(work)} == {"rep", "rep2", "rep3", f"{MARKER_MODULE}.py",
                                                          "code_marker_module.json", "out_traversal.json"}


def test_a_recorded_out_writes_nothing_and_the_rerun_is_reproduced(downloaded):
    work, _ = downloaded
    before = tree(work.parent)
    done = run_dpkit(["report", "out_traversal.json", "--out", "rep", "--no-plots"], work)
    assert done.returncode == 0 and "numbers reproduced" in done.stdout, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert tree(work.parent) - before == {"work/rep", "work/rep/report.md", "work/rep/report.json",
                                          "work/rep/references.bib"}


def test_a_long_rerun_is_stopped_at_the_time_limit(tmp_path):
    """An audit document asking for 10^10 samples: the child is stopped at ``--rerun-timeout`` (with
    every process it started); the report is written and says so."""
    document = json.loads((HOSTILE / "workers_bomb.json").read_text())
    argv = document["dpkit"]["argv"]
    argv[argv.index("--samples") + 1] = "10000000000"
    (tmp_path / "doc.json").write_text(json.dumps(document))
    done = run_dpkit(["report", "doc.json", "--out", "rep", "--no-plots", "--rerun-timeout", "3"], tmp_path)
    assert done.returncode == 1 and "did not finish within 3 s" in done.stdout, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and (tmp_path / "rep" / "report.md").is_file()
