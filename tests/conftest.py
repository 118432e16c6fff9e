"""Shared fixtures and hypothesis settings for the dpkit test suite."""

from __future__ import annotations

import gzip
import os
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "dpkit",
    deadline=None,
    max_examples=int(os.environ.get("DPKIT_HYPOTHESIS_EXAMPLES", "60")),
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.load_profile("dpkit")

_ACCOUNTING = Path(__file__).resolve().parent / "accounting"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Accounting computes through no NaN or overflow it does not handle: in tests/accounting a RuntimeWarning
    (numpy's "invalid value", "overflow", "divide by zero") is an error, on current and oldest versions alike.
    The filter goes first, so a test's own ``filterwarnings`` mark (a peer library's warnings) still wins."""
    for item in items:
        if _ACCOUNTING in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.filterwarnings("error::RuntimeWarning"), append=False)



@pytest.fixture(scope="session")
def adult_dir(tmp_path_factory) -> Path:
    """A directory holding the UCI files ``adult.data`` and ``adult.test``, unpacked from the copy
    packaged with dpkit (``dpkit/algorithms/substrate/datasets``), for the tests of the directory loader."""
    packaged = resources.files("dpkit.algorithms.substrate").joinpath("datasets")
    folder = tmp_path_factory.mktemp("adult")
    for name in ("adult.data", "adult.test"):
        (folder / name).write_bytes(gzip.decompress(packaged.joinpath(name + ".gz").read_bytes()))
    return folder
