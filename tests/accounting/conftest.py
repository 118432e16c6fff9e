"""Accounting computes through no NaN or overflow it does not handle: in these tests a RuntimeWarning
(numpy's "invalid value", "overflow", "divide by zero") is an error, on current and oldest versions alike."""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.filterwarnings("error::RuntimeWarning"))
