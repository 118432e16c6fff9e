"""Files written by ``dpkit`` are created exclusively (link onto a name that must not exist) and
atomically, follow the umask, and leave no temporary behind; ``--force`` replaces atomically."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dpkit.commands.files import TEMP_PREFIX, install_folder, new_temp_folder, remove_stale, temp_name, write_new


def test_concurrent_writers_give_exactly_one_success_and_a_complete_file(tmp_path):
    target = tmp_path / "same.json"
    barrier = threading.Barrier(16)
    outcomes: dict[int, str] = {}

    def writer(i: int) -> None:
        barrier.wait()
        try:
            write_new(target, json.dumps({"writer": i, "pad": "x" * 100_000}))
            outcomes[i] = "ok"
        except FileExistsError:
            outcomes[i] = "refused"

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, o in outcomes.items() if o == "ok"]
    assert len(winners) == 1 and len(outcomes) == 16
    assert json.loads(target.read_text())["writer"] == winners[0]
    assert [p.name for p in tmp_path.iterdir()] == ["same.json"]


def test_force_replaces_and_files_follow_the_umask(tmp_path):
    target = tmp_path / "out.json"
    old = os.umask(0o027)
    try:
        write_new(target, "old")
        with pytest.raises(FileExistsError):
            write_new(target, "new")
        assert target.read_text() == "old"
        write_new(target, "new", force=True)
        folder = new_temp_folder(tmp_path / "report")
        (folder / "a.md").write_text("a")
        install_folder(folder, tmp_path / "report")
    finally:
        os.umask(old)
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "report").stat().st_mode) == 0o750


def test_a_folder_is_installed_only_onto_a_new_name_unless_forced(tmp_path):
    target = tmp_path / "report"
    first = new_temp_folder(target)
    (first / "old.md").write_text("old")
    install_folder(first, target)
    second = new_temp_folder(target)
    (second / "new.md").write_text("new")
    with pytest.raises(FileExistsError):
        install_folder(second, target)
    install_folder(second, target, force=True)
    assert sorted(p.name for p in target.iterdir()) == ["new.md"]
    assert [p.name for p in tmp_path.iterdir()] == ["report"]


def test_stale_temporaries_of_dead_processes_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{TEMP_PREFIX}{dead.pid}-0abc1234-run.json"
    stale.write_text("half")
    mine = temp_name(tmp_path / "run.json")
    mine.write_text("in progress")
    other = tmp_path / ".dpkit-unrelated"
    other.write_text("keep")
    assert remove_stale(tmp_path) == [stale]
    assert mine.exists() and other.exists()
    write_new(tmp_path / "run.json", "done")
    assert not stale.exists()


def test_eight_concurrent_dpkit_train_runs_to_one_file_give_exactly_one_success(tmp_path):
    target = tmp_path / "same.json"
    argv = [sys.executable, "-m", "dpkit.cli.main", "train", "--algorithm", "dp-logreg", "--data", "synthetic",
            "--epsilon", "1", "--iterations", "2", "--quiet", "--out", str(target)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[2]),
                                                                        os.environ.get("PYTHONPATH")]))}
    runs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(8)]
    results = [(run.wait(timeout=300), run.stdout.read(), run.stderr.read()) for run in runs]
    for run in runs:
        run.stdout.close()
        run.stderr.close()
    codes = [code for code, _, _ in results]
    assert codes.count(0) == 1, results
    for code, _, err in results:
        if code != 0:
            assert code in (1, 2) and len(err.strip().splitlines()) == 1 and "same.json" in err, err
    assert json.loads(target.read_text())["algorithm"] == "dp-logreg"
    assert [p.name for p in tmp_path.iterdir()] == ["same.json"]
