"""Keep the reader's machine out of a report: its absolute paths become relative paths or placeholders.

A report travels with a paper; the directories of the machine that built it (the working
directory, the home directory, the temporary directory of a rerun, the Python installation)
are not part of it. :func:`redact` replaces them, in every string of a JSON-ready value, by
``.``, ``~``, ``<tmp>`` and ``<python>``; :func:`display_path` names a document by its path
relative to the working directory (or its file name).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable

import dpkit


def _prefixes() -> dict[str, str]:
    """Absolute directory -> placeholder (the first candidate wins); ``/`` and empty ones are left out."""
    candidates = [
        (os.getcwd(), "."),
        (os.path.expanduser("~"), "~"),
        (tempfile.gettempdir(), "<tmp>"),
        (sys.prefix, "<python>"),
        (sys.base_prefix, "<python>"),
        (os.path.dirname(os.path.dirname(os.path.abspath(dpkit.__file__))), "<dpkit>"),
    ]
    prefixes: dict[str, str] = {}
    for path, placeholder in candidates:
        for variant in (os.path.abspath(path), os.path.realpath(path)):
            variant = variant.rstrip(os.sep)
            if len(variant) > 1:
                prefixes.setdefault(variant, placeholder)
    return prefixes


def redactor(extra: Iterable[tuple[str, str]] = ()) -> Any:
    """A function replacing this machine's directories (and ``extra`` (path, placeholder) pairs) in a string."""
    lookup = {os.path.abspath(path).rstrip(os.sep): placeholder for path, placeholder in extra}
    for path, placeholder in _prefixes().items():
        lookup.setdefault(path, placeholder)
    lookup = {path: placeholder for path, placeholder in lookup.items() if len(path) > 1}
    pattern = re.compile("|".join(rf"{re.escape(path)}(?![\w.\-])" for path in sorted(lookup, key=len, reverse=True)))

    def replace(text: str) -> str:
        return pattern.sub(lambda match: lookup[match.group(0)], text)

    return replace


def redact(value: Any, extra: Iterable[tuple[str, str]] = ()) -> Any:
    """``value`` (JSON-ready) with every string and key freed of this machine's absolute directories.

    >>> import os
    >>> redact({"error": f"cannot read {os.getcwd()}/data.csv"})
    {'error': 'cannot read ./data.csv'}
    """
    replace = redactor(extra)

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return replace(item)
        if isinstance(item, dict):
            return {walk(key) if isinstance(key, str) else key: walk(inner) for key, inner in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(inner) for inner in item]
        return item

    return walk(value)


def display_path(path: str) -> str:
    """``path`` relative to the working directory if it lies inside it, else its file name."""
    if path.startswith("<"):  # "<dict>"
        return path
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(os.path.abspath(os.getcwd())))
    except ValueError:
        return absolute.name
