"""``dpkit audit`` contains the user's code in worker processes from the pilot on: a worker that
dies (a signal, ``os._exit``) is one line naming the function and how it died, with exit code 1
(never 3, the code of a refuted claim); a worker that hangs ends the audit within
``--batch-timeout`` plus the few seconds it takes to stop the workers, and no process of the audit
survives it; with ``--json`` stdout holds one JSON object with its provenance, whatever the user's
code prints (at import, in a pairs function, in the workers, on file descriptor 1).

Each test runs the ``dpkit`` executable in a child process, as a user does: a crash must not
take the test runner with it, and stdout is checked at the file-descriptor level.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from dpkit.commands.errors import EXIT_FAILURE, EXIT_OK, EXIT_REFUTED

ROOT = Path(__file__).resolve().parents[2]

MODULE = """
    import ctypes
    import os
    import sys
    import time

    import numpy as np

    MAIN = os.getpid()                      # the dpkit process itself (the module is imported there first)
    print("printed while being imported")

    def in_worker():
        return os.getpid() != MAIN

    def count(db, n, rng):
        return np.sum(db) + rng.laplace(scale=1.0, size=n)

    def segfaults(db, n, rng):
        if in_worker():
            ctypes.string_at(0)             # reads address 0: SIGSEGV
        return count(db, n, rng)

    def exits_3(db, n, rng):
        if in_worker():
            os._exit(3)                     # 3 is also dpkit's exit code for a refuted claim
        return count(db, n, rng)

    def hangs(db, n, rng):
        if in_worker():
            time.sleep(3600)
        return count(db, n, rng)

    def prints(db, n, rng):
        print("printed by the mechanism")
        sys.stdout.flush()
        os.write(1, b"written to descriptor 1 by the mechanism\\n")
        return count(db, n, rng)

    def pairs():
        print("printed by the pairs function")
        return [([0, 1, 1], [1, 1, 1])]
"""

BATCH_TIMEOUT = 1.0
STOP_SECONDS = 2.0  # dpkit.audit.worker_processes.STOP_GRACE_SECONDS: SIGTERM, then SIGKILL


@pytest.fixture()
def module(tmp_path):
    name = "dpkit_contained_" + uuid.uuid4().hex[:8]
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    return name


def dpkit(cwd: Path, *argv: str, marker: str = "") -> tuple[subprocess.CompletedProcess, float]:
    """Run ``python -m dpkit.cli.main ARGV`` in ``cwd``; the result and its wall time."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "DPKIT_TEST_MARKER": marker}
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "dpkit.cli.main", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    return done, time.monotonic() - began


def audit(module: str, function: str, *options: str) -> list[str]:
    return ["audit", "--mechanism", f"{module}:{function}", "--pairs", "statdp-one", "--claimed-epsilon", "1",
            "--samples", "20000", "--quiet", *options]


def survivors(marker: str) -> list[int]:
    """Processes whose environment carries ``marker`` (the audit's own and every process it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:  # exited meanwhile, or not ours to read
                continue
            if f"DPKIT_TEST_MARKER={marker}".encode() in environ.split(b"\0"):
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("function, how", [
    ("segfaults", "signal SIGSEGV"),
    ("exits_3", "exit code 3"),
])
def test_a_worker_that_dies_in_the_pilot_is_one_line_naming_the_function_and_how(module, tmp_path, function, how):
    done, _ = dpkit(tmp_path, *audit(module, function, "--workers", "2"))
    assert done.returncode == EXIT_FAILURE, done.stderr
    lines = [line for line in done.stderr.splitlines() if line != "printed while being imported"]
    assert lines == [f"dpkit audit: error: the mechanism {module}:{function} died in a worker with {how}"]
    assert done.stdout == ""


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find the audit's processes")
def test_a_hung_worker_ends_the_audit_within_the_batch_timeout_and_leaves_no_process(module, tmp_path):
    # (a worker that ignores SIGTERM is killed: tests/audit/test_worker_processes.py)
    marker = uuid.uuid4().hex
    done, seconds = dpkit(tmp_path, *audit(module, "hangs", "--workers", "2", "--batch-timeout",
                                           str(BATCH_TIMEOUT)), marker=marker)
    assert done.returncode == EXIT_FAILURE, done.stderr
    lines = [line for line in done.stderr.splitlines() if line != "printed while being imported"]
    assert len(lines) == 1 and f"batch_timeout={BATCH_TIMEOUT:g} s" in lines[0], done.stderr
    # start-up and the pilot's first call, the timeout, then SIGTERM (and SIGKILL STOP_SECONDS later); the
    # rest is slack for a loaded machine (without the watchdog the audit never ends: the run times out)
    assert seconds < BATCH_TIMEOUT + 2 * STOP_SECONDS + 20.0
    assert survivors(marker) == []


def test_json_stdout_is_one_object_with_its_provenance_whatever_the_user_code_prints(module, tmp_path):
    done, _ = dpkit(tmp_path, "audit", "--mechanism", f"{module}:prints", "--pairs", f"{module}:pairs",
                    "--claimed-epsilon", "1", "--samples", "4000", "--workers", "2", "--json")
    assert done.returncode in (EXIT_OK, EXIT_REFUTED), done.stderr
    payload = json.loads(done.stdout)
    assert payload["dpkit"]["command"] == "audit" and payload["dpkit"]["config_hash"]
    for said in ("printed while being imported", "printed by the pairs function", "printed by the mechanism",
                 "written to descriptor 1 by the mechanism"):
        assert said in done.stderr and said not in done.stdout

