"""The bibliography is a data file: ``dpkit/report/references.bib``, package data, parsed entry by entry."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from dpkit.report.bibliography import BIB_FILE, ENTRIES, parse_bibtex

ROOT = Path(__file__).resolve().parents[2]


def test_every_entry_of_the_file_is_loaded_whole():
    text = resources.files("dpkit.report").joinpath(BIB_FILE).read_text(encoding="utf-8")
    starts = re.findall(r"^@\w+\{([^,]+),", text, re.MULTILINE)
    assert list(ENTRIES) == starts and len(starts) == len(set(starts))
    for key, entry in ENTRIES.items():
        assert entry.startswith("@") and entry.endswith("}") and entry.count("{") == entry.count("}"), key
        assert entry in text


def test_the_file_is_package_data():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert BIB_FILE in pyproject["tool"]["setuptools"]["package-data"]["dpkit.report"]


def test_parser_errors_name_the_key():
    with pytest.raises(ValueError, match="'k1'.*unbalanced"):
        parse_bibtex("@misc{k1,\n  title = {A\n}\n")
    with pytest.raises(ValueError, match="'k1'.*twice"):
        parse_bibtex("@misc{k1, title = {A}}\n@misc{k1, title = {B}}\n")
    assert parse_bibtex("% only a comment\n") == {}
