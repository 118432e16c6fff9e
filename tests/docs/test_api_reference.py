"""docs/api.md lists exactly the public API (each package's ``__all__``) and matches the code."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "api_reference.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("api_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = load_generator()


def test_api_reference_is_up_to_date():
    assert GENERATOR.OUTPUT.read_text(encoding="utf-8") == GENERATOR.render(), (
        "docs/api.md is out of date: run python scripts/api_reference.py"
    )


def test_documented_packages_are_exactly_the_public_packages():
    documented = GENERATOR.documented_names(GENERATOR.OUTPUT.read_text(encoding="utf-8"))
    assert list(documented) == list(GENERATOR.PACKAGES)


@pytest.mark.parametrize("package", GENERATOR.PACKAGES)
def test_documented_names_equal_all(package):
    module = importlib.import_module(package)
    documented = GENERATOR.documented_names(GENERATOR.OUTPUT.read_text(encoding="utf-8"))
    assert documented[package] == list(module.__all__)


@pytest.mark.parametrize("package", GENERATOR.PACKAGES)
def test_all_names_exist_and_are_unique(package):
    module = importlib.import_module(package)
    assert len(set(module.__all__)) == len(module.__all__)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing


def test_documented_names_parser_inverts_render():
    text = GENERATOR.render()
    parsed = GENERATOR.documented_names(text)
    assert parsed == {package: GENERATOR.public_names(package) for package in GENERATOR.PACKAGES}
