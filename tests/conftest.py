"""Shared fixtures and hypothesis settings for the dpkit test suite."""

from __future__ import annotations

import os
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

ADULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "adult"


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    """The UCI Adult directory shipped beside the repository (``../shared/data/adult``)."""
    if not (ADULT_DIR / "adult.data").is_file():
        pytest.skip(f"UCI Adult not found at {ADULT_DIR}")
    return ADULT_DIR
