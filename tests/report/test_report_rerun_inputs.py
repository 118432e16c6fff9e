"""A rerun reads nothing from outside the current directory, and one document cannot sink a report.

The files a rerun reads are opened once by the report (no symbolic link followed at any
component), checked (a regular file with one name, or a folder), and copied into the sandbox,
where the child reads only the copies. Here the child's start (``sandbox._wait``) is replaced by a
probe that reads what the child would read; the last tests run real child processes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dpkit.cli.main import main
from dpkit.report import rerun as rerun_module
from dpkit.report import sandbox
from dpkit.report.rerun import MAX_ARGV_BYTES, MAX_ARGV_TOKENS, run_argv
from dpkit.report.rerun_inputs import FOLDER_FILES

INSIDE = b"a,b,y\n1,2,0\n3,4,1\n"
OUTSIDE = b"SECRET,outside,1\n"
TRAIN_CSV = ["train", "--algorithm", "dp-logreg", "--data", "d.csv", "--epsilon", "1"]
EPSILON = ["epsilon", "--mechanism", "randomized-response", "--epsilon0", "1", "--count", "10", "--delta", "1e-5"]


@pytest.fixture()
def arena(tmp_path, monkeypatch):
    """``work/`` (the current directory) with ``d.csv``; ``outside/secret.csv`` beside it; a probe in place of
    the child that records, for every rerun, the bytes of each file under the sandbox and whether it is a link."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "d.csv").write_bytes(INSIDE)
    (outside / "secret.csv").write_bytes(OUTSIDE)
    (outside / "adult.data").write_bytes(OUTSIDE)
    monkeypatch.chdir(work)
    seen: list[dict[str, tuple[bool, bytes]]] = []

    def probe(command, cwd, env, out, err, timeout):
        files = {}
        for path in sorted(Path(cwd).rglob("*")):
            if path.is_symlink() or path.is_file():
                files[str(path.relative_to(cwd))] = (path.is_symlink(), path.read_bytes())
        seen.append(files)
        out.write(b'{"stub": true}')
        return 0

    monkeypatch.setattr(sandbox, "_wait", probe)
    return work, outside, seen


def refusal(argv: list[str]) -> str:
    with pytest.raises(ValueError) as caught:
        run_argv(argv, argv[0])
    message = str(caught.value)
    assert "\n" not in message and "refusing to rerun it" in message
    return message


def test_a_plain_file_is_copied_as_a_regular_file(arena):
    _, _, seen = arena
    assert run_argv(TRAIN_CSV, "train") == {"stub": True}
    assert seen == [{"d.csv": (False, INSIDE)}]


def test_a_link_to_a_file_outside_or_to_etc_passwd_is_refused(arena):
    work, outside, seen = arena
    (work / "out.csv").symlink_to(outside / "secret.csv")
    (work / "passwd.csv").symlink_to("/etc/passwd")
    (work / "inner.csv").symlink_to("d.csv")  # even a link that stays inside: a rerun follows none
    for name in ("out.csv", "passwd.csv", "inner.csv"):
        assert f"{name!r} is a symbolic link" in refusal([*TRAIN_CSV[:4], name, *TRAIN_CSV[5:]])
    assert seen == []


def test_a_link_in_a_folder_on_the_way_is_refused(arena):
    work, outside, seen = arena
    (work / "sub").symlink_to(outside)
    assert "'sub' is a symbolic link" in refusal([*TRAIN_CSV[:4], "sub/secret.csv", *TRAIN_CSV[5:]])
    assert seen == []


def test_a_data_folder_holding_links_out_is_refused(arena):
    """``train --data FOLDER`` reads the folder's Adult files: a link among them, to a file outside or to
    /etc/passwd, is refused; nothing outside is read."""
    work, outside, seen = arena
    folder = work / "advdir"
    folder.mkdir()
    (folder / "adult.test").write_bytes(INSIDE)
    for target in ("../../outside/adult.data", "/etc/passwd"):
        (folder / "adult.data").unlink(missing_ok=True)
        (folder / "adult.data").symlink_to(target)
        message = refusal(["train", "--algorithm", "dp-logreg", "--data", "advdir", "--epsilon", "1"])
        assert "'advdir/adult.data' is a symbolic link" in message
    assert seen == []


def test_a_data_folder_is_copied_file_by_file(arena):
    """The files the command reads from a folder arrive as regular copies; other entries (a link here) are
    neither copied nor followed."""
    work, _, seen = arena
    folder = work / "advdir"
    folder.mkdir()
    for name in FOLDER_FILES:
        (folder / name).write_bytes(name.encode() + INSIDE)
    (folder / "notes.txt").symlink_to("/etc/passwd")
    run_argv(["train", "--algorithm", "dp-logreg", "--data", "advdir", "--epsilon", "1"], "train")
    assert seen == [{f"advdir/{name}": (False, name.encode() + INSIDE) for name in FOLDER_FILES}]


def test_a_hard_link_and_a_fifo_are_refused(arena):
    work, outside, seen = arena
    os.link(outside / "secret.csv", work / "hard.csv")
    assert "'hard.csv' has 2 names (a hard link" in refusal([*TRAIN_CSV[:4], "hard.csv", *TRAIN_CSV[5:]])
    os.mkfifo(work / "pipe.csv")  # not opened at all: a FIFO with no writer would block an open
    assert "'pipe.csv' is a special file" in refusal([*TRAIN_CSV[:4], "pipe.csv", *TRAIN_CSV[5:]])
    assert seen == []


def test_swapping_the_file_for_a_link_during_reruns_never_reads_outside(arena):
    """A thread keeps replacing ``d.csv`` by a link to a file outside and back while 50 reruns run: each
    rerun reads the inside bytes from a regular copy, or is refused; none reads the outside bytes."""
    work, outside, seen = arena
    stop, swaps = threading.Event(), [0]

    def swapper() -> None:
        regular, link = work / ".regular", work / ".link"
        while not stop.is_set():
            regular.write_bytes(INSIDE)
            os.replace(regular, work / "d.csv")
            link.symlink_to(outside / "secret.csv")
            os.replace(link, work / "d.csv")
            swaps[0] += 1

    thread = threading.Thread(target=swapper)
    thread.start()
    refused = 0
    try:
        for _ in range(50):
            try:
                run_argv(TRAIN_CSV, "train")
            except ValueError as error:
                assert "'d.csv'" in str(error) and "refusing to rerun it" in str(error)
                refused += 1
    finally:
        stop.set()
        thread.join()
    assert swaps[0] > 0 and refused + len(seen) == 50
    reads = [files["d.csv"] for files in seen]
    assert all(read == (False, INSIDE) for read in reads), reads
    assert not any(OUTSIDE in content for files in seen for _, content in files.values())


# ------------------------------------------------------------------------------ bounded documents

def cli_json(argv: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())


def with_argv(document: dict, argv: list[str]) -> dict:
    document = json.loads(json.dumps(document))
    document["dpkit"]["argv"] = argv
    return document


def test_an_oversized_argv_is_refused_before_it_is_parsed(arena, monkeypatch):
    """100,000 tokens, or one token over the byte cap: refused in well under the quadratic parse's minutes."""
    parsed = []
    monkeypatch.setattr(rerun_module, "parse", lambda argv: parsed.append(argv))
    many = [*EPSILON, *["--count", "10"] * 50_000]
    long = [*EPSILON, "--epsilon0=1." + "0" * MAX_ARGV_BYTES]
    start = time.perf_counter()
    assert f"has {len(many)} tokens, more than the {MAX_ARGV_TOKENS}" in refusal(many)
    assert f"longer than the {MAX_ARGV_BYTES >> 10} KiB" in refusal(long)
    assert time.perf_counter() - start < 5 and parsed == []


def test_any_failure_of_one_rerun_leaves_the_report_of_the_others(arena, monkeypatch):
    """One rerun raising OSError, another a RuntimeError: the report is written, each failure is one line,
    and the good document's rerun is checked."""
    work, _, _ = arena
    good = cli_json(EPSILON)
    documents = {"a_good.json": good, "b_oserror.json": with_argv(good, [*EPSILON, "--count", "11"]),
                 "c_bug.json": with_argv(good, [*EPSILON, "--count", "12"])}
    for name, document in documents.items():
        (work / name).write_text(json.dumps(document))

    def child(plan, policy, *, full_result=False):
        count = plan.argv[len(plan.argv) - 1 - plan.argv[::-1].index("--count") + 1]
        if count == "11":
            raise OSError(28, "No space left on device")
        if count == "12":
            raise RuntimeError("a bug")
        return good

    monkeypatch.setattr(rerun_module, "run_in_child", child)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["report", *documents, "--out", "rep", "--no-plots"])
    assert status == 1 and err.getvalue() == "", err.getvalue()
    reruns = {s["source"]: s["rerun"] for s in json.loads((work / "rep" / "report.json").read_text())["documents"]}
    assert reruns["a_good.json"]["matched"] is True
    assert "(OSError: [Errno 28] No space left on device)" in reruns["b_oserror.json"]["error"]
    assert "RuntimeError: a bug" in reruns["c_bug.json"]["error"]
    assert all("\n" not in r.get("error", "") for r in reruns.values())


def test_a_folder_of_documents_with_a_hostile_one_reports_the_others(tmp_path):
    """Real child processes: a document with one 200 KB argument (beyond one command-line argument's
    128 KiB limit, so the argv travels in a file) is rerun and reproduced in the same report as a
    100,000-token one, which is refused."""
    long = cli_json([*EPSILON[:3], "--epsilon0=1." + "0" * 200_000, *EPSILON[5:]])
    documents = {"long_token.json": long, "many_tokens.json": with_argv(long, [*EPSILON, *["--count", "10"] * 50_000])}
    for name, document in documents.items():
        (tmp_path / name).write_text(json.dumps(document))
    done = subprocess.run([sys.executable, "-m", "dpkit.cli.main", "report", *documents, "--out", "rep",
                           "--no-plots", "--json"], cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    reruns = {s["source"]: s["rerun"]
              for s in json.loads((tmp_path / "rep" / "report.json").read_text())["documents"]}
    assert reruns["long_token.json"]["matched"] is True
    assert "more than the 4096 a rerun accepts" in reruns["many_tokens.json"]["error"]
