"""Strict JSON: what dpkit writes parses with any JSON parser (JavaScript, jq, Go, Rust).

JSON has no infinity or NaN, and Python's ``json`` writes the non-standard tokens ``Infinity``,
``-Infinity`` and ``NaN`` for them. dpkit writes a non-finite number as a string instead, the
same everywhere (``--json``, files written with ``--out``, ``report.json``): ``"inf"``,
``"-inf"`` and ``"nan"`` (NaN is never produced on purpose). A field keeps its single value,
so a reader that only shows it needs no change, and :func:`decode` turns the strings back into
floats. Documents written by earlier versions, with ``Infinity`` tokens, still read with
Python's ``json``.

>>> dumps({"epsilon": float("inf"), "delta": 1e-5})
'{"epsilon": "inf", "delta": 1e-05}'
>>> decode({"epsilon": "inf", "method": "rdp"})
{'epsilon': inf, 'method': 'rdp'}
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["NON_FINITE", "decode", "dumps", "encode"]

NON_FINITE: dict[str, float] = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
"""The string written for each non-finite float, and the float it reads back as."""


def encode(value: Any) -> Any:
    """``value`` with every non-finite float, at any depth, replaced by its string in :data:`NON_FINITE`."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(float(value))  # "inf", "-inf" or "nan" (a numpy float too)
    if isinstance(value, dict):
        return {key: encode(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` of :func:`encode` (``value``), refusing any non-finite number left (``allow_nan=False``)."""
    return json.dumps(encode(value), allow_nan=False, **options)


def decode(value: Any) -> Any:
    """``value`` with every string of :data:`NON_FINITE`, at any depth, read back as its float."""
    if isinstance(value, str):
        return NON_FINITE.get(value, value)
    if isinstance(value, dict):
        return {key: decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode(item) for item in value]
    return value
