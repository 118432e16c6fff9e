"""One guard for the accounting tests that bound a query's time: a hang fails the test, not the suite."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def time_limit(seconds: int, what: str) -> Iterator[None]:
    """Raise ``TimeoutError`` naming ``what`` if the block runs beyond ``seconds`` (SIGALRM; main thread)."""
    def alarm(signum, frame):
        raise TimeoutError(f"{what} took longer than {seconds} s")
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
