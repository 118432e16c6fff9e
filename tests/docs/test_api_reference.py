"""docs/api.md is generated from the docstrings and must match the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "api_reference.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("api_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_is_up_to_date():
    generator = load_generator()
    assert generator.OUTPUT.read_text(encoding="utf-8") == generator.render(), (
        "docs/api.md is out of date: run python scripts/api_reference.py"
    )


def test_api_reference_covers_every_public_module():
    generator = load_generator()
    text = generator.OUTPUT.read_text(encoding="utf-8")
    for name in generator.public_modules():
        assert f"## `{name}`" in text
