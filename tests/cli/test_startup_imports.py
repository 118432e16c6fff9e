"""The command line's start-up imports only what the command run needs (a binding property, not a timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("scipy.stats", "dpkit.audit", "dpkit.algorithms", "dpkit.report", "dpkit.accounting.pld", "matplotlib")

_PROBE = """
import json, sys
{setup}
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def _imported(setup: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[2]),
                                                                        os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", _PROBE.format(setup=setup, heavy=HEAVY)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_entry_point_imports_no_heavy_module():
    assert _imported("import dpkit.cli.main") == []


def test_help_and_an_rdp_epsilon_import_no_heavy_module():
    run = ("import contextlib, io\nfrom dpkit.cli.main import main\n"
           "with contextlib.redirect_stdout(io.StringIO()):\n"
           "    assert main({argv!r}) == 0\n")
    assert _imported(run.format(argv=["epsilon", "--sigma", "10", "--count", "100", "--delta", "1e-5"])) == []
    assert _imported("import contextlib, io\nfrom dpkit.cli.main import main\n"
                     "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
                     "    main(['--help'])\n") == []
