"""The report folder is written exclusively, replaced atomically by ``--force``, and follows the umask."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dpkit.commands.files import ASIDE_PREFIX, remove_stale
from dpkit.commands.runner import run_json

ROOT = Path(__file__).parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
REPORT = ["report", "--no-rerun", "--no-plots"]


@pytest.fixture()
def doc(tmp_path) -> Path:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(run_json(["epsilon", "--mechanism", "gaussian", "--sigma", "2", "--count", "10",
                                         "--delta", "1e-5"])))
    return path


def _dpkit(*argv: str, umask: int | None = None, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dpkit.cli.main", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV,
                            preexec_fn=None if umask is None else (lambda: os.umask(umask)), **kwargs)


def _finish(run: subprocess.Popen) -> tuple[int, str, str]:
    out, err = run.communicate(timeout=300)
    return run.returncode, out, err


def test_eight_concurrent_reports_to_one_folder_give_exactly_one_success(tmp_path, doc):
    out = tmp_path / "rep"
    results = [_finish(run) for run in [_dpkit(*REPORT, str(doc), "--out", str(out)) for _ in range(8)]]
    codes = [code for code, _, _ in results]
    assert codes.count(0) == 1, results
    for code, _, err in results:
        if code != 0:
            assert code in (1, 2) and len(err.strip().splitlines()) == 1 and "rep" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["references.bib", "report.json", "report.md"]
    assert json.loads((out / "report.json").read_text())["documents"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json", "rep"]


@pytest.mark.parametrize("umask, file_mode, folder_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_report_files_and_folders_follow_the_umask(tmp_path, doc, umask, file_mode, folder_mode):
    out = tmp_path / "new" / "rep"
    code, _, err = _finish(_dpkit(*REPORT, str(doc), "--out", str(out), umask=umask))
    assert code == 0, err
    for folder in (out, out.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == folder_mode, folder
    for path in out.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == file_mode, path


# Each point patches the step at which the child SIGKILLs itself while `report --force` replaces
# an existing report: before the swap, right after it, and (without renameat2) between the two renames.
KILL_POINTS = {
    "before-install": ("", """
        import dpkit.report.writer as writer
        writer.install_folder = lambda *a, **k: die()
    """),
    "after-swap": ("", """
        import shutil
        shutil.rmtree = lambda *a, **k: die()
    """),
    "between-renames": ("1", """
        real = os.rename
        def rename(src, dst):
            if os.path.basename(src).startswith(".dpkit-tmp-") and any(
                    name.startswith(".dpkit-old-") for name in os.listdir(os.path.dirname(src))):
                die()
            return real(src, dst)
        os.rename = rename
    """),
    "after-renames": ("1", """
        import shutil
        shutil.rmtree = lambda *a, **k: die()
    """),
}


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_a_killed_force_leaves_the_old_report_or_the_new_one_and_the_next_run_cleans_up(tmp_path, doc, point):
    out = tmp_path / "rep"
    assert _finish(_dpkit(*REPORT, str(doc), "--out", str(out)))[0] == 0
    (out / "doc9_training.png").write_text("a file of the old report only")
    old = {p.name: p.read_bytes() for p in out.iterdir()}
    no_exchange, patch = KILL_POINTS[point]
    child = textwrap.dedent("""
        import os, signal, sys
        def die():
            os.kill(os.getpid(), signal.SIGKILL)
    """) + textwrap.dedent(patch) + textwrap.dedent("""
        from dpkit.cli.main import main
        sys.exit(main(sys.argv[1:]))
    """)
    env = {**ENV, "DPKIT_NO_RENAME_EXCHANGE": no_exchange}
    run = subprocess.run([sys.executable, "-c", child, *REPORT, str(doc), "--out", str(out), "--force"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == -signal.SIGKILL, run.stderr
    if out.exists():
        names = {p.name for p in out.iterdir()}
        assert names in (set(old), {"references.bib", "report.json", "report.md"}), names
        if "doc9_training.png" in names:
            assert {p.name: p.read_bytes() for p in out.iterdir()} == old
    else:  # killed between the two renames: the old report waits aside under a recognisable name
        assert point == "between-renames"
        assert any(p.name.startswith(ASIDE_PREFIX) for p in tmp_path.iterdir())
    remove_stale(tmp_path)  # what the next dpkit run in this folder does first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json", "rep"]
    names = {p.name for p in out.iterdir()}
    assert names in (set(old), {"references.bib", "report.json", "report.md"}), names
    code, _, err = _finish(_dpkit(*REPORT, str(doc), "--out", str(out), "--force"))
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["references.bib", "report.json", "report.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json", "rep"]
