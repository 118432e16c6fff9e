"""The documentation describes the demo that runs: the data it trains on and the algorithm it audits.

The demo's choices are read from :mod:`dpkit.cli.demo` (``DEMO_DATA``, ``DEMO_ALGORITHM``) and the
dataset's name from the loader itself, so a change of either without the docs fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dpkit.algorithms.substrate import data as D
from dpkit.cli import demo

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _demo_paragraphs() -> list[tuple[str, str]]:
    """Every paragraph that says what the demo trains on."""
    found = []
    for page in PAGES:
        paragraphs = re.split(r"\n\s*\n", page.read_text(encoding="utf-8"))
        for i, paragraph in enumerate(paragraphs):
            flat = " ".join(paragraph.split())
            if flat.startswith("```"):
                continue
            names_demo = re.search(r"\bthe demo\b|`?dpkit demo\b", flat, re.I)
            before_demo_command = i + 1 < len(paragraphs) and re.search(r"```\w*\n.*\bdpkit demo\b", paragraphs[i + 1])
            if (names_demo or before_demo_command) and re.search(r"\btrain(s|ing)?\b[^.]*? on ", flat, re.I):
                found.append((page.name, flat))
    return found


def _words(dataset_name: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", dataset_name.lower()) if len(w) > 2}


def test_the_docs_describe_the_demo():
    assert {page for page, _ in _demo_paragraphs()} >= {"README.md", "index.md", "algorithms.md"}


@pytest.mark.parametrize("page, paragraph", _demo_paragraphs())
def test_docs_name_the_data_the_demo_trains_on(page, paragraph):
    used = _words(D.load_dataset(demo.DEMO_DATA).name)  # "adult[104]" -> {"adult"}
    assert used and all(w in paragraph.lower() for w in used), (page, paragraph)
    others = _words(D.load_builtin().name) | {"synthetic", "libsvm"}  # the other datasets load_dataset knows
    assert not (others - used) & set(re.findall(r"[a-z]+", paragraph.lower())), (page, paragraph)


@pytest.mark.parametrize("page, paragraph", _demo_paragraphs())
def test_docs_name_the_algorithm_the_demo_audits(page, paragraph):
    if not re.search(r"\baudit", paragraph, re.I):
        pytest.skip("the paragraph does not describe the audit")
    assert demo.DEMO_ALGORITHM.replace("-", "").lower() in paragraph.replace("-", "").lower(), (page, paragraph)
    for audited in re.findall(r"audit --algorithm (\S+)", paragraph):
        assert audited == demo.DEMO_ALGORITHM, (page, paragraph)
