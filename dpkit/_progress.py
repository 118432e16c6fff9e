"""A tiny progress bar on stderr, shown only when stderr is a terminal.

Library code never prints; the CLI wraps its long loops in :func:`progress`, which is a
no-op pass-through when stderr is not a TTY (pipes, CI, tests) or ``quiet`` is set, so
the JSON on stdout is never disturbed.

>>> list(progress(range(3), desc="demo"))
[0, 1, 2]
"""

from __future__ import annotations

import sys
import time
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

_MIN_INTERVAL = 0.1  # seconds between redraws


def progress(iterable: Iterable[T], total: int | None = None, desc: str = "", quiet: bool = False) -> Iterator[T]:
    """Yield the items of ``iterable``, drawing ``desc [####....] i/total`` on stderr.

    Parameters
    ----------
    iterable
        Items to pass through unchanged.
    total
        Number of items (taken from ``len(iterable)`` when omitted and available).
    desc
        Label in front of the bar.
    quiet
        Never draw.
    """
    stream = sys.stderr
    if quiet or not getattr(stream, "isatty", lambda: False)():
        yield from iterable
        return
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    last = 0.0
    done = 0
    try:
        for done, item in enumerate(iterable, start=1):
            now = time.monotonic()
            if now - last >= _MIN_INTERVAL or done == total:
                last = now
                stream.write("\r" + _line(desc, done, total))
                stream.flush()
            yield item
    finally:
        stream.write("\r" + _line(desc, done, total) + "\n")
        stream.flush()


def _line(desc: str, done: int, total: int | None) -> str:
    prefix = f"{desc} " if desc else ""
    if not total:
        return f"{prefix}{done}"
    width = 30
    filled = min(width, int(width * done / total))
    return f"{prefix}[{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
