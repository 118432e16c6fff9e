"""The layer rule of docs/design.md, checked on the source: accounting <- mechanisms <- algorithms;
audit sees black boxes and uses accounting only; the command runner and the report above those;
the command line on top, imported by nothing."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpkit"
SHARED = {"dpkit", "dpkit._validation", "dpkit._progress", "dpkit._threads", "dpkit._bisection"}

ALLOWED: dict[str, set[str]] = {
    "accounting": {"accounting"},
    "mechanisms": {"accounting", "mechanisms"},
    "algorithms": {"accounting", "mechanisms", "algorithms"},
    "audit": {"accounting", "audit"},
    "interop": {"accounting", "interop"},
    "commands": {"accounting", "mechanisms", "algorithms", "audit", "interop", "commands"},
    "report": {"accounting", "commands", "report"},
    "cli": {"accounting", "algorithms", "audit", "commands", "report", "cli"},
}
"""Subpackage → the subpackages its modules may import (besides the shared private helpers)."""



def dpkit_imports(path: Path) -> set[str]:
    """Every dpkit module imported anywhere in ``path`` (module level, functions, TYPE_CHECKING)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "dpkit"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dpkit":
            found |= {_submodule(node.module, alias.name) for alias in node.names}
    return found


def _submodule(module: str, name: str) -> str:
    """``module.name`` if that is a module (``from dpkit.cli import train``), else ``module``."""
    path = PACKAGE.parent.joinpath(*module.split("."), name)
    if path.with_suffix(".py").exists() or (path / "__init__.py").exists():
        return f"{module}.{name}"
    return module


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] in ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_follow_the_layers(path):
    name = module_name(path)
    layer = name.split(".")[1]
    bad = []
    for imported in dpkit_imports(path):
        parts = imported.split(".")
        if imported in SHARED or ".".join(parts[:2]) in SHARED:
            continue
        if parts[1] not in ALLOWED[layer]:
            bad.append(imported)
    assert not bad, f"{name} imports {sorted(bad)} above its layer"


def test_nothing_imports_the_command_line_entry_point():
    importers = [module_name(p) for p in PACKAGE.rglob("*.py")
                 if "dpkit.cli.main" in dpkit_imports(p) and module_name(p) != "dpkit.cli.main"
                 and module_name(p) != "dpkit.cli.demo"]  # demo: transitional (run_json moved to dpkit.commands.runner)
    assert importers == []


def test_importing_dpkit_loads_neither_algorithms_nor_cli():
    code = ("import sys, dpkit; bad = [m for m in sys.modules if m.startswith(('dpkit.algorithms', 'dpkit.cli', "
            "'dpkit.commands', 'dpkit.report'))]; print(bad); sys.exit(bool(bad))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stdout + done.stderr


def test_dpkit_entry_points():
    import importlib

    import dpkit
    from dpkit.accounting import PLDAccountant, RDPAccountant, calibrate
    from dpkit.mechanisms import GaussianMechanism

    assert (dpkit.calibrate, dpkit.RDPAccountant, dpkit.PLDAccountant, dpkit.GaussianMechanism) == (
        calibrate, RDPAccountant, PLDAccountant, GaussianMechanism)
    assert sorted(dpkit.__all__) == ["GaussianMechanism", "PLDAccountant", "RDPAccountant", "calibrate"]
    # dpkit.audit is the subpackage, never rebound to its entry-point function
    assert dpkit.audit is importlib.import_module("dpkit.audit") and callable(dpkit.audit.audit)
