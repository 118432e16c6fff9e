"""Progress of a long ``dpkit audit`` on stderr: a bar on a terminal, else a heartbeat line, and the
run-time estimate the library reports."""

from __future__ import annotations

import sys
import threading
import time

from dpkit.commands.audit.output import estimate_line

__all__ = ["HEARTBEAT_SECONDS", "ESTIMATE_NOTICE_SECONDS", "ProgressBar"]


HEARTBEAT_SECONDS = 60.0
"""Without a progress bar (``--quiet``, or stderr not a terminal), a line on stderr this often."""


ESTIMATE_NOTICE_SECONDS = 20.0
"""The run-time estimate is printed when the whole audit should take at least this long."""


class ProgressBar:
    """Progress on stderr: a bar on a terminal without ``--quiet``; otherwise a heartbeat line
    every :data:`HEARTBEAT_SECONDS` (from a timer thread, so a slow batch cannot silence it).

    After the first batch the library reports its estimate of the whole run's time
    (``on_estimate``); if it is at least :data:`ESTIMATE_NOTICE_SECONDS`, prints it with advice (``--samples``); see
    :meth:`estimate` for revisions.
    """

    def __init__(self, quiet: bool, workers: int | None = 1, planned: int | None = None):
        self.on = not quiet and getattr(sys.stderr, "isatty", lambda: False)()
        self.last = 0.0
        self.done, self.total = 0, 0
        self.start = time.monotonic()
        self.workers = workers
        self.planned = planned
        self.estimated: float | None = None
        self.printed: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if not self.on:
            self._thread = threading.Thread(target=self._heartbeat, name="dpkit-audit-heartbeat", daemon=True)
            self._thread.start()

    def _heartbeat(self) -> None:
        stream = sys.stderr  # the stream of the caller (tests redirect it)
        while not self._stop.wait(HEARTBEAT_SECONDS):
            elapsed = time.monotonic() - self.start
            try:
                stream.write(f"dpkit audit: still running after {elapsed:.0f} s: {self.done}/{self.total} samples\n")
                stream.flush()
            except (OSError, ValueError):  # the caller closed its stream (e.g. a pipe): nobody is listening
                return

    def estimate(self, seconds_total: float) -> None:
        """Record an estimate of the whole audit's run time. Print the first one that is long, and
        a later one (e.g. when confirmation starts) if it differs from the printed one by half or more."""
        self.estimated = float(seconds_total)
        if self.estimated < ESTIMATE_NOTICE_SECONDS:
            return
        if self.printed is not None and abs(self.estimated - self.printed) < 0.5 * self.printed:
            return
        line = estimate_line(self.estimated, self.total or self.planned, self.workers)
        if self.printed is not None:
            line = line.replace(": ", ": revised estimate: ", 1)
        sys.stderr.write(("\n" if self.on else "") + line + "\n")
        sys.stderr.flush()
        self.printed = self.estimated

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if not self.on or (time.monotonic() - self.last < 0.1 and done < total):
            return
        self.last = time.monotonic()
        filled = min(30, int(30 * done / max(total, 1)))
        sys.stderr.write(f"\raudit [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} samples")
        sys.stderr.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        if self.on:
            sys.stderr.write("\n")
