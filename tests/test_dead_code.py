"""No dead code in dpkit/: vulture finds nothing beyond the exceptions listed, with reasons, in
``vulture_whitelist.py`` (see docs/design.md, "Dead code")."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHITELIST = ROOT / "vulture_whitelist.py"


def test_vulture_finds_nothing_unlisted():
    pytest.importorskip("vulture")
    done = subprocess.run([sys.executable, "-m", "vulture", "dpkit", WHITELIST.name, "--min-confidence", "60"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, "dead code (remove it, or list it with its reason in vulture_whitelist.py):\n" + (
        done.stdout + done.stderr)


def test_every_listed_exception_still_names_something():
    listed = {node.attr for node in ast.walk(ast.parse(WHITELIST.read_text(encoding="utf-8")))
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "_"}
    assert listed
    source = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "dpkit").rglob("*.py"))
    stale = sorted(name for name in listed if not re.search(rf"\b{re.escape(name)}\b", source))
    assert not stale, f"vulture_whitelist.py lists names dpkit no longer has: {stale}"
