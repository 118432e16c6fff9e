"""Every Python example in README.md is a doctest, and they all pass."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def python_blocks() -> list[tuple[int, str]]:
    """(line number, text) of every ```python block of README.md."""
    text = README.read_text(encoding="utf-8")
    return [(text[: m.start()].count("\n") + 2, m.group(1)) for m in PYTHON_BLOCK.finditer(text)]


def test_readme_has_python_examples():
    assert python_blocks()


@pytest.mark.parametrize("lineno, block", python_blocks(), ids=lambda v: f"line{v}" if isinstance(v, int) else "")
def test_readme_python_block(lineno, block):
    assert block.lstrip().startswith(">>> "), f"README.md:{lineno}: Python block is not in doctest form"
    test = doctest.DocTestParser().get_doctest(block, {}, f"README.md:{lineno}", str(README), lineno - 1)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0, f"README.md:{lineno}: {result.failed} example(s) failed"
