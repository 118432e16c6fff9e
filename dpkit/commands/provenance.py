"""Provenance of a number: the software that computed it and a hash of the configuration.

A reader of a report checks that a rerun is the same run by comparing the configuration
hash; the environment says which versions produced the numbers.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from typing import Any, Mapping

import numpy
import scipy

import dpkit


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace (floats written by ``repr``)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def config_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``config``: stable across runs, changes with any parameter.

    >>> config_hash({"sigma": 1.0, "count": 10}) == config_hash({"count": 10, "sigma": 1.0})
    True
    >>> config_hash({"sigma": 1.0}) == config_hash({"sigma": 1.1})
    False
    """
    return hashlib.sha256(canonical_json(dict(config)).encode()).hexdigest()


def environment() -> dict[str, str]:
    """Versions of dpkit, Python, numpy and scipy, and the platform."""
    return {
        "dpkit": dpkit.__version__,
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "platform": platform.platform(),
    }
