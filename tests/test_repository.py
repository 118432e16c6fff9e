"""The repository stands on its own (docs/design.md): no reference to files outside it, no committed
wheels, a licence, ``dpkit.audit`` the subpackage, tests that cite papers rather than trackers, and no
function-level import across subpackages."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dpkit"


def _tracked() -> list[Path]:
    """The files git tracks (every file under the root when git or the repository is missing)."""
    if shutil.which("git") and (ROOT / ".git").exists():
        done = subprocess.run(["git", "ls-files", "-z"], capture_output=True, cwd=ROOT)
        if done.returncode == 0:
            return [ROOT / name for name in done.stdout.decode().split("\0") if name]
    skip = {".git", ".venv", ".hypothesis", "__pycache__", ".benchmarks"}
    return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


def _texts(paths):
    for path in paths:
        if path.is_file() and path.suffix not in {".gz", ".png", ".whl", ".pdf"}:
            try:
                yield path, path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue


def test_nothing_refers_to_files_beside_the_repository():
    pattern = re.compile(r"\.\./shared|/work/|parent(s\[\d\])?\.parent\s*/\s*[\"']shared[\"']")
    found = [f"{path.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}"
             for path, text in _texts(_tracked()) if path.name != Path(__file__).name
             for m in pattern.finditer(text)]
    assert not found, found


def test_no_committed_wheels_or_archives_at_the_root():
    assert not [p.name for p in _tracked() if p.suffix in {".whl", ".egg", ".zip"} or p.name.endswith(".tar.gz")]


def test_the_licence_is_the_declared_apache_2():
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["license"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache-2.0" in str(declared)
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text


def test_the_design_the_code_cites_is_in_the_repository():
    assert (ROOT / "docs" / "design.md").is_file()
    layers = (ROOT / "tests" / "test_layers.py").read_text(encoding="utf-8")
    assert "docs/design.md" in layers and "DESIGN.md" not in layers
    for folder in ("experiments", "scripts"):
        readme = (ROOT / folder / "README.md").read_text(encoding="utf-8")
        scripts = sorted(p.name for p in (ROOT / folder).rglob("*.py"))
        assert all(name in readme for name in scripts), (folder, scripts)


def test_dpkit_audit_is_the_subpackage():
    import dpkit

    module = importlib.import_module("dpkit.audit")
    assert dpkit.audit is module and module.__name__ == "dpkit.audit"
    assert module.AuditResult.__module__ == "dpkit.audit.result"


ALGORITHMS_ROOT = {"__init__", "registry", "training", "audit_instances"}
"""The only modules at the root of ``dpkit.algorithms``: entry points that belong to no paper."""

SHARED_SUBPACKAGES = {"substrate", "baselines"}
"""The subpackages of ``dpkit.algorithms`` that are not one paper's."""


def test_algorithms_hold_one_subpackage_per_paper_over_a_substrate():
    folder = PACKAGE / "algorithms"
    assert {p.stem for p in folder.glob("*.py")} == ALGORITHMS_ROOT  # no paper-prefixed module at the root
    subpackages = {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
    papers = subpackages - SHARED_SUBPACKAGES
    assert SHARED_SUBPACKAGES <= subpackages and papers
    for paper in sorted(papers):
        assert (folder / paper / "audit_instances.py").is_file(), paper
        doc = importlib.import_module(f"dpkit.algorithms.{paper}").__doc__ or ""
        assert re.search(r"\b(19|20)\d\d\b", doc), f"{paper}/__init__.py names no paper (author, year)"


def test_every_registered_algorithm_and_audit_instance_lives_in_a_subpackage():
    import pkgutil

    import dpkit.algorithms
    from dpkit.algorithms.audit_instances import SCENARIOS
    from dpkit.algorithms.registry import ALGORITHMS

    modules = [importlib.import_module(m.name)
               for m in pkgutil.walk_packages(dpkit.algorithms.__path__, "dpkit.algorithms.")]
    spec_homes = {name: [m.__name__ for m in modules if getattr(m, "SPEC", None) is spec]
                  for name, spec in ALGORITHMS.items()}
    instance_homes = {builder.__module__ for builder in SCENARIOS.values()}
    homes = [home for found in spec_homes.values() for home in found] + sorted(instance_homes)
    assert all(len(found) == 1 for found in spec_homes.values()), spec_homes
    assert all(len(home.split(".")) == 4 and home.split(".")[2] != "substrate" for home in homes), homes
    papers = {home.split(".")[2] for home in homes} - SHARED_SUBPACKAGES
    subpackages = {p.name for p in (PACKAGE / "algorithms").iterdir() if (p / "__init__.py").is_file()}
    assert papers == subpackages - SHARED_SUBPACKAGES  # every paper registered, every subpackage a paper's
    assert all(f"dpkit.algorithms.{paper}.audit_instances" in instance_homes for paper in papers)


def test_tests_cite_papers_not_trackers_or_digests():
    pattern = re.compile(r"\bissue\s+#?\d+|\b(?:paper'?s? )?digest(?:'s|\s+(?:§|F\d|tables?|item))|\bspec\s+0\d\d|"
                         r"\bspec/0\d\d|\bseed\s+00\d\b", re.IGNORECASE)
    found = []
    for path, text in _texts(p for p in _tracked() if p.suffix in {".py", ".md"} and p.parts[len(ROOT.parts)] in
                             {"tests", "benchmarks", "experiments", "scripts", "dpkit", "docs"}):
        if path != Path(__file__):
            found += [f"{path.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0)}"
                      for m in pattern.finditer(text)]
    assert not found, found


def test_tightest_accountant_is_exported_and_registered():
    from dpkit.accounting import TightestAccountant
    from dpkit.accounting.events import GaussianEvent, LaplaceEvent, compose
    from dpkit.accounting.registry import ACCOUNTANTS, make_accountant

    assert ACCOUNTANTS["tightest"] is TightestAccountant
    event = compose(GaussianEvent(3.0), LaplaceEvent(4.0))
    tightest = make_accountant("tightest").compose(event, 5).get_epsilon(1e-6).epsilon
    members = [make_accountant(name).compose(event, 5).get_epsilon(1e-6).epsilon for name in ("rdp", "pld")]
    assert tightest <= min(members)  # the minimum of valid upper bounds (every member's is one)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_level_import_across_subpackages(path):
    parts = path.relative_to(PACKAGE).parts
    own = parts[0] if len(parts) > 1 else None
    for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            modules = [node.module] if isinstance(node, ast.ImportFrom) and node.module else (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            for module in modules:
                names = module.split(".")
                if names[0] == "dpkit" and len(names) > 1 and names[1] != own and not names[1].startswith("_"):
                    pytest.fail(f"{path.relative_to(ROOT)}:{node.lineno}: {function.name} imports {module} "
                                "inside the function; import it at module level")
