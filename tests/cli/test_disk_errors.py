"""Disk errors (a full disk, permission, a read-only file system) name the path the user gave, leave
nothing behind, and never cost the result: ``dpkit train`` prints it before writing ``--out``, then
exits 1. The errors are raised by patching the system calls (no root, no real full disk needed)."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os

import pytest

from dpkit.cli.main import main
from dpkit.commands import files
from dpkit.commands.runner import run_json
from dpkit.report import write_report

DISK_ERRORS = [errno.ENOSPC, errno.EACCES, errno.EROFS]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def fail_fsync(monkeypatch, code: int) -> None:
    """The data reach the disk at fsync: a full disk (or a lost permission) reports there, with no file name."""
    def fsync(fd: int) -> None:
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(os, "fsync", fsync)


def fail_temporary_open(monkeypatch, code: int) -> None:
    """Creating the temporary file fails, naming the temporary, as os.open does."""
    real_open = os.open

    def open_(path, *args, **kwargs):
        if os.path.basename(os.fspath(path)).startswith(files.TEMP_PREFIX):
            raise OSError(code, os.strerror(code), os.fspath(path))
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(os, "open", open_)


def leftovers(folder) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.startswith(".dpkit-"))


@pytest.mark.parametrize("code", DISK_ERRORS)
@pytest.mark.parametrize("failing", [fail_fsync, fail_temporary_open])
def test_write_new_names_the_target_and_leaves_nothing(tmp_path, monkeypatch, code, failing):
    target = tmp_path / "result.json"
    failing(monkeypatch, code)
    with pytest.raises(OSError) as raised:
        files.write_new(target, "{}")
    assert raised.value.errno == code and raised.value.filename == os.fspath(target)
    assert os.strerror(code) in str(raised.value)
    assert not target.exists() and leftovers(tmp_path) == []


def test_write_new_keeps_the_existing_file_name_errors(tmp_path):
    (tmp_path / "taken.json").write_text("old")
    with pytest.raises(FileExistsError) as raised:
        files.write_new(tmp_path / "taken.json", "new")
    assert raised.value.filename == os.fspath(tmp_path / "taken.json")
    assert (tmp_path / "taken.json").read_text() == "old"


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "t.csv"
    rows = "".join(f"{(i % 7) / 7:.3f},{(i % 5) / 5:.3f},{i % 2}\n" for i in range(120))
    path.write_text("a,b,label\n" + rows)
    return path


@pytest.mark.parametrize("code", DISK_ERRORS)
def test_train_prints_the_result_then_names_the_out_path(tmp_path, monkeypatch, table, code):
    out = tmp_path / "run.json"
    fail_fsync(monkeypatch, code)
    status, stdout, stderr = run_cli(["train", "--algorithm", "dp-logreg", "--epsilon", "1", "--quiet",
                                      "--data", str(table), "--out", str(out)])
    lines = stderr.strip().splitlines()
    assert status == 1 and len(lines) == 1
    assert repr(str(out)) in lines[0] and os.strerror(code) in lines[0] and "printed" in lines[0]
    assert "failure inside dpkit" not in lines[0]
    assert "test accuracy" in stdout and "epsilon" in stdout  # the result was not lost
    assert not out.exists() and leftovers(tmp_path) == []


def test_train_json_is_printed_when_out_fails(tmp_path, monkeypatch, table):
    out = tmp_path / "run.json"
    fail_fsync(monkeypatch, errno.ENOSPC)
    status, stdout, stderr = run_cli(["train", "--algorithm", "dp-logreg", "--epsilon", "1", "--quiet", "--json",
                                      "--data", str(table), "--out", str(out)])
    assert status == 1 and repr(str(out)) in stderr
    assert json.loads(stdout)["algorithm"] == "dp-logreg"


def test_a_report_on_a_full_disk_names_its_folder(tmp_path, monkeypatch):
    document = run_json(["epsilon", "--sigma", "2", "--delta", "1e-5"])
    real_write_text = type(tmp_path).write_text

    def full(self, *args, **kwargs):  # a buffered write reports a full disk without a file name
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(type(tmp_path), "write_text", full)
    with pytest.raises(OSError) as raised:
        write_report([document], tmp_path / "report", rerun=False, plots=False)
    monkeypatch.setattr(type(tmp_path), "write_text", real_write_text)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == os.fspath(tmp_path / "report")
    assert not (tmp_path / "report").exists() and leftovers(tmp_path) == []
